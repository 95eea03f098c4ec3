"""Waiting for fetched records: ``async for`` and ``getmany`` over the consumer's
``RecordBuffer``.

The per-record path is ``kafkaev.aio.pull.MessageIterator`` (C) over ``RecordBuffer.take_one``;
only when it has nothing (or at the end of a record set, so the loop turns between sets even
under a body that never awaits) does it wait, in ``next_record``. Cancelling a wait takes nothing: every record handed out was counted as
delivered when it was taken, and nothing else was.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial

from kafkaev.consumer.buffer import RecordBuffer
from kafkaev.protocol.codec import Message
from kafkaev.types import TopicPartition

from .bridge import resolve


async def wait_for_records(loop: asyncio.AbstractEventLoop, buffer: RecordBuffer, timeout_s: float | None) -> None:
    """Return once something is buffered, the consumer closed, or ``timeout_s`` passed."""
    if buffer.closed or buffer.ready():
        return
    fut: asyncio.Future[None] = loop.create_future()
    wake: Callable[[], None] = partial(resolve, fut)
    buffer.when_records(wake)
    timer = None if timeout_s is None else loop.call_later(timeout_s, wake)
    try:
        await fut
    finally:
        buffer.forget_waiter(wake)
        if timer is not None:
            timer.cancel()


async def _turn_loop() -> None:
    """Let the loop run once (the next Fetch, heartbeats, other tasks)."""
    await asyncio.sleep(0)


async def next_record(loop: asyncio.AbstractEventLoop, buffer: RecordBuffer) -> Message:
    """The next record once one is buffered (``MessageIterator.__anext__`` when it has none
    at hand); StopAsyncIteration once the client closed."""
    while True:
        if buffer.ready():
            await _turn_loop()  # the end of a record set: let the loop run before the next
        else:
            if buffer.closed:
                raise StopAsyncIteration
            await wait_for_records(loop, buffer, None)
        msg = buffer.take_one()
        if msg is not None:
            return msg


async def getmany(loop: asyncio.AbstractEventLoop, buffer: RecordBuffer, timeout_ms: int,
                  max_records: int) -> dict[TopicPartition, list[Message]]:
    """Up to ``max_records`` buffered records by partition, waiting at most ``timeout_ms`` for
    the first; ``{}`` when none came (or the client closed)."""
    deadline = loop.time() + timeout_ms / 1000.0
    if buffer.ready():
        await _turn_loop()  # so a loop of getmany() calls lets the loop run between them
    while True:
        taken = buffer.take(max_records)
        remaining = deadline - loop.time()
        if taken or buffer.closed or remaining <= 0:
            return taken
        await wait_for_records(loop, buffer, remaining)
