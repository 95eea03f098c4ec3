"""``kafkaev perf produce|consume|e2e``: throughput and latency histograms, like Kafka's perf tools.

While it runs, a progress line (records, msg/s, MB/s, p50/p99 latency of the last interval,
time left) is redrawn in place when the output is a terminal, and printed as plain lines
otherwise; ``--json`` writes the raw figures of the run as one JSON document (the progress
then goes to stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkaev.client import Client

from kafkaev.cli.common import (
    CliError,
    UsageError,
    add_brokers,
    new_client,
    produce_when_room,
    require_topic,
    wait,
)
from kafkaev.errors import KafkaError
from kafkaev.types import OFFSET_BEGINNING

SEND_TIME = struct.Struct(">q")  # e2e payloads start with the send time (ns)
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
LIVE_PERCENTILES = (50.0, 99.0)
HISTOGRAM_FIRST_US = 16
HISTOGRAM_BUCKETS = 16
E2E_DRAIN_TIMEOUT_S = 30.0  # how long e2e waits for the last records after producing them
E2E_DEFAULT_RATE = 10000
PROGRESS_INTERVAL_S = 1.0
YIELD_EVERY = 1000  # records produced between turns of the loop (sends, acks, progress)
PACE_TICKS_PER_S = 100  # a paced run (--rate) sends in this many steps a second, not in bursts
CLEAR_LINE = "\r\x1b[K"  # back to the line's start, erase it: the live line is redrawn in place
MB = 1e6
US_PER_S = 1e6


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("perf", help="measure produce/consume throughput and latency")
    modes = parser.add_subparsers(dest="mode", required=True, metavar="MODE")
    produce = modes.add_parser("produce", help="produce N records, report msg/s, MB/s and ack latency")
    consume = modes.add_parser("consume", help="consume N records from the beginning, report msg/s and MB/s")
    e2e = modes.add_parser("e2e", help="produce at a rate and consume in the same process: end-to-end latency")
    for sub in (produce, consume, e2e):
        sub.add_argument("topic")
        sub.add_argument("-n", "--count", type=int, default=100000, help="records (default 100000)")
        sub.add_argument("--json", action="store_true",
                         help="write the run's raw figures as one JSON document on stdout (progress on stderr)")
        sub.add_argument("--interval", type=float, default=PROGRESS_INTERVAL_S, metavar="SECONDS",
                         help=f"how often the progress is shown (default {PROGRESS_INTERVAL_S:g}); redrawn in "
                              "place on a terminal, a plain line each time otherwise")
        add_brokers(sub)
    for sub in (produce, e2e):
        sub.add_argument("-s", "--size", type=int, default=100, help="value size in bytes (default 100)")
        sub.add_argument("-r", "--rate", type=int, default=0,
                         help=f"records per second, 0 = max (default; e2e: {E2E_DEFAULT_RATE})")
        sub.add_argument("--acks", type=int, choices=[-1, 0, 1], default=1)
        sub.add_argument("-z", "--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none")
        sub.add_argument("--linger-ms", type=float, default=5.0)


def _percentile(ordered: list[float], pct: float) -> float:
    return ordered[min(len(ordered) - 1, int(pct / 100 * len(ordered)))]


def _histogram(latencies_us: list[float]) -> list[str]:
    ordered = sorted(latencies_us)
    if not ordered:
        return ["no samples"]
    lines = ["latency us: " + "  ".join(f"p{p:g} {_percentile(ordered, p):.0f}" for p in PERCENTILES)
             + f"  max {ordered[-1]:.0f}"]
    counts = [0] * HISTOGRAM_BUCKETS
    for value in ordered:
        bucket = 0
        while bucket < HISTOGRAM_BUCKETS - 1 and value > HISTOGRAM_FIRST_US << bucket:
            bucket += 1
        counts[bucket] += 1
    peak = max(counts)
    for bucket, count in enumerate(counts):
        if count:
            bound = f"<= {HISTOGRAM_FIRST_US << bucket}" if bucket < HISTOGRAM_BUCKETS - 1 else "slower"
            lines.append(f"  {bound:>10} us {count:9d} {'#' * max(1, 50 * count // peak)}")
    return lines


@dataclass(slots=True)
class Meter:
    """What a run has done so far: the one count every report reads."""

    total: int
    done: int = 0  # records acknowledged (produce) or received (consume, e2e)
    bytes: int = 0  # value bytes of those
    latencies_us: list[float] = field(default_factory=list)
    failures: list[KafkaError] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)

    def restart(self) -> None:
        self.started = time.perf_counter()


@dataclass(slots=True)
class Figures:
    """The raw figures ``--json`` writes."""

    mode: str
    topic: str
    records: int
    bytes: int
    elapsed_s: float
    cpu_s: float
    records_per_s: float
    mb_per_s: float
    cpu_us_per_record: float
    failures: int
    value_size: int | None = None
    offered_rate: int | None = None  # e2e: records per second offered
    latency_us: dict[str, float] | None = None  # p50 p90 p99 p99.9 max, None without samples
    latency_samples: int = 0


class Progress:
    """The live line: records done of the total, msg/s and MB/s of the last interval, p50/p99 of
    the latencies measured in it, and the time left at the run's average rate so far."""

    def __init__(self, loop: asyncio.AbstractEventLoop, meter: Meter, stream: IO[str], interval: float) -> None:
        self.loop = loop
        self.meter = meter
        self.stream = stream
        self.interval = interval
        self.live = stream.isatty()
        self.handle: asyncio.TimerHandle | None = None
        self.last_time = meter.started
        self.last_done = 0
        self.last_bytes = 0
        self.last_sample = 0
        self.drawn = False

    def start(self) -> None:
        self.last_time = self.meter.started
        self.handle = self.loop.call_later(self.interval, self._tick)

    def _tick(self) -> None:
        self.show()
        self.handle = self.loop.call_later(self.interval, self._tick)

    def line(self) -> str:
        m = self.meter
        now = time.perf_counter()
        span = max(now - self.last_time, 1e-9)
        rate = (m.done - self.last_done) / span
        mb = (m.bytes - self.last_bytes) / span / MB
        recent = sorted(m.latencies_us[self.last_sample:])
        self.last_time, self.last_done, self.last_bytes, self.last_sample = now, m.done, m.bytes, len(m.latencies_us)
        text = f"{m.done:,}/{m.total:,} records  {rate:,.0f} msg/s  {mb:.2f} MB/s"
        if recent:
            text += "".join(f"  p{p:g} {_percentile(recent, p):,.0f} us" for p in LIVE_PERCENTILES)
        average = m.done / max(now - m.started, 1e-9)
        left = (m.total - m.done) / average if average > 0 else float("inf")
        return text + (f"  {left:,.1f} s left" if left != float("inf") else "  time left unknown")

    def show(self) -> None:
        text = self.line()
        if self.live:
            self.stream.write(CLEAR_LINE + text)
            self.drawn = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None
        if self.drawn:  # the report replaces the live line
            self.stream.write(CLEAR_LINE)
            self.stream.flush()
            self.drawn = False


def run(args: argparse.Namespace) -> int:
    if args.count < 1:
        raise UsageError(f"--count must be >= 1, got {args.count}")
    if args.interval <= 0:
        raise UsageError(f"--interval must be > 0, got {args.interval:g}")
    if args.mode != "consume":
        if args.size < 0:
            raise UsageError(f"--size must be >= 0, got {args.size}")
        if args.rate < 0:
            raise UsageError(f"--rate must be >= 0 (0: as fast as it goes), got {args.rate}")
    if args.mode == "e2e" and args.size < SEND_TIME.size:
        raise UsageError(f"--size must be >= {SEND_TIME.size} for e2e")
    try:
        return {"produce": _produce, "consume": _consume, "e2e": _e2e}[args.mode](args)
    except KafkaError as exc:
        raise CliError(str(exc)) from None


def _pace(loop: Any, rate: int, started: float, sent: int) -> None:
    if rate > 0:
        ahead = sent / rate - (time.perf_counter() - started)
        if ahead > 0.001:
            loop.run_until_complete(asyncio.sleep(ahead))


def _flush(client: Client) -> None:
    wait(client.loop, lambda done: client.flush(lambda err: done(None, err)), "flush")


def _close(client: Client) -> None:
    wait(client.loop, lambda done: client.close(lambda err: done(None, None)), "close")


def _progress(args: argparse.Namespace, client: Client, meter: Meter) -> Progress:
    return Progress(client.loop, meter, sys.stderr if args.json else sys.stdout, args.interval)


def _finish(args: argparse.Namespace, client: Client, meter: Meter, progress: Progress, cpu_started: float, *,
            consuming: bool) -> Figures:
    """The measured section is over: its figures, with the client stopped (``consuming``) and closed."""
    elapsed = time.perf_counter() - meter.started
    cpu_s = _cpu() - cpu_started
    progress.stop()
    if consuming:
        client.stop()
    _close(client)
    return _figures(args, meter, elapsed, cpu_s)


def _figures(args: argparse.Namespace, meter: Meter, elapsed: float, cpu_s: float) -> Figures:
    ordered = sorted(meter.latencies_us)
    latency = None
    if ordered:
        latency = {f"p{p:g}": _percentile(ordered, p) for p in PERCENTILES} | {"max": ordered[-1]}
    return Figures(mode=args.mode, topic=args.topic, records=meter.done, bytes=meter.bytes,
                   elapsed_s=elapsed, cpu_s=cpu_s, records_per_s=meter.done / elapsed,
                   mb_per_s=meter.bytes / elapsed / MB, cpu_us_per_record=cpu_s * US_PER_S / max(1, meter.done),
                   failures=len(meter.failures), value_size=getattr(args, "size", None),
                   offered_rate=(args.rate or E2E_DEFAULT_RATE) if args.mode == "e2e" else None,
                   latency_us=latency, latency_samples=len(ordered))


def _report(args: argparse.Namespace, figures: Figures, text: list[str]) -> None:
    if args.json:
        print(json.dumps(asdict(figures)))
    else:
        print("\n".join(text))


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _produce(args: argparse.Namespace) -> int:
    client = new_client(args, acks=args.acks, compression=args.compression, linger_ms=args.linger_ms)
    loop = client.loop
    wait(loop, client.connect, "connect")
    value = os.urandom(args.size)
    meter = Meter(args.count)

    def make_cb(sent_ns: int) -> Any:
        def cb(_meta: Any, err: KafkaError | None) -> None:
            if err is not None:
                meter.failures.append(err)
                return
            meter.done += 1
            meter.bytes += args.size
            if args.acks != 0:
                meter.latencies_us.append((time.perf_counter_ns() - sent_ns) / 1000)
        return cb

    progress = _progress(args, client, meter)
    cpu = _cpu()
    meter.restart()
    progress.start()
    # Unpaced, the loop turns every YIELD_EVERY records; paced, every step of the rate, so the
    # records go out evenly rather than YIELD_EVERY at a time.
    step = YIELD_EVERY if args.rate <= 0 else max(1, min(YIELD_EVERY, args.rate // PACE_TICKS_PER_S))
    for i in range(args.count):
        produce_when_room(client, args.topic, None, value, make_cb(time.perf_counter_ns()))
        if i % step == step - 1:
            loop.run_until_complete(asyncio.sleep(0))  # let the loop send
            _pace(loop, args.rate, meter.started, i + 1)
    _flush(client)
    figures = _finish(args, client, meter, progress, cpu, consuming=False)
    _report(args, figures, [
        f"{meter.done} records acked in {figures.elapsed_s:.2f}s: {figures.records_per_s:,.0f} msg/s, "
        f"{figures.mb_per_s:.1f} MB/s, {figures.cpu_us_per_record:.2f} us CPU/record",
        *_histogram(meter.latencies_us)])
    if meter.failures:
        raise CliError(f"{len(meter.failures)} records failed: {meter.failures[0]}")
    return 0


def _consume(args: argparse.Namespace) -> int:
    meter = Meter(args.count)
    client: Client

    def on_batch(messages: list[Any]) -> None:
        meter.done += len(messages)
        meter.bytes += sum(len(m.value or b"") for m in messages)
        if meter.done >= args.count:
            client.loop.stop()

    client = new_client(args, on_batch=on_batch)
    loop = client.loop
    wait(loop, client.connect, "connect")
    require_topic(client, args.topic)
    ends = wait(loop, lambda done: client.offsets_for(args.topic, done), f"offsets of {args.topic}")
    available = sum(latest - earliest for earliest, latest in ends.values())
    if available < args.count:
        raise CliError(f"{args.topic} holds {available} records, fewer than --count {args.count}")
    client.assign([(args.topic, p, OFFSET_BEGINNING) for p in ends])
    progress = _progress(args, client, meter)
    cpu = _cpu()
    meter.restart()
    progress.start()
    client.start()
    loop.run_forever()
    figures = _finish(args, client, meter, progress, cpu, consuming=True)
    _report(args, figures, [
        f"{meter.done} records in {figures.elapsed_s:.2f}s: {figures.records_per_s:,.0f} msg/s, "
        f"{figures.mb_per_s:.1f} MB/s, {figures.cpu_us_per_record:.2f} us CPU/record"])
    return 0


def _e2e(args: argparse.Namespace) -> int:
    meter = Meter(args.count)
    client: Client
    all_received: Any = None  # a future, set once every record came back

    def on_message(msg: Any) -> None:
        meter.latencies_us.append((time.perf_counter_ns() - SEND_TIME.unpack_from(msg.value)[0]) / 1000)
        meter.done += 1
        meter.bytes += len(msg.value)
        if meter.done >= args.count and not all_received.done():
            all_received.set_result(None)

    client = new_client(args, acks=args.acks, compression=args.compression, linger_ms=args.linger_ms,
                        on_message=on_message, fetch_max_wait_ms=100)
    loop = client.loop
    all_received = loop.create_future()
    wait(loop, client.connect, "connect")
    require_topic(client, args.topic)
    ends = wait(loop, lambda done: client.offsets_for(args.topic, done), f"offsets of {args.topic}")
    # the end offsets as of now, not OFFSET_END: records produced before the consumer's own
    # position lookup answers must be read too
    client.assign([(args.topic, p, latest) for p, (_earliest, latest) in ends.items()])
    client.start()
    rate = args.rate or E2E_DEFAULT_RATE
    padding = os.urandom(args.size - SEND_TIME.size)
    progress = _progress(args, client, meter)
    cpu = _cpu()
    meter.restart()
    progress.start()
    for i in range(args.count):
        produce_when_room(client, args.topic, None, SEND_TIME.pack(time.perf_counter_ns()) + padding)
        _pace(loop, rate, meter.started, i + 1)
    _flush(client)
    try:
        loop.run_until_complete(asyncio.wait_for(asyncio.shield(all_received), E2E_DRAIN_TIMEOUT_S))
    except asyncio.TimeoutError:
        pass  # reported below as "n of count records consumed"
    figures = _finish(args, client, meter, progress, cpu, consuming=True)
    _report(args, figures, [f"{meter.done} of {args.count} records consumed at {rate} msg/s offered",
                            *_histogram(meter.latencies_us)])
    return 0
