"""Awaited ``produce()`` calls waiting for room in ``buffer_memory`` and ``buffer_records``,
woken one at a time.

Waking every waiter whenever a batch completes would make each of them try, most fail again
with ``BufferFullError`` and wait again: with 1,000 producing tasks that is 1,000 exceptions per
acknowledged batch. Instead the waiters queue in arrival order and hold the turn one after the
other: the one woken produces, then passes the turn on while there is room, or waits for the
next release (``Client.on_buffer_room``). New produce() calls queue behind the waiters, so none
overtakes another.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable


class RoomQueue:
    __slots__ = ("_loop", "_on_buffer_room", "_has_room", "waiters", "_armed")

    def __init__(self, loop: asyncio.AbstractEventLoop, on_buffer_room: Callable[[Callable[[], object]], None],
                 has_room: Callable[[], bool]) -> None:
        self._loop = loop
        self._on_buffer_room = on_buffer_room  # cb() once when a batch fits again
        self._has_room = has_room
        # The waiting calls' turns, in order. Read, never changed, by Client.produce: one
        # truth test per record there is cheaper than a call to __bool__.
        self.waiters: deque[asyncio.Future[None]] = deque()
        self._armed = False  # a wake-up is registered with on_buffer_room

    def __bool__(self) -> bool:
        """Someone waits: a new produce() queues behind."""
        return bool(self.waiters)

    async def wait_turn(self, *, again: bool = False) -> None:
        """Return once it is this caller's turn to produce; ``again``: it had the turn and the
        record did not fit, so it keeps the head of the queue."""
        turn: asyncio.Future[None] = self._loop.create_future()
        if again:
            self.waiters.appendleft(turn)
        else:
            self.waiters.append(turn)
        self._arm()
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.pass_turn()  # woken, then cancelled before producing: the next one goes
            else:
                try:
                    self.waiters.remove(turn)
                except ValueError:
                    pass
            raise

    def pass_turn(self) -> None:
        """The turn holder produced: the next waiter goes now if there is room, else at the
        next release."""
        if not self.waiters:
            return
        if self._has_room():
            self._wake_next()
        else:
            self._arm()

    def _arm(self) -> None:
        if not self._armed:
            self._armed = True
            self._on_buffer_room(self._on_room)

    def _on_room(self) -> None:
        self._armed = False
        self._wake_next()

    def _wake_next(self) -> None:
        while self.waiters:
            turn = self.waiters.popleft()
            if not turn.done():  # skip the cancelled
                turn.set_result(None)
                return
