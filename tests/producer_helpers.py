"""Shared by the producer's real-broker tests: drive a Client from a coroutine, read back with
confluent-kafka (the independent oracle)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka
from exactly_once import Calls, assert_once_each, track

from kafkaev.producer import BufferFullError

READ_BATCH = 10000


@dataclass(slots=True)
class Delivery:
    """Every callback of a produce run, by record index; a second call for an index is a bug,
    recorded in ``duplicates`` (the callback itself never raises: the producer would catch it).
    ``assert_each_once()`` checks that records 0..expected-1 were each reported once; the
    ``each_callback_at_most_once`` fixture checks for a second call when the test ends."""

    expected: int
    metas: dict[int, Any] = field(default_factory=dict)
    errors: dict[int, Any] = field(default_factory=dict)
    duplicates: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        track(self)

    def assert_no_second_call(self) -> None:
        assert_once_each((), self.duplicates, what="delivery callback")

    def assert_each_once(self) -> None:
        self.assert_no_second_call()
        called = self.metas.keys() | self.errors.keys()
        assert_once_each(called, (), range(self.expected), "delivery callback")

    def cb(self, index: int):
        def done(meta: Any, err: Any) -> None:
            if index in self.metas or index in self.errors:
                self.duplicates.append(index)
            if err is None:
                self.metas[index] = meta
            else:
                self.errors[index] = err
        return done

    @property
    def complete(self) -> bool:
        return len(self.metas) + len(self.errors) >= self.expected


async def produce_all(client: Any, topic: str, records: list[tuple[Any, Any]], delivery: Delivery | None = None,
                      start: int = 0, **kwargs: Any) -> None:
    """Produce every (key, value), yielding to the loop when the buffer is full; the record
    at ``records[i]`` reports to ``delivery`` as index ``start + i``."""
    produce = client.produce
    for i, (key, value) in enumerate(records, start):
        cb = delivery.cb(i) if delivery is not None else None
        while True:
            try:
                produce(topic, key, value, cb, **kwargs)
                break
            except BufferFullError:
                await asyncio.sleep(0.001)
        if i % 5000 == 4999:
            await asyncio.sleep(0)


async def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


def await_once(start: Any, loop: asyncio.AbstractEventLoop, timeout: float, what: str) -> Any:
    """``start(cb)``, then wait until ``cb`` is called; its argument. A second call fails the test."""
    calls = Calls(f"the {what} callback")
    start(calls.cb(what))
    loop.run_until_complete(wait_for(lambda: calls, timeout, what))
    calls.assert_each_once([what])
    (result,) = calls[what]
    return result


def flush(client: Any, loop: asyncio.AbstractEventLoop, timeout: float = 60.0) -> Any:
    return await_once(client.flush, loop, timeout, "flush")


def close(client: Any, loop: asyncio.AbstractEventLoop, timeout: float = 60.0) -> Any:
    return await_once(client.close, loop, timeout, "close")


def read_back(bootstrap: str, topic: str, count: int, timeout: float = 60.0) -> list[Any]:
    """Every record of ``topic`` (at least ``count``), read with confluent-kafka from the start."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"readback-{topic}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
    })
    out: list[Any] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            for msg in consumer.consume(READ_BATCH, 1.0):
                if msg.error() is not None:
                    raise AssertionError(f"confluent-kafka read error: {msg.error()}")
                out.append(msg)
        # anything beyond count (duplicates) arrives within a short grace period
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            batch = consumer.consume(READ_BATCH, 0.2)
            out.extend(m for m in batch if m.error() is None)
    finally:
        consumer.close()
    return out
