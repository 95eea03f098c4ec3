"""Small public value types and constants shared by the producer and the consumer."""

from __future__ import annotations

from typing import NamedTuple

# The protocol's -1 sentinels, one name per meaning.
NO_OFFSET = -1  # no offset: nothing committed, not known yet, none at a timestamp, or acks=0
NO_LEADER_EPOCH = -1  # leader epoch not known or not checked (Java's RecordBatch.NO_PARTITION_LEADER_EPOCH)
NO_TIMESTAMP = -1  # Java's RecordBatch.NO_TIMESTAMP; a Produce answer's log_append_time under CreateTime


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class RecordMetadata(NamedTuple):
    """What a delivery callback learns about one acknowledged record.

    ``offset`` is the record's own offset (batch base offset + index in the batch),
    NO_OFFSET (-1) when acks=0. ``timestamp`` is the broker's LogAppendTime when the topic uses it,
    otherwise the record's CreateTime, in milliseconds.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int


class OffsetAndMetadata(NamedTuple):
    """A group's committed position in one partition.

    ``offset`` is the next record to read (NO_OFFSET, -1: nothing committed); ``metadata``
    is the string committed with it (the broker keeps up to ``offset.metadata.max.bytes``,
    4096 by default); ``leader_epoch`` the partition leader epoch of the last record read,
    NO_LEADER_EPOCH (-1) when unknown.
    """

    offset: int
    metadata: str | None = None
    leader_epoch: int = NO_LEADER_EPOCH


# Special offsets understood by assign()/seek() (the ListOffsets timestamps).
OFFSET_BEGINNING = -2
OFFSET_END = -1

# Produce acknowledgement modes.
ACKS_NONE = 0  # fire-and-forget: callbacks complete at write time, offset NO_OFFSET
ACKS_LEADER = 1  # the partition leader wrote the batch
ACKS_ALL = -1  # every in-sync replica has the batch

# Timestamp types of a record batch (attribute bit 3).
TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

# Fetch isolation levels as sent on the wire.
ISOLATION_READ_UNCOMMITTED = 0
ISOLATION_READ_COMMITTED = 1
