"""Shared by the handler runner's tests: run a ``kafkaev.Runner`` on a test loop, read the
group's committed offsets and dead letters back through confluent-kafka (the oracle)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import confluent_kafka
from consumer_helpers import run_until

import kafkaev


class Overlaps:
    """Handler calls running at once: the most at any moment, and every call that began while
    another of the same key (a partition, a record key) was still running."""

    def __init__(self) -> None:
        self.running: set[object] = set()
        self.in_flight = 0
        self.most = 0
        self.clashes: list[object] = []

    def enter(self, key: object) -> None:
        if key in self.running:
            self.clashes.append(key)
        self.running.add(key)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)

    def leave(self, key: object) -> None:
        self.in_flight -= 1
        self.running.discard(key)


def start(loop: asyncio.AbstractEventLoop, runner: kafkaev.Runner) -> None:
    answers: list[object] = []
    runner.start(answers.append)
    run_until(loop, lambda: bool(answers), 30, "the runner's clients to connect")
    assert answers == [None], answers


def stop(loop: asyncio.AbstractEventLoop, runner: kafkaev.Runner, timeout: float = 60) -> None:
    answers: list[object] = []
    runner.stop(answers.append)
    run_until(loop, lambda: bool(answers), timeout, "the runner to stop")
    assert answers == [None], answers


def committed(bootstrap: str, group_id: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset per partition (-1001 where none), as confluent-kafka reads it."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group_id,
                                         "enable.auto.commit": False})
    try:
        answer = consumer.committed([confluent_kafka.TopicPartition(topic, p) for p in range(partitions)],
                                    timeout=30)
        return {tp.partition: tp.offset for tp in answer}
    finally:
        consumer.close()


def read_all(bootstrap: str, topic: str, count: int, timeout: float = 60) -> list[Any]:
    """``count`` records of every partition of ``topic`` from the start, through confluent-kafka."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"peer-read-{topic}",
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        messages: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(messages) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"read {topic}: got {len(messages)} of {count} records")
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            messages.append(message)
        return messages
    finally:
        consumer.close()


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes | None, list[Any]]]) -> None:
    """(partition, key, value, headers) records, through confluent-kafka, acks=all."""
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                         "enable.idempotence": True})
    for partition, key, value, headers in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, partition=partition, headers=headers or None)
                break
            except BufferError:
                producer.poll(0.01)
    assert producer.flush(60) == 0
