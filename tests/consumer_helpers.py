"""Shared by the consumer's real-broker tests: fill topics with confluent-kafka (the
independent oracle), drive kafkaev clients on a loop until a condition holds."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka
from exactly_once import Calls

from kafkaev.client import Client


def fill(bootstrap: str, topic: str, partitions: int, per_partition: int, *, codec: str = "none",
         value_size: int = 20) -> None:
    """``per_partition`` records in each partition; value = b"<partition>:<seq>" padded."""
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20,
        "batch.num.messages": 10000, "enable.idempotence": True, "queue.buffering.max.messages": 500000,
    })
    for seq in range(per_partition):
        for p in range(partitions):
            value = (b"%d:%d:" % (p, seq)).ljust(value_size, b"x")
            while True:
                try:
                    producer.produce(topic, value=value, key=b"%d" % seq, partition=p)
                    break
                except BufferError:
                    producer.poll(0.01)
        if seq % 5000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "confluent-kafka could not deliver the test records"


def parse(value: bytes) -> tuple[int, int]:
    p, seq, _ = value.split(b":", 2)
    return int(p), int(seq)


@dataclass
class Received:
    """Every record a kafkaev client delivered, per partition, in delivery order."""

    offsets: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    values: dict[tuple[str, int], list[bytes]] = field(default_factory=dict)
    count: int = 0
    errors: list[BaseException] = field(default_factory=list)

    def on_message(self, msg: Any) -> None:
        key = (msg.topic, msg.partition)
        self.offsets.setdefault(key, []).append(msg.offset)
        self.values.setdefault(key, []).append(msg.value)
        self.count += 1

    def on_batch(self, messages: list[Any]) -> None:
        first = messages[0]
        key = (first.topic, first.partition)
        self.offsets.setdefault(key, []).extend(m.offset for m in messages)
        self.values.setdefault(key, []).extend(m.value for m in messages)
        self.count += len(messages)

    def on_error(self, exc: BaseException) -> None:
        self.errors.append(exc)


def run_until(loop: asyncio.AbstractEventLoop, predicate: Callable[[], bool], timeout: float, what: str) -> None:
    async def wait() -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            await asyncio.sleep(0.02)

    loop.run_until_complete(wait())


def call(loop: asyncio.AbstractEventLoop, start: Callable[[Callable[..., None]], Any], timeout: float = 30) -> tuple:
    """Run ``start(cb)`` and wait for ``cb(*args)``; returns args. A second call of ``cb`` fails
    the test, here or (later) when it ends."""
    calls = Calls()
    start(calls.cb("call"))
    run_until(loop, lambda: bool(calls), timeout, "a callback")
    calls.assert_each_once(["call"])
    return calls["call"]


def connect(loop: asyncio.AbstractEventLoop, bootstrap: str, **options: Any) -> Client:
    client = Client(bootstrap, loop=loop, **options)
    _md, err = call(loop, client.connect)
    assert err is None, err
    return client


def close(loop: asyncio.AbstractEventLoop, client: Client, timeout: float = 30) -> None:
    (err,) = call(loop, client.close, timeout)
    assert err is None, err


def sleep(loop: asyncio.AbstractEventLoop, seconds: float) -> None:
    loop.run_until_complete(asyncio.sleep(seconds))
