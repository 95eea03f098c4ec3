"""Shared by the transaction tests: drive a transactional Client's calls to their callbacks,
and read topics back to their end with confluent-kafka at either isolation level."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import confluent_kafka
from producer_helpers import Delivery, await_once, flush

READ_TIMEOUT_S = 120.0


def init(client: Any, loop: asyncio.AbstractEventLoop, timeout: float = 60.0) -> Any:
    return await_once(client.init_transactions, loop, timeout, "init_transactions")


def commit(client: Any, loop: asyncio.AbstractEventLoop, timeout: float = 60.0) -> Any:
    return await_once(client.commit_transaction, loop, timeout, "commit_transaction")


def abort(client: Any, loop: asyncio.AbstractEventLoop, timeout: float = 60.0) -> Any:
    return await_once(client.abort_transaction, loop, timeout, "abort_transaction")


def begin_and_write(client: Any, loop: asyncio.AbstractEventLoop, topic: str, prefix: bytes, count: int,
                    **options: Any) -> Delivery:
    """Begin a transaction, produce ``prefix-0`` .. ``prefix-(count-1)`` and flush: every
    record is written (and called back) inside the still open transaction."""
    client.begin_transaction()
    delivery = Delivery(count)
    for n in range(count):
        client.produce(topic, None, b"%s-%d" % (prefix, n), delivery.cb(n), **options)
    flush(client, loop)
    delivery.assert_each_once()
    assert not delivery.errors, delivery.errors
    return delivery


def peer_read_to_end(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[confluent_kafka.Message]:
    """Every record confluent-kafka delivers from ``topic`` at ``isolation`` ("read_committed" or
    "read_uncommitted"), up to each partition's end (the last stable offset when committed),
    in partition then offset order."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"kafkaev-txn-peer-{topic}-{isolation}",
        "enable.auto.commit": False, "isolation.level": isolation, "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    })
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                         for p in range(partitions)])
        got: list[confluent_kafka.Message] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + READ_TIMEOUT_S
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise AssertionError(f"read {topic} ({isolation}): only partitions {sorted(at_end)} reached the end")
            for msg in consumer.consume(10000, 0.5):
                err = msg.error()
                if err is None:
                    got.append(msg)
                elif err.code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                else:
                    raise AssertionError(f"read {topic} ({isolation}): {err}")
        got.sort(key=lambda m: (m.partition(), m.offset()))
        return got
    finally:
        consumer.close()
