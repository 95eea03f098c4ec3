"""Calling a handler: a plain function returns (or raises) at once; a coroutine is started
eagerly, in the caller's frame, and becomes a task only if it has to wait.

Most async handlers of a busy consumer finish without waiting for anything on some records
(a cache hit, a no-op), and a task per record costs two loop turns before its first line
runs and one more for its done callback. Starting the coroutine by hand (``send(None)``)
finishes those inline; one that yields hands the future it waits on to a task through
``_resume``, which goes on from there exactly as if the task had started it (as Python
3.12's eager task factory does).
"""

from __future__ import annotations

import asyncio
import inspect
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any


def start_call(handler: Callable[[Any], Any], msg: Any,
               loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any] | None:
    """Run ``handler(msg)`` as far as it goes now: None when it finished, a task when it is
    waiting; what it raised is raised here."""
    result = handler(msg)
    return None if result is None else go_on(result, loop)


def go_on(result: Any, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any] | None:
    """What a handler returned, run as far as it goes now (``start_call``'s second half, for a
    caller that made the call itself)."""
    if inspect.iscoroutine(result):
        try:
            waiting_on = result.send(None)
        except StopIteration:
            return None
        return resume(result, waiting_on, loop)
    if inspect.isawaitable(result):
        return asyncio.ensure_future(result, loop=loop)
    return None  # a plain function's return value means nothing


def resume(coro: Coroutine[Any, Any, Any], waiting_on: Any, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Any]:
    """A task for a coroutine started by hand that waits on ``waiting_on`` (what its first step
    yielded), going on as if the task had started it."""
    return loop.create_task(_resume(coro, waiting_on))


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], waiting_on: Any) -> Generator[Any, Any, Any]:
    """The rest of a coroutine started by hand: the task gets the future it yielded first, then
    every later value it sends or throws goes to the coroutine, until it returns."""
    while True:
        try:
            sent = yield waiting_on
        except BaseException as thrown:  # noqa: BLE001 - a cancellation, passed on as the task gives it
            try:
                waiting_on = coro.throw(thrown)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting_on = coro.send(sent)
            except StopIteration as done:
                return done.value
