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
# Loops run() is turning: a stop() for one of them holds record delivery until run() returns.
_turning: set[asyncio.AbstractEventLoop] = set()


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
    # Imported here: kafkaev.consumer imports the connection, which imports this module.
    from kafkaev.consumer.delivery import clear_stop

    loop = loop if loop is not None else default_loop()
    if main is not None and not inspect.iscoroutine(main) and not callable(main):
        raise TypeError(f"kafkaev.run: 'main' must be a callable, a coroutine or None, got {type(main).__name__}")
    clear_stop(loop)  # a stop() from an earlier run is over: deliveries go on
    _turning.add(loop)
    try:
        if inspect.iscoroutine(main):
            return loop.run_until_complete(main)
        if main is not None:
            loop.call_soon(main)
        loop.run_forever()
        return None
    finally:
        _turning.discard(loop)
        clear_stop(loop)


def stop(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Make ``run()`` return after the current loop iteration.

    Called from a consumer's ``on_message``, no further record is handed to any callback on
    this loop: the rest of the batch (and of any other fetched partition) is not delivered,
    so ``position()`` and ``commit()`` stop right after the record whose callback called
    ``stop()``, and the next ``run()`` delivers from there (what was already fetched is held,
    not fetched again). From ``on_batch``,
    the batch being handed over counts as delivered; later batches wait the same way.
    """
    from kafkaev.consumer.delivery import clear_stop, note_stop  # see run()

    loop = loop if loop is not None else default_loop()
    loop.stop()
    note_stop(loop)
    if loop not in _turning:
        # Not turned by run() (the caller's own run_forever): nothing would clear the stop when
        # the loop is turned again, so only the current iteration is held.
        loop.call_soon(clear_stop, loop)
