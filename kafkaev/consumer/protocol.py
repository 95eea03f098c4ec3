"""The "consumer" protocol type's JoinGroup metadata and SyncGroup assignment payloads.

The byte layouts are the generated ConsumerProtocolSubscription / ConsumerProtocolAssignment
codecs of ``kafkaev.protocol.codec`` (Int16 version, then the fields), which Java and librdkafka
members read and write too. kafkaev sends subscription v3 (owned partitions, generation,
rack) and assignment v3; it reads any version, newer ones parsed as the newest it knows,
as the schema prescribes.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkaev.errors import PROTOCOL, KafkaError
from kafkaev.protocol import codec
from kafkaev.types import TopicPartition

from .assignors import MemberSubscription

PROTOCOL_TYPE = "consumer"
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    for parts in grouped.values():
        parts.sort()
    return dict(sorted(grouped.items()))


def encode_subscription(
    topics: Iterable[str],
    owned: Iterable[TopicPartition],
    generation: int,
    user_data: bytes | None,
    rack: str | None = None,
) -> bytes:
    sub = codec.ConsumerProtocolSubscription(
        topics=sorted(topics),
        user_data=user_data,
        owned_partitions=[
            codec.ConsumerProtocolSubscriptionTopicPartition(topic=t, partitions=p)
            for t, p in _by_topic(owned).items()
        ],
        generation_id=generation,
        rack_id=rack,
    )
    return codec.encode_consumer_protocol_subscription(sub, SUBSCRIPTION_VERSION)


def decode_subscription(member_id: str, group_instance_id: str | None, data: bytes) -> MemberSubscription:
    try:
        sub = codec.decode_consumer_protocol_subscription(data)
    except KafkaError as exc:
        raise KafkaError(PROTOCOL, f"JoinGroup metadata of member {member_id!r}: {exc}") from None
    owned = tuple(
        TopicPartition(tp.topic, p) for tp in (sub.owned_partitions or ()) for p in (tp.partitions or ())
    )
    return MemberSubscription(
        member_id=member_id,
        topics=tuple(sub.topics or ()),
        owned=owned,
        generation=sub.generation_id,
        group_instance_id=group_instance_id,
        user_data=None if sub.user_data is None else bytes(sub.user_data),
        rack=sub.rack_id,
    )


def encode_assignment(partitions: Iterable[TopicPartition], user_data: bytes | None = None) -> bytes:
    assignment = codec.ConsumerProtocolAssignment(
        assigned_partitions=[
            codec.ConsumerProtocolAssignmentTopicPartition(topic=t, partitions=p)
            for t, p in _by_topic(partitions).items()
        ],
        user_data=user_data,
    )
    return codec.encode_consumer_protocol_assignment(assignment, ASSIGNMENT_VERSION)


def decode_assignment(data: bytes) -> list[TopicPartition]:
    """An empty payload is an empty assignment (what the coordinator sends a member the
    leader left out)."""
    if not data:
        return []
    try:
        assignment = codec.decode_consumer_protocol_assignment(data)
    except KafkaError as exc:
        raise KafkaError(PROTOCOL, f"SyncGroup assignment: {exc}") from None
    return [
        TopicPartition(tp.topic, p)
        for tp in (assignment.assigned_partitions or ())
        for p in (tp.partitions or ())
    ]
