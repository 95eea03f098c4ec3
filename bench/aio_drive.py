"""The asyncio scenarios' loops, shared by every asyncio client (kafkaev.aio, aiokafka,
confluent_kafka.aio) so that each runs the same loop and only its own calls differ.

Produce, ``await`` per record (``PRODUCE_AWAIT``): ``AWAIT_TASKS`` tasks each await one record's
acknowledgement before producing the next, as the request handlers of a service would.
Produce in windows (``PRODUCE_WINDOW``): ``WINDOW`` records queued without waiting, then their
acknowledgements awaited one after the other, in order. Acknowledgements come a batch at a time,
so most futures are done when reached and their ``await`` costs no loop turn; ``asyncio.gather``
would instead add a done-callback to each future and run each through a loop handle, a cost of
asyncio's, not of the client measured, that was most of every client's CPU per record. Consume with ``async for`` (``CONSUME_ASYNC_FOR``) or
with a batch call (``CONSUME_GETMANY``) from a pre-filled topic.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.measure import Section
from bench.spec import PRODUCE_AWAIT, PRODUCE_WINDOW, RunResult, RunSpec

AWAIT_TASKS = 1000  # concurrent awaiting producers in PRODUCE_AWAIT
WINDOW = 1000  # records per window in PRODUCE_WINDOW
CONSUME_FIRST_TIMEOUT_S = 10.0  # how long the first record may take (connect, positions)


@dataclass(slots=True)
class Produced:
    calls: int = 0
    acked: int = 0
    failed: int = 0


@dataclass(frozen=True, slots=True)
class AsyncProducerCalls:
    """One client's calls: ``awaited()`` produces one record and waits for its acknowledgement;
    ``enqueue()`` produces one and returns its future (a coroutine returning it when
    ``enqueue_is_async``); ``flush()`` waits for everything queued."""

    awaited: Callable[[], Awaitable[Any]]
    enqueue: Callable[[], Any]
    enqueue_is_async: bool
    flush: Callable[[], Awaitable[Any]]
    # the exception a full buffer raises from enqueue(), and how to wait for room (None: never raised)
    buffer_full: type[BaseException] | None = None
    wait_for_room: Callable[[], Awaitable[Any]] | None = None


async def _awaited_for(calls: AsyncProducerCalls, seconds: float) -> Produced:
    counts = Produced()
    stopped = False

    def stop() -> None:
        nonlocal stopped
        stopped = True

    asyncio.get_running_loop().call_later(seconds, stop)
    awaited = calls.awaited

    async def one_task() -> None:
        # Each task calls once before it looks at the stop flag: when making the 1,000 tasks
        # took longer than the run (a full collection of a large heap while they were made,
        # as in the test suite's process), the run still measures something.
        while True:
            counts.calls += 1
            try:
                await awaited()
                counts.acked += 1
            except Exception:  # noqa: BLE001 - a failed record is counted, the run goes on
                counts.failed += 1
            if stopped:
                return

    await asyncio.gather(*(one_task() for _ in range(AWAIT_TASKS)))
    return counts


async def _windows_for(calls: AsyncProducerCalls, seconds: float) -> Produced:
    counts = Produced()
    enqueue = calls.enqueue
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        window = []
        while len(window) < WINDOW:
            try:
                fut = (await enqueue()) if calls.enqueue_is_async else enqueue()
            except Exception as exc:  # noqa: BLE001 - only a full buffer is waited out
                if calls.buffer_full is None or not isinstance(exc, calls.buffer_full) or calls.wait_for_room is None:
                    raise
                await calls.wait_for_room()
                continue
            window.append(fut)
        counts.calls += len(window)
        for fut in window:  # in order: most are done by the time they are reached
            try:
                await fut
                counts.acked += 1
            except Exception:  # noqa: BLE001 - a failed record is counted, the run goes on
                counts.failed += 1
    return counts


async def produce(spec: RunSpec, calls: AsyncProducerCalls, settings: dict[str, Any]) -> RunResult:
    """Warm up, then produce for ``spec.duration_s`` in ``spec.mode``, then flush."""
    run_for = {PRODUCE_AWAIT: _awaited_for, PRODUCE_WINDOW: _windows_for}[spec.mode]
    warm = await run_for(calls, spec.warmup_s)
    await calls.flush()
    with Section() as section:
        counts = await run_for(calls, spec.duration_s)
        call_elapsed = time.perf_counter() - section.started
        await calls.flush()
    return RunResult(records=counts.acked, failed=counts.failed, elapsed_s=section.elapsed,
                     call_elapsed_s=call_elapsed, calls=counts.calls, warmup_records=warm.calls,
                     cpu_s=section.cpu, bytes=counts.acked * spec.value_size, settings=settings)


async def consume_each(spec: RunSpec, records: AsyncIterator[Any], value_of: Callable[[Any], bytes],
                       settings: dict[str, Any]) -> RunResult:
    """``async for`` over ``records`` until ``spec.count`` (or the ``spec.duration_s`` time cap),
    timed from the first record."""
    first = await asyncio.wait_for(records.__anext__(), CONSUME_FIRST_TIMEOUT_S)
    delivered = 1
    nbytes = len(value_of(first))
    with Section() as section:
        async for record in records:
            nbytes += len(value_of(record))
            delivered += 1
            if delivered >= spec.count or (delivered % WINDOW == 0
                                           and time.perf_counter() - section.started > spec.duration_s):
                break
    return _consumed(spec, section, delivered - 1, nbytes - len(value_of(first)), delivered, settings)


async def consume_batches(spec: RunSpec, next_batch: Callable[[], Awaitable[Mapping[Any, Sequence[Any]] | Sequence[Any]]],
                          value_of: Callable[[Any], bytes], settings: dict[str, Any]) -> RunResult:
    """A batch call (``getmany``, ``consume``) until ``spec.count`` or the time cap, timed from
    the first batch; a batch is a mapping of partition to records or a sequence of records."""
    deadline = time.perf_counter() + CONSUME_FIRST_TIMEOUT_S
    delivered = 0
    while delivered == 0 and time.perf_counter() < deadline:
        delivered = sum(len(records) for records in _record_lists(await next_batch()))
    counted = nbytes = 0
    with Section() as section:
        while delivered < spec.count and time.perf_counter() - section.started < spec.duration_s:
            got = 0
            for records in _record_lists(await next_batch()):
                for record in records:
                    nbytes += len(value_of(record))
                got += len(records)
            if not got:
                break
            counted += got
            delivered += got
    return _consumed(spec, section, counted, nbytes, delivered, settings)


def _record_lists(batch: Mapping[Any, Sequence[Any]] | Sequence[Any]) -> list[Sequence[Any]]:
    return list(batch.values()) if isinstance(batch, Mapping) else [batch]


def _consumed(spec: RunSpec, section: Section, counted: int, nbytes: int, delivered: int,
              settings: dict[str, Any]) -> RunResult:
    return RunResult(records=counted, elapsed_s=section.elapsed, cpu_s=section.cpu, bytes=nbytes, settings=settings,
                     note="" if delivered >= spec.count else f"stopped at {delivered}/{spec.count} (time cap)")
