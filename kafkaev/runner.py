"""Run an event loop the way EV::run does: clients are made on the default loop, then
``kafkaev.run()`` turns it until ``kafkaev.stop()`` (or until a coroutine finishes).

The default loop is uvloop's, created on first use and set as the thread's current loop,
so ``Client()`` made before ``run()`` and the loop that ``run()`` turns are the same.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

import uvloop

_default: asyncio.AbstractEventLoop | None = None


def default_loop() -> asyncio.AbstractEventLoop:
    """The running loop, else this thread's current uvloop default loop (created once)."""
    global _default
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    if _default is None or _default.is_closed():
        _default = uvloop.new_event_loop()
        asyncio.set_event_loop(_default)
    return _default


def run(main: Callable[[], Any] | Coroutine[Any, Any, Any] | None = None, *,
        loop: asyncio.AbstractEventLoop | None = None) -> Any:
    """Turn the loop.

    * ``run()``: until ``stop()`` is called (from a callback);
    * ``run(fn)``: call ``fn()`` from inside the loop first, then as above;
    * ``run(coro)``: until the coroutine finishes, returning its result.
    """
    loop = loop if loop is not None else default_loop()
    if inspect.iscoroutine(main):
        return loop.run_until_complete(main)
    if main is not None:
        if not callable(main):
            raise TypeError(f"kafkaev.run: 'main' must be a callable, a coroutine or None, got {type(main).__name__}")
        loop.call_soon(main)
    loop.run_forever()
    return None


def stop(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Make ``run()`` return after the current loop iteration."""
    (loop if loop is not None else default_loop()).stop()
