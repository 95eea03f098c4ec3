"""RecordBuffer (kafkaev.aio's pull side): positions move as records are taken, never when they
are buffered; stale sets are dropped; the byte bound stops and restarts fetching."""

from __future__ import annotations

from kafkaev.consumer.buffer import MESSAGE_OBJECT_ALLOWANCE, BufferedRecords, RecordBuffer
from kafkaev.consumer.subscription import SubscriptionState
from kafkaev.errors import CORRUPT_MESSAGE, KafkaError
from kafkaev.protocol.codec import Message
from kafkaev.types import TopicPartition

TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)
SET_BYTES = 1000


class Harness:
    def __init__(self, limit: int = 10 * SET_BYTES) -> None:
        self.subscription = SubscriptionState()
        self.settled: list[tuple[TopicPartition, int]] = []
        self.room_calls = 0
        self.buffer = RecordBuffer(self.subscription, limit, self.settle, self.room)
        for tp in (TP0, TP1):
            self.subscription.add(tp).seek(0)

    def settle(self, records: BufferedRecords) -> None:
        records.state.position = records.next_offset
        self.settled.append((records.state.tp, records.next_offset))

    def room(self) -> None:
        self.room_calls += 1

    def put(self, tp: TopicPartition, first: int, count: int, *, end: int | None = None,
            error: KafkaError | None = None) -> None:
        state = self.subscription.get(tp)
        assert state is not None
        messages = [Message(tp.topic, tp.partition, o, None, b"v", leader_epoch=3) for o in range(first, first + count)]
        self.buffer.put(BufferedRecords(state, state.generation, messages, first + count if end is None else end,
                                        3, error, SET_BYTES))

    def position(self, tp: TopicPartition) -> int:
        """What commit() and position() see (ConsumerContext.delivered): the buffer's count of
        records pulled one by one, else state.position."""
        state = self.subscription.get(tp)
        assert state is not None
        pulled = self.buffer.delivered(state)
        return state.position if pulled is None else pulled[0]


def test_position_moves_when_records_are_taken_not_when_buffered():
    h = Harness()
    h.put(TP0, 0, 3, end=5)  # offsets 3 and 4: control records
    assert h.position(TP0) == 0
    assert h.buffer.take_one().offset == 0
    assert h.position(TP0) == 1
    assert h.buffer.take_one().offset == 1
    assert h.buffer.take_one().offset == 2
    assert h.position(TP0) == 5  # the set was taken whole: its fetch end, past the control records
    assert h.settled == [(TP0, 5)]


def test_take_one_pauses_once_at_the_end_of_each_set():
    h = Harness()
    h.put(TP0, 0, 2)
    h.put(TP1, 0, 1)
    taken = [h.buffer.take_one() for _ in range(5)]
    assert [None if m is None else (m.partition, m.offset) for m in taken] == [(0, 0), (0, 1), None, (1, 0), None]


def test_take_slices_across_sets_by_partition():
    h = Harness()
    h.put(TP0, 0, 4)
    h.put(TP1, 0, 4)
    h.put(TP0, 4, 4)
    first = h.buffer.take(6)
    assert {tp: [m.offset for m in ms] for tp, ms in first.items()} == {TP0: [0, 1, 2, 3], TP1: [0, 1]}
    assert (h.position(TP0), h.position(TP1)) == (4, 2)
    rest = h.buffer.take(100)
    assert {tp: [m.offset for m in ms] for tp, ms in rest.items()} == {TP1: [2, 3], TP0: [4, 5, 6, 7]}
    assert h.buffer.take(100) == {} and not h.buffer.ready()


def test_sets_of_a_seeked_or_revoked_partition_are_dropped():
    h = Harness()
    h.put(TP0, 0, 3)
    h.put(TP1, 0, 3)
    state0 = h.subscription.get(TP0)
    assert state0 is not None
    state0.seek(100)  # generation moves
    h.subscription.remove([TP1])
    assert h.buffer.take(100) == {}
    assert h.position(TP0) == 100 and h.settled == []
    assert h.buffer.size == 0


def test_a_paused_partition_is_dropped_and_fetched_again_from_its_position():
    h = Harness()
    h.put(TP0, 0, 3)
    h.put(TP0, 3, 3)
    assert h.buffer.take_one().offset == 0
    state = h.subscription.get(TP0)
    assert state is not None
    state.fetch_offset = 6
    state.paused = True
    assert h.buffer.take_one() is None
    assert h.buffer.size == 0
    assert (state.position, state.fetch_offset) == (1, 1)  # fetched again from the first record not taken


def test_set_aside_takes_a_partitions_sets_out_uncounted_and_put_back_queues_them_as_they_were():
    h = Harness(limit=3 * SET_BYTES)
    h.put(TP0, 0, 3)
    h.put(TP1, 0, 3)
    h.put(TP0, 3, 3)
    assert h.buffer.full
    assert h.buffer.take_one().offset == 0
    state = h.subscription.get(TP0)
    assert state is not None
    aside = h.buffer.set_aside(state)  # a pause
    assert [(r.messages[0].offset, r.index) for r in aside] == [(0, 1), (3, 0)]
    assert state.position == 1, "what take_one handed out is written through"
    assert h.buffer.size == SET_BYTES + 3 * MESSAGE_OBJECT_ALLOWANCE and h.room_calls == 1
    assert h.buffer.set_aside(state) == []
    assert {tp: [m.offset for m in ms] for tp, ms in h.buffer.take(100).items()} == {TP1: [0, 1, 2]}
    h.buffer.put_back(aside)  # the resume
    assert h.buffer.size == sum(r.size for r in aside)
    assert {tp: [m.offset for m in ms] for tp, ms in h.buffer.take(100).items()} == {TP0: [1, 2, 3, 4, 5]}
    assert h.position(TP0) == 6 and h.buffer.size == 0


def test_the_byte_bound_stops_fetching_and_taking_below_it_restarts_it():
    h = Harness(limit=2 * SET_BYTES)
    h.put(TP0, 0, 2)
    assert not h.buffer.full
    h.put(TP1, 0, 2)
    assert h.buffer.full and h.buffer.size == 2 * (SET_BYTES + 2 * MESSAGE_OBJECT_ALLOWANCE)
    h.buffer.take_one()
    assert h.room_calls == 0  # a set is freed once taken whole
    h.buffer.take_one()
    assert h.room_calls == 1 and not h.buffer.full


def test_an_empty_set_moves_the_position_at_once_unless_records_wait_before_it():
    h = Harness()
    h.put(TP0, 0, 0, end=4)  # only control records
    assert h.position(TP0) == 4 and h.settled == [(TP0, 4)]
    h.put(TP1, 0, 2)
    h.put(TP1, 2, 0, end=7)
    assert h.position(TP1) == 0
    assert [m.offset for m in h.buffer.take(10)[TP1]] == [0, 1]
    assert h.position(TP1) == 7  # once the records before it were taken


def test_a_corrupt_entry_is_passed_on_once_its_records_were_taken():
    h = Harness()
    err = KafkaError(CORRUPT_MESSAGE, "bad crc")
    h.put(TP0, 0, 2, error=err)
    h.buffer.take(10)
    assert h.settled == [(TP0, 2)]


def test_close_wakes_waiters():
    h = Harness()
    woken: list[int] = []
    h.buffer.when_records(lambda: woken.append(1))
    h.buffer.close()
    assert woken == [1] and h.buffer.closed and not h.buffer.ready()


def test_take_one_writes_the_position_through_when_the_set_stops_being_taken_one_by_one():
    """take_one() moves only the set's index; state.position catches up at the set's end, before
    take(), at a drop and at close, and a seek in between is never overwritten."""
    h = Harness()
    state = h.subscription.get(TP0)
    assert state is not None
    h.put(TP0, 0, 4)
    h.put(TP0, 4, 4)
    assert [h.buffer.take_one().offset for _ in range(2)] == [0, 1]
    assert (state.position, h.buffer.delivered(state)) == (0, (2, 3))  # counted, not yet written
    assert len(h.buffer.take(3)[TP0]) == 3  # offsets 2, 3, 4
    assert (state.position, h.buffer.delivered(state)) == (5, None)
    assert h.buffer.take_one().offset == 5
    state.seek(100)  # a seek mid-set: its position stands
    assert h.buffer.delivered(state) is None
    h.buffer.close()
    assert state.position == 100
