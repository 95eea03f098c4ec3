"""Shared by the consumer's real-broker tests: fill topics with confluent-kafka (the
independent oracle), drive kafkaev clients on a loop until a condition holds, and run group
members of either client that record what they own, were assigned, revoke, lose and read."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka
import confluent_kafka.admin
from exactly_once import Calls

from kafkaev.client import Client
from kafkaev.types import TopicPartition


def fill(bootstrap: str, topic: str, partitions: int, per_partition: int, *, codec: str = "none",
         value_size: int = 20, batch_records: int = 10000) -> None:
    """``per_partition`` records in each partition, in batches of at most ``batch_records``;
    value = b"<partition>:<seq>" padded."""
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 20,
        "batch.num.messages": batch_records, "enable.idempotence": True, "queue.buffering.max.messages": 500000,
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


# --- group members --------------------------------------------------------------------------------------
class KafkaevMember:
    """A kafkaev group member on ``topic``: what it owns, was ever assigned, revoked and lost, and
    every record it read. ``client_options`` go to the Client, the rest to ``subscribe``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, bootstrap: str, topic: str, group: str, *,
                 client_options: dict[str, Any] | None = None, **subscribe_options: Any) -> None:
        self.loop = loop
        self.owned: set[TopicPartition] = set()
        self.ever: set[TopicPartition] = set()
        self.revoked: list[TopicPartition] = []
        self.lost: list[TopicPartition] = []
        self.received = Received()
        self.client = connect(loop, bootstrap, on_batch=self.received.on_batch, on_error=self.received.on_error,
                              **(client_options or {}))
        self.client.subscribe([topic], group_id=group, on_assign=self._assign, on_revoke=self._revoke,
                              on_lost=self._lose, **subscribe_options)

    def _assign(self, partitions: list[TopicPartition]) -> None:
        self.owned.update(partitions)
        self.ever.update(partitions)

    def _revoke(self, partitions: list[TopicPartition]) -> None:
        self.revoked.extend(partitions)
        self.owned.difference_update(partitions)

    def _lose(self, partitions: list[TopicPartition]) -> None:
        self.lost.extend(partitions)
        self.owned.difference_update(partitions)

    def snapshot(self) -> set[TopicPartition]:
        return set(self.owned)


class PeerMember:
    """A confluent-kafka (librdkafka) group member polled on its own thread, under ``protocol``
    ("classic" or "consumer"); ``config`` adds to or overrides its settings. Records what it
    owns, was ever assigned and revoked (lost counts as revoked), and the offsets it read."""

    POLL_S = 0.05

    def __init__(self, bootstrap: str, topic: str, group: str, protocol: str, **config: Any) -> None:
        self.protocol = protocol
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", **config})
        self.owned: set[TopicPartition] = set()
        self.ever: set[TopicPartition] = set()
        self.revoked: list[TopicPartition] = []
        self.received: dict[TopicPartition, list[int]] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.consumer.subscribe([topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._revoke)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _assign(self, _c: Any, parts: list[Any]) -> None:
        with self.lock:
            assigned = [TopicPartition(p.topic, p.partition) for p in parts]
            self.owned.update(assigned)
            self.ever.update(assigned)

    def _revoke(self, _c: Any, parts: list[Any]) -> None:
        with self.lock:
            gone = [TopicPartition(p.topic, p.partition) for p in parts]
            self.revoked.extend(gone)
            self.owned.difference_update(gone)

    def _run(self) -> None:
        while not self.stop.is_set():
            msg = self.consumer.poll(self.POLL_S)
            if msg is not None and msg.error() is None:
                with self.lock:
                    self.received.setdefault(TopicPartition(msg.topic(), msg.partition()), []).append(msg.offset())

    def snapshot(self) -> set[TopicPartition]:
        with self.lock:
            return set(self.owned)

    def offsets_read(self) -> dict[TopicPartition, list[int]]:
        with self.lock:
            return {tp: list(offsets) for tp, offsets in self.received.items()}

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.consumer.close()  # commits (auto-commit) and leaves


def settled(owners: list[set[TopicPartition]], everything: set[TopicPartition]) -> bool:
    """Every partition owned by exactly one member, and every member owns some."""
    total = sum(len(o) for o in owners)
    union = set().union(*owners)
    return union == everything and total == len(everything) and all(owners)


def crash(loop: asyncio.AbstractEventLoop, client: Client) -> None:
    """End ``client`` as a killed process would: no commit, no leave; its sockets close. A
    client already closed is left alone."""
    if client._consumer.closed:
        return
    client._consumer.abandon()
    call(loop, client.close)


def set_group_session(cluster: Any, group: str, session_ms: int) -> None:
    """KIP-848 groups take their session timeout from the group's own config."""
    admin = cluster.admin()
    resource = confluent_kafka.admin.ConfigResource(
        confluent_kafka.admin.ResourceType.GROUP, group,
        incremental_configs=[confluent_kafka.admin.ConfigEntry(
            "consumer.session.timeout.ms", str(session_ms),
            incremental_operation=confluent_kafka.admin.AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
