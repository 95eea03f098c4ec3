"""``python -m bench.aio_timeline``: where an awaited record's wall time goes in the asyncio
produce scenarios (``aio_produce_await``, ``aio_produce_window``).

It runs the scenario's own driver (``bench/aio_drive.py``) and settings over ``kafkaev.aio`` and
stamps, per Produce request: the first record of its batch, the request's write and its
acknowledgement, and the produce() calls that follow the acknowledgement (the woken tasks, or
the next window). Per cycle it reports the medians of:
records per request, requests in flight when one is written, the batch's wait before the write
(linger, or the loop busy with the woken tasks), the round trip, and the time from the
acknowledgement to the first and the last produce() call it allowed. The stamps cost CPU of
their own: its msg/s is not the scenario's figure::

    python -m bench.aio_timeline --brokers 127.0.0.1:9092 --mode await --linger-ms 5
"""

from __future__ import annotations

import argparse
import bisect
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvloop

import kafkaev.aio
from bench import aio_drive
from bench.clients.kafkaev_client import _throughput_settings
from bench.measure import make_value
from bench.spec import KIND_PRODUCE, PRODUCE_AWAIT, PRODUCE_WINDOW, RunSpec
from bench.stamping import replaced
from kafkaev.producer import BufferFullError, accumulator, sender

VALUE_SIZE = 100  # the scenarios' value size
ACKS = 1  # the scenarios' acks


@dataclass(slots=True)
class Stamps:
    batches: list[float] = field(default_factory=list)  # a batch opened (its first record)
    writes: list[tuple[float, int, int]] = field(default_factory=list)  # (time, records, in flight before)
    acks: list[float] = field(default_factory=list)
    produced: list[float] = field(default_factory=list)  # each produce() call


@contextmanager
def stamped(stamps: Stamps) -> Iterator[None]:
    """Wrap the sender's write and answer and the accumulator's new batch."""
    send_request, on_response = sender.Sender._send_request, sender.Sender._on_response
    new_batch = accumulator.Accumulator.new_batch

    def send_request_stamped(self: Any, conn: Any, batches: list[Any]) -> None:
        stamps.writes.append((time.perf_counter(), sum(b.record_count for b in batches), self.in_flight))
        send_request(self, conn, batches)

    def on_response_stamped(self: Any, batches: list[Any], resp: Any, err: Any) -> None:
        stamps.acks.append(time.perf_counter())
        on_response(self, batches, resp, err)

    def new_batch_stamped(self: Any, *args: Any, **kwargs: Any) -> Any:
        stamps.batches.append(time.perf_counter())
        return new_batch(self, *args, **kwargs)

    with replaced([
        (sender.Sender, "_send_request", send_request_stamped),
        (sender.Sender, "_on_response", on_response_stamped),
        (accumulator.Accumulator, "new_batch", new_batch_stamped),
    ]):
        yield


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.2f} ms" if values else "-"


def report(stamps: Stamps, records: int, elapsed_s: float, cpu_s: float) -> str:
    writes, acks, produced = stamps.writes, stamps.acks, stamps.produced
    write_times = [w[0] for w in writes]
    waits = []  # a batch's first record to its write
    for opened in stamps.batches:
        i = bisect.bisect_left(write_times, opened)
        if i < len(write_times):
            waits.append(write_times[i] - opened)
    round_trips = [ack - write_times[bisect.bisect_right(write_times, ack) - 1] for ack in acks
                   if bisect.bisect_right(write_times, ack) > 0]
    first_resume, last_resume = [], []
    for ack, next_ack in zip(acks, acks[1:], strict=False):
        j, k = bisect.bisect_left(produced, ack), bisect.bisect_left(produced, next_ack) - 1
        if j <= k:
            first_resume.append(produced[j] - ack)
            last_resume.append(produced[k] - ack)
    cycles = [b - a for a, b in zip(write_times, write_times[1:], strict=False)]
    return "\n".join([
        f"{records / elapsed_s / 1e3:.1f}K msg/s (stamped), {cpu_s / max(records, 1) * 1e6:.2f} us CPU/record, "
        f"{len(writes)} requests",
        f"  records per request      {statistics.median(w[1] for w in writes) if writes else 0:.0f}",
        f"  in flight at a write     {statistics.median(w[2] for w in writes) if writes else 0:.0f}",
        f"  first record -> write    {_ms(waits)}",
        f"  write -> ack             {_ms(round_trips)}",
        f"  ack -> first produce()   {_ms(first_resume)}",
        f"  ack -> last produce()    {_ms(last_resume)}",
        f"  write -> next write      {_ms(cycles)}",
    ])


async def run(bootstrap: str, mode: str, linger_ms: int, seconds: float) -> str:
    spec = RunSpec(client="kafkaev-aio", kind=KIND_PRODUCE, bootstrap=bootstrap,
                   topic=f"timeline-{uuid.uuid4().hex[:8]}", value_size=VALUE_SIZE, acks=ACKS, mode=mode)
    settings = {**_throughput_settings(spec), "linger_ms": linger_ms}
    stamps = Stamps()
    async with kafkaev.aio.Client(bootstrap, **settings) as client:
        await client.connect()
        topic, value = spec.topic, make_value(VALUE_SIZE)
        produce, produce_nowait, produced = client.produce, client.produce_nowait, stamps.produced

        def awaited() -> Any:
            produced.append(time.perf_counter())
            return produce(topic, None, value)

        def enqueue() -> Any:
            produced.append(time.perf_counter())
            return produce_nowait(topic, None, value)

        calls = aio_drive.AsyncProducerCalls(awaited=awaited, enqueue=enqueue, enqueue_is_async=False,
                                             flush=client.flush, buffer_full=BufferFullError,
                                             wait_for_room=client.wait_for_buffer_room)
        run_for = aio_drive._awaited_for if mode == PRODUCE_AWAIT else aio_drive._windows_for
        await run_for(calls, 1.0)  # warm up: topic created, connections open
        await client.flush()
        with stamped(stamps):
            started, cpu_started = time.perf_counter(), time.process_time()
            counts = await run_for(calls, seconds)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
            await client.flush()
    stamps.produced = [t for t in stamps.produced if t >= started]
    return f"{mode}, linger_ms={linger_ms}: " + report(stamps, counts.acked, elapsed, cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", required=True, help="bootstrap of a running cluster")
    parser.add_argument("--mode", choices=(PRODUCE_AWAIT, PRODUCE_WINDOW), default=PRODUCE_AWAIT)
    parser.add_argument("--linger-ms", type=int, default=5, help="the scenarios use 5")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    print(uvloop.run(run(args.brokers, args.mode, args.linger_ms, args.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
