"""Helpers shared by the Connection tests: connect and await, and a callback recorder that checks
every callback is called exactly once."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from exactly_once import Calls, assert_once_each, track

from kafkaev.errors import KafkaError
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection


def split_bootstrap(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


async def _called(calls: Calls, key: str, timeout: float) -> tuple[Any, ...]:
    """Wait until ``calls.cb(key)`` has been called, then one more loop turn; its arguments."""
    args = await calls.first_call(key, timeout)
    await asyncio.sleep(0)
    calls.assert_each_once([key])
    return args


async def connect(conn: Connection, bootstrap: str, timeout: float = 10.0) -> KafkaError | None:
    """Connect and wait for the connect callback; return its error (None when ready)."""
    calls = Calls("the connect callback")
    record = calls.cb("connect")
    host, port = split_bootstrap(bootstrap)
    # Not the Connection itself: kept until the test ends, it would keep the Connection alive.
    conn.connect(host, port, timeout=timeout, cb=lambda c, err: record(c is conn, err))
    given_itself, err = await _called(calls, "connect", timeout + 5)
    assert given_itself, "the connect callback was given another Connection"
    return err


async def call(method: Any, *args: Any, **kwargs: Any) -> tuple[Any, KafkaError | None]:
    """Issue one request through a Connection method and await cb(response, err)."""
    calls = Calls(f"the {getattr(method, '__name__', 'request')} callback")
    method(*args, calls.cb("request"), **kwargs)
    response, err = await _called(calls, "request", 60)
    return response, err


@dataclass
class Recorder:
    """Callbacks for N requests (indexes 0..N-1): records (index, response, err) in call order,
    counts the calls per index, and resolves ``all_done`` once there have been N calls.
    ``assert_each_once()`` checks that each index was called once; the ``each_callback_at_most_once``
    fixture checks for a second call when the test ends."""

    expected: int
    loop: asyncio.AbstractEventLoop
    results: list[tuple[int, Any, KafkaError | None]] = field(default_factory=list)
    calls: dict[int, int] = field(default_factory=dict)
    all_done: asyncio.Future[None] = field(init=False)

    def __post_init__(self) -> None:
        self.all_done = self.loop.create_future()
        track(self)

    def cb(self, index: int) -> Any:
        def on_result(response: Any, err: KafkaError | None) -> None:
            self.calls[index] = self.calls.get(index, 0) + 1
            self.results.append((index, response, err))
            if len(self.results) == self.expected and not self.all_done.done():
                self.all_done.set_result(None)

        return on_result

    def assert_no_second_call(self) -> None:
        assert_once_each(self.calls, [i for i, n in self.calls.items() if n > 1], what="request callback")

    def assert_each_once(self) -> None:
        self.assert_no_second_call()
        assert_once_each(self.calls, (), range(self.expected), "request callback")


def run(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    return loop.run_until_complete(coro)


def record_batch(*values: bytes) -> bytes:
    """An uncompressed RecordBatch of keyless records stamped now."""
    builder = codec.RecordBatchBuilder()
    now = int(time.time() * 1000)
    for value in values:
        builder.append(now, None, value)
    return builder.build()
