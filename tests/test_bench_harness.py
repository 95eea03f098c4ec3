"""The benchmark machinery, end to end on one tiny scenario: not a timed test."""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from bench import machine
from bench.bytecode import CHECKOUT_PACKAGES, precompile
from bench.measure import histogram, percentile, summarize_latencies
from bench.scenarios import PEAK_RSS_MB, all_scenarios
from bench.spec import RunResult, RunSpec

ROOT = Path(__file__).resolve().parent.parent


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99.9) == 100.0
    summary = summarize_latencies(list(reversed(values)))
    assert summary["p90"] == 90.0 and summary["min"] == 1.0 and summary["max"] == 100.0
    assert sum(count for _, count in histogram(values)) == 100


def test_histogram_buckets_are_eighths_of_an_octave_and_only_the_non_empty_ones():
    values = [1.0, 8.0, 8.5, 9.0, 16.0, 16.5, 5e9]
    got = histogram(values)
    assert [count for _, count in got] == [2, 1, 1, 1, 1, 1]
    bounds = [bound for bound, _ in got]
    assert bounds[:2] == [8.0, 8.0 * 2 ** (1 / 8)] and bounds[3] == 16.0 and bounds[-1] == float("inf")
    for value in values[:-1]:  # each value is in the first bucket whose bound reaches it
        bound = next(b for b in bounds if value <= b)
        assert bound == max(8.0, 8.0 * 2 ** (math.ceil(8 * math.log2(max(value, 8.0) / 8.0) - 1e-9) / 8))


def _latency_document(histograms: dict[str, list[list[list[object]]]]) -> dict:
    """A run document with a roundtrip and an e2e scenario whose clients' runs have these histograms."""
    def scenario(name: str) -> dict:
        return {"group": "latency", "params": {}, "metrics": [{"name": "p50"}, {"name": "p99"}],
                "clients": {label: {"role": "client", "median": {"p50": 10.0, "p99": 20.0},
                                    "runs": [{"figures": {}, "raw": {"histogram": h}} for h in runs]}
                            for label, runs in histograms.items()}}
    return {"scenarios": {"roundtrip": scenario("roundtrip"), "e2e": scenario("e2e")},
            "machine": {"cpu": "test", "cores": 1}, "started": "now", "mode": "quick"}


def test_latency_cdf_merges_every_run_of_a_client_and_the_chart_draws_it(tmp_path):
    from bench.report import chart, latency_cdf

    document = _latency_document({
        "kafkaev": [[[8.0, 1], [16.0, 2]], [[16.0, 1], [32.0, 4], ["inf", 2]]],
        "confluent": [[[64.0, 10]]],
    })
    kafkaev_cdf = latency_cdf(document["scenarios"]["e2e"]["clients"]["kafkaev"])
    assert kafkaev_cdf == [(8.0, 0.1), (16.0, 0.4), (32.0, 0.8)]  # 10 samples, 2 slower than every bucket
    assert latency_cdf(document["scenarios"]["e2e"]["clients"]["confluent"]) == [(64.0, 1.0)]
    path = tmp_path / "chart.png"
    chart(document, path)
    assert path.stat().st_size > 0 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_machine_records_how_idle_cpus_wait(tmp_path, monkeypatch):
    cpuidle = tmp_path / "cpuidle"
    cpuidle.mkdir()
    (cpuidle / "current_driver").write_text("haltpoll\n")
    (cpuidle / "current_governor_ro").write_text("haltpoll\n")
    halt_poll = tmp_path / "guest_halt_poll_ns"
    halt_poll.write_text("200000\n")
    monkeypatch.setattr(machine, "CPUIDLE", cpuidle)
    monkeypatch.setattr(machine, "HALT_POLL_NS", halt_poll)
    info = machine.machine_info()
    assert info["cpu_idle"] == {"driver": "haltpoll", "governor": "haltpoll", "halt_poll_ns": 200000}
    assert machine.describe(info).endswith(", guest halt polling 200 µs")
    # a machine without the KVM guest driver (or without sysfs) says nothing of it
    monkeypatch.setattr(machine, "CPUIDLE", tmp_path / "absent")
    monkeypatch.setattr(machine, "HALT_POLL_NS", tmp_path / "absent" / "guest_halt_poll_ns")
    info = machine.machine_info()
    assert info["cpu_idle"] == {"driver": None, "governor": None, "halt_poll_ns": None}
    assert "halt polling" not in machine.describe(info)


def test_spec_and_result_survive_json():
    spec = RunSpec(client="confluent", kind="produce", bootstrap="127.0.0.1:9092", topic="t", acks=0)
    assert RunSpec.from_json(spec.to_json()) == spec
    result = RunResult(records=3, latency_us={"p50": 1.5}, histogram=[(8.0, 1), (float("inf"), 2)])
    assert RunResult.from_json(result.to_json()) == result


def test_harness_runs_one_scenario_and_writes_table_json_chart(kafka, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--brokers", kafka.bootstrap, "--scenarios", "produce_acks0",
         "--clients", "confluent", "--duration", "0.3", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "Fire-and-forget produce" in proc.stdout
    [json_path] = tmp_path.glob("*.json")
    assert list(tmp_path.glob("*.png"))
    document = json.loads(json_path.read_text())
    assert document["machine"]["cores"] >= 1
    confluent = document["scenarios"]["produce_acks0"]["clients"]["confluent"]
    assert confluent["errors"] == []
    [run] = confluent["runs"]
    # Every produced record is accounted for by the broker's end offsets.
    assert run["figures"]["delivered"] == run["raw"]["calls"]
    assert confluent["median"]["call_rate"] > 0
    assert confluent["settings"]["acks"] == 0
    # the worker's peak resident set, reported for every run (librdkafka's threads and queues included)
    assert run["raw"]["peak_rss_kb"] > 10 * 1024 and confluent["median"]["peak_rss_mb"] > 10


def test_every_scenario_reports_peak_rss():
    assert all(s.metrics[-1] is PEAK_RSS_MB for s in all_scenarios(quick=False))


# What a run's settings record beside the configuration: versions, the API used, the bootstrap.
DESCRIPTIVE_SETTINGS = {"kafkaev", "confluent_kafka", "librdkafka", "aiokafka", "loop", "api", "bootstrap.servers",
                        "bootstrap_servers"}


def test_defaults_scenarios_run_each_client_at_its_own_defaults(kafka, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--brokers", kafka.bootstrap, "--scenarios", "defaults_100B",
         "--duration", "0.3", "--no-chart", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    [json_path] = tmp_path.glob("*.json")
    clients = json.loads(json_path.read_text())["scenarios"]["defaults_100B"]["clients"]
    assert set(clients) == {"kafkaev", "confluent", "aiokafka"}
    for label, client in clients.items():
        assert client["errors"] == [], label
        settings = {k: v for k, v in client["settings"].items() if k not in DESCRIPTIVE_SETTINGS}
        assert settings in ({"linger_ms": 5}, {"linger.ms": 5}), (label, settings)  # nothing but linger set
        assert client["median"]["msgs_per_s"] > 0 and client["median"]["peak_rss_mb"] > 10


def test_micro_benchmark_figures():
    from bench.run import derive
    from bench.spec import KIND_CONN, KIND_ENCODE

    encode = derive(KIND_ENCODE, RunResult(records=1000, cpu_s=0.001, elapsed_s=0.001), None)
    assert encode["records_per_s"] == 1e6 and encode["ns_per_record"] == 1000.0
    conn = derive(KIND_CONN, RunResult(records=500, elapsed_s=0.5, latency_us={"p50": 10.0}), None)
    assert conn == {"p50": 10.0, "requests_per_s": 1000.0}


def test_a_stall_is_records_in_a_row_all_late_and_a_lone_late_record_is_not():
    from bench.measure import STALL_MIN_US, stalls

    on_time, late = STALL_MIN_US / 10, STALL_MIN_US
    decaying = [STALL_MIN_US * 4, STALL_MIN_US * 3, STALL_MIN_US * 2, late]  # one pause, draining
    assert stalls([]) == (0, 0)
    assert stalls([on_time, late, on_time]) == (0, 0)
    assert stalls([on_time, *decaying, on_time, late, late]) == (2, 6)  # the second ends the run
    assert stalls([late - 1, late - 1]) == (0, 0)


def test_e2e_result_counts_stalls_in_send_order():
    from bench.measure import STALL_MIN_US, Section, e2e_result

    spec = RunSpec(client="kafkaev", kind="e2e", bootstrap="", topic="t", rate=1000, duration_s=1.0, warmup_s=0.0)
    section = Section()
    section.started = 0.0
    late_us, on_time_us = STALL_MIN_US * 2, 100.0
    # (received ns, latency us), listed in arrival order. The two late records were sent first,
    # one after the other, but a record sent after them arrives between them.
    sent_ns = [1_000_000, 2_000_000, 3_000_000, 4_000_000, 7_500_000]
    latencies = [late_us, late_us, on_time_us, on_time_us, on_time_us]
    samples = sorted(((s + int(lat * 1000), lat) for s, lat in zip(sent_ns, latencies, strict=True)),
                     key=lambda sample: sample[0])
    result = e2e_result(spec, section, samples, len(samples), 0, {})
    assert [lat for _now, lat in samples] == [on_time_us, on_time_us, late_us, on_time_us, late_us]
    assert (result.stalls, result.stalled_records) == (1, 2)
    assert result.records == 5 and result.failed == 0


@pytest.mark.parametrize("busy_poll_us", [0, 1000])
def test_conn_metadata_times_one_connection_sleeping_or_spinning(kafka, busy_poll_us):
    """conn_metadata's kafkaev side, at its default and as kafkaev[busy_poll]: the connection's
    loop spins only when asked to."""
    from bench.micro_runs import PIPELINED_PER_SEQUENTIAL, conn
    from bench.spec import KIND_CONN

    spec = RunSpec(client="kafkaev", kind=KIND_CONN, bootstrap=kafka.bootstrap, topic="", count=50,
                   busy_poll_us=busy_poll_us)
    result = conn(spec)
    assert result.records == 50 * PIPELINED_PER_SEQUENTIAL and result.elapsed_s > 0
    assert 0 < result.latency_us["p50"] <= result.latency_us["max"]
    assert result.settings["busy_poll_us"] == busy_poll_us
    assert (result.settings["busy_poll_turns"] > 0) == bool(busy_poll_us)


class _FakeLoop:
    class _Handle:
        def __init__(self) -> None:
            self.cancelled = False

        def cancel(self) -> None:
            self.cancelled = True

    def __init__(self) -> None:
        self.stopped = 0
        self.timers: list[tuple[float, object, _FakeLoop._Handle]] = []

    def call_later(self, delay, fn):
        handle = self._Handle()
        self.timers.append((delay, fn, handle))
        return handle

    def stop(self) -> None:
        self.stopped += 1


class _Msg:
    value = b"x" * 100


def test_kafkaev_consume_counts_like_the_peers():
    """The first delivery opens the clock and is not measured; the run ends once `count` records
    were delivered in all (first delivery included), exactly once."""
    from bench.clients.kafkaev_client import _ConsumeCounter

    spec = RunSpec(client="kafkaev", kind="consume", bootstrap="", topic="t", count=10, duration_s=5.0)
    loop = _FakeLoop()
    counter = _ConsumeCounter(spec, loop)
    counter.on_batch([_Msg()] * 4)  # first delivery: starts the clock and the time-cap timer
    assert counter.records == 0 and counter.delivered == 4 and loop.timers[0][0] == 5.0
    counter.on_batch([_Msg()] * 3)
    assert not counter.done
    counter.on_batch([_Msg()] * 3)
    assert counter.done and loop.stopped == 1 and loop.timers[0][2].cancelled
    assert counter.records == 6 and counter.bytes == 600
    counter.on_batch([_Msg()] * 3)  # late deliveries change nothing
    counter.finish()
    assert counter.records == 6 and loop.stopped == 1


def test_kafkaev_consume_time_cap_ends_a_short_topic():
    from bench.clients.kafkaev_client import _ConsumeCounter

    spec = RunSpec(client="kafkaev", kind="consume", bootstrap="", topic="t", count=1000, duration_s=2.0,
                   mode="message")
    loop = _FakeLoop()
    counter = _ConsumeCounter(spec, loop)
    for _ in range(5):
        counter.on_message(_Msg())
    [(delay, cap, _handle)] = loop.timers
    cap()  # the topic ran dry: the time cap fires
    assert counter.done and loop.stopped == 1 and counter.records == 4 and counter.delivered == 5


def test_produce_floor_sends_the_batch_kafkaev_would_build():
    """The ceiling writes the very bytes kafkaev's builder makes of a full batch in its runs."""
    from bench.clients.kafkaev_client import BATCH_SIZE
    from bench.floors.pipelined_produce import BATCH_SIZE as FLOOR_BATCH_SIZE
    from bench.floors.wire import full_record_batch
    from bench.measure import make_value
    from kafkaev.protocol.codec import RecordBatchBuilder

    assert FLOOR_BATCH_SIZE == BATCH_SIZE
    timestamp_ms = 1_764_500_000_000
    for size in (100, 10000):
        value = make_value(size)
        batch, count = full_record_batch(value, timestamp_ms, BATCH_SIZE)
        builder = RecordBatchBuilder(max_batch_size=BATCH_SIZE)
        while builder.append(timestamp_ms, None, value) >= 0:
            pass
        assert count == builder.record_count > 1
        assert batch == builder.build()


def test_every_pipelined_produce_scenario_has_the_ceiling():
    from bench.scenarios import all_scenarios

    for quick in (False, True):
        sized = [s for s in all_scenarios(quick=quick) if s.group == "size"]
        assert {s.params["value_size"] for s in sized} == {10, 100, 1000, 10000}
        for scenario in sized:
            assert scenario.entry("raw-socket").is_floor


def test_every_end_to_end_scenario_has_the_floor():
    for quick in (False, True):
        e2e = [s for s in all_scenarios(quick=quick) if s.kind == "e2e"]
        assert {s.params["rate"] for s in e2e} == {1_000, 10_000, 100_000}
        for scenario in e2e:
            assert scenario.entry("raw-socket").is_floor


def test_every_asyncio_produce_scenario_has_the_asyncio_floor_in_its_mode():
    from bench.scenarios import ASYNCIO_FLOOR
    from bench.spec import PRODUCE_AWAIT, PRODUCE_WINDOW

    for quick in (False, True):
        floor_modes = {}
        for scenario in all_scenarios(quick=quick):
            if scenario.group == "aio" and scenario.kind == "produce":
                (floor,) = [e for e in scenario.entries if e.client == ASYNCIO_FLOOR]
                (subject,) = [e for e in scenario.entries if scenario.is_subject(e)]
                assert floor.is_floor and floor.overrides["mode"] == subject.overrides["mode"]
                floor_modes[scenario.name] = floor.overrides["mode"]
        assert floor_modes == {"aio_produce_await": PRODUCE_AWAIT, "aio_produce_window": PRODUCE_WINDOW}


@pytest.mark.parametrize("mode", ["await", "window"])
def test_asyncio_floor_acknowledges_every_record_it_produces(mode):
    from bench.floors import await_step

    spec = RunSpec(client="asyncio-floor", kind="produce", bootstrap="", topic="", mode=mode,
                   duration_s=0.05, warmup_s=0.01)
    result = await_step.produce(spec)
    assert result.records > 0 and result.failed == 0


def test_end_to_end_floor_names_each_record_by_the_request_that_sent_it():
    from bench.floors.end_to_end_latency import SentLog

    log = SentLog()
    log.sent(3, 1_000)  # offsets 0-2
    log.sent(1, 2_000)  # offset 3
    log.sent(2, 3_000)  # offsets 4-5
    assert [log.sent_at(offset) for offset in range(6)] == [1_000] * 3 + [2_000] + [3_000] * 2


def _with_base_offset(batch: bytes, base_offset: int) -> bytes:
    return struct.pack(">q", base_offset) + batch[8:]  # the base offset is outside the CRC


def test_fetch_answer_reads_whole_batches_and_leaves_one_cut_short():
    from bench.floors.wire import fetch_answer, record_batches

    one, _, three = record_batches(b"v" * 10, 1_764_500_000_000, 3)
    records = _with_base_offset(three, 7) + _with_base_offset(one, 10) + _with_base_offset(three, 11)[:-5]
    topic = b"t"
    frame = (struct.pack(">iiih", 42, 0, 1, len(topic)) + topic
             + struct.pack(">iihqqi", 1, 0, 0, 14, 14, 1) + struct.pack(">qq", 5, 7)  # one aborted transaction
             + struct.pack(">i", len(records)) + records)
    assert fetch_answer(frame) == (0, [(7, 3), (10, 1)])
    empty = struct.pack(">iiih", 42, 0, 1, len(topic)) + topic + struct.pack(">iihqqii", 1, 0, 1, -1, -1, -1, -1)
    assert fetch_answer(empty) == (1, [])  # OFFSET_OUT_OF_RANGE, null aborted transactions and records


def test_end_to_end_floor_reads_back_every_record_once(kafka, topic):
    from bench.floors import e2e

    spec = RunSpec(client="raw-socket", kind="e2e", bootstrap=kafka.bootstrap, topic=topic, rate=2_000,
                   duration_s=0.3, warmup_s=0.1)
    result = e2e(spec)
    total = int(spec.rate * (spec.warmup_s + spec.duration_s))
    # failed counts records never fetched back; a record fetched twice would make it negative
    assert result.failed == 0 and result.note == f"received {total}/{total}"
    assert 0 < result.records <= total and result.elapsed_s > 0
    assert 0 < result.latency_us["p50"] <= result.latency_us["max"]


def test_end_to_end_floor_needs_acknowledgements():
    from bench.floors import e2e

    spec = RunSpec(client="raw-socket", kind="e2e", bootstrap="127.0.0.1:1", topic="t", acks=0, rate=1_000)
    with pytest.raises(ValueError, match="'acks'"):
        e2e(spec)


def test_produce_floor_counts_what_the_broker_holds(kafka, make_topic):
    from bench.broker import landed_records
    from bench.floors import produce

    partitions = 3
    topic = make_topic(partitions=partitions)
    spec = RunSpec(client="raw-socket", kind="produce", bootstrap=kafka.bootstrap, topic=topic, value_size=10000,
                   duration_s=0.3, warmup_s=0.1, partitions=partitions)
    result = produce(spec)
    per_batch = result.settings["records_per_batch"]
    assert result.records > 0 and result.records % per_batch == 0 and result.warmup_records % per_batch == 0
    assert result.failed == 0 and result.calls == result.records
    assert result.bytes == result.records * spec.value_size
    assert 0 < result.call_elapsed_s <= result.elapsed_s and result.cpu_s > 0
    assert result.settings["connections"] == partitions  # one socket per partition, as kafkaev's runs
    assert landed_records(kafka.bootstrap, topic, partitions) == result.warmup_records + result.records


def test_produce_floor_fails_the_run_on_a_broker_error(kafka, topic):
    from bench.floors.pipelined_produce import ProducePipeline
    from bench.floors.wire import connect, full_record_batch, produce_request

    batch, count = full_record_batch(b"v" * 1000, 1_764_500_000_000, 64 * 1024)
    corrupt = batch[:-1] + b"w"  # the last value byte changes, the CRC-32C no longer matches
    sock = connect(kafka.bootstrap)
    pipeline = ProducePipeline(sock, [produce_request(0, topic, 0, corrupt, 1)], count, 1)
    try:
        with pytest.raises(RuntimeError, match="partition 0 answered CORRUPT_MESSAGE"):
            pipeline.run_for(0.1)
    finally:
        pipeline.close()
        sock.close()


def test_produce_floor_gives_up_on_a_partition_without_a_leader(kafka, topic):
    from bench.floors.pipelined_produce import ProducePipeline
    from bench.floors.wire import connect, full_record_batch, produce_request

    batch, count = full_record_batch(b"v" * 100, 1_764_500_000_000, 1024)
    frames = [produce_request(partition, topic, partition, batch, 1) for partition in range(2)]  # 1 partition
    sock = connect(kafka.bootstrap)
    pipeline = ProducePipeline(sock, frames, count, 1)
    try:
        with pytest.raises(RuntimeError, match="partition 1 answered UNKNOWN_TOPIC_OR_PARTITION"):
            pipeline.wait_ready(0.2)
    finally:
        pipeline.close()
        sock.close()


def test_produce_floor_needs_acknowledgements():
    from bench.floors.pipelined_produce import produce

    spec = RunSpec(client="raw-socket", kind="produce", bootstrap="127.0.0.1:1", topic="t", acks=0)
    with pytest.raises(ValueError, match="'acks'"):
        produce(spec)


def test_transaction_timeline_stamps_every_stage_of_each_transaction(kafka):
    from bench.txn_timeline import run

    report = run(kafka.bootstrap, records=10, transactions=5)
    assert report.transactions == 5 and report.msgs_per_s > 0
    stages = (report.produce_ms, report.to_first_write_ms, report.flush_ms, report.end_txn_ms)
    assert all(stage > 0 for stage in stages)
    assert max(report.to_first_write_ms, report.flush_ms, report.end_txn_ms) < report.commit_ms
    # each transaction but the last has its markers asked about: told written, or left to the bound
    assert 0 <= report.bound_by_markers <= report.transactions - 1
    assert report.markers_ms > 0 or report.bound_by_markers == report.transactions - 1
    bound_ms = report.markers_ms + report.flush_ms + report.end_txn_ms
    assert report.broker_bound_msgs_per_s == pytest.approx(10 / (bound_ms / 1e3))


def test_eos_timeline_stamps_the_pipelines_steps_in_turn(kafka):
    from bench.eos_timeline import SKIPPED_FIRST, run

    report = run(kafka.bootstrap, records=3000, records_per_transaction=100)
    assert SKIPPED_FIRST < 3000 // 100
    assert report.transactions > 0 and report.msgs_per_s > 0
    stages = (report.produce_ms, report.offsets_ms, report.output_ms, report.end_txn_ms, report.cycle_ms)
    assert all(stage > 0 for stage in stages)
    # the two adds go one after the other, never at once
    assert report.adds_ms >= max(report.offsets_ms, report.output_ms)
    # each holds, transaction by transaction, for the stages inside one begin-to-begin cycle
    assert report.cycle_ms >= max(report.produce_ms, report.output_ms, report.end_txn_ms)
    # the group is added after the previous markers: no sooner than the offsets' own round trip
    assert report.group_added_ms >= report.offsets_ms
    bound_ms = report.group_added_ms + report.output_ms + report.end_txn_ms
    assert report.broker_bound_msgs_per_s == pytest.approx(100 / (bound_ms / 1e3))


def test_transactional_scenarios_run_for_every_client(kafka, tmp_path):
    """The transactional produce and EOS pipeline scenarios, each for kafkaev and both peers in
    one short run: every run reports msg/s and CPU per record, none fails."""
    from bench.scenarios import TXN_CLIENTS, TXN_SIZES

    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--brokers", kafka.bootstrap, "--scenarios",
         "txn_produce,eos_pipeline", "--clients", ",".join(TXN_CLIENTS), "--duration", "0.3", "--no-chart",
         "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    [json_path] = tmp_path.glob("*.json")
    scenarios = json.loads(json_path.read_text())["scenarios"]
    assert set(scenarios) == {f"txn_produce_{size}" for size in TXN_SIZES} | {"eos_pipeline"}
    for name, scenario in scenarios.items():
        assert set(scenario["clients"]) == set(TXN_CLIENTS), name
        for label, client in scenario["clients"].items():
            assert client["errors"] == [], (name, label, proc.stdout[-3000:])
            [run] = client["runs"]
            assert run["raw"]["records"] > 0 and run["raw"]["failed"] == 0, (name, label, run["raw"])
            assert client["median"]["msgs_per_s"] > 0 and client["median"]["cpu_us_per_record"] > 0, (name, label)
            if name.startswith("txn_produce"):  # whole transactions only
                assert run["raw"]["records"] % scenario["params"]["txn_records"] == 0, (name, label)
        assert set(scenario["ratios"]["msgs_per_s"]) == {"kafkaev/confluent", "kafkaev/aiokafka"}, name


def test_precompile_writes_bytecode_current_for_its_source_and_names_a_broken_package(tmp_path):
    for package in CHECKOUT_PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "module.py").write_text("VALUE = 1\n")
    precompile(tmp_path)
    for package in CHECKOUT_PACKAGES:
        source = tmp_path / package / "module.py"
        # What the import system checks before it uses a .pyc (PEP 552, timestamp-based).
        header = Path(importlib.util.cache_from_source(str(source))).read_bytes()[:16]
        magic, flags, mtime, size = header[:4], *struct.unpack("<III", header[4:])
        assert (magic, flags) == (importlib.util.MAGIC_NUMBER, 0), package
        assert (mtime, size) == (int(source.stat().st_mtime) & 0xFFFFFFFF, source.stat().st_size), package
    (tmp_path / CHECKOUT_PACKAGES[-1] / "broken.py").write_text("def (:\n")
    with pytest.raises(RuntimeError, match=CHECKOUT_PACKAGES[-1]):
        precompile(tmp_path)


def test_a_broker_that_keeps_deleted_topics_is_named_with_its_delay():
    from bench.broker import DELETE_DELAY_CONFIG, slow_deletion_warning

    assert slow_deletion_warning({1: 1000, 2: 500}, "h:1") is None  # as the embedded broker, or sooner
    warning = slow_deletion_warning({1: 60000, 2: 1000, 3: 90000}, "h:1")
    assert warning is not None
    assert f"{DELETE_DELAY_CONFIG} (broker 1: 60000 ms, broker 3: 90000 ms)" in warning
    commands = [line.strip() for line in warning.splitlines()[1:]]
    assert commands == [f"kafkaev configs alter -b h:1 --broker {node} --set {DELETE_DELAY_CONFIG}=1000"
                        for node in (1, 3)]


def test_each_broker_of_the_cluster_reports_its_deletion_delay(kafka):
    from bench.broker import ExistingCluster, deletion_delays

    cluster = ExistingCluster(kafka.bootstrap)
    try:
        delays = deletion_delays(cluster)
    finally:
        cluster.stop()
    assert set(delays) == set(kafka.metadata().brokers)
    assert all(delay >= 0 for delay in delays.values())


def test_a_listener_is_found_by_its_port_and_a_process_that_is_not_a_jvm_is_never_sent_jcmd():
    import os
    import socket

    from bench.broker_heap import BrokerHeap, listening_pids

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert listening_pids(port) == {os.getpid()}
        heap = BrokerHeap.of([("127.0.0.1", port)])
        assert heap.pids == () and "is not a JVM" in heap.describe()
    # jcmd's attach sends SIGQUIT, which would end this process: collect() checks first
    assert "no longer a JVM" in BrokerHeap((os.getpid(),), "jcmd").collect()
    assert "not on this machine (192.0.2.1:9092)" in BrokerHeap.of([("192.0.2.1", 9092)]).describe()


def test_latency_runs_start_with_the_local_brokers_heap_collected(kafka, tmp_path):
    from bench.broker_heap import BrokerHeap

    addresses = [(b.host, b.port) for b in kafka.metadata().brokers.values()]
    heap = BrokerHeap.of(addresses)
    if not heap.pids:
        pytest.skip(heap.describe())  # a broker of KAFKAEV_BROKERS elsewhere
    assert heap.collect() is None
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--brokers", kafka.bootstrap, "--scenarios", "roundtrip",
         "--clients", "raw-socket", "--no-chart", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert heap.describe() in proc.stdout and "not collected" not in proc.stdout
    [json_path] = tmp_path.glob("*.json")
    assert json.loads(json_path.read_text())["broker"]["heap_before_latency_runs"] == heap.describe()
