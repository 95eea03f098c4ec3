"""``python -m bench``: run every scenario for kafkaev and its peers against one broker.

Clients alternate scenario by scenario (and the order rotates between repetitions) so machine drift
hits every client alike; each run is a fresh subprocess with a hard timeout, so a hung client is
reported as a failure instead of hanging the run. Medians over the repetitions are reported.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bench import report
from bench.broker import (
    ExistingCluster,
    deletion_delays,
    landed_records,
    prefill,
    slow_deletion_warning,
    start_embedded,
)
from bench.broker_heap import BrokerHeap
from bench.bytecode import precompile
from bench.machine import describe, machine_info
from bench.scenarios import (
    CPU_CORES,
    EOS_TXN_RECORDS,
    PEAK_RSS_MB,
    STALLED_RECORDS,
    STALLS,
    SUBJECT,
    Entry,
    Scenario,
    all_scenarios,
)
from bench.spec import (
    KIND_CONN,
    KIND_CONSUME,
    KIND_DECODE,
    KIND_E2E,
    KIND_ENCODE,
    KIND_EOS,
    KIND_HANDLE,
    KIND_PRODUCE,
    KIND_REBALANCE,
    KIND_ROUNDTRIP,
    KIND_TXN_PRODUCE,
    RESULT_PREFIX,
    RunResult,
    RunSpec,
)
from bench.worker import DEADLINE_ENV
from kafkaev.testing.jars import kafka_version

RESULTS_DIR = Path(__file__).with_name("results")
PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Seconds a worker may take beyond its own planned work (interpreter, imports, connecting, JVM start).
RUN_OVERHEAD_S = 60.0
PRODUCE_PARTITIONS = 3
KIB_PER_MIB = 1024  # ru_maxrss is in KiB
# rebalance: settling (up to 60 s), then the two phases of bench/rebalance.py, with room to spare.
REBALANCE_TIME_CAP_S = 90.0

# The kinds reported as msg/s, MB/s and CPU per record.
THROUGHPUT_KINDS = (KIND_PRODUCE, KIND_CONSUME, KIND_HANDLE, KIND_TXN_PRODUCE, KIND_EOS)
# The kinds whose runs use the broker's transaction coordinator (warmed up apart).
TRANSACTIONAL_KINDS = frozenset({KIND_TXN_PRODUCE, KIND_EOS})
# The kinds whose runs start with the broker's heap just collected (bench.broker_heap): one
# broker GC pause is their p99.9 and max wherever it falls.
LATENCY_KINDS = frozenset({KIND_ROUNDTRIP, KIND_E2E, KIND_CONN})


@dataclass(frozen=True, slots=True)
class Plan:
    """How long and how often: the knobs --quick changes."""

    reps: int
    duration_s: float
    warmup_s: float
    roundtrips: int
    e2e_seconds: float
    # An e2e run measures at least this many records, longer than e2e_seconds at low rates: at
    # 1,000 msg/s 4 s held ~4,000, whose p99.9 was the fifth-worst record, and one broker hiccup
    # of a few ms in a run made it.
    e2e_min_records: int
    consume_records: int
    codec_records: int
    conn_requests: int
    # Before the first scenario on the embedded broker (or with --warm-up), untimed: produce for
    # this long, then round trips, so no client's first reps meet a JVM that has not compiled the
    # paths they use.
    broker_warmup_s: float
    # Then, when transactional scenarios run, the EOS pipeline and transactions for this long each:
    # the broker runs one transaction's steps once per transaction, not per record, and on a fresh
    # broker 5 s of them left the first repetition of txn_produce_1000 at two thirds of the later
    # ones' msg/s.
    broker_txn_warmup_s: float


QUICK = Plan(reps=1, duration_s=1.0, warmup_s=0.3, roundtrips=1000, e2e_seconds=2.0, e2e_min_records=0,
             consume_records=300_000,
             codec_records=50_000, conn_requests=1000, broker_warmup_s=1.0, broker_txn_warmup_s=1.0)
# consume_records: enough that kafkaev's consume runs last over a second as the peers' (capped at
# duration_s) do; 1.5M records took it 0.3-0.6 s, and its figures moved by 40% run to run.
FULL = Plan(reps=3, duration_s=2.5, warmup_s=0.7, roundtrips=5000, e2e_seconds=4.0, e2e_min_records=10_000,
            consume_records=5_000_000,
            codec_records=200_000, conn_requests=5000, broker_warmup_s=5.0, broker_txn_warmup_s=15.0)


@dataclass(slots=True)
class EntryOutcome:
    runs: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)


def derive(kind: str, result: RunResult, landed: int | None) -> dict[str, float]:
    """The reported figures of one run, from its raw counters."""
    figures: dict[str, float] = {}
    if result.peak_rss_kb:
        figures[PEAK_RSS_MB.name] = result.peak_rss_kb / KIB_PER_MIB
    if kind in THROUGHPUT_KINDS and result.elapsed_s > 0 and result.records > 0:
        figures["msgs_per_s"] = result.records / result.elapsed_s
        figures["mb_per_s"] = result.bytes / result.elapsed_s / 1e6
        figures["cpu_us_per_record"] = result.cpu_s * 1e6 / result.records
    if kind == KIND_PRODUCE and result.call_elapsed_s > 0:
        figures["call_rate"] = result.calls / result.call_elapsed_s
        if landed is not None and result.elapsed_s > 0:
            delivered = landed - result.warmup_records
            figures["delivered"] = delivered
            figures["delivered_per_s"] = delivered / result.elapsed_s
    if kind in (KIND_ROUNDTRIP, KIND_E2E, KIND_CONN, KIND_REBALANCE):
        figures.update({k: v for k, v in result.latency_us.items()})
    if kind == KIND_E2E:
        figures[STALLS.name] = result.stalls
        figures[STALLED_RECORDS.name] = result.stalled_records
    if kind in (KIND_ROUNDTRIP, KIND_E2E) and result.elapsed_s > 0:
        # what a latency costs in CPU: a client that spins (busy_poll_us) keeps a core near 1
        figures[CPU_CORES.name] = result.cpu_s / result.elapsed_s
    if kind in (KIND_ENCODE, KIND_DECODE) and result.cpu_s > 0 and result.records > 0:
        figures["records_per_s"] = result.records / result.cpu_s
        figures["ns_per_record"] = result.cpu_s * 1e9 / result.records
    if kind == KIND_CONN and result.elapsed_s > 0:
        figures["requests_per_s"] = result.records / result.elapsed_s
    return figures


class Runner:
    def __init__(self, args: argparse.Namespace, plan: Plan, bootstrap: str, cluster: Any, heap: BrokerHeap) -> None:
        self.args = args
        self.plan = plan
        self.bootstrap = bootstrap
        self.cluster = cluster
        self.heap = heap
        self.run_id = uuid.uuid4().hex[:8]
        self.consume_topic: str | None = None
        self.done = 0
        self.total = 0
        self.started = time.monotonic()

    def progress(self, text: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[{self.done:3d}/{self.total}] {elapsed:6.1f}s  {text}", flush=True)

    def spec_for(self, scenario: Scenario, entry: Entry, rep: int) -> RunSpec:
        plan = self.plan
        spec = RunSpec(client=entry.client, kind=scenario.kind, bootstrap=self.bootstrap, topic="",
                       duration_s=plan.duration_s, warmup_s=plan.warmup_s, **scenario.params)
        if scenario.kind in (KIND_PRODUCE, KIND_TXN_PRODUCE):
            spec.partitions = scenario.params.get("partitions", PRODUCE_PARTITIONS)
        elif scenario.kind == KIND_ROUNDTRIP:
            spec.count = plan.roundtrips
        elif scenario.kind == KIND_E2E:
            spec.duration_s = max(plan.e2e_seconds, plan.e2e_min_records / spec.rate)
            spec.warmup_s = max(0.5, plan.warmup_s)
        elif scenario.kind in (KIND_CONSUME, KIND_HANDLE, KIND_EOS):  # the pre-filled topic (eos: its input, in a fresh group)
            spec.count = plan.consume_records
            spec.partitions = PRODUCE_PARTITIONS  # eos: the output has the input's partitions
            spec.duration_s = plan.duration_s * 3  # time cap for slow clients
        elif scenario.kind in (KIND_ENCODE, KIND_DECODE):
            spec.count = plan.codec_records
        elif scenario.kind == KIND_CONN:
            spec.count = plan.conn_requests
        elif scenario.kind == KIND_REBALANCE:
            spec.duration_s = REBALANCE_TIME_CAP_S / 3  # the run's time cap, settling and both phases
        spec = replace(spec, **entry.overrides)
        if scenario.kind in (KIND_ENCODE, KIND_DECODE):
            spec.topic = ""  # no broker involved
        elif scenario.kind in (KIND_CONSUME, KIND_HANDLE):
            spec.topic = self.prefilled_topic()
        else:
            if scenario.kind == KIND_EOS:
                spec.source_topic = self.prefilled_topic()
            safe_label = entry.label.replace("[", "-").replace("]", "")
            spec.topic = self.cluster.create_topic(
                f"bench-{self.run_id}-{scenario.name}-{safe_label}-{rep}", partitions=spec.partitions,
                replication_factor=1)
        return spec

    def warm_broker(self, scenarios: list[Scenario]) -> None:
        """Untimed traffic before the first scenario: kafkaev's throughput produce and its round
        trips; then, when ``scenarios`` has them, its EOS pipeline (after the pre-fill of its
        input) and its transactions. Their figures are not kept.

        Plain produce does not warm the transactional paths: on a fresh broker the first
        repetition of ``txn_produce_1000`` ran at a quarter of the later ones' msg/s without
        them, at two thirds after 5 s of transactions, at par after both warm-ups. Repetition 1
        starts with kafkaev, so a cold broker costs kafkaev's figures first, and skews every
        ratio. The first repetition of ``eos_pipeline`` stays at 0.7-0.85x of the later ones for
        every client, with this warm-up or without it, on a fresh broker or a warm one; the
        median of three drops it."""
        plan = self.plan
        kinds = {s.kind for s in scenarios}
        warm_ups = [
            RunSpec(client=SUBJECT, kind=KIND_PRODUCE, bootstrap=self.bootstrap, topic="", warmup_s=0.0,
                    duration_s=plan.broker_warmup_s, partitions=PRODUCE_PARTITIONS),
            RunSpec(client=SUBJECT, kind=KIND_ROUNDTRIP, bootstrap=self.bootstrap, topic="", warmup_s=0.0,
                    count=plan.roundtrips),
        ]
        said = f"{plan.broker_warmup_s:.0f}s of produce, then round trips"
        if KIND_EOS in kinds:
            warm_ups.append(RunSpec(client=SUBJECT, kind=KIND_EOS, bootstrap=self.bootstrap, topic="", warmup_s=0.0,
                                    duration_s=plan.broker_txn_warmup_s, count=plan.consume_records,
                                    partitions=PRODUCE_PARTITIONS, txn_records=EOS_TXN_RECORDS))
            said += f", {plan.broker_txn_warmup_s:.0f}s of the EOS pipeline"
        if kinds & TRANSACTIONAL_KINDS:
            warm_ups.append(RunSpec(client=SUBJECT, kind=KIND_TXN_PRODUCE, bootstrap=self.bootstrap, topic="",
                                    warmup_s=0.0, duration_s=plan.broker_txn_warmup_s, partitions=PRODUCE_PARTITIONS,
                                    txn_records=EOS_TXN_RECORDS))  # many transactions, as the pipeline's
            said += f", {plan.broker_txn_warmup_s:.0f}s of transactions"
        self.progress(f"warming the broker up: {said}")
        for spec in warm_ups:
            spec.topic = self.cluster.create_topic(f"bench-{self.run_id}-warmup-{spec.kind}",
                                                   partitions=spec.partitions, replication_factor=1)
            try:
                if spec.kind == KIND_EOS:
                    spec.source_topic = self.prefilled_topic()
                self.run_one(spec)
            except Exception as exc:  # noqa: BLE001 - the scenarios' own runs report a broken broker
                self.progress(f"warm-up {spec.kind} failed: {type(exc).__name__}: {exc}")
            finally:
                self.cluster.delete_topic(spec.topic)

    def prefilled_topic(self) -> str:
        if self.consume_topic is None:
            name = f"bench-{self.run_id}-consume-source"
            self.cluster.create_topic(name, partitions=PRODUCE_PARTITIONS, replication_factor=1)
            self.progress(f"pre-filling {name} with {self.plan.consume_records:,} records")
            prefill(self.bootstrap, name, self.plan.consume_records, 100)
            self.consume_topic = name
        return self.consume_topic

    def drop_run_topic(self, scenario: Scenario, spec: RunSpec) -> None:
        """Delete the topic one run wrote, so the gigabytes of each produce run do not pile up
        in the broker's page cache and disk and slow every later run (and whichever client
        happens to run while the broker flushes them)."""
        if not spec.topic or scenario.kind in (KIND_CONSUME, KIND_HANDLE, KIND_ENCODE, KIND_DECODE):
            return
        try:
            self.cluster.delete_topic(spec.topic)
        except Exception as exc:  # noqa: BLE001 - a leftover topic costs disk, not correctness
            self.progress(f"could not delete {spec.topic}: {type(exc).__name__}: {exc}")

    def run_one(self, spec: RunSpec) -> RunResult:
        planned = spec.warmup_s + spec.duration_s * 3 + spec.count / 1000.0
        timeout = RUN_OVERHEAD_S + planned
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", spec.to_json()],
            env={**os.environ, DEADLINE_ENV: f"{timeout:.0f}"},
            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True,  # its own process group: a timeout kills librdkafka/JVM children too
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise RuntimeError(f"timed out after {timeout:.0f}s") from None
        for line in stdout.splitlines():
            if line.startswith(RESULT_PREFIX):
                return RunResult.from_json(line[len(RESULT_PREFIX):])
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        dumped = [i for i, line in enumerate(lines) if "most recent call first" in line]
        if dumped and dumped[0] + 1 < len(lines):  # the worker's own dump before the deadline
            raise RuntimeError(f"hung past {timeout:.0f}s at {lines[dumped[0] + 1].strip()}")
        raise RuntimeError(f"exit {proc.returncode}: {lines[-1] if lines else 'no output'}")

    def collect_broker_heap(self) -> None:
        failure = self.heap.collect()
        if failure is not None:  # the run goes on with the heap as it is, and says so once
            self.progress(f"broker heap not collected, and not tried again: {failure}")
            self.heap = BrokerHeap((), None, failure)

    def run_scenario(self, scenario: Scenario) -> dict[str, EntryOutcome]:
        outcomes = {entry.label: EntryOutcome() for entry in scenario.entries}
        for rep in range(self.plan.reps):
            shift = rep % len(scenario.entries)
            order = scenario.entries[shift:] + scenario.entries[:shift]
            for entry in order:
                outcome = outcomes[entry.label]
                self.done += 1
                spec = None
                try:
                    spec = self.spec_for(scenario, entry, rep)
                    if scenario.kind in LATENCY_KINDS:
                        self.collect_broker_heap()
                    result = self.run_one(spec)
                    landed = (landed_records(self.bootstrap, spec.topic, spec.partitions)
                              if scenario.kind == KIND_PRODUCE and entry.uses_broker else None)
                except Exception as exc:  # reported in the table, never hidden
                    outcome.errors.append(f"{type(exc).__name__}: {exc}")
                    self.progress(f"{scenario.name:22s} {entry.label:20s} rep {rep + 1}: FAILED {exc}")
                    continue
                finally:
                    if spec is not None:
                        self.drop_run_topic(scenario, spec)
                figures = derive(scenario.kind, result, landed)
                outcome.settings = result.settings
                raw = report.raw_run(result)
                outcome.runs.append({"figures": figures, "raw": raw, "topic": spec.topic})
                headline = scenario.metrics[0]
                value = figures.get(headline.name)
                shown = report.format_value(value) if value is not None else "n/a"
                extra = f"  ({result.failed} failed)" if result.failed else ""
                note = f"  [{result.note}]" if result.note else ""
                self.progress(f"{scenario.name:22s} {entry.label:20s} rep {rep + 1}: "
                              f"{shown} {headline.unit}{extra}{note}")
        return outcomes


def summarize(scenario: Scenario, outcomes: dict[str, EntryOutcome]) -> dict[str, Any]:
    clients: dict[str, Any] = {}
    for entry in scenario.entries:
        outcome = outcomes[entry.label]
        medians: dict[str, float] = {}
        names = {name for run in outcome.runs for name in run["figures"]}
        for name in sorted(names):
            values = [run["figures"][name] for run in outcome.runs if name in run["figures"]]
            medians[name] = statistics.median(values)
        clients[entry.label] = {
            "client": entry.client,
            "role": "subject" if scenario.is_subject(entry) else "floor" if entry.is_floor else "peer",
            "median": medians,
            "runs": outcome.runs,
            "errors": outcome.errors,
            "settings": outcome.settings,
        }
    ratios: dict[str, dict[str, float]] = {}
    for metric in scenario.metrics:
        for subject in (e for e in scenario.entries if scenario.is_subject(e)):
            mine = clients[subject.label]["median"].get(metric.name)
            for other in (e for e in scenario.entries if not scenario.is_subject(e)):
                theirs = clients[other.label]["median"].get(metric.name)
                if mine is not None and theirs:
                    ratios.setdefault(metric.name, {})[f"{subject.label}/{other.label}"] = mine / theirs
        if scenario.baseline:
            base = clients[scenario.baseline]["median"].get(metric.name)
            for entry in scenario.entries:
                mine = clients[entry.label]["median"].get(metric.name)
                if entry.label != scenario.baseline and mine is not None and base:
                    ratios.setdefault(metric.name, {})[f"{entry.label}/{scenario.baseline}"] = mine / base
    return {
        "title": scenario.title,
        "kind": scenario.kind,
        "group": scenario.group,
        "params": scenario.params,
        "metrics": [{"name": m.name, "unit": m.unit, "higher_is_better": m.higher_is_better}
                    for m in scenario.metrics],
        "clients": clients,
        "ratios": ratios,
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition, short runs, trimmed sweeps (< 3 min)")
    parser.add_argument("--brokers", help="bootstrap of an existing cluster (default: start the embedded one)")
    parser.add_argument("--warm-up", action="store_true",
                        help="with --brokers: warm the broker up first, as the embedded one is (for a broker "
                             "started just before the run)")
    parser.add_argument("--reps", type=int, help="repetitions per scenario and client (median reported)")
    parser.add_argument("--duration", type=float, help="seconds per measured produce/consume section")
    parser.add_argument("--scenarios", help="comma-separated scenario names or prefixes to run")
    parser.add_argument("--clients", help="comma-separated client labels to run (e.g. kafkaev,confluent)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="directory for the JSON and PNG")
    parser.add_argument("--no-chart", action="store_true", help="skip the PNG chart")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.reps is not None and args.reps < 1:
        parser.error("--reps must be at least 1")
    if args.duration is not None and args.duration <= 0:
        parser.error("--duration must be positive")
    return args


def select(scenarios: list[Scenario], args: argparse.Namespace) -> list[Scenario]:
    if args.scenarios:
        wanted = [w.strip() for w in args.scenarios.split(",") if w.strip()]
        scenarios = [s for s in scenarios if any(s.name == w or s.name.startswith(w) for w in wanted)]
    if args.clients:
        labels = {c.strip() for c in args.clients.split(",")}
        trimmed = []
        for s in scenarios:
            entries = tuple(e for e in s.entries if e.label in labels or e.client in labels)
            if entries:
                trimmed.append(replace(s, entries=entries))
        scenarios = trimmed
    return scenarios


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.reps is not None:
        plan = replace(plan, reps=args.reps)
    if args.duration is not None:
        plan = replace(plan, duration_s=args.duration)
    scenarios = select(all_scenarios(quick=args.quick), args)
    if args.list:
        for s in scenarios:
            print(f"{s.name:22s} {', '.join(e.label for e in s.entries):70s} {s.title}")
        return 0
    if not scenarios:
        print("bench: no scenario matches --scenarios/--clients", file=sys.stderr)
        return 2
    precompile(PROJECT_ROOT)  # no run compiles kafkaev at import: the peers come compiled
    machine = machine_info()
    print(f"kafkaev bench ({'quick' if args.quick else 'full'}): {describe(machine)}", flush=True)
    started_at = datetime.now(timezone.utc)
    if args.brokers:
        cluster: Any = ExistingCluster(args.brokers)
        embedded = False
        warning = slow_deletion_warning(deletion_delays(cluster), args.brokers)
        if warning:
            print(warning, flush=True)
    else:
        print(f"starting the embedded Apache Kafka {kafka_version()} broker ...", flush=True)
        cluster = start_embedded()
        embedded = True
        print(f"broker log in {cluster.directory}", flush=True)
    try:
        heap = BrokerHeap.of([(b.host, b.port) for b in cluster.metadata().brokers.values()])
        runner = Runner(args, plan, cluster.bootstrap, cluster, heap)
        runner.total = sum(len(s.entries) for s in scenarios) * plan.reps
        print(f"broker {cluster.bootstrap}; {runner.total} runs", flush=True)
        if any(s.kind in LATENCY_KINDS for s in scenarios):
            print(heap.describe(), flush=True)
        # A broker of --brokers has usually been running; a warm-up's gigabytes there would only
        # be noise for the first scenarios (bench.compare_commits shares one between checkouts).
        # --warm-up asks for it anyway: a broker started just before the run is as cold.
        if (embedded or args.warm_up) and any(s.kind not in (KIND_ENCODE, KIND_DECODE) for s in scenarios):
            runner.warm_broker(scenarios)  # codecs send nothing
        results = {s.name: summarize(s, runner.run_scenario(s)) for s in scenarios}
    finally:
        cluster.stop()
    document = {
        "format": 1,
        "started": started_at.isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "machine": machine,
        "broker": {"embedded": embedded, "bootstrap": cluster.bootstrap if not embedded else "embedded",
                   "log_directory": str(cluster.directory) if embedded else None,
                   "kafka_version": cluster.version if embedded else None,
                   "heap_before_latency_runs": runner.heap.describe()},
        "plan": {name: getattr(plan, name) for name in plan.__slots__},
        "ratio_definition": "kafkaev / peer median; for metrics with higher_is_better=false lower is better",
        "scenarios": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = started_at.strftime("%Y%m%d-%H%M%S")
    json_path = args.out / f"{stamp}.json"
    report.write_json(document, json_path)
    print()
    print(report.table(document))
    print(f"\nJSON: {json_path}")
    if not args.no_chart:
        png_path = args.out / f"{stamp}.png"
        report.chart(document, png_path)
        print(f"chart: {png_path}")
    failed = sum(len(c["errors"]) for s in results.values() for c in s["clients"].values())
    if failed:
        print(f"{failed} run(s) failed; see the table and the JSON 'errors' fields", file=sys.stderr)
    return 0
