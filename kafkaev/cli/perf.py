"""``kafkaev perf produce|consume|e2e``: throughput and latency histograms, like Kafka's perf tools."""

from __future__ import annotations

import argparse
import asyncio
import os
import struct
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkaev.client import Client

from kafkaev.cli.common import CliError, add_brokers, new_client, require_topic, wait
from kafkaev.errors import KafkaError
from kafkaev.types import OFFSET_BEGINNING

SEND_TIME = struct.Struct(">q")  # e2e payloads start with the send time (ns)
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
HISTOGRAM_FIRST_US = 16
HISTOGRAM_BUCKETS = 16
E2E_DRAIN_TIMEOUT_S = 30.0  # how long e2e waits for the last records after producing them


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("perf", help="measure produce/consume throughput and latency")
    modes = parser.add_subparsers(dest="mode", required=True, metavar="MODE")
    produce = modes.add_parser("produce", help="produce N records, report msg/s, MB/s and ack latency")
    consume = modes.add_parser("consume", help="consume N records from the beginning, report msg/s and MB/s")
    e2e = modes.add_parser("e2e", help="produce at a rate and consume in the same process: end-to-end latency")
    for sub in (produce, consume, e2e):
        sub.add_argument("topic")
        sub.add_argument("-n", "--count", type=int, default=100000, help="records (default 100000)")
        add_brokers(sub)
    for sub in (produce, e2e):
        sub.add_argument("-s", "--size", type=int, default=100, help="value size in bytes (default 100)")
        sub.add_argument("-r", "--rate", type=int, default=0, help="records per second, 0 = max (default)")
        sub.add_argument("--acks", type=int, choices=[-1, 0, 1], default=1)
        sub.add_argument("-z", "--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none")
        sub.add_argument("--linger-ms", type=float, default=5.0)


def _histogram(latencies_us: list[float]) -> list[str]:
    ordered = sorted(latencies_us)
    if not ordered:
        return ["no samples"]
    lines = ["latency us: " + "  ".join(
        f"p{p:g} {ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]:.0f}" for p in PERCENTILES)
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


def _pace(loop: Any, rate: int, started: float, sent: int) -> None:
    if rate > 0:
        ahead = sent / rate - (time.perf_counter() - started)
        if ahead > 0.001:
            loop.run_until_complete(_sleep(loop, ahead))


async def _sleep(loop: Any, seconds: float) -> None:
    await asyncio.sleep(seconds)


def _flush(client: Client) -> None:
    wait(client.loop, lambda done: client.flush(lambda err: done(None, err)), "flush")


def run(args: argparse.Namespace) -> int:
    if args.count < 1:
        raise CliError(f"--count must be >= 1, got {args.count}")
    if getattr(args, "size", 8) < SEND_TIME.size and args.mode == "e2e":
        raise CliError(f"--size must be >= {SEND_TIME.size} for e2e")
    try:
        return {"produce": _produce, "consume": _consume, "e2e": _e2e}[args.mode](args)
    except KafkaError as exc:
        raise CliError(str(exc)) from None


def _produce(args: argparse.Namespace) -> int:
    client = new_client(args.brokers, acks=args.acks, compression=args.compression, linger_ms=args.linger_ms)
    loop = client.loop
    wait(loop, client.connect, "connect")
    value = os.urandom(args.size)
    latencies: list[float] = []
    failures: list[KafkaError] = []

    def make_cb(sent_ns: int) -> Any:
        def cb(_meta: Any, err: KafkaError | None) -> None:
            if err is not None:
                failures.append(err)
            else:
                latencies.append((time.perf_counter_ns() - sent_ns) / 1000)
        return cb

    started = time.perf_counter()
    cpu = os.times()
    for i in range(args.count):
        client.produce(args.topic, None, value, make_cb(time.perf_counter_ns()))
        if i % 1000 == 999:
            loop.run_until_complete(_sleep(loop, 0))  # let the loop send
            _pace(loop, args.rate, started, i + 1)
    _flush(client)
    elapsed = time.perf_counter() - started
    cpu_s = sum(os.times()[:2]) - sum(cpu[:2])
    wait(loop, lambda done: client.close(lambda err: done(None, None)), "close")
    acked = len(latencies) if args.acks != 0 else args.count - len(failures)
    print(f"{acked} records acked in {elapsed:.2f}s: {acked / elapsed:,.0f} msg/s, "
          f"{acked * args.size / elapsed / 1e6:.1f} MB/s, {cpu_s * 1e6 / max(1, acked):.2f} us CPU/record")
    print("\n".join(_histogram(latencies)))
    if failures:
        raise CliError(f"{len(failures)} records failed: {failures[0]}")
    return 0


def _consume(args: argparse.Namespace) -> int:
    state = {"seen": 0, "bytes": 0}
    client: Client

    def on_batch(messages: list[Any]) -> None:
        state["seen"] += len(messages)
        state["bytes"] += sum(len(m.value or b"") for m in messages)
        if state["seen"] >= args.count:
            client.loop.stop()

    client = new_client(args.brokers, on_batch=on_batch)
    loop = client.loop
    wait(loop, client.connect, "connect")
    require_topic(client, args.topic)
    ends = wait(loop, lambda done: client.offsets_for(args.topic, done), f"offsets of {args.topic}")
    available = sum(latest - earliest for earliest, latest in ends.values())
    if available < args.count:
        raise CliError(f"{args.topic} holds {available} records, fewer than --count {args.count}")
    client.assign([(args.topic, p, OFFSET_BEGINNING) for p in ends])
    started = time.perf_counter()
    cpu = os.times()
    client.start()
    loop.run_forever()
    elapsed = time.perf_counter() - started
    cpu_s = sum(os.times()[:2]) - sum(cpu[:2])
    client.stop()
    wait(loop, lambda done: client.close(lambda err: done(None, None)), "close")
    seen = state["seen"]
    print(f"{seen} records in {elapsed:.2f}s: {seen / elapsed:,.0f} msg/s, {state['bytes'] / elapsed / 1e6:.1f} MB/s, "
          f"{cpu_s * 1e6 / max(1, seen):.2f} us CPU/record")
    return 0


def _e2e(args: argparse.Namespace) -> int:
    latencies: list[float] = []
    client: Client
    all_received: Any = None  # a future, set once every record came back

    def on_message(msg: Any) -> None:
        latencies.append((time.perf_counter_ns() - SEND_TIME.unpack_from(msg.value)[0]) / 1000)
        if len(latencies) >= args.count and not all_received.done():
            all_received.set_result(None)

    client = new_client(args.brokers, acks=args.acks, compression=args.compression, linger_ms=args.linger_ms,
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
    rate = args.rate or 10000
    padding = os.urandom(args.size - SEND_TIME.size)
    started = time.perf_counter()
    for i in range(args.count):
        client.produce(args.topic, None, SEND_TIME.pack(time.perf_counter_ns()) + padding)
        _pace(loop, rate, started, i + 1)
    _flush(client)
    try:
        loop.run_until_complete(asyncio.wait_for(asyncio.shield(all_received), E2E_DRAIN_TIMEOUT_S))
    except asyncio.TimeoutError:
        pass  # reported below as "n of count records consumed"
    client.stop()
    wait(loop, lambda done: client.close(lambda err: done(None, None)), "close")
    print(f"{len(latencies)} of {args.count} records consumed at {rate} msg/s offered")
    print("\n".join(_histogram(latencies)))
    return 0
