"""``kafkaev.aio.pull.MessageIterator`` over a RecordBuffer, without a broker: a buffered record
comes back in an already-complete awaitable (no coroutine per record), through ``am_send`` and,
under a tracer that bypasses that slot, through ``__next__``; an empty buffer hands over to the
waiting coroutine, and a closed one ends the iteration."""

from __future__ import annotations

import asyncio
import inspect
import sys
from typing import Any

from kafkaev.aio.iteration import next_record
from kafkaev.aio.pull import MessageIterator, Taken
from kafkaev.consumer.buffer import BufferedRecords, RecordBuffer
from kafkaev.consumer.subscription import SubscriptionState
from kafkaev.protocol.codec import Message
from kafkaev.types import TopicPartition

TP = TopicPartition("t", 0)
SET_BYTES = 100
LEADER_EPOCH = 3
BUFFER_LIMIT = 1_000_000


class Buffered:
    def __init__(self) -> None:
        self.subscription = SubscriptionState()
        self.state = self.subscription.add(TP)
        self.state.seek(0)
        self.buffer = RecordBuffer(self.subscription, BUFFER_LIMIT, self.settle, lambda: None)
        self.next_offset = 0

    def settle(self, records: BufferedRecords) -> None:
        records.state.position = records.next_offset

    def position(self) -> int:
        """What commit() and position() see (ConsumerContext.delivered)."""
        pulled = self.buffer.delivered(self.state)
        return self.state.position if pulled is None else pulled[0]

    def put(self, count: int) -> None:
        first = self.next_offset
        messages = [Message(TP.topic, TP.partition, o, None, b"%d" % o, leader_epoch=LEADER_EPOCH)
                    for o in range(first, first + count)]
        self.next_offset = first + count
        self.buffer.put(BufferedRecords(self.state, self.state.generation, messages, self.next_offset,
                                        LEADER_EPOCH, None, SET_BYTES))


def _iterator(loop: asyncio.AbstractEventLoop, b: Buffered) -> MessageIterator:
    return MessageIterator(loop, b.buffer, next_record)


def test_a_buffered_record_is_an_already_complete_awaitable(loop):
    b = Buffered()
    b.put(3)
    it = _iterator(loop, b)

    async def body() -> list[int]:
        first = it.__anext__()
        assert type(first) is Taken and not inspect.iscoroutine(first)
        offsets = [(await first).offset]
        assert b.position() == 1  # counted as delivered when taken
        offsets.append((await it.__anext__()).offset)
        offsets.append((await it.__anext__()).offset)
        return offsets

    assert loop.run_until_complete(body()) == [0, 1, 2]
    assert b.position() == 3


def test_under_a_tracer_the_record_comes_through_next(loop):
    b = Buffered()
    b.put(2)
    it = _iterator(loop, b)
    seen: list[Any] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return tracer

    async def body() -> None:
        previous = sys.gettrace()
        sys.settrace(tracer)
        try:
            seen.append((await it.__anext__()).offset)
            seen.append((await it.__anext__()).offset)
        finally:
            sys.settrace(previous)

    loop.run_until_complete(body())
    assert seen == [0, 1]


def test_async_for_waits_for_records_and_ends_when_closed(loop):
    b = Buffered()
    b.put(2)
    it = _iterator(loop, b)
    got: list[int] = []

    async def consume() -> None:
        async for msg in it:
            got.append(msg.offset)

    async def body() -> None:
        task = asyncio.ensure_future(consume())
        for _ in range(5):
            await asyncio.sleep(0)
        assert got == [0, 1]  # the buffer is empty: the iterator waits
        b.put(3)
        for _ in range(5):
            await asyncio.sleep(0)
        assert got == [0, 1, 2, 3, 4]
        b.buffer.close()
        await asyncio.wait_for(task, 5)

    loop.run_until_complete(body())
    assert b.position() == 5


def test_a_taken_record_is_given_once():
    b = Buffered()
    b.put(1)
    loop = asyncio.new_event_loop()
    try:
        taken = MessageIterator(loop, b.buffer, next_record).__anext__()
        assert type(taken) is Taken
        step = taken.__await__()
        try:
            next(step)
        except StopIteration as stop:
            assert stop.value.offset == 0
        else:
            raise AssertionError("a taken record must complete at once")
        try:
            next(step)
        except StopIteration as stop:
            assert stop.value is None  # the record is not held (nor given) a second time
        else:
            raise AssertionError("a taken record completes every time it is stepped")
    finally:
        loop.close()
