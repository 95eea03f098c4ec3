"""Helpers shared by the Connection tests: connect and await, and a callback recorder that checks
every callback is called exactly once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from kafkaev._conn import Connection
from kafkaev.errors import KafkaError


def split_bootstrap(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


async def connect(conn: Connection, bootstrap: str, timeout: float = 10.0) -> KafkaError | None:
    """Connect and wait for the connect callback; return its error (None when ready)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[KafkaError | None] = loop.create_future()
    calls: list[Any] = []

    def on_connected(c: Connection, err: KafkaError | None) -> None:
        calls.append(err)
        assert c is conn
        if not done.done():
            done.set_result(err)

    host, port = split_bootstrap(bootstrap)
    conn.connect(host, port, timeout=timeout, cb=on_connected)
    err = await asyncio.wait_for(done, timeout + 5)
    await asyncio.sleep(0)
    assert len(calls) == 1, f"connect cb called {len(calls)} times"
    return err


async def call(method: Any, *args: Any, **kwargs: Any) -> tuple[Any, KafkaError | None]:
    """Issue one request through a Connection method and await cb(response, err)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[tuple[Any, KafkaError | None]] = loop.create_future()
    method(*args, lambda r, e: done.set_result((r, e)), **kwargs)
    return await asyncio.wait_for(done, 60)


@dataclass
class Recorder:
    """Callbacks for N requests: records (index, response, err) in call order, flags a second call,
    and resolves ``all_done`` once every one of them has been called."""

    expected: int
    loop: asyncio.AbstractEventLoop
    results: list[tuple[int, Any, KafkaError | None]] = field(default_factory=list)
    calls: dict[int, int] = field(default_factory=dict)
    all_done: asyncio.Future[None] = field(init=False)

    def __post_init__(self) -> None:
        self.all_done = self.loop.create_future()

    def cb(self, index: int) -> Any:
        def on_result(response: Any, err: KafkaError | None) -> None:
            self.calls[index] = self.calls.get(index, 0) + 1
            self.results.append((index, response, err))
            if len(self.results) == self.expected and not self.all_done.done():
                self.all_done.set_result(None)

        return on_result

    def assert_each_once(self) -> None:
        assert len(self.calls) == self.expected
        twice = [i for i, n in self.calls.items() if n != 1]
        assert not twice, f"callbacks called more than once: {twice[:10]}"
