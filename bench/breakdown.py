"""``python -m bench.breakdown``: where one record's microseconds go, stage by stage, above the
raw-socket floor.

Three paths, one record (or request) at a time, each timed by the client's own probes
(``kafkaev/protocol/probes.pyx``) between the caller's two timestamps:

- round trip: ``produce()`` to its acknowledgement's callback, linger 0;
- end to end: ``produce()`` to ``on_message`` in the same process, the next record produced
  once the previous one arrived (nothing else in flight, so every stage belongs to it);
- Metadata: one ``Connection.metadata`` request to its callback.

Beside them, in alternating rounds, the raw-socket floors: the same one-record Produce and the
same Metadata request sent pre-encoded over a blocking socket (``bench/floors``,
``bench/conn_latency.py``). The broker's and the kernel's share is the floor; what kafkaev adds
is the rest. The probes exist only in a probes build::

    KAFKAEV_PROBES=1 python setup.py build_ext --inplace --force
    python -m bench.breakdown --brokers 127.0.0.1:9092
    python setup.py build_ext --inplace --force     # back to the normal build

``--busy-poll-us N`` runs kafkaev's side with ``busy_poll_us=N`` (the bare Metadata connection
gets a ``BusyPoll`` of its own): the same stages with the loop spinning instead of sleeping
between the write and the answer.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvloop

from bench.broker import ExistingCluster
from bench.conn_latency import API_METADATA, RawClient, bare_connection, close_connection, requests_under_test
from bench.floors.wire import connect, produce_request, read_frame, record_batch
from bench.measure import make_value
from kafkaev.client import Client
from kafkaev.protocol import probes
from kafkaev.protocol.connection import Connection
from kafkaev.types import OFFSET_END

API_PRODUCE = 0
API_FETCH = 1
ANY_TAG = None
MARK_CAPACITY = 4_000_000
VALUE_SIZE = 100
WARMUP_FRACTION = 10  # the first 1/WARMUP_FRACTION of each round is not counted
E2E_GAP_S = 0.001  # end to end: the pause between one record's arrival and the next produce()
WAIT_TIMEOUT_S = 15.0
PHASE_US_PER_ITERATION = 20_000  # a phase's deadline grows by this much per iteration
# probes.pyx's stage numbers (its STAGE_NAMES, in order).
PRODUCE, ENCODE, WRITE, READ, FRAME, CALLBACK, DELIVER = range(7)


@dataclass(frozen=True, slots=True)
class Point:
    """One probe mark on a path: its stage, and the API key it must carry (ANY_TAG: any)."""

    label: str
    stage: int
    tag: int | None = ANY_TAG


@dataclass(frozen=True, slots=True)
class Path:
    name: str
    start: str  # what the caller's first timestamp is taken at
    points: tuple[Point, ...]
    end: str  # what the caller's last timestamp is taken at
    floor: str  # the raw-socket path it is compared with, or ""


# Both producing paths start alike: the record's request on its way out.
PRODUCE_SENT = (
    Point("produce() entered", PRODUCE),
    Point("Produce encoded", ENCODE, API_PRODUCE),
    Point("Produce written", WRITE, API_PRODUCE),
)
ROUNDTRIP = Path("round trip", "before produce()", (
    *PRODUCE_SENT,
    Point("answer read", READ, API_PRODUCE),
    Point("answer framed", FRAME, API_PRODUCE),
    Point("answer decoded", CALLBACK, API_PRODUCE),
), "ack callback", "raw Produce round trip")
E2E = Path("end to end", "before produce()", (
    *PRODUCE_SENT,
    Point("Fetch answer read", READ, API_FETCH),
    Point("Fetch answer framed", FRAME, API_FETCH),
    Point("Fetch answer decoded", CALLBACK, API_FETCH),
    Point("on_message called", DELIVER),
), "inside on_message", "")
METADATA = Path("Metadata", "before metadata()", (
    Point("Metadata encoded", ENCODE, API_METADATA),
    Point("Metadata written", WRITE, API_METADATA),
    Point("answer read", READ, API_METADATA),
    Point("answer framed", FRAME, API_METADATA),
    Point("answer decoded", CALLBACK, API_METADATA),
), "callback", "raw Metadata round trip")


@dataclass(slots=True)
class Samples:
    """One path's caller timestamps (start, end) per iteration, and the floor's latencies."""

    windows: list[tuple[int, int]] = field(default_factory=list)
    floor_us: list[float] = field(default_factory=list)


def _match(path: Path, marks: Sequence[tuple[int, int, int]], start: int, end: int) -> list[int] | None:
    """The path's points inside [start, end], each the latest mark of its kind before the next
    point: [start, point..., end] in ns, or None when a point is missing."""
    times = [end]
    upper = end
    index = len(marks) - 1
    for point in reversed(path.points):
        while index >= 0 and (marks[index][2] > upper or marks[index][0] != point.stage
                              or (point.tag is not None and marks[index][1] != point.tag)):
            if marks[index][2] < start:
                return None
            index -= 1
        if index < 0 or marks[index][2] < start:
            return None
        upper = marks[index][2]
        times.append(upper)
    times.append(start)
    return times[::-1]


async def _wait(future: asyncio.Future[Any]) -> Any:
    return await asyncio.wait_for(future, WAIT_TIMEOUT_S)


def _phase_timeout(count: int) -> Any:
    """One deadline for a whole phase: a wait_for per iteration would time the bench's own
    task and timer set-up between produce() and the write."""
    return asyncio.timeout(WAIT_TIMEOUT_S + count * PHASE_US_PER_ITERATION / 1e6)


async def _kafkaev_roundtrips(client: Client, topic: str, count: int, samples: Samples) -> None:
    loop = asyncio.get_running_loop()
    value = make_value(VALUE_SIZE)
    for i in range(count):
        done = loop.create_future()

        def acked(_meta: Any, err: Any, done: asyncio.Future[Any] = done) -> None:
            done.set_result((time.perf_counter_ns(), err))

        started = time.perf_counter_ns()
        client.produce(topic, None, value, acked)
        ended, err = await done
        if err is not None:
            raise err
        if i >= count // WARMUP_FRACTION:
            samples.windows.append((started, ended))


async def _kafkaev_e2e(client: Client, arrivals: list[asyncio.Future[int]], topic: str, count: int,
                       samples: Samples) -> None:
    loop = asyncio.get_running_loop()
    value = make_value(VALUE_SIZE)
    for i in range(count):
        arrived = loop.create_future()
        arrivals.append(arrived)
        started = time.perf_counter_ns()
        client.produce(topic, None, value)
        ended = await arrived
        if i >= count // WARMUP_FRACTION:
            samples.windows.append((started, ended))
        await asyncio.sleep(E2E_GAP_S)


async def _kafkaev_metadata(conn: Connection, topic: str, count: int, samples: Samples) -> None:
    loop = asyncio.get_running_loop()
    for i in range(count):
        done = loop.create_future()

        def answered(_resp: Any, err: Any, done: asyncio.Future[Any] = done) -> None:
            done.set_result((time.perf_counter_ns(), err))

        started = time.perf_counter_ns()
        conn.metadata([topic], answered, allow_auto_topic_creation=False)
        ended, err = await done
        if err is not None:
            raise err
        if i >= count // WARMUP_FRACTION:
            samples.windows.append((started, ended))


def _raw_produce(bootstrap: str, topic: str, count: int) -> list[float]:
    sock = connect(bootstrap)
    reader = sock.makefile("rb")
    batch = record_batch(make_value(VALUE_SIZE), int(time.time() * 1000))
    latencies = []
    try:
        for i in range(count):
            request = produce_request(i, topic, 0, batch, 1)
            started = time.perf_counter_ns()
            sock.sendall(request)
            read_frame(reader)
            if i >= count // WARMUP_FRACTION:
                latencies.append((time.perf_counter_ns() - started) / 1000.0)
    finally:
        reader.close()
        sock.close()
    return latencies


def _raw_metadata(host: str, port: int, frame: bytes, count: int) -> list[float]:
    raw = RawClient(host, port)
    try:
        latencies = raw.sequential(frame, count)
    finally:
        raw.close()
    return latencies[count // WARMUP_FRACTION:]


async def _measure(bootstrap: str, topic: str, e2e_topic: str, count: int, rounds: int,
                   busy_poll_us: int) -> tuple[dict[str, Samples], list[tuple[int, int, int]]]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    loop = asyncio.get_running_loop()
    results = {path.name: Samples() for path in (ROUNDTRIP, E2E, METADATA)}
    arrivals: list[asyncio.Future[int]] = []

    def on_message(_msg: Any) -> None:
        now = time.perf_counter_ns()
        while arrivals:
            arrived = arrivals.pop(0)
            if not arrived.done():
                arrived.set_result(now)
                return

    producer = Client(bootstrap, loop=loop, linger_ms=0, acks=1, busy_poll_us=busy_poll_us)
    consumer = Client(bootstrap, loop=loop, linger_ms=0, acks=1, busy_poll_us=busy_poll_us, on_message=on_message)
    # The end-to-end path has a topic of its own: the round trips' records would wake the
    # consumer in the middle of the next round trip.
    consumer.assign([(e2e_topic, 0, OFFSET_END)])
    consumer.start()
    conn = bare_connection(loop, busy_poll_us)
    ready = loop.create_future()
    conn.connect(host, int(port), cb=lambda _c, e: ready.set_result(e))
    if (err := await _wait(ready)) is not None:
        raise err
    [(_name, _key, _issue, frame_of)] = [r for r in requests_under_test(topic) if r[1] == API_METADATA]
    metadata_frame = frame_of(conn.version_for(API_METADATA))
    async with _phase_timeout(count):  # connect, warm up
        await _kafkaev_roundtrips(producer, topic, count // WARMUP_FRACTION + 1, Samples())
    await asyncio.sleep(0.5)  # the consumer's first Fetch is waiting at the broker
    probes.enable(MARK_CAPACITY)
    try:
        for _ in range(rounds):
            results[ROUNDTRIP.name].floor_us += _raw_produce(bootstrap, topic, count)
            async with _phase_timeout(count):
                await _kafkaev_roundtrips(producer, topic, count, results[ROUNDTRIP.name])
            async with _phase_timeout(count):
                await _kafkaev_e2e(producer, arrivals, e2e_topic, count, results[E2E.name])
            results[METADATA.name].floor_us += _raw_metadata(host, int(port), metadata_frame, count)
            async with _phase_timeout(count):
                await _kafkaev_metadata(conn, topic, count, results[METADATA.name])
        marks = probes.marks()
        if probes.dropped():
            print(f"note: {probes.dropped()} marks past the capacity were dropped", file=sys.stderr)
    finally:
        close_connection(conn)
        for client in (producer, consumer):
            closed = loop.create_future()
            client.close(lambda e, closed=closed: closed.done() or closed.set_result(e))
            await _wait(closed)
    return results, marks


@dataclass(slots=True)
class Breakdown:
    """One path's per-stage medians (µs from the previous point), total and floor medians."""

    path: Path
    stages: list[tuple[str, float, float]]  # label, median µs, p90 µs
    total_us: float
    floor_us: float
    matched: int
    iterations: int


def breakdown(path: Path, samples: Samples, marks: list[tuple[int, int, int]]) -> Breakdown:
    stamps = [t[2] for t in marks]
    deltas: list[list[float]] = [[] for _ in range(len(path.points) + 1)]
    totals = []
    matched = 0
    for start, end in samples.windows:
        lo, hi = bisect.bisect_left(stamps, start), bisect.bisect_right(stamps, end)
        times = _match(path, marks[lo:hi], start, end)
        if times is None:
            continue
        matched += 1
        totals.append((end - start) / 1000.0)
        for i in range(len(times) - 1):
            deltas[i].append((times[i + 1] - times[i]) / 1000.0)
    labels = [p.label for p in path.points] + [path.end]
    stages = [(label, _median(values), _p90(values)) for label, values in zip(labels, deltas, strict=True)]
    return Breakdown(path, stages, _median(totals), _median(samples.floor_us) if samples.floor_us else 0.0,
                     matched, len(samples.windows))


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _p90(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def render(item: Breakdown, out: Callable[[str], object] = print) -> None:
    path = item.path
    out(f"{path.name}: {item.matched}/{item.iterations} iterations matched every probe; medians, µs")
    out(f"  {'from ' + path.start:<34} {'p50':>8} {'p90':>8}")
    for label, median, p90 in item.stages:
        out(f"  {'-> ' + label:<34} {median:8.1f} {p90:8.1f}")
    out(f"  {'total':<34} {item.total_us:8.1f}")
    if path.floor:
        out(f"  {path.floor + ' (floor)':<34} {item.floor_us:8.1f}")
        out(f"  {'above the floor':<34} {item.total_us - item.floor_us:8.1f}  "
            f"({item.total_us / item.floor_us:.2f}x)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", required=True, help="bootstrap of a running single-node cluster")
    parser.add_argument("--count", type=int, default=2000, help="iterations per path per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating kafkaev and the floors")
    parser.add_argument("--busy-poll-us", type=int, default=0,
                        help="kafkaev's busy_poll_us (0: its default, the loop sleeps between socket events)")
    args = parser.parse_args(argv)
    if not probes.compiled():
        print("this build has no probes: KAFKAEV_PROBES=1 python setup.py build_ext --inplace --force",
              file=sys.stderr)
        return 2
    cluster = ExistingCluster(args.brokers)
    topic, e2e_topic = (cluster.create_topic(f"bench-breakdown-{uuid.uuid4().hex[:8]}", partitions=1)
                        for _ in range(2))
    try:
        results, marks = uvloop.run(_measure(args.brokers, topic, e2e_topic, args.count, args.rounds,
                                                  args.busy_poll_us))
    finally:
        cluster.delete_topic(topic)
        cluster.delete_topic(e2e_topic)
    for path in (ROUNDTRIP, E2E, METADATA):
        render(breakdown(path, results[path.name], marks))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
