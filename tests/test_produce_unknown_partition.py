"""``produce(partition=p)`` beyond the topic's partition count: the same error, code and message
whether the count is known at the call (raised) or only later (the record's callback), against
the real broker."""

from __future__ import annotations

import asyncio

import pytest
from producer_helpers import Delivery, close, flush, read_back, wait_for

from kafkaev.client import Client
from kafkaev.errors import UNKNOWN_PARTITION, KafkaError, UnknownPartitionError

PARTITIONS = 3
BEYOND = 9
DELIVERY_TIMEOUT_S = 30.0


def _expected_message(topic: str) -> str:
    return f"produce: 'partition' {BEYOND} is out of range for topic {topic!r} ({PARTITIONS} partitions)"


def test_a_partition_beyond_the_count_fails_alike_before_and_after_the_metadata(kafka, make_topic, loop):
    topic = make_topic(partitions=PARTITIONS)
    client = Client(kafka.bootstrap, loop=loop, linger_ms=1)
    delivery = Delivery(3)
    # Before the metadata: the client has never heard of the topic, so the record waits for it.
    client.produce(topic, b"k", b"early", delivery.cb(0), partition=BEYOND)
    client.produce(topic, b"k", b"fits", delivery.cb(1), partition=PARTITIONS - 1)
    loop.run_until_complete(wait_for(lambda: len(delivery.metas) + len(delivery.errors) >= 2,
                                     DELIVERY_TIMEOUT_S, "the held records"))
    early = delivery.errors[0]
    # After it: the count is known, produce() raises and queues nothing.
    with pytest.raises(UnknownPartitionError) as raised:
        client.produce(topic, b"k", b"late", delivery.cb(2), partition=BEYOND)
    late = raised.value
    client.produce(topic, b"k", b"fits too", delivery.cb(2), partition=0)
    flush(client, loop)
    loop.run_until_complete(wait_for(lambda: delivery.complete, DELIVERY_TIMEOUT_S, "the last record"))
    close(client, loop)

    delivery.assert_each_once()
    for err in (early, late):
        assert type(err) is UnknownPartitionError and isinstance(err, KafkaError) and isinstance(err, ValueError)
        assert (err.code, err.name, err.retriable) == (UNKNOWN_PARTITION, "UNKNOWN_PARTITION", False)
        assert err.message == _expected_message(topic)
        assert (err.topic, err.partition, err.num_partitions) == (topic, BEYOND, PARTITIONS)
    assert str(early) == str(late)
    assert sorted(delivery.metas) == [1, 2] and list(delivery.errors) == [0]
    # Only the records that fit were written.
    got = sorted(m.value() for m in read_back(kafka.bootstrap, topic, 2))
    assert got == [b"fits", b"fits too"]


def test_a_negative_partition_is_a_value_error_at_once_known_topic_or_not(kafka, topic, loop):
    client = Client(kafka.bootstrap, loop=loop)
    for _ in range(2):  # unknown topic first, then known (the first call loads it)
        with pytest.raises(ValueError, match="'partition' must be an int >= 0 or None, got -1") as raised:
            client.produce(topic, None, b"v", partition=-1)
        assert not isinstance(raised.value, KafkaError)
        client.produce(topic, None, b"v", partition=0)
        flush(client, loop)
    close(client, loop)
    loop.run_until_complete(asyncio.sleep(0))
