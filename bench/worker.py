"""One benchmark run in a fresh process: ``python -m bench.worker '<RunSpec JSON>'``.

A fresh process per run keeps clients from sharing allocator state or threads and makes the
process's own CPU counters (``os.times``) the client's CPU cost, background threads included.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import os
import resource
import sys

from bench.spec import MICRO_KINDS, RESULT_PREFIX, RunSpec

# client name -> module in bench/clients implementing produce/roundtrip/e2e/consume(spec) -> RunResult
CLIENT_MODULES = {
    "kafkaev": "bench.clients.kafkaev_client",
    "kafkaev-aio": "bench.clients.kafkaev_aio",
    "confluent-aio": "bench.clients.confluent_aio",
    "confluent": "bench.clients.confluent",
    "aiokafka": "bench.clients.aiokafka_client",
    "kafka-python": "bench.clients.kafka_python",
    "java": "bench.clients.java_perf",
    "raw-socket": "bench.floors",
    "asyncio-floor": "bench.floors.await_step",
}


DEADLINE_ENV = "BENCH_WORKER_DEADLINE_S"  # seconds the orchestrator gives this run
DUMP_MARGIN_S = 3.0

# the micro-benchmarks keep both sides in one module (they share their set-up code)
MICRO_MODULE = "bench.micro_runs"


def run(spec: RunSpec):
    module = importlib.import_module(MICRO_MODULE if spec.kind in MICRO_KINDS else CLIENT_MODULES[spec.client])
    scenario = getattr(module, spec.kind, None)
    if scenario is None:
        raise SystemExit(f"{spec.client} has no '{spec.kind}' scenario")
    # A fresh process's first full collection takes the place of its eleventh middle-generation
    # one, however little survived since the imports: a few seconds into a run it walked every
    # object the imports made (~16 ms on the bench machine) and was an e2e run's maximum
    # latency, for every Python client alike. Collected here, the next full one waits until a
    # quarter as many objects again have survived, as in a service that has run a while.
    gc.collect()
    return scenario(spec)


PROC_STATUS = "/proc/self/status"
PEAK_RSS_FIELD = "VmHWM:"  # this address space's resident high-water mark, in kB


def _own_peak_rss_kb() -> int:
    # Not ru_maxrss: Linux carries the forking process's high-water mark across fork and exec into
    # it, so every worker the bench runner starts would report at least the runner's own size.
    # VmHWM belongs to the address space exec made, so it is this client's alone.
    with open(PROC_STATUS) as status:
        for line in status:
            if line.startswith(PEAK_RSS_FIELD):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def peak_rss_kb() -> int:
    """The run's peak resident set in KiB: this process's, or a waited-for child's when larger (the
    Java client runs in a JVM child, which the worker starts, so its figure is its own)."""
    return max(_own_peak_rss_kb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m bench.worker '<RunSpec JSON>'", file=sys.stderr)
        return 2
    deadline = os.environ.get(DEADLINE_ENV)
    if deadline:
        # Shortly before the orchestrator kills a hung run, print where every thread is stuck.
        faulthandler.dump_traceback_later(max(1.0, float(deadline) - DUMP_MARGIN_S), exit=True)
    result = run(RunSpec.from_json(argv[0]))
    faulthandler.cancel_dump_traceback_later()
    result.peak_rss_kb = peak_rss_kb()
    sys.stdout.write("\n" + RESULT_PREFIX + result.to_json() + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
