"""Batches, the single linger timer and buffer memory (no broker)."""

from __future__ import annotations

import asyncio
import pickle
import struct
import time

import pytest

from kafkaev.config import ClientConfig
from kafkaev.producer.accumulator import (
    BATCH_FIRST_STEP,
    BATCH_MIN_FIRST_STEP,
    CONNECTION_PIPELINE_DEPTH,
    HOLD_MAX_S,
    LOW_LATENCY_PIPELINE_DEPTH,
    SPARE_BUILDERS_MAX,
    Accumulator,
    BufferFullError,
    PartitionState,
    ProducerBatch,
)
from kafkaev.producer.held import ALL_LANES
from kafkaev.protocol.codec import BATCH_HEADER_SIZE, EncodedBatch, RecordBatchBuilder, read_records

HEADER = struct.Struct(">qiiBIhiqqqhii")  # RecordBatch v2 header, 61 bytes


class FakeBuilder:
    """Stands in for codec.RecordBatchBuilder: same append/count/build/finish contract."""

    def __init__(self, compression, capacity):
        self.capacity = capacity
        self.records = []
        self.size = HEADER.size

    @property
    def record_count(self):
        return len(self.records)

    def append(self, ts, key, value, headers):
        for name, item in (("key", key), ("value", value)):
            if item is not None and not isinstance(item, (bytes, str)):
                raise TypeError(f"append: '{name}' must be bytes-like, str or None")
        n = 20 + len(key or b"") + len(value or b"")
        if self.records and self.size + n > self.capacity:
            return -1
        self.size += n
        self.records.append((ts, key, value, headers))
        return len(self.records) - 1

    def build(self, base_offset=0, partition_leader_epoch=-1, producer_id=-1, producer_epoch=-1, base_sequence=-1):
        body = pickle.dumps(self.records)
        head = HEADER.pack(0, 49 + len(body), 0, 2, 0, 0, len(self.records) - 1, 0, 0,
                           producer_id, producer_epoch, base_sequence, len(self.records))
        return head + body

    def finish(self, **stamp):
        data = EncodedBatch(self.build(**stamp))
        self.records = []
        self.size = HEADER.size
        return data


@pytest.fixture
def loop(new_loop):
    return new_loop("asyncio")  # guarded (conftest.py); these tests do not depend on the loop kind


def make(loop, **options):
    ready = []
    acc = Accumulator(ClientConfig(**options), loop, lambda: ready.append(loop.time()), FakeBuilder)
    tstate = acc.add_topic("t")
    tstate.update([(1, 0)] * 4)
    return acc, tstate, ready


def put_in_flight(part: PartitionState, count: int) -> None:
    """``count`` batches of ``part`` sent and not answered yet."""
    for i in range(count):
        part.queue.append(ProducerBatch(-1 - i, part, FakeBuilder(0, 100), 0.0, 0.0))
        part.queue.send_head()


def answer_all(part: PartitionState) -> None:
    for batch in part.queue.in_flight:
        part.queue.answered(batch)


class SharedConnection:
    """The sender's answers for partitions that all send on one connection with ``out``
    requests out; counts how often each is asked."""

    KEY = (1, 0)

    def __init__(self, out: int) -> None:
        self.out = out
        self.placed: list[PartitionState] = []
        self.counted = 0

    def connection_of(self, part: PartitionState) -> tuple[int, int]:
        self.placed.append(part)
        return self.KEY

    def requests_out(self, connection: tuple[int, int]) -> int:
        # a small lingered batch also asks for its leader's small requests: here on its one connection
        assert connection in (self.KEY, (self.KEY[0], ALL_LANES))
        self.counted += 1
        return self.out


def drop_queued(part: PartitionState) -> None:
    while part.queue:
        part.queue.drop_head()


def test_linger_closes_batches_with_one_timer(loop):
    acc, tstate, ready = make(loop, linger_ms=30)
    for p in range(4):
        acc.new_batch(tstate.parts[p], 10).builder.append(0, None, b"v", None)
    handles = {id(acc._linger_timer)}
    for p in range(4):
        assert tstate.parts[p].batch is not None
    loop.run_until_complete(asyncio.sleep(0.06))
    assert len(handles) == 1 and len(ready) == 1  # one timer, one wake-up for all four
    assert all(part.batch is None and len(part.queue) == 1 for part in tstate.parts)
    assert set(acc.ready) == set(tstate.parts)


@pytest.mark.parametrize("linger_ms", [0, 5])
def test_only_linger_0_closes_open_batches_before_the_turn_ends(loop, linger_ms):
    acc, tstate, ready = make(loop, linger_ms=linger_ms)
    acc.count_requests_with(SharedConnection(0))
    part = tstate.parts[0]
    acc.new_batch(part, 10).builder.append(0, None, b"v", None)
    acc.close_unlingered()  # the sender, after an answer's callbacks
    closed = linger_ms == 0
    assert (part.batch is None) == closed and len(part.queue) == closed
    loop.run_until_complete(asyncio.sleep(0))
    assert ready == []  # the caller sends in its own round: no second wake-up from the linger turn
    assert (part.batch is None) == closed


def test_young_batches_keep_lingering(loop):
    acc, tstate, ready = make(loop, linger_ms=50)
    acc.new_batch(tstate.parts[0], 10).builder.append(0, None, b"v", None)
    loop.run_until_complete(asyncio.sleep(0.03))
    acc.new_batch(tstate.parts[1], 10).builder.append(0, None, b"v", None)
    loop.run_until_complete(asyncio.sleep(0.03))
    assert tstate.parts[0].batch is None and tstate.parts[1].batch is not None
    loop.run_until_complete(asyncio.sleep(0.04))
    assert tstate.parts[1].batch is None and len(ready) == 2


def test_buffer_memory_reserved_and_released(loop):
    acc, tstate, _ = make(loop, buffer_memory=40000, batch_size=16384, linger_ms=1000)
    a = acc.new_batch(tstate.parts[0], 10)  # a whole first step: open batches stay under half the budget
    b = acc.new_batch(tstate.parts[1], 10)  # another would pass half: the least step
    assert (a.reserved, b.reserved) == (16384, BATCH_MIN_FIRST_STEP) and acc.incomplete == 2
    almost_all = acc.budget.limit - acc.budget.reserved - BATCH_MIN_FIRST_STEP + 1
    assert acc.budget.hold(almost_all)
    with pytest.raises(BufferFullError, match="buffer_memory"):
        acc.new_batch(tstate.parts[2], 10)
    acc.budget.unhold(almost_all, 1)
    big = 39000
    acc.release(a)
    with pytest.raises(BufferFullError):
        acc.new_batch(tstate.parts[2], big)  # a large record reserves its own size
    acc.release(b)
    c = acc.new_batch(tstate.parts[2], big)
    assert c.reserved >= big and acc.budget.reserved == c.reserved


def test_empty_batch_is_released_not_sent(loop):
    acc, tstate, _ = make(loop)
    batch = acc.new_batch(tstate.parts[0], 10)
    acc.close_batch(batch)
    assert acc.budget.reserved == 0 and acc.incomplete == 0 and not acc.ready


def test_requeue_keeps_sequence_order(loop):
    acc, tstate, _ = make(loop, linger_ms=1000)
    part = tstate.parts[0]
    batches = []
    for _ in range(4):
        b = acc.new_batch(part, 10)
        b.builder.append(0, None, b"v", None)
        acc.close_batch(b)
        batches.append(b)
    drop_queued(part)
    for b in (batches[2], batches[0], batches[3], batches[1]):
        acc.requeue(b)
    assert list(part.queue) == batches


def test_split_halves_take_their_originals_place_at_any_depth(loop):
    # A batch refused as too large is split in two; a half refused again is split again while
    # its sibling waits in the queue. Every half must land where its original stood.
    acc = Accumulator(ClientConfig(batch_size=1 << 20, linger_ms=1000), loop, lambda: None)  # real builders
    tstate = acc.add_topic("t")
    tstate.update([(1, 0)])
    part = tstate.parts[0]
    first = acc.new_batch(part, 8 * 5100)  # opened big enough for the eight records
    for i in range(8):
        assert first.builder.append(0, None, b"%d" % i + b"." * 5000, None) >= 0  # referenced values, too
    acc.close_batch(first)
    second = acc.new_batch(part, 10)
    second.builder.append(0, None, b"8", None)
    acc.close_batch(second)

    def send_and_refuse():  # the queue's head goes out, is refused as too large, and is split
        batch = part.queue.drop_head()
        batch.data = batch.builder.finish()
        acc.split(batch)

    def queued_values():
        out = []
        for b in part.queue:
            data = b.data if b.data is not None else b.builder.build()
            out += [m.value[:1] for m in read_records("t", 0, bytes(data)).messages]
        return out

    send_and_refuse()
    assert [b.order for b in part.queue] == [(first.id, 0), (first.id, 1), (second.id,)]
    send_and_refuse()
    send_and_refuse()
    assert [b.order for b in part.queue] == [
        (first.id, 0, 0, 0), (first.id, 0, 0, 1), (first.id, 0, 1), (first.id, 1), (second.id,)]
    assert queued_values() == [b"%d" % i for i in range(9)]
    assert [b.split for b in part.queue] == [True, True, True, True, False]


def test_built_builders_are_reused_empty(loop):
    acc = Accumulator(ClientConfig(batch_size=16384, linger_ms=1000), loop, lambda: None)  # real builders
    tstate = acc.add_topic("t")
    tstate.update([(1, 0)] * 2)
    first = acc.new_batch(tstate.parts[0], 10)
    first.builder.append(0, None, b"v", None)
    built = first.builder
    acc.recycle(built)
    acc.close_batch(first)
    again = acc.new_batch(tstate.parts[1], 10)
    assert again.builder is built and again.builder.record_count == 0
    big = acc.new_batch(tstate.parts[0], 20000)  # its own size: a fresh builder, never kept
    assert big.builder is not built
    acc.recycle(big.builder)
    for _ in range(SPARE_BUILDERS_MAX + 2):
        acc.recycle(RecordBatchBuilder(0, 16384))
    assert len(acc.batches.spare_builders) == SPARE_BUILDERS_MAX
    assert all(b.max_batch_size == 16384 for b in acc.batches.spare_builders)


def test_new_batches_take_the_least_step_once_open_batches_hold_half_the_budget(loop):
    acc, tstate, _ = make(loop, buffer_memory=4 * BATCH_FIRST_STEP, linger_ms=1000)
    parts = tstate.parts
    assert acc.budget.hold(2 * BATCH_FIRST_STEP)  # half of the budget, taken by no open batch
    first = acc.new_batch(parts[0], 10)
    assert first.reserved == BATCH_FIRST_STEP
    acc.budget.unhold(2 * BATCH_FIRST_STEP, 1)
    assert acc.new_batch(parts[1], 10).reserved == BATCH_FIRST_STEP  # open: two steps of four
    assert acc.new_batch(parts[2], 10).reserved == BATCH_MIN_FIRST_STEP
    assert acc.new_batch(parts[3], 5000).reserved == 5000 + BATCH_HEADER_SIZE  # its record's size
    for part in parts[:2]:
        assert part.batch is not None
        part.batch.builder.append(0, None, b"v", None)
        acc.close_batch(part.batch)  # queued, no longer open
    assert acc.new_batch(parts[0], 10).reserved == BATCH_FIRST_STEP


def test_stand_in_builders_are_not_recycled(loop):
    acc, tstate, _ = make(loop)
    batch = acc.new_batch(tstate.parts[0], 10)
    acc.recycle(batch.builder)
    assert acc.new_batch(tstate.parts[1], 10).builder is not batch.builder


@pytest.mark.parametrize(("linger_ms", "sends_at"), [(0, LOW_LATENCY_PIPELINE_DEPTH), (5, 5)])
def test_lingered_batch_waits_while_its_partition_has_enough_requests_out(loop, linger_ms, sends_at):
    # linger_ms=0 pipelines at most LOW_LATENCY_PIPELINE_DEPTH small requests per partition;
    # otherwise the lingered batch may go out up to max_in_flight
    acc, tstate, ready = make(loop, linger_ms=linger_ms, max_in_flight=5)
    part = tstate.parts[0]
    for in_flight in range(6):
        put_in_flight(part, in_flight)
        batch = acc.new_batch(part, 10)
        batch.builder.append(0, None, b"v", None)
        loop.run_until_complete(asyncio.sleep(linger_ms / 1000 + 0.02))
        if in_flight < sends_at:
            assert part.batch is None and list(part.queue) == [batch], in_flight
        else:
            assert part.batch is batch and part in acc.held, in_flight  # keeps taking records
            answer_all(part)
            acc.close_held()  # an answer came back: the sender asks again
            assert part.batch is None and list(part.queue) == [batch]
        answer_all(part)
        drop_queued(part)
        assert not acc.ready


@pytest.mark.parametrize("linger_ms", [0, 5])
def test_lingered_batches_wait_while_their_connection_has_enough_requests_out(loop, linger_ms):
    # Four partitions share one connection and none has a request of its own out: the
    # connection's requests hold their lingered batches open, and they keep taking records
    acc, tstate, ready = make(loop, linger_ms=linger_ms, max_in_flight=5)
    connection = SharedConnection(CONNECTION_PIPELINE_DEPTH)
    acc.count_requests_with(connection)
    batches = [acc.new_batch(part, 10) for part in tstate.parts]
    for batch in batches:
        batch.builder.append(0, None, b"v", None)
    loop.run_until_complete(asyncio.sleep(linger_ms / 1000 + 0.02))
    # each partition's connection is asked for, the connection's requests out once per pass
    assert connection.placed == tstate.parts and connection.counted == 1
    assert all(part.batch is batch and part in acc.held for part, batch in zip(tstate.parts, batches, strict=True))
    assert ready == [] and not acc.ready
    batches[0].builder.append(0, None, b"later", None)  # still open: it takes the next record
    acc.close_held()  # the sender asks before each round; the connection is still busy
    assert all(part.batch is not None for part in tstate.parts)
    assert connection.counted == 2 and len(connection.placed) == 4  # asked once; no partition looked at
    connection.out = CONNECTION_PIPELINE_DEPTH - 1  # an answer came back
    acc.close_held()
    assert not acc.held and all(part.batch is None and list(part.queue) == [batch]
                                for part, batch in zip(tstate.parts, batches, strict=True))
    assert batches[0].record_count == 2


class LeaderConnections:
    """One connection per leader, with the requests out set per leader."""

    def __init__(self, out: dict[int, int]) -> None:
        self.out = out

    def connection_of(self, part: PartitionState) -> tuple[int, int]:
        return (part.leader, 0)

    def requests_out(self, connection: tuple[int, int]) -> int:
        return self.out.get(connection[0], 0)


@pytest.mark.parametrize("stale", [False, True])
def test_a_held_batch_goes_once_it_waited_the_longest_hold_though_its_connection_stays_busy(loop, stale):
    # Other partitions' full batches (never held) may keep a connection busy for good: a
    # lingered batch waits for it HOLD_MAX_S at most, and then goes with the next round
    acc, tstate, ready = make(loop, linger_ms=5)
    acc.count_requests_with(SharedConnection(CONNECTION_PIPELINE_DEPTH))  # busy throughout
    first, later = tstate.parts[0], tstate.parts[1]
    acc.new_batch(first, 10).builder.append(0, None, b"v", None)
    loop.run_until_complete(asyncio.sleep(0.06))
    acc.new_batch(later, 10).builder.append(0, None, b"v", None)
    loop.run_until_complete(asyncio.sleep(0.02))  # held ~0.05 s after the first
    assert first in acc.held and later in acc.held
    if stale:
        acc.connections_moved()  # the pass that files every partition again keeps the bound too
    acc.close_held()
    assert first in acc.held and later in acc.held  # both still within their wait
    loop.run_until_complete(asyncio.sleep(HOLD_MAX_S - 0.05))  # past the first's wait, not the later's
    if stale:
        acc.connections_moved()
    acc.close_held()
    assert first not in acc.held and first.batch is None and len(first.queue) == 1
    assert later in acc.held and later.batch is not None
    loop.run_until_complete(asyncio.sleep(0.06))
    acc.close_held()
    assert not acc.held and later.batch is None and len(later.queue) == 1


class TwoLanes:
    """Leader 1's produce connections: partition p sends on lane p % 2, with ``out[lane]``
    requests out, each carrying small batches only (what ``ALL_LANES`` counts)."""

    def __init__(self, out: dict[int, int]) -> None:
        self.out = out

    def connection_of(self, part: PartitionState) -> tuple[int, int]:
        return (1, part.partition % 2)

    def requests_out(self, connection: tuple[int, int]) -> int:
        leader, lane = connection
        return sum(self.out.values()) if lane == ALL_LANES else self.out[lane]


@pytest.mark.parametrize("linger_ms", [0, 5])
def test_a_small_lingered_batch_waits_while_its_leader_has_enough_requests_out_over_its_lanes(loop, linger_ms):
    # Neither lane is busy, the leader's small requests are: a batch within its first step waits
    # (at linger_ms > 0), one that grew past it goes on its lane
    acc, tstate, ready = make(loop, linger_ms=linger_ms, max_in_flight=5)
    lanes = TwoLanes({0: CONNECTION_PIPELINE_DEPTH - 1, 1: CONNECTION_PIPELINE_DEPTH - 1})
    acc.count_requests_with(lanes)
    small_part, grown_part = tstate.parts[0], tstate.parts[1]
    small = acc.new_batch(small_part, 10)
    grown = acc.new_batch(grown_part, BATCH_FIRST_STEP + 1)
    assert small.reserved <= BATCH_FIRST_STEP < grown.reserved
    for batch in (small, grown):
        batch.builder.append(0, None, b"v", None)
    loop.run_until_complete(asyncio.sleep(linger_ms / 1000 + 0.02))
    assert grown_part.batch is None and list(grown_part.queue) == [grown]
    if not linger_ms:
        assert small_part.batch is None and list(small_part.queue) == [small]
        return
    assert small_part.batch is small and small_part in acc.held and not small_part.queue
    acc.close_held()  # still busy: it keeps waiting
    assert small_part in acc.held
    lanes.out[1] = 0  # an answer came back on the other lane: the leader has room
    acc.close_held()
    assert small_part not in acc.held and list(small_part.queue) == [small]


def test_held_partitions_wait_on_the_connection_of_their_new_leader_once_told_it_moved(loop):
    acc, tstate, ready = make(loop, linger_ms=5)
    acc.count_requests_with(LeaderConnections({1: CONNECTION_PIPELINE_DEPTH}))  # leader 1 busy, 2 idle
    batches = [acc.new_batch(part, 10) for part in tstate.parts]
    for batch in batches:
        batch.builder.append(0, None, b"v", None)
    loop.run_until_complete(asyncio.sleep(0.03))
    assert all(part in acc.held for part in tstate.parts)
    tstate.update([(2, 1), (1, 0), (2, 1), (1, 0)])  # partitions 0 and 2 move to the idle leader
    acc.close_held()
    assert all(part in acc.held for part in tstate.parts)  # filed under leader 1 until told
    acc.connections_moved()
    acc.close_held()
    moved, stayed = tstate.parts[0::2], tstate.parts[1::2]
    assert all(part not in acc.held and list(part.queue) == [batches[part.partition]] for part in moved)
    assert all(part in acc.held and part.batch is batches[part.partition] for part in stayed)
    acc.close_held()
    assert all(part in acc.held for part in stayed)  # still filed under their busy leader


def test_a_full_batch_is_queued_whatever_its_connection_has_out(loop):
    acc, tstate, _ = make(loop, linger_ms=5)
    acc.count_requests_with(SharedConnection(100))
    part = tstate.parts[0]
    batch = acc.new_batch(part, 10)
    batch.builder.append(0, None, b"v", None)
    acc.close_batch(batch)  # as produce() does when the next record does not fit
    assert list(part.queue) == [batch] and part in acc.ready


def test_room_waiters_are_called_once_when_a_batch_fits_again(loop):
    acc, tstate, _ = make(loop, buffer_memory=40000, batch_size=16384, linger_ms=1000)
    a = acc.new_batch(tstate.parts[0], 10)
    b = acc.new_batch(tstate.parts[1], 10)
    assert acc.budget.hold(10000)  # a waiting record's bytes count: 16384 + 1024 + 10000 of 40000
    calls: list[str] = []
    acc.when_room(lambda: calls.append("first"))
    acc.when_room(lambda: calls.append("second"))
    loop.run_until_complete(asyncio.sleep(0))
    assert calls == []  # no room for a whole first step
    acc.release(a)
    assert calls == []  # woken at the next turn of the loop, not inside the release
    loop.run_until_complete(asyncio.sleep(0))
    assert calls == ["first", "second"]
    acc.release(b)
    loop.run_until_complete(asyncio.sleep(0))
    assert calls == ["first", "second"]  # once each


def test_room_waiter_called_at_the_next_turn_when_there_is_room(loop):
    acc, _tstate, _ = make(loop, buffer_memory=40000, batch_size=16384)
    calls: list[int] = []
    acc.when_room(lambda: calls.append(1))
    assert calls == []
    loop.run_until_complete(asyncio.sleep(0))
    assert calls == [1]


def test_records_waiting_for_metadata_take_room_from_batches(loop):
    acc, tstate, _ = make(loop, buffer_memory=40000, batch_size=16384, linger_ms=1000)
    assert acc.budget.hold(40000 - BATCH_MIN_FIRST_STEP + 1)
    with pytest.raises(BufferFullError, match="buffer_memory"):
        acc.new_batch(tstate.parts[0], 10)
    acc.budget.unhold(40000 - BATCH_MIN_FIRST_STEP + 1, 1)
    acc.new_batch(tstate.parts[0], 10)


# A loop turn kept busy after a batch opened (1,000 woken producers take ~5 ms), and a margin
# for a loaded machine: the linger must end once the turn is over, not a whole linger after it.
BUSY_TURN_S = 0.08
LINGER_MS = 40
LATE_MARGIN_S = 0.03


def test_linger_ends_on_time_after_a_busy_turn(new_loop):
    """On uvloop, libuv reads its clock when a timer starts and not again before it polls: a
    linger timer started early in a long turn waited its whole delay after the turn's end."""
    loop = new_loop("uvloop")
    acc, tstate, ready = make(loop, linger_ms=LINGER_MS)
    opened: list[float] = []

    def open_then_stay_busy() -> None:
        opened.append(loop.time())
        acc.new_batch(tstate.parts[0], 10).builder.append(0, None, b"v", None)
        time.sleep(BUSY_TURN_S)  # the rest of the turn: other callbacks

    async def main() -> None:
        loop.call_soon(open_then_stay_busy)  # the last callback of its turn: no timer starts after it
        await asyncio.sleep(BUSY_TURN_S + 2 * LINGER_MS / 1000)

    loop.run_until_complete(main())
    assert len(ready) == 1
    assert ready[0] - opened[0] < BUSY_TURN_S + LATE_MARGIN_S  # not BUSY_TURN_S + the linger
