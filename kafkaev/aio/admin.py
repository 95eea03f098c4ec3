"""``kafkaev.aio.Admin``: ``kafkaev.Admin`` with every callback method awaited.

The wrapper knows no method by name: any method of ``kafkaev.Admin`` with a ``cb`` parameter is
returned as a coroutine function taking the same arguments without ``cb``; anything else is
``kafkaev.Admin``'s own (``close()``, ``config``). So methods added to ``kafkaev.Admin`` are
awaitable here at once.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from functools import cache
from typing import Any

from kafkaev.admin import Admin as CallbackAdmin

from .bridge import call


@cache
def _takes_callback(method: Callable[..., object]) -> bool:
    try:
        return "cb" in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False


class Admin:
    """``Admin(brokers=None, **options)`` (or ``Admin(client)``, sharing a client's brokers and
    security) on the running loop; ``async with`` closes it."""

    def __init__(self, brokers: Any = None, **options: Any) -> None:
        loop = options.pop("loop", None) or asyncio.get_running_loop()
        inner = getattr(brokers, "_client", brokers)  # a kafkaev.aio.Client: its kafkaev.Client
        self.loop = loop
        self.admin = CallbackAdmin(inner, loop=loop, **options)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.admin, name)
        if name.startswith("_") or not callable(attr) or not _takes_callback(getattr(CallbackAdmin, name, attr)):
            return attr

        def awaited(*args: Any, **kwargs: Any) -> Coroutine[Any, Any, Any]:
            return call(self.loop, attr, *args, **kwargs)

        awaited.__name__ = name
        awaited.__doc__ = attr.__doc__
        return awaited

    async def close(self) -> None:
        """Close the connections."""
        self.admin.close()

    async def __aenter__(self) -> Admin:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
