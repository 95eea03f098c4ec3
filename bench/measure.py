"""Clocks, CPU accounting, percentiles and value payloads shared by every client's scenarios."""

from __future__ import annotations

import math
import os
import random
import struct
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from bench.spec import RunResult, RunSpec

PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
)
# Latency histogram buckets: eighths of an octave (each bound 2**(1/8), ~9%, above the last) from
# 8 us over 18 octaves (~2 s), wide enough for every client and fine enough to draw a CDF from.
HISTOGRAM_FIRST_US = 8.0
HISTOGRAM_STEPS_PER_OCTAVE = 8
HISTOGRAM_BUCKETS = 18 * HISTOGRAM_STEPS_PER_OCTAVE + 1  # the last collects everything slower

# An e2e value starts with the producer's monotonic send time in nanoseconds.
SEND_TIME = struct.Struct(">q")
# A stall: at least STALL_MIN_RECORDS records in a row, by send time, each at least STALL_MIN_US
# late, i.e. nothing got through for that long: a broker GC pause, a descheduled vCPU, or a pause
# of the client's own (its GC). The raw floor's count in the same run is the broker's and the
# machine's share. A lone late record is not a stall.
STALL_MIN_US = 3000.0
STALL_MIN_RECORDS = 2


def cpu_seconds() -> float:
    """user+sys of this process so far, every thread included (librdkafka's and the JVM's too)."""
    t = os.times()
    return t.user + t.system


def child_cpu_seconds() -> float:
    """user+sys of waited-for child processes (the Java perf tools)."""
    t = os.times()
    return t.children_user + t.children_system


class Section:
    """Wall and CPU time of one measured section: ``with Section() as s: ...; s.elapsed, s.cpu``."""

    __slots__ = ("started", "cpu_started", "elapsed", "cpu")

    def __init__(self) -> None:
        self.started = 0.0
        self.cpu_started = 0.0
        self.elapsed = 0.0
        self.cpu = 0.0

    def __enter__(self) -> Section:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # For a section that starts and ends in callbacks (an event loop's), not around a block.
    def start(self) -> None:
        self.cpu_started = cpu_seconds()
        self.started = time.perf_counter()

    def stop(self) -> None:
        self.elapsed = time.perf_counter() - self.started
        self.cpu = cpu_seconds() - self.cpu_started


class HandledClock:
    """The handle scenario's clock, the same for every client: it starts at the first record
    handled (group join and the first fetch are not counted, nor is that record) and stops once
    ``count`` records were handled or ``cap_s`` after the start, whichever comes first. A
    handler calls ``handled()`` once per record; ``done`` tells its loop to stop."""

    __slots__ = ("count", "cap_s", "total", "started", "cpu_started", "elapsed", "cpu", "records", "done")

    def __init__(self, count: int, cap_s: float) -> None:
        self.count = count
        self.cap_s = cap_s
        self.total = 0
        self.started = 0.0
        self.cpu_started = 0.0
        self.elapsed = 0.0
        self.cpu = 0.0
        self.records = 0
        self.done = False

    def handled(self) -> None:
        self.total += 1
        if self.total == 1:
            self.started = time.perf_counter()
            self.cpu_started = cpu_seconds()
        elif self.total >= self.count or (self.total % 1000 == 0 and self.over_time()):
            self.finish()

    def over_time(self) -> bool:
        return bool(self.started) and time.perf_counter() - self.started > self.cap_s

    def finish(self) -> None:
        if self.done or not self.started:
            return
        self.elapsed = time.perf_counter() - self.started
        self.cpu = cpu_seconds() - self.cpu_started
        self.records = self.total - 1
        self.done = True

    def note(self) -> str:
        return "" if self.total >= self.count else f"stopped at {self.total}/{self.count} (time cap)"


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending sequence."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return float(sorted_values[rank - 1])


def summarize_latencies(latencies_us: list[float]) -> dict[str, float]:
    ordered = sorted(latencies_us)
    summary = {name: percentile(ordered, pct) for name, pct in PERCENTILES}
    if ordered:
        summary["min"] = ordered[0]
        summary["max"] = ordered[-1]
        summary["mean"] = sum(ordered) / len(ordered)
    return summary


def histogram(latencies_us: list[float]) -> list[tuple[float, int]]:
    """(upper bound in us, count) of every non-empty bucket, in order; the last bound, inf, holds
    everything slower than the buckets reach. The report draws each client's latency CDF from it."""
    counts = [0] * HISTOGRAM_BUCKETS
    for value in latencies_us:
        if value <= HISTOGRAM_FIRST_US:
            index = 0
        else:
            index = math.ceil(HISTOGRAM_STEPS_PER_OCTAVE * math.log2(value / HISTOGRAM_FIRST_US) - 1e-9)
        counts[min(index, HISTOGRAM_BUCKETS - 1)] += 1
    bounds = [HISTOGRAM_FIRST_US * 2 ** (i / HISTOGRAM_STEPS_PER_OCTAVE) for i in range(HISTOGRAM_BUCKETS - 1)]
    bounds.append(math.inf)
    return [(bound, count) for bound, count in zip(bounds, counts, strict=True) if count]


def make_value(size: int, seed: int = 7) -> bytes:
    """A JSON-looking payload of ``size`` bytes: compressible like real records, identical for every client."""
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        part = f'{{"id":{rng.randrange(10**9)},"user":"u{rng.randrange(5000)}","score":{rng.random():.4f}}}'
        parts.append(part)
        length += len(part)
    return "".join(parts).encode()[:size]


def record_keys(spec: RunSpec) -> list[bytes] | None:
    """The keys a produce run's records carry in turn (the same for every client), or None: keyless."""
    return [b"key-%d" % i for i in range(spec.keys)] if spec.keys else None


def stamp(value: bytes) -> bytes:
    """The e2e payload: the send time in front of ``value`` (same total size)."""
    return SEND_TIME.pack(time.perf_counter_ns()) + value[SEND_TIME.size:]


def latency_us_of(value: bytes, now_ns: int) -> float:
    return (now_ns - SEND_TIME.unpack_from(value)[0]) / 1000.0


class Stalls(NamedTuple):
    """An e2e run's stalls (see STALL_MIN_US) and the records they held."""

    count: int
    records: int


def stalls(latencies_in_send_order: Sequence[float]) -> Stalls:
    """The runs of STALL_MIN_RECORDS or more records in a row, each STALL_MIN_US or more late.
    At 1,000 msg/s one stall can make a run's p99.9 and max."""
    count = stalled = run = 0
    for latency in (*latencies_in_send_order, 0.0):  # the sentinel ends a run at the end
        if latency >= STALL_MIN_US:
            run += 1
            continue
        if run >= STALL_MIN_RECORDS:
            count += 1
            stalled += run
        run = 0
    return Stalls(count, stalled)


def e2e_result(spec: RunSpec, section: Section, samples: list[tuple[int, float]], total: int, failed: int,
               settings: dict[str, Any]) -> RunResult:
    """The end-to-end run's result: latencies of records sent after the warm-up, from the
    ``(received_ns, latency_us)`` samples; records never received count as failed."""
    measured_from = int((section.started + spec.warmup_s) * 1e9)
    by_send_time = sorted((now - lat * 1000, lat) for now, lat in samples)
    latencies = [lat for sent_ns, lat in by_send_time if sent_ns >= measured_from]
    stalled = stalls(latencies)
    return RunResult(
        records=len(latencies),
        failed=failed + (total - len(samples)),
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        latency_us=summarize_latencies(latencies),
        histogram=histogram(latencies),
        settings=settings,
        stalls=stalled.count,
        stalled_records=stalled.records,
        note=f"received {len(samples)}/{total}",
    )
