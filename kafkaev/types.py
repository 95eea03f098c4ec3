"""Small public value types and constants shared by the producer and the consumer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple, TypedDict

if TYPE_CHECKING:  # only for the annotations below: types.py imports nothing of the package at run time
    import asyncio
    import ssl
    from typing import TypeAlias

    from .consumer.assignors import Assignor
    from .errors import KafkaError
    from .protocol.codec import Message
    from .security import SASLConfig, TLSConfig
    from .stats.snapshot import ClientStats

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


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What ``group_metadata()`` says about a consumer group member, for
    ``send_offsets_to_transaction`` (KIP-447): the group coordinator refuses the offsets of a
    member whose generation is over, so a zombie cannot commit a transaction's offsets."""

    group_id: str
    generation_id: int  # the classic generation, or the member epoch under "consumer"; -1 while in neither
    member_id: str
    group_instance_id: str | None = None


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


# --- the public API's argument and callback types (for type checkers; see kafkaev.Client) ---
# Defined under TYPE_CHECKING: they name KafkaError and Message, which this module must not import.
if TYPE_CHECKING:
    # A record's key or value: bytes-like, str (sent as UTF-8) or None (a null key or value).
    RecordBytes: TypeAlias = bytes | bytearray | memoryview | str | None
    HeaderValue: TypeAlias = bytes | bytearray | memoryview | str | None
    # (name, value) pairs, a name may repeat; or a mapping, one value per name.
    Headers: TypeAlias = Sequence[tuple[str, HeaderValue]] | Mapping[str, HeaderValue]
    # A partition as the consumer methods take it: a TopicPartition or a plain (topic, partition).
    PartitionLike: TypeAlias = TopicPartition | tuple[str, int]
    # assign()'s entries may also name the offset to start at.
    AssignedPartition: TypeAlias = TopicPartition | tuple[str, int] | tuple[str, int, int]
    Brokers: TypeAlias = str | Sequence[str | tuple[str, int]]

    DeliveryCallback: TypeAlias = Callable[[RecordMetadata | None, KafkaError | None], object]
    # produce_many: None when every record was acknowledged, else (index, error) of each failure.
    ManyCallback: TypeAlias = Callable[[list[tuple[int, KafkaError]] | None], object]
    DoneCallback: TypeAlias = Callable[[KafkaError | None], object]
    PositionCallback: TypeAlias = Callable[[int | None, KafkaError | None], object]
    # offsets_for: {partition: (earliest, latest)}
    OffsetsForCallback: TypeAlias = Callable[[dict[int, tuple[int, int]] | None, KafkaError | None], object]
    # lag: {(topic, partition): (position, high watermark, lag)}
    LagCallback: TypeAlias = Callable[[dict[tuple[str, int], tuple[int, int, int]] | None, KafkaError | None], object]
    CommittedCallback: TypeAlias = Callable[[dict[TopicPartition, int] | None, KafkaError | None], object]
    CommittedMetadataCallback: TypeAlias = Callable[
        [dict[TopicPartition, OffsetAndMetadata] | None, KafkaError | None], object]
    PartitionsCallback: TypeAlias = Callable[[list[TopicPartition]], object]
    MessageCallback: TypeAlias = Callable[[Message], object]
    BatchCallback: TypeAlias = Callable[[list[Message]], object]

# The options with a fixed set of values (tests/test_public_typing.py checks each against config.py).
Acks = Literal[0, 1, -1, "all"]
Compression = Literal["none", "gzip", "snappy", "lz4", "zstd"]
IsolationLevel = Literal["read_uncommitted", "read_committed"]
AutoOffsetReset = Literal["earliest", "latest", "error"]
AssignorName = Literal["cooperative-sticky", "range", "roundrobin"]
GroupProtocol = Literal["classic", "consumer"]
RemoteAssignorName = Literal["uniform", "range"]


class ClientOptions(TypedDict, total=False):
    """``Client(brokers, **options)``'s options as a type checker sees them: one key per
    ``ClientConfig`` field but ``brokers`` (tests/test_public_typing.py keeps the two lists
    equal); ``docs/options.md`` says what each one does."""

    # --- connection and cluster ---
    client_id: str
    request_timeout_ms: int
    connect_timeout_ms: int
    reconnect_backoff_ms: int
    reconnect_backoff_max_ms: int
    metadata_max_age_ms: int
    metadata_min_refresh_ms: int
    tls: bool | ssl.SSLContext | TLSConfig | None
    sasl: SASLConfig | Mapping[str, str] | None
    loop: asyncio.AbstractEventLoop | None
    on_error: Callable[[BaseException], object] | None
    on_connect: Callable[[], object] | None
    debug: str | None
    stats_interval_ms: int
    stats_cb: Callable[[ClientStats], object] | None
    busy_poll_us: int
    # --- producer ---
    acks: Acks
    linger_ms: float
    batch_size: int
    compression: Compression | None
    idempotent: bool
    partitioner: Callable[[str, bytes | None, int], int] | None
    delivery_timeout_ms: int
    max_in_flight: int
    produce_connections: int
    buffer_memory: int
    buffer_records: int
    max_request_size: int
    retry_backoff_ms: int
    retry_backoff_max_ms: int
    allow_auto_topic_creation: bool
    metadata_wait_ms: int
    transactional_id: str | None
    transaction_timeout_ms: int
    # --- consumer ---
    on_message: MessageCallback | None
    on_batch: BatchCallback | None
    fetch_max_wait_ms: int
    fetch_min_bytes: int
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    isolation_level: IsolationLevel
    check_crcs: bool
    client_rack: str | None
    max_buffered_bytes: int
    # --- consumer group: defaults for subscribe() ---
    group_id: str | None
    group_protocol: GroupProtocol
    remote_assignor: RemoteAssignorName | None
    group_instance_id: str | None
    assignors: AssignorName | Sequence[AssignorName]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    heartbeat_interval_ms: int
    auto_commit: bool
    auto_commit_interval_ms: int
    auto_offset_reset: AutoOffsetReset


class SubscribeOptions(TypedDict, total=False):
    """``subscribe(topics, **options)``'s options: each overrides the client option of the same
    name for this subscription (tests/test_public_typing.py compares them with
    ``Consumer.subscribe``'s keyword arguments)."""

    group_id: str | None
    pattern: str | None
    group_protocol: GroupProtocol
    remote_assignor: RemoteAssignorName | None
    on_assign: PartitionsCallback | None
    on_revoke: PartitionsCallback | None
    on_lost: PartitionsCallback | None
    assignors: Sequence[AssignorName | Assignor]
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    heartbeat_interval_ms: int
    auto_commit: bool
    auto_commit_interval_ms: int
    auto_offset_reset: AutoOffsetReset
