"""A callback method awaited: its ``cb`` becomes a Future's outcome.

Every callback method of the core ends in ``cb(result, err)`` or ``cb(err)``; ``call`` passes
one callback that takes either shape, so a method is wrapped without knowing which it has
(the Admin wrapper relies on it, and transactions' methods will too).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


def settle_from_callback(fut: asyncio.Future[Any]) -> Callable[..., None]:
    """The callback that settles ``fut``: ``cb(result, err)`` or ``cb(err)``; an error raises
    from the await, else the result (None for the one-argument shape) is its value. A Future
    already done (cancelled by its awaiter) is left alone."""

    def done(*outcome: Any) -> None:
        if fut.done():
            return
        err = outcome[-1] if outcome else None
        if err is not None:
            fut.set_exception(err)
        else:
            fut.set_result(outcome[0] if len(outcome) > 1 else None)

    return done


async def call(loop: asyncio.AbstractEventLoop, method: Callable[..., object], *args: Any, **kwargs: Any) -> Any:
    """``await method(*args, cb=..., **kwargs)``: what its callback reports. A bad argument
    raises from the call itself, at once."""
    fut: asyncio.Future[Any] = loop.create_future()
    method(*args, cb=settle_from_callback(fut), **kwargs)
    return await fut


def resolve(fut: asyncio.Future[None]) -> None:
    """Wake whoever awaits ``fut`` (a no-op once it is done or cancelled)."""
    if not fut.done():
        fut.set_result(None)
