"""What the tests/test_admin_*.py modules share: a kafkaev Admin, confluent-kafka's AdminClient on
the same cluster (the oracle each result is compared with), and ways to give a group commits and
members."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient

from kafkaev.admin import Admin

T = TypeVar("T")
PEER_TIMEOUT_S = 30.0
GROUP_JOIN_TIMEOUT_S = 30.0
# fill() stamps record i at FIRST_TIMESTAMP + i * STEP_MS: an hour ago, well inside the retention
# time (a 1970 stamp would let the broker's retention check delete the records mid-test).
FIRST_TIMESTAMP = (int(time.time()) - 3600) * 1000
STEP_MS = 1000


@pytest.fixture
def admin(kafka: Any) -> Iterator[Admin]:
    admin = Admin(kafka.bootstrap)
    yield admin
    admin.close()
    admin.loop.close()


@pytest.fixture
def peer(kafka: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka.bootstrap, "client.id": "kafkaev-admin-oracle"})


def result(future: Future[Any]) -> Any:
    return future.result(timeout=PEER_TIMEOUT_S)


def peer_error_code(future: Future[Any]) -> int:
    """The error code a confluent-kafka future failed with (0 when it succeeded)."""
    try:
        future.result(timeout=PEER_TIMEOUT_S)
    except Exception as exc:  # confluent-kafka raises KafkaException carrying a KafkaError
        return int(exc.args[0].code())
    return 0


def fill(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode(), partition=partition, timestamp=FIRST_TIMESTAMP + i * STEP_MS)
    assert producer.flush(PEER_TIMEOUT_S) == 0


def commit(bootstrap: str, group: str, offsets: list[tuple[str, int, int]]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[CTopicPartition(t, p, o) for t, p, o in offsets], asynchronous=False)
    finally:
        consumer.close()


def joined_consumer(bootstrap: str, group: str, topic: str, *, protocol: str = "classic") -> Consumer:
    """A confluent-kafka consumer that has joined ``group`` (``protocol`` "consumer": KIP-848)."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": "admin-test",
                              "group.protocol": protocol, "enable.auto.commit": False}
    if protocol == "classic":
        config["session.timeout.ms"] = 10000
    consumer = Consumer(config)
    consumer.subscribe([topic])
    deadline = time.monotonic() + GROUP_JOIN_TIMEOUT_S
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    if not consumer.assignment():
        consumer.close()
        raise AssertionError(f"the confluent consumer never joined {group} ({protocol})")
    return consumer


APPLY_TIMEOUT_S = 10.0


def eventually(read: Callable[[], T], check: Callable[[T], bool]) -> T:
    """``read()`` until ``check`` holds (or the time is up; then the last value, for the assert):
    a broker answers a change once the controller took it and serves reads of it a moment later,
    when it has replayed the metadata record."""
    deadline = time.monotonic() + APPLY_TIMEOUT_S
    while True:
        value = read()
        if check(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.1)
