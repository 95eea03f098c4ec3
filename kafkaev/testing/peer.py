"""The peer client (confluent-kafka) pointed at a test cluster's listeners: configs and a produce/consume round trip.

Interop tests use it as the independent other side: what kafkaev writes, the peer reads, and back.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from .cluster import LocalCluster
from .config import SaslCredentials

DELIVERY_TIMEOUT_S = 30.0
CONSUME_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class PeerRecord:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclass(slots=True)
class RoundTrip:
    """What a round trip produced (delivery reports) and consumed (messages), in order."""

    delivered: list[Message] = field(default_factory=list)
    consumed: list[Message] = field(default_factory=list)


def ssl_config(cluster: LocalCluster, *, client_cert: bool = True) -> dict[str, str]:
    """librdkafka settings for the SSL listener (mutual TLS unless ``client_cert=False``)."""
    config = {
        "bootstrap.servers": cluster.ssl_bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(cluster.ca_cert),
        "ssl.endpoint.identification.algorithm": "https",
    }
    if client_cert:
        config["ssl.certificate.location"] = str(cluster.client_cert)
        config["ssl.key.location"] = str(cluster.client_key)
    return config


def sasl_config(cluster: LocalCluster, credentials: SaslCredentials, *, tls: bool = False) -> dict[str, str]:
    """librdkafka settings for SASL_PLAINTEXT (or SASL_SSL with ``tls=True``) with ``credentials``."""
    config = {
        "bootstrap.servers": cluster.sasl_ssl_bootstrap if tls else cluster.sasl_bootstrap,
        "security.protocol": "SASL_SSL" if tls else "SASL_PLAINTEXT",
        "sasl.mechanism": credentials.mechanism,
        "sasl.username": credentials.username,
        "sasl.password": credentials.password,
    }
    if tls:
        config["ssl.ca.location"] = str(cluster.ca_cert)
        config["ssl.endpoint.identification.algorithm"] = "https"
    return config


def produce(
    config: dict[str, str], topic: str, records: Sequence[PeerRecord], partition: int = 0, *,
    idempotent: bool = True,
) -> list[Message]:
    """Produce ``records`` with acks=all and return their delivery reports; raise on any delivery error.
    ``idempotent=False`` needs no producer id, for a cluster that may not hand one out."""
    producer = Producer({**config, "acks": "all", "enable.idempotence": idempotent})
    reports: list[Message] = []
    errors: list[KafkaError] = []

    def on_delivery(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append(error)
        else:
            reports.append(message)

    for record in records:
        producer.produce(
            topic,
            value=record.value,
            key=record.key,
            headers=list(record.headers),
            partition=partition,
            on_delivery=on_delivery,
        )
    remaining = producer.flush(DELIVERY_TIMEOUT_S)
    if errors or remaining:
        raise AssertionError(f"produce to {topic}: errors {errors}, {remaining} records undelivered")
    return reports


def consume(
    config: dict[str, str], topic: str, count: int, partition: int = 0, offset: int = 0
) -> list[Message]:
    """Read ``count`` records of one partition from ``offset`` (no group commit); raise if they do not come."""
    consumer = Consumer({**config, "group.id": f"kafkaev-peer-{topic}", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        messages: list[Message] = []
        deadline = time.monotonic() + CONSUME_TIMEOUT_S
        while len(messages) < count:
            if time.monotonic() >= deadline:
                raise AssertionError(f"consume {topic}[{partition}]: got {len(messages)} of {count} records")
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                raise AssertionError(f"consume {topic}[{partition}]: {message.error()}")
            messages.append(message)
        return messages
    finally:
        consumer.close()


def round_trip(config: dict[str, str], topic: str, records: Sequence[PeerRecord]) -> RoundTrip:
    """Produce ``records`` to partition 0 of ``topic`` and read them back through the same listener."""
    delivered = produce(config, topic, records)
    first_offset = min(m.offset() or 0 for m in delivered)  # delivered messages always carry one
    return RoundTrip(delivered, consume(config, topic, len(records), offset=first_offset))
