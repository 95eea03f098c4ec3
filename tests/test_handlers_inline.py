"""The runner's batch path without a broker: ``InlineRun`` (the C loop) and a ``Scheduler`` fed
batches the way the client's ``on_batch`` feeds it. Records run inline until one raises, waits
or the turn's budget is spent; what follows keeps its partition's order and is never
committed past. Real-broker tests: test_handlers.py, test_handlers_crash.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkaev.backoff import BackoffPolicy
from kafkaev.handlers import inline
from kafkaev.handlers import scheduler as scheduler_module
from kafkaev.handlers.options import ConsumerOptions
from kafkaev.handlers.scheduler import HELD_BATCHES_PAUSE, Scheduler
from kafkaev.protocol.codec import Message
from kafkaev.types import TopicPartition

TOPIC = "t"
FAR = 1e18  # a deadline that never passes
PAST = 0.0  # a deadline already passed


def batch(first: int, count: int, partition: int = 0) -> list[Message]:
    return [Message(TOPIC, partition, o, b"k%d" % (o % 3), b"v%d" % o) for o in range(first, first + count)]


# --- InlineRun ------------------------------------------------------------------------------------
def test_every_record_runs_in_order_when_each_finishes_at_once() -> None:
    seen: list[int] = []
    run = inline.InlineRun()
    assert run.run(lambda m: seen.append(m.offset), batch(0, 5), 0, FAR) == 5
    assert seen == [0, 1, 2, 3, 4] and run.stopped == inline.STOPPED_NONE


def test_it_stops_at_the_record_that_raised_and_keeps_the_error() -> None:
    seen: list[int] = []

    def handler(msg: Message) -> None:
        seen.append(msg.offset)
        if msg.offset == 2:
            raise ValueError("bad 2")

    run = inline.InlineRun()
    assert run.run(handler, batch(0, 5), 0, FAR) == 2
    assert seen == [0, 1, 2], "nothing after the failed record is started"
    assert run.stopped == inline.STOPPED_RAISED and str(run.error) == "bad 2"
    run.clear()
    assert run.error is None


def test_a_coroutine_that_finishes_at_once_runs_inline_and_one_that_waits_is_handed_back() -> None:
    loop = asyncio.new_event_loop()
    gate = loop.create_future()
    seen: list[int] = []

    async def handler(msg: Message) -> None:
        seen.append(msg.offset)
        if msg.offset == 3:
            await gate
            seen.append(-3)

    run = inline.InlineRun()
    try:
        assert run.run(handler, batch(0, 6), 0, FAR) == 3
        assert seen == [0, 1, 2, 3] and run.stopped == inline.STOPPED_WAITING
        assert run.waiting_on is gate, "what its first step waits on"
        coro = run.pending
        gate.set_result(None)
        with pytest.raises(StopIteration):
            coro.send(None)
        assert seen[-1] == -3
    finally:
        loop.close()


def test_a_coroutine_raising_in_its_first_step_is_a_failure() -> None:
    async def handler(msg: Message) -> None:
        if msg.offset == 1:
            raise KeyError("k1")

    run = inline.InlineRun()
    assert run.run(handler, batch(0, 3), 0, FAR) == 1
    assert run.stopped == inline.STOPPED_RAISED and isinstance(run.error, KeyError)


def test_a_value_returned_by_a_plain_function_is_handed_back_to_be_looked_at() -> None:
    run = inline.InlineRun()
    assert run.run(lambda m: "done" if m.offset == 1 else None, batch(0, 3), 0, FAR) == 1
    assert run.stopped == inline.STOPPED_RETURNED and run.pending == "done"


def test_the_budget_ends_the_run_after_at_least_one_record_and_halted_too() -> None:
    seen: list[int] = []
    run = inline.InlineRun()
    assert run.run(lambda m: seen.append(m.offset), batch(0, 4), 1, PAST) == 2
    assert seen == [1] and run.stopped == inline.STOPPED_BUDGET, "one record, then the spent budget stops it"

    def halting(msg: Message) -> None:
        seen.append(msg.offset)
        run.halted = True

    seen.clear()
    assert run.run(halting, batch(0, 4), 0, FAR) == 1
    assert seen == [0] and run.stopped == inline.STOPPED_BUDGET


def test_a_slow_handler_is_stopped_near_the_deadline_although_the_clock_is_read_every_few_records() -> None:
    # 2 ms a record against a 10 ms budget: about five records. Reading the clock only every
    # CLOCK_STRIDE_MAX (64) records, whatever the pace, would run every one of them.
    seen: list[int] = []

    def slow(msg: Message) -> None:
        seen.append(msg.offset)
        time.sleep(0.002)

    run = inline.InlineRun()
    stop = run.run(slow, batch(0, 100), 0, time.monotonic() + 0.010)
    assert run.stopped == inline.STOPPED_BUDGET and stop == len(seen)
    assert 1 <= stop <= 10, f"ran {stop} records of 2 ms in a 10 ms budget"


def test_fast_records_run_to_the_end_of_a_far_deadline_and_stop_at_a_passed_one() -> None:
    # Past the first record the clock is read in strides: a batch longer than a stride still
    # runs whole under a far deadline, and a deadline already passed still stops after one.
    count = 1000
    run = inline.InlineRun()
    assert run.run(lambda m: None, batch(0, count), 0, time.monotonic() + 60) == count
    assert run.stopped == inline.STOPPED_NONE
    assert run.run(lambda m: None, batch(0, count), 0, PAST) == 1 and run.stopped == inline.STOPPED_BUDGET


# --- the scheduler's batch path -------------------------------------------------------------------
class Harness:
    """A scheduler on its own loop, assigned one partition, with the pauses it asks for."""

    def __init__(self, handler: Callable[[Message], Any], **overrides: Any) -> None:
        self.loop = asyncio.new_event_loop()
        options = ConsumerOptions.build(
            "c", [TOPIC], handler, group_id="g", max_retries=overrides.get("max_retries", 3), retry_backoff_ms=1,
            dead_letter_topic=None, ordering=overrides.get("ordering", "partition"),
            concurrency=overrides.get("concurrency", 1), max_unprocessed=overrides.get("max_unprocessed", 1000))
        self.paused: list[TopicPartition] = []
        self.progress = 0
        self.scheduler = Scheduler(
            options, self.loop, dead_letter_backoff=BackoffPolicy(1, 10),
            pause=lambda tps: self.paused.extend(tps), resume=lambda tps: [self.paused.remove(tp) for tp in tps],
            on_progress=self._progressed, on_down=lambda _s, err: pytest.fail(f"went down: {err}"))
        self.tp = TopicPartition(TOPIC, 0)
        self.scheduler.start()
        self.scheduler.assigned([self.tp])

    def _progressed(self) -> None:
        self.progress += 1

    def committable(self) -> int:
        work = self.scheduler.work(self.tp)
        assert work is not None
        return work.offsets.committable()

    def offer(self, messages: list[Message]) -> None:
        """Deliver from inside the running loop, as the client does (a coroutine's first step
        may need it)."""
        async def deliver() -> None:
            self.scheduler.offer_batch(messages)

        self.loop.run_until_complete(deliver())

    def turn(self, seconds: float = 0.0) -> None:
        self.loop.run_until_complete(asyncio.sleep(seconds))

    def close(self) -> None:
        self.loop.close()


@pytest.fixture
def harnesses() -> Iterator[list[Harness]]:
    made: list[Harness] = []
    yield made
    for harness in made:
        harness.close()


def test_a_batch_that_runs_inline_moves_the_offsets_once(harnesses: list[Harness]) -> None:
    seen: list[int] = []
    h = Harness(lambda m: seen.append(m.offset))
    harnesses.append(h)
    h.scheduler.offer_batch(batch(10, 50))
    assert seen == list(range(10, 60))
    assert h.committable() == 60 and h.scheduler.counters.handled == 50
    assert h.progress == 1, "one progress call for the whole batch"


def test_a_failure_mid_batch_holds_the_rest_of_its_partition_behind_its_retry(harnesses: list[Harness]) -> None:
    calls: list[int] = []
    failures = {5: 2}

    def handler(msg: Message) -> None:
        calls.append(msg.offset)
        if failures.get(msg.offset, 0):
            failures[msg.offset] -= 1
            raise RuntimeError(f"flaky {msg.offset}")

    h = Harness(handler)
    harnesses.append(h)
    h.scheduler.offer_batch(batch(0, 10))
    assert calls == [0, 1, 2, 3, 4, 5], "the records after the failed one wait for its retry"
    assert h.committable() == 5, "never past the record waiting for its retry"
    assert h.scheduler.counters.handled == 5
    h.scheduler.offer_batch(batch(10, 5))  # the next batch queues behind it too
    assert calls[-1] == 5
    h.turn(0.2)
    assert calls == [0, 1, 2, 3, 4, 5, 5, 5, *range(6, 15)]
    assert h.committable() == 15
    counters = h.scheduler.counters
    assert (counters.handled, counters.retried, counters.in_flight) == (15, 2, 0)


def test_an_async_handler_that_waits_keeps_its_lane_and_the_rest_goes_on_after_it(harnesses: list[Harness]) -> None:
    order: list[int] = []

    async def handler(msg: Message) -> None:
        if msg.offset == 2:
            await asyncio.sleep(0.01)
        order.append(msg.offset)

    h = Harness(handler)
    harnesses.append(h)
    h.offer(batch(0, 6))
    assert order == [0, 1] and h.committable() == 2
    assert h.scheduler.counters.in_flight == 1
    h.turn(0.1)
    assert order == [0, 1, 2, 3, 4, 5] and h.committable() == 6


def test_key_ordering_runs_other_keys_past_a_waiting_one(harnesses: list[Harness]) -> None:
    order: list[int] = []

    async def handler(msg: Message) -> None:
        if msg.offset == 0:
            await asyncio.sleep(0.01)
        order.append(msg.offset)

    h = Harness(handler, ordering="key", concurrency=4)
    harnesses.append(h)
    h.offer(batch(0, 6))  # keys k0 k1 k2 k0 k1 k2
    h.turn(0.1)
    assert sorted(order) == list(range(6))
    assert order.index(0) < order.index(3), "one key's records stay in order"
    assert order.index(1) < order.index(0), "another key went on while the first waited"
    assert h.committable() == 6


def test_past_the_budget_the_rest_of_a_batch_waits_for_the_next_turn_unadmitted(
        harnesses: list[Harness], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scheduler_module, "INLINE_TURN_BUDGET_S", 0.0)  # every turn: one record
    seen: list[int] = []
    h = Harness(lambda m: seen.append(m.offset))
    harnesses.append(h)
    h.scheduler.offer_batch(batch(0, 4))
    assert seen == [0] and h.committable() == 1, "the held records are not committed past"
    assert h.paused == [], "one held batch does not pause the partition"
    for _ in range(HELD_BATCHES_PAUSE - 1):  # offsets 100-101, 110-111
        h.scheduler.offer_batch(batch(100 + 10 * _, 2))
    assert h.paused == [h.tp], "batches piling up behind held records pause the partition"
    assert seen == [0]
    for _ in range(20):
        h.turn()
    assert seen == [0, 1, 2, 3, 100, 101, 110, 111], "held batches run in arrival order, one record a turn"
    assert h.committable() == 112 and h.paused == []


def test_past_max_unprocessed_the_rest_of_a_batch_waits_unadmitted_until_half_are_done(
        harnesses: list[Harness]) -> None:
    gate: list[asyncio.Future[None]] = []
    done: list[int] = []

    async def handler(msg: Message) -> None:
        if msg.offset == 0:
            gate.append(asyncio.get_running_loop().create_future())
            await gate[0]
        done.append(msg.offset)

    h = Harness(handler, max_unprocessed=10)
    harnesses.append(h)
    h.offer(batch(0, 30))
    work = h.scheduler.work(h.tp)
    assert work is not None
    assert work.offsets.unfinished == 11, "the bound, and the record that passed it"
    assert h.paused == [h.tp] and h.committable() == 0
    gate[0].set_result(None)
    h.turn(0.05)
    assert done == list(range(30)) and h.committable() == 30
    assert h.paused == []


def test_a_stop_from_inside_a_handler_ends_the_batch_after_that_record(harnesses: list[Harness]) -> None:
    seen: list[int] = []
    holder: list[Harness] = []

    def handler(msg: Message) -> None:
        seen.append(msg.offset)
        if msg.offset == 3:
            holder[0].scheduler.stop(1.0)

    h = Harness(handler)
    holder.append(h)
    harnesses.append(h)
    h.scheduler.offer_batch(batch(0, 10))
    assert seen == [0, 1, 2, 3]
    assert h.committable() == 4


def test_the_record_running_inline_is_counted_in_flight(harnesses: list[Harness]) -> None:
    seen: list[int] = []
    holder: list[Harness] = []
    h = Harness(lambda m: seen.append(holder[0].scheduler.counters.in_flight))
    holder.append(h)
    harnesses.append(h)
    h.scheduler.offer_batch(batch(0, 3))
    assert seen == [1, 1, 1] and h.scheduler.counters.in_flight == 0
