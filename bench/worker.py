"""One benchmark run in a fresh process: ``python -m bench.worker '<RunSpec JSON>'``.

A fresh process per run keeps clients from sharing allocator state or threads and makes the
process's own CPU counters (``os.times``) the client's CPU cost, background threads included.
"""

from __future__ import annotations

import faulthandler
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
    return scenario(spec)


def peak_rss_kb() -> int:
    """The run's peak resident set in KiB (Linux's ru_maxrss unit): this process's, or a waited-for
    child's when larger (the Java client runs in a JVM child)."""
    return max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


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
