"""RoomQueue: awaited produce() calls waiting for buffer room go one at a time, in order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from kafkaev.aio.room import RoomQueue


class Budget:
    """Stands in for the producer's side: room or not, and the one on_buffer_room wake-up."""

    def __init__(self) -> None:
        self.room = False
        self.wakeups: list[Callable[[], object]] = []

    def on_buffer_room(self, cb: Callable[[], object]) -> None:
        self.wakeups.append(cb)

    def release(self) -> None:
        wakeups, self.wakeups = self.wakeups, []
        for cb in wakeups:
            cb()


def test_waiters_take_turns_in_arrival_order(loop):
    budget = Budget()
    queue = RoomQueue(loop, budget.on_buffer_room, lambda: budget.room)
    order: list[int] = []

    async def producer(n: int) -> None:
        await queue.wait_turn()
        order.append(n)
        queue.pass_turn()

    async def body() -> None:
        tasks = [asyncio.ensure_future(producer(n)) for n in range(5)]
        await asyncio.sleep(0)
        assert queue and len(budget.wakeups) == 1  # one wake-up registered for all of them
        budget.release()  # room for one: the first goes, then no room, the rest wait again
        await asyncio.sleep(0.01)
        assert order == [0]
        budget.room = True
        budget.release()
        await asyncio.gather(*tasks)
        assert order == [0, 1, 2, 3, 4] and not queue

    loop.run_until_complete(body())


def test_a_cancelled_waiter_passes_its_turn_on(loop):
    budget = Budget()
    queue = RoomQueue(loop, budget.on_buffer_room, lambda: True)
    order: list[str] = []

    async def producer(name: str) -> None:
        await queue.wait_turn()
        order.append(name)
        queue.pass_turn()

    async def body() -> None:
        first = asyncio.ensure_future(producer("first"))
        second = asyncio.ensure_future(producer("second"))
        await asyncio.sleep(0)
        budget.release()  # the first is woken ...
        first.cancel()  # ... and cancelled before it ran
        with pytest.raises(asyncio.CancelledError):
            await first
        await asyncio.wait_for(second, 1)
        assert order == ["second"] and not queue

    loop.run_until_complete(body())


def test_a_waiter_that_did_not_fit_keeps_the_head(loop):
    budget = Budget()
    queue = RoomQueue(loop, budget.on_buffer_room, lambda: False)
    order: list[str] = []

    async def big() -> None:
        await queue.wait_turn()
        await queue.wait_turn(again=True)  # did not fit: first again at the next release
        order.append("big")
        queue.pass_turn()

    async def small() -> None:
        await queue.wait_turn()
        order.append("small")
        queue.pass_turn()

    async def body() -> None:
        tasks = [asyncio.ensure_future(big()), asyncio.ensure_future(small())]
        await asyncio.sleep(0)
        budget.release()
        await asyncio.sleep(0)
        budget.release()
        await asyncio.sleep(0)
        budget.release()
        await asyncio.wait_for(asyncio.gather(*tasks), 1)
        assert order == ["big", "small"]

    loop.run_until_complete(body())
