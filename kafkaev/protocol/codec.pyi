# Typing stubs for kafkaev.protocol.codec (the Cython codec module).
from collections.abc import Sequence
from typing import Literal
from uuid import UUID

from kafkaev.errors import KafkaError

_BytesLike = bytes | bytearray | memoryview

# --- buffers (codec_buffers.pxi) ---

class WriteBuffer:
    def __init__(self) -> None: ...
    def write(self, kind: str, value: object) -> WriteBuffer: ...
    def begin_frame(self) -> None: ...
    def finish_frame(self) -> None: ...
    def clear(self) -> None: ...
    def to_bytes(self) -> bytes: ...
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

class ReadBuffer:
    def __init__(self, data: _BytesLike, api: str | None = None) -> None: ...
    @property
    def position(self) -> int: ...
    @property
    def remaining_bytes(self) -> int: ...
    def read(
        self, kind: str, field: str | None = None
    ) -> int | float | bool | str | bytes | memoryview | UUID | dict[int, bytes] | ReadBuffer | None: ...

# --- hashing (codec_hashing.pxi) ---

def crc32c(data: _BytesLike, crc: int = 0) -> int: ...
def murmur2(key: _BytesLike | str) -> int: ...
def _crc32c_implementation() -> Literal["sse4.2", "table"]: ...
def _crc32c_table(data: _BytesLike, crc: int = 0) -> int: ...

# --- RecordBatch v2 encoder (codec_record_builder.pxi) ---

BATCH_HEADER_SIZE: int  # a RecordBatch v2 header's bytes: where its records start
RECORD_OVERHEAD_MAX: int  # a record's largest framing besides its key, value and headers

class EncodedBatch:
    """One encoded RecordBatch v2: what RecordBatchBuilder.finish() returns and the connection writes."""

    def __init__(self, data: bytes) -> None: ...
    def __len__(self) -> int: ...
    def __bytes__(self) -> bytes: ...
    @property
    def pieces(self) -> tuple[bytes | memoryview, ...]: ...
    def restamped(self, producer_id: int, producer_epoch: int, base_sequence: int) -> EncodedBatch: ...

class RecordBatchBuilder:
    def __init__(self, codec: int = 0, max_batch_size: int = 1048576, compression_level: int = -1) -> None: ...
    def append(
        self,
        timestamp_ms: int | None,
        key: _BytesLike | str | None,
        value: _BytesLike | str | None,
        headers: Sequence[tuple[str, _BytesLike | str | None]] | None = None,
    ) -> int: ...
    def build(
        self,
        base_offset: int = 0,
        partition_leader_epoch: int = -1,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        is_control: bool = False,
    ) -> bytes: ...
    def finish(
        self,
        base_offset: int = 0,
        partition_leader_epoch: int = -1,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        is_control: bool = False,
    ) -> EncodedBatch: ...
    def reset(self) -> None: ...
    @property
    def record_count(self) -> int: ...
    @property
    def estimated_size(self) -> int: ...
    @property
    def max_batch_size(self) -> int: ...
    @max_batch_size.setter
    def max_batch_size(self, size: int) -> None: ...
    @property
    def codec(self) -> int: ...
    @property
    def base_timestamp(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    def __len__(self) -> int: ...

# --- compression (codec_compression.pxi) ---
COMPRESSION_LEVEL_DEFAULT: int
DEFAULT_MAX_UNCOMPRESSED_SIZE: int
def codec_name(codec: int) -> str: ...
def compress(codec: int, data: _BytesLike, level: int = -1) -> bytes: ...
def decompress(codec: int, data: _BytesLike, max_size: int = ...) -> bytes: ...
def xxh32(data: _BytesLike, seed: int = 0) -> int: ...

# --- record-set reader (codec_record_reader.pxi) ---
TIMESTAMP_NOT_AVAILABLE: int
TIMESTAMP_CREATE_TIME: int
TIMESTAMP_LOG_APPEND_TIME: int
CONTROL_ABORT: int
CONTROL_COMMIT: int

class Message:
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int: ...
    @property
    def timestamp_type(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...
    @property
    def leader_epoch(self) -> int: ...
    def __init__(
        self, topic: str, partition: int, offset: int, key: bytes | None = None, value: bytes | None = None, *,
        timestamp: int = -1, timestamp_type: int = -1, headers: list[tuple[str, bytes | None]] | None = None,
        leader_epoch: int = -1,
    ) -> None: ...

class ControlRecord:
    @property
    def offset(self) -> int: ...
    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def type(self) -> int: ...
    def __init__(self, offset: int, producer_id: int, producer_epoch: int, type: int) -> None: ...

class FetchedRecords:
    @property
    def messages(self) -> list[Message]: ...
    @property
    def control(self) -> list[ControlRecord]: ...
    @property
    def next_offset(self) -> int: ...
    @property
    def truncated(self) -> bool: ...
    @property
    def batch_count(self) -> int: ...
    @property
    def last_leader_epoch(self) -> int: ...
    @property
    def bytes_read(self) -> int: ...
    @property
    def aborted_count(self) -> int: ...
    @property
    def error(self) -> KafkaError | None: ...

def read_records(
    topic: str, partition: int, records: _BytesLike | None, fetch_offset: int = 0, *,
    check_crcs: bool = True, read_committed: bool = False,
    aborted_transactions: Sequence[object] | None = None, max_uncompressed_size: int = ...,
    stop_at_corrupt: bool = False,
) -> FetchedRecords: ...
def next_fetch_offset(records: _BytesLike | None, fetch_offset: int = 0) -> int: ...
def next_fetch_position(
    records: _BytesLike | None, fetch_offset: int = 0, fetch_epoch: int = -1,
) -> tuple[int, int]: ...

class DecodedRecord:
    attributes: int
    timestamp_delta: int
    offset_delta: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]

class DecodedBatch:
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    compression: int
    timestamp_type: int
    is_transactional: bool
    is_control: bool
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    records: list[DecodedRecord]
    @property
    def next_offset(self) -> int: ...

def decode_record_batches(
    data: _BytesLike, check_crcs: bool = True, *, allow_truncated: bool = False, max_uncompressed_size: int = ...,
) -> list[DecodedBatch]: ...

# --- BEGIN generated messages (tools/gen_messages.py) ---
# Request/response codecs generated from Kafka's message schemas.
import enum  # noqa: E402
import uuid  # noqa: E402
from typing import Any, ClassVar  # noqa: E402

ZERO_UUID: uuid.UUID
KIND_NAMES: tuple[str, ...]

class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    LIST_CONFIG_RESOURCES = 74
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92

SUPPORTED_VERSIONS: dict[int, tuple[int, int]]
API_NAMES: dict[int, str]
FIRST_FLEXIBLE_VERSIONS: dict[int, int | None]
REQUEST_CLASSES: dict[int, type[MessageStruct]]
RESPONSE_CLASSES: dict[int, type[MessageStruct]]

class MessageStruct:
    _fields: ClassVar[tuple[str, ...]]
    unknown_tagged_fields: dict[int, bytes] | None
    def __init__(self, **fields: Any) -> None: ...
    def to_dict(self) -> dict[str, Any]: ...

class ProduceRequest(MessageStruct):
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[TopicProduceData]
    def __init__(self, *, transactional_id: str | None = ..., acks: int = ..., timeout_ms: int = ..., topic_data: list[TopicProduceData] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TopicProduceData(MessageStruct):
    name: str
    topic_id: uuid.UUID
    partition_data: list[PartitionProduceData]
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., partition_data: list[PartitionProduceData] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class PartitionProduceData(MessageStruct):
    index: int
    records: bytes | memoryview | None
    def __init__(self, *, index: int = ..., records: bytes | memoryview | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ProduceResponse(MessageStruct):
    responses: list[TopicProduceResponse]
    throttle_time_ms: int
    node_endpoints: list[ProduceResponseNodeEndpoint]
    def __init__(self, *, responses: list[TopicProduceResponse] = ..., throttle_time_ms: int = ..., node_endpoints: list[ProduceResponseNodeEndpoint] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TopicProduceResponse(MessageStruct):
    name: str
    topic_id: uuid.UUID
    partition_responses: list[PartitionProduceResponse]
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., partition_responses: list[PartitionProduceResponse] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class PartitionProduceResponse(MessageStruct):
    index: int
    error_code: int
    base_offset: int
    log_append_time_ms: int
    log_start_offset: int
    record_errors: list[BatchIndexAndErrorMessage]
    error_message: str | None
    current_leader: ProduceResponseLeaderIdAndEpoch | None
    def __init__(self, *, index: int = ..., error_code: int = ..., base_offset: int = ..., log_append_time_ms: int = ..., log_start_offset: int = ..., record_errors: list[BatchIndexAndErrorMessage] = ..., error_message: str | None = ..., current_leader: ProduceResponseLeaderIdAndEpoch | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class BatchIndexAndErrorMessage(MessageStruct):
    batch_index: int
    batch_index_error_message: str | None
    def __init__(self, *, batch_index: int = ..., batch_index_error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ProduceResponseLeaderIdAndEpoch(MessageStruct):
    leader_id: int
    leader_epoch: int
    def __init__(self, *, leader_id: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ProduceResponseNodeEndpoint(MessageStruct):
    node_id: int
    host: str
    port: int
    rack: str | None
    def __init__(self, *, node_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FetchRequest(MessageStruct):
    cluster_id: str | None
    replica_id: int
    replica_state: ReplicaState | None
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    topics: list[FetchTopic]
    forgotten_topics_data: list[ForgottenTopic]
    rack_id: str
    def __init__(self, *, cluster_id: str | None = ..., replica_id: int = ..., replica_state: ReplicaState | None = ..., max_wait_ms: int = ..., min_bytes: int = ..., max_bytes: int = ..., isolation_level: int = ..., session_id: int = ..., session_epoch: int = ..., topics: list[FetchTopic] = ..., forgotten_topics_data: list[ForgottenTopic] = ..., rack_id: str = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ReplicaState(MessageStruct):
    replica_id: int
    replica_epoch: int
    def __init__(self, *, replica_id: int = ..., replica_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FetchTopic(MessageStruct):
    topic: str
    topic_id: uuid.UUID
    partitions: list[FetchPartition]
    def __init__(self, *, topic: str = ..., topic_id: uuid.UUID = ..., partitions: list[FetchPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FetchPartition(MessageStruct):
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int
    replica_directory_id: uuid.UUID
    high_watermark: int
    def __init__(self, *, partition: int = ..., current_leader_epoch: int = ..., fetch_offset: int = ..., last_fetched_epoch: int = ..., log_start_offset: int = ..., partition_max_bytes: int = ..., replica_directory_id: uuid.UUID = ..., high_watermark: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ForgottenTopic(MessageStruct):
    topic: str
    topic_id: uuid.UUID
    partitions: list[int]
    def __init__(self, *, topic: str = ..., topic_id: uuid.UUID = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FetchResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    session_id: int
    responses: list[FetchableTopicResponse]
    node_endpoints: list[FetchResponseNodeEndpoint]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., session_id: int = ..., responses: list[FetchableTopicResponse] = ..., node_endpoints: list[FetchResponseNodeEndpoint] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FetchableTopicResponse(MessageStruct):
    topic: str
    topic_id: uuid.UUID
    partitions: list[PartitionData]
    def __init__(self, *, topic: str = ..., topic_id: uuid.UUID = ..., partitions: list[PartitionData] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class PartitionData(MessageStruct):
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    diverging_epoch: FetchResponseEpochEndOffset | None
    current_leader: FetchResponseLeaderIdAndEpoch | None
    snapshot_id: SnapshotId | None
    aborted_transactions: list[AbortedTransaction] | None
    preferred_read_replica: int
    records: bytes | memoryview | None
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., high_watermark: int = ..., last_stable_offset: int = ..., log_start_offset: int = ..., diverging_epoch: FetchResponseEpochEndOffset | None = ..., current_leader: FetchResponseLeaderIdAndEpoch | None = ..., snapshot_id: SnapshotId | None = ..., aborted_transactions: list[AbortedTransaction] | None = ..., preferred_read_replica: int = ..., records: bytes | memoryview | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FetchResponseEpochEndOffset(MessageStruct):
    epoch: int
    end_offset: int
    def __init__(self, *, epoch: int = ..., end_offset: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FetchResponseLeaderIdAndEpoch(MessageStruct):
    leader_id: int
    leader_epoch: int
    def __init__(self, *, leader_id: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SnapshotId(MessageStruct):
    end_offset: int
    epoch: int
    def __init__(self, *, end_offset: int = ..., epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AbortedTransaction(MessageStruct):
    producer_id: int
    first_offset: int
    def __init__(self, *, producer_id: int = ..., first_offset: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FetchResponseNodeEndpoint(MessageStruct):
    node_id: int
    host: str
    port: int
    rack: str | None
    def __init__(self, *, node_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListOffsetsRequest(MessageStruct):
    replica_id: int
    isolation_level: int
    topics: list[ListOffsetsTopic]
    timeout_ms: int
    def __init__(self, *, replica_id: int = ..., isolation_level: int = ..., topics: list[ListOffsetsTopic] = ..., timeout_ms: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListOffsetsTopic(MessageStruct):
    name: str
    partitions: list[ListOffsetsPartition]
    def __init__(self, *, name: str = ..., partitions: list[ListOffsetsPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListOffsetsPartition(MessageStruct):
    partition_index: int
    current_leader_epoch: int
    timestamp: int
    def __init__(self, *, partition_index: int = ..., current_leader_epoch: int = ..., timestamp: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListOffsetsResponse(MessageStruct):
    throttle_time_ms: int
    topics: list[ListOffsetsTopicResponse]
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[ListOffsetsTopicResponse] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListOffsetsTopicResponse(MessageStruct):
    name: str
    partitions: list[ListOffsetsPartitionResponse]
    def __init__(self, *, name: str = ..., partitions: list[ListOffsetsPartitionResponse] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListOffsetsPartitionResponse(MessageStruct):
    partition_index: int
    error_code: int
    timestamp: int
    offset: int
    leader_epoch: int
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., timestamp: int = ..., offset: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class MetadataRequest(MessageStruct):
    topics: list[MetadataRequestTopic] | None
    allow_auto_topic_creation: bool
    include_cluster_authorized_operations: bool
    include_topic_authorized_operations: bool
    def __init__(self, *, topics: list[MetadataRequestTopic] | None = ..., allow_auto_topic_creation: bool = ..., include_cluster_authorized_operations: bool = ..., include_topic_authorized_operations: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class MetadataRequestTopic(MessageStruct):
    topic_id: uuid.UUID
    name: str | None
    def __init__(self, *, topic_id: uuid.UUID = ..., name: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class MetadataResponse(MessageStruct):
    throttle_time_ms: int
    brokers: list[MetadataResponseBroker]
    cluster_id: str | None
    controller_id: int
    topics: list[MetadataResponseTopic]
    cluster_authorized_operations: int
    error_code: int
    def __init__(self, *, throttle_time_ms: int = ..., brokers: list[MetadataResponseBroker] = ..., cluster_id: str | None = ..., controller_id: int = ..., topics: list[MetadataResponseTopic] = ..., cluster_authorized_operations: int = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class MetadataResponseBroker(MessageStruct):
    node_id: int
    host: str
    port: int
    rack: str | None
    def __init__(self, *, node_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class MetadataResponseTopic(MessageStruct):
    error_code: int
    name: str | None
    topic_id: uuid.UUID
    is_internal: bool
    partitions: list[MetadataResponsePartition]
    topic_authorized_operations: int
    def __init__(self, *, error_code: int = ..., name: str | None = ..., topic_id: uuid.UUID = ..., is_internal: bool = ..., partitions: list[MetadataResponsePartition] = ..., topic_authorized_operations: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class MetadataResponsePartition(MessageStruct):
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: list[int]
    isr_nodes: list[int]
    offline_replicas: list[int]
    def __init__(self, *, error_code: int = ..., partition_index: int = ..., leader_id: int = ..., leader_epoch: int = ..., replica_nodes: list[int] = ..., isr_nodes: list[int] = ..., offline_replicas: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetCommitRequest(MessageStruct):
    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    topics: list[OffsetCommitRequestTopic]
    def __init__(self, *, group_id: str = ..., generation_id_or_member_epoch: int = ..., member_id: str = ..., group_instance_id: str | None = ..., retention_time_ms: int = ..., topics: list[OffsetCommitRequestTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetCommitRequestTopic(MessageStruct):
    name: str
    topic_id: uuid.UUID
    partitions: list[OffsetCommitRequestPartition]
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., partitions: list[OffsetCommitRequestPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetCommitRequestPartition(MessageStruct):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    committed_metadata: str | None
    def __init__(self, *, partition_index: int = ..., committed_offset: int = ..., committed_leader_epoch: int = ..., committed_metadata: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetCommitResponse(MessageStruct):
    throttle_time_ms: int
    topics: list[OffsetCommitResponseTopic]
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[OffsetCommitResponseTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetCommitResponseTopic(MessageStruct):
    name: str
    topic_id: uuid.UUID
    partitions: list[OffsetCommitResponsePartition]
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., partitions: list[OffsetCommitResponsePartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetCommitResponsePartition(MessageStruct):
    partition_index: int
    error_code: int
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchRequest(MessageStruct):
    group_id: str
    topics: list[OffsetFetchRequestTopic] | None
    groups: list[OffsetFetchRequestGroup]
    require_stable: bool
    def __init__(self, *, group_id: str = ..., topics: list[OffsetFetchRequestTopic] | None = ..., groups: list[OffsetFetchRequestGroup] = ..., require_stable: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchRequestTopic(MessageStruct):
    name: str
    partition_indexes: list[int]
    def __init__(self, *, name: str = ..., partition_indexes: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchRequestGroup(MessageStruct):
    group_id: str
    member_id: str | None
    member_epoch: int
    topics: list[OffsetFetchRequestTopics] | None
    def __init__(self, *, group_id: str = ..., member_id: str | None = ..., member_epoch: int = ..., topics: list[OffsetFetchRequestTopics] | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchRequestTopics(MessageStruct):
    name: str
    topic_id: uuid.UUID
    partition_indexes: list[int]
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., partition_indexes: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchResponse(MessageStruct):
    throttle_time_ms: int
    topics: list[OffsetFetchResponseTopic]
    error_code: int
    groups: list[OffsetFetchResponseGroup]
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[OffsetFetchResponseTopic] = ..., error_code: int = ..., groups: list[OffsetFetchResponseGroup] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchResponseTopic(MessageStruct):
    name: str
    partitions: list[OffsetFetchResponsePartition]
    def __init__(self, *, name: str = ..., partitions: list[OffsetFetchResponsePartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchResponsePartition(MessageStruct):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str | None
    error_code: int
    def __init__(self, *, partition_index: int = ..., committed_offset: int = ..., committed_leader_epoch: int = ..., metadata: str | None = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchResponseGroup(MessageStruct):
    group_id: str
    topics: list[OffsetFetchResponseTopics]
    error_code: int
    def __init__(self, *, group_id: str = ..., topics: list[OffsetFetchResponseTopics] = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchResponseTopics(MessageStruct):
    name: str
    topic_id: uuid.UUID
    partitions: list[OffsetFetchResponsePartitions]
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., partitions: list[OffsetFetchResponsePartitions] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetFetchResponsePartitions(MessageStruct):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    metadata: str | None
    error_code: int
    def __init__(self, *, partition_index: int = ..., committed_offset: int = ..., committed_leader_epoch: int = ..., metadata: str | None = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FindCoordinatorRequest(MessageStruct):
    key: str
    key_type: int
    coordinator_keys: list[str]
    def __init__(self, *, key: str = ..., key_type: int = ..., coordinator_keys: list[str] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FindCoordinatorResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    node_id: int
    host: str
    port: int
    coordinators: list[Coordinator]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., node_id: int = ..., host: str = ..., port: int = ..., coordinators: list[Coordinator] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class Coordinator(MessageStruct):
    key: str
    node_id: int
    host: str
    port: int
    error_code: int
    error_message: str | None
    def __init__(self, *, key: str = ..., node_id: int = ..., host: str = ..., port: int = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class JoinGroupRequest(MessageStruct):
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: list[JoinGroupRequestProtocol]
    reason: str | None
    def __init__(self, *, group_id: str = ..., session_timeout_ms: int = ..., rebalance_timeout_ms: int = ..., member_id: str = ..., group_instance_id: str | None = ..., protocol_type: str = ..., protocols: list[JoinGroupRequestProtocol] = ..., reason: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class JoinGroupRequestProtocol(MessageStruct):
    name: str
    metadata: bytes
    def __init__(self, *, name: str = ..., metadata: bytes = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class JoinGroupResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    skip_assignment: bool
    member_id: str
    members: list[JoinGroupResponseMember]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., generation_id: int = ..., protocol_type: str | None = ..., protocol_name: str | None = ..., leader: str = ..., skip_assignment: bool = ..., member_id: str = ..., members: list[JoinGroupResponseMember] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class JoinGroupResponseMember(MessageStruct):
    member_id: str
    group_instance_id: str | None
    metadata: bytes
    def __init__(self, *, member_id: str = ..., group_instance_id: str | None = ..., metadata: bytes = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class HeartbeatRequest(MessageStruct):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    def __init__(self, *, group_id: str = ..., generation_id: int = ..., member_id: str = ..., group_instance_id: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class HeartbeatResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class LeaveGroupRequest(MessageStruct):
    group_id: str
    member_id: str
    members: list[MemberIdentity]
    def __init__(self, *, group_id: str = ..., member_id: str = ..., members: list[MemberIdentity] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class MemberIdentity(MessageStruct):
    member_id: str
    group_instance_id: str | None
    reason: str | None
    def __init__(self, *, member_id: str = ..., group_instance_id: str | None = ..., reason: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class LeaveGroupResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    members: list[MemberResponse]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., members: list[MemberResponse] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class MemberResponse(MessageStruct):
    member_id: str
    group_instance_id: str | None
    error_code: int
    def __init__(self, *, member_id: str = ..., group_instance_id: str | None = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SyncGroupRequest(MessageStruct):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: list[SyncGroupRequestAssignment]
    def __init__(self, *, group_id: str = ..., generation_id: int = ..., member_id: str = ..., group_instance_id: str | None = ..., protocol_type: str | None = ..., protocol_name: str | None = ..., assignments: list[SyncGroupRequestAssignment] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SyncGroupRequestAssignment(MessageStruct):
    member_id: str
    assignment: bytes
    def __init__(self, *, member_id: str = ..., assignment: bytes = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SyncGroupResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., protocol_type: str | None = ..., protocol_name: str | None = ..., assignment: bytes = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeGroupsRequest(MessageStruct):
    groups: list[str]
    include_authorized_operations: bool
    def __init__(self, *, groups: list[str] = ..., include_authorized_operations: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeGroupsResponse(MessageStruct):
    throttle_time_ms: int
    groups: list[DescribedGroup]
    def __init__(self, *, throttle_time_ms: int = ..., groups: list[DescribedGroup] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribedGroup(MessageStruct):
    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedGroupMember]
    authorized_operations: int
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., group_id: str = ..., group_state: str = ..., protocol_type: str = ..., protocol_data: str = ..., members: list[DescribedGroupMember] = ..., authorized_operations: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribedGroupMember(MessageStruct):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes
    def __init__(self, *, member_id: str = ..., group_instance_id: str | None = ..., client_id: str = ..., client_host: str = ..., member_metadata: bytes = ..., member_assignment: bytes = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListGroupsRequest(MessageStruct):
    states_filter: list[str]
    types_filter: list[str]
    def __init__(self, *, states_filter: list[str] = ..., types_filter: list[str] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListGroupsResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    groups: list[ListedGroup]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., groups: list[ListedGroup] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListedGroup(MessageStruct):
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str
    def __init__(self, *, group_id: str = ..., protocol_type: str = ..., group_state: str = ..., group_type: str = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SaslHandshakeRequest(MessageStruct):
    mechanism: str
    def __init__(self, *, mechanism: str = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SaslHandshakeResponse(MessageStruct):
    error_code: int
    mechanisms: list[str]
    def __init__(self, *, error_code: int = ..., mechanisms: list[str] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ApiVersionsRequest(MessageStruct):
    client_software_name: str
    client_software_version: str
    cluster_id: str | None
    node_id: int
    def __init__(self, *, client_software_name: str = ..., client_software_version: str = ..., cluster_id: str | None = ..., node_id: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ApiVersionsResponse(MessageStruct):
    error_code: int
    api_keys: list[ApiVersion]
    throttle_time_ms: int
    supported_features: list[SupportedFeatureKey]
    finalized_features_epoch: int
    finalized_features: list[FinalizedFeatureKey]
    zk_migration_ready: bool
    def __init__(self, *, error_code: int = ..., api_keys: list[ApiVersion] = ..., throttle_time_ms: int = ..., supported_features: list[SupportedFeatureKey] = ..., finalized_features_epoch: int = ..., finalized_features: list[FinalizedFeatureKey] = ..., zk_migration_ready: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ApiVersion(MessageStruct):
    api_key: int
    min_version: int
    max_version: int
    def __init__(self, *, api_key: int = ..., min_version: int = ..., max_version: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SupportedFeatureKey(MessageStruct):
    name: str
    min_version: int
    max_version: int
    def __init__(self, *, name: str = ..., min_version: int = ..., max_version: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class FinalizedFeatureKey(MessageStruct):
    name: str
    max_version_level: int
    min_version_level: int
    def __init__(self, *, name: str = ..., max_version_level: int = ..., min_version_level: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreateTopicsRequest(MessageStruct):
    topics: list[CreatableTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(self, *, topics: list[CreatableTopic] = ..., timeout_ms: int = ..., validate_only: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatableTopic(MessageStruct):
    name: str
    num_partitions: int
    replication_factor: int
    assignments: list[CreatableReplicaAssignment]
    configs: list[CreatableTopicConfig]
    def __init__(self, *, name: str = ..., num_partitions: int = ..., replication_factor: int = ..., assignments: list[CreatableReplicaAssignment] = ..., configs: list[CreatableTopicConfig] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatableReplicaAssignment(MessageStruct):
    partition_index: int
    broker_ids: list[int]
    def __init__(self, *, partition_index: int = ..., broker_ids: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatableTopicConfig(MessageStruct):
    name: str
    value: str | None
    def __init__(self, *, name: str = ..., value: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreateTopicsResponse(MessageStruct):
    throttle_time_ms: int
    topics: list[CreatableTopicResult]
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[CreatableTopicResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatableTopicResult(MessageStruct):
    name: str
    topic_id: uuid.UUID
    error_code: int
    error_message: str | None
    topic_config_error_code: int
    num_partitions: int
    replication_factor: int
    configs: list[CreatableTopicConfigs] | None
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., error_code: int = ..., error_message: str | None = ..., topic_config_error_code: int = ..., num_partitions: int = ..., replication_factor: int = ..., configs: list[CreatableTopicConfigs] | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatableTopicConfigs(MessageStruct):
    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    def __init__(self, *, name: str = ..., value: str | None = ..., read_only: bool = ..., config_source: int = ..., is_sensitive: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteTopicsRequest(MessageStruct):
    topics: list[DeleteTopicState]
    topic_names: list[str]
    timeout_ms: int
    def __init__(self, *, topics: list[DeleteTopicState] = ..., topic_names: list[str] = ..., timeout_ms: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteTopicState(MessageStruct):
    name: str | None
    topic_id: uuid.UUID
    def __init__(self, *, name: str | None = ..., topic_id: uuid.UUID = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteTopicsResponse(MessageStruct):
    throttle_time_ms: int
    responses: list[DeletableTopicResult]
    def __init__(self, *, throttle_time_ms: int = ..., responses: list[DeletableTopicResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeletableTopicResult(MessageStruct):
    name: str | None
    topic_id: uuid.UUID
    error_code: int
    error_message: str | None
    def __init__(self, *, name: str | None = ..., topic_id: uuid.UUID = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteRecordsRequest(MessageStruct):
    topics: list[DeleteRecordsTopic]
    timeout_ms: int
    def __init__(self, *, topics: list[DeleteRecordsTopic] = ..., timeout_ms: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteRecordsTopic(MessageStruct):
    name: str
    partitions: list[DeleteRecordsPartition]
    def __init__(self, *, name: str = ..., partitions: list[DeleteRecordsPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteRecordsPartition(MessageStruct):
    partition_index: int
    offset: int
    def __init__(self, *, partition_index: int = ..., offset: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteRecordsResponse(MessageStruct):
    throttle_time_ms: int
    topics: list[DeleteRecordsTopicResult]
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[DeleteRecordsTopicResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteRecordsTopicResult(MessageStruct):
    name: str
    partitions: list[DeleteRecordsPartitionResult]
    def __init__(self, *, name: str = ..., partitions: list[DeleteRecordsPartitionResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteRecordsPartitionResult(MessageStruct):
    partition_index: int
    low_watermark: int
    error_code: int
    def __init__(self, *, partition_index: int = ..., low_watermark: int = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class InitProducerIdRequest(MessageStruct):
    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int
    producer_epoch: int
    enable2_pc: bool
    keep_prepared_txn: bool
    def __init__(self, *, transactional_id: str | None = ..., transaction_timeout_ms: int = ..., producer_id: int = ..., producer_epoch: int = ..., enable2_pc: bool = ..., keep_prepared_txn: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class InitProducerIdResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int
    ongoing_txn_producer_id: int
    ongoing_txn_producer_epoch: int
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., producer_id: int = ..., producer_epoch: int = ..., ongoing_txn_producer_id: int = ..., ongoing_txn_producer_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetForLeaderEpochRequest(MessageStruct):
    replica_id: int
    topics: list[OffsetForLeaderTopic]
    def __init__(self, *, replica_id: int = ..., topics: list[OffsetForLeaderTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetForLeaderTopic(MessageStruct):
    topic: str
    partitions: list[OffsetForLeaderPartition]
    def __init__(self, *, topic: str = ..., partitions: list[OffsetForLeaderPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetForLeaderPartition(MessageStruct):
    partition: int
    current_leader_epoch: int
    leader_epoch: int
    def __init__(self, *, partition: int = ..., current_leader_epoch: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetForLeaderEpochResponse(MessageStruct):
    throttle_time_ms: int
    topics: list[OffsetForLeaderTopicResult]
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[OffsetForLeaderTopicResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetForLeaderTopicResult(MessageStruct):
    topic: str
    partitions: list[OffsetForLeaderEpochResponseEpochEndOffset]
    def __init__(self, *, topic: str = ..., partitions: list[OffsetForLeaderEpochResponseEpochEndOffset] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetForLeaderEpochResponseEpochEndOffset(MessageStruct):
    error_code: int
    partition: int
    leader_epoch: int
    end_offset: int
    def __init__(self, *, error_code: int = ..., partition: int = ..., leader_epoch: int = ..., end_offset: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddPartitionsToTxnRequest(MessageStruct):
    transactions: list[AddPartitionsToTxnTransaction]
    v3_and_below_transactional_id: str
    v3_and_below_producer_id: int
    v3_and_below_producer_epoch: int
    v3_and_below_topics: list[AddPartitionsToTxnTopic]
    def __init__(self, *, transactions: list[AddPartitionsToTxnTransaction] = ..., v3_and_below_transactional_id: str = ..., v3_and_below_producer_id: int = ..., v3_and_below_producer_epoch: int = ..., v3_and_below_topics: list[AddPartitionsToTxnTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddPartitionsToTxnTransaction(MessageStruct):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    verify_only: bool
    topics: list[AddPartitionsToTxnTopic]
    def __init__(self, *, transactional_id: str = ..., producer_id: int = ..., producer_epoch: int = ..., verify_only: bool = ..., topics: list[AddPartitionsToTxnTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddPartitionsToTxnTopic(MessageStruct):
    name: str
    partitions: list[int]
    def __init__(self, *, name: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddPartitionsToTxnResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    results_by_transaction: list[AddPartitionsToTxnResult]
    results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., results_by_transaction: list[AddPartitionsToTxnResult] = ..., results_by_topic_v3_and_below: list[AddPartitionsToTxnTopicResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddPartitionsToTxnResult(MessageStruct):
    transactional_id: str
    topic_results: list[AddPartitionsToTxnTopicResult]
    def __init__(self, *, transactional_id: str = ..., topic_results: list[AddPartitionsToTxnTopicResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddPartitionsToTxnTopicResult(MessageStruct):
    name: str
    results_by_partition: list[AddPartitionsToTxnPartitionResult]
    def __init__(self, *, name: str = ..., results_by_partition: list[AddPartitionsToTxnPartitionResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddPartitionsToTxnPartitionResult(MessageStruct):
    partition_index: int
    partition_error_code: int
    def __init__(self, *, partition_index: int = ..., partition_error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddOffsetsToTxnRequest(MessageStruct):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    def __init__(self, *, transactional_id: str = ..., producer_id: int = ..., producer_epoch: int = ..., group_id: str = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AddOffsetsToTxnResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class EndTxnRequest(MessageStruct):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    def __init__(self, *, transactional_id: str = ..., producer_id: int = ..., producer_epoch: int = ..., committed: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class EndTxnResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., producer_id: int = ..., producer_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TxnOffsetCommitRequest(MessageStruct):
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id_or_member_epoch: int
    member_id: str
    group_instance_id: str | None
    topics: list[TxnOffsetCommitRequestTopic]
    def __init__(self, *, transactional_id: str = ..., group_id: str = ..., producer_id: int = ..., producer_epoch: int = ..., generation_id_or_member_epoch: int = ..., member_id: str = ..., group_instance_id: str | None = ..., topics: list[TxnOffsetCommitRequestTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TxnOffsetCommitRequestTopic(MessageStruct):
    name: str
    topic_id: uuid.UUID
    partitions: list[TxnOffsetCommitRequestPartition]
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., partitions: list[TxnOffsetCommitRequestPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TxnOffsetCommitRequestPartition(MessageStruct):
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    committed_metadata: str | None
    def __init__(self, *, partition_index: int = ..., committed_offset: int = ..., committed_leader_epoch: int = ..., committed_metadata: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TxnOffsetCommitResponse(MessageStruct):
    throttle_time_ms: int
    topics: list[TxnOffsetCommitResponseTopic]
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[TxnOffsetCommitResponseTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TxnOffsetCommitResponseTopic(MessageStruct):
    name: str
    topic_id: uuid.UUID
    partitions: list[TxnOffsetCommitResponsePartition]
    def __init__(self, *, name: str = ..., topic_id: uuid.UUID = ..., partitions: list[TxnOffsetCommitResponsePartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TxnOffsetCommitResponsePartition(MessageStruct):
    partition_index: int
    error_code: int
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeAclsRequest(MessageStruct):
    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int
    def __init__(self, *, resource_type_filter: int = ..., resource_name_filter: str | None = ..., pattern_type_filter: int = ..., principal_filter: str | None = ..., host_filter: str | None = ..., operation: int = ..., permission_type: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeAclsResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    resources: list[DescribeAclsResource]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., resources: list[DescribeAclsResource] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeAclsResource(MessageStruct):
    resource_type: int
    resource_name: str
    pattern_type: int
    acls: list[AclDescription]
    def __init__(self, *, resource_type: int = ..., resource_name: str = ..., pattern_type: int = ..., acls: list[AclDescription] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AclDescription(MessageStruct):
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, *, principal: str = ..., host: str = ..., operation: int = ..., permission_type: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreateAclsRequest(MessageStruct):
    creations: list[AclCreation]
    def __init__(self, *, creations: list[AclCreation] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AclCreation(MessageStruct):
    resource_type: int
    resource_name: str
    resource_pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, *, resource_type: int = ..., resource_name: str = ..., resource_pattern_type: int = ..., principal: str = ..., host: str = ..., operation: int = ..., permission_type: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreateAclsResponse(MessageStruct):
    throttle_time_ms: int
    results: list[AclCreationResult]
    def __init__(self, *, throttle_time_ms: int = ..., results: list[AclCreationResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AclCreationResult(MessageStruct):
    error_code: int
    error_message: str | None
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteAclsRequest(MessageStruct):
    filters: list[DeleteAclsFilter]
    def __init__(self, *, filters: list[DeleteAclsFilter] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteAclsFilter(MessageStruct):
    resource_type_filter: int
    resource_name_filter: str | None
    pattern_type_filter: int
    principal_filter: str | None
    host_filter: str | None
    operation: int
    permission_type: int
    def __init__(self, *, resource_type_filter: int = ..., resource_name_filter: str | None = ..., pattern_type_filter: int = ..., principal_filter: str | None = ..., host_filter: str | None = ..., operation: int = ..., permission_type: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteAclsResponse(MessageStruct):
    throttle_time_ms: int
    filter_results: list[DeleteAclsFilterResult]
    def __init__(self, *, throttle_time_ms: int = ..., filter_results: list[DeleteAclsFilterResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteAclsFilterResult(MessageStruct):
    error_code: int
    error_message: str | None
    matching_acls: list[DeleteAclsMatchingAcl]
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., matching_acls: list[DeleteAclsMatchingAcl] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteAclsMatchingAcl(MessageStruct):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., resource_type: int = ..., resource_name: str = ..., pattern_type: int = ..., principal: str = ..., host: str = ..., operation: int = ..., permission_type: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeConfigsRequest(MessageStruct):
    resources: list[DescribeConfigsResource]
    include_synonyms: bool
    include_documentation: bool
    def __init__(self, *, resources: list[DescribeConfigsResource] = ..., include_synonyms: bool = ..., include_documentation: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeConfigsResource(MessageStruct):
    resource_type: int
    resource_name: str
    configuration_keys: list[str] | None
    def __init__(self, *, resource_type: int = ..., resource_name: str = ..., configuration_keys: list[str] | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeConfigsResponse(MessageStruct):
    throttle_time_ms: int
    results: list[DescribeConfigsResult]
    def __init__(self, *, throttle_time_ms: int = ..., results: list[DescribeConfigsResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeConfigsResult(MessageStruct):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    configs: list[DescribeConfigsResourceResult]
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., resource_type: int = ..., resource_name: str = ..., configs: list[DescribeConfigsResourceResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeConfigsResourceResult(MessageStruct):
    name: str
    value: str | None
    read_only: bool
    config_source: int
    is_sensitive: bool
    synonyms: list[DescribeConfigsSynonym]
    config_type: int
    documentation: str | None
    def __init__(self, *, name: str = ..., value: str | None = ..., read_only: bool = ..., config_source: int = ..., is_sensitive: bool = ..., synonyms: list[DescribeConfigsSynonym] = ..., config_type: int = ..., documentation: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeConfigsSynonym(MessageStruct):
    name: str
    value: str | None
    source: int
    def __init__(self, *, name: str = ..., value: str | None = ..., source: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SaslAuthenticateRequest(MessageStruct):
    auth_bytes: bytes
    def __init__(self, *, auth_bytes: bytes = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class SaslAuthenticateResponse(MessageStruct):
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., auth_bytes: bytes = ..., session_lifetime_ms: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatePartitionsRequest(MessageStruct):
    topics: list[CreatePartitionsTopic]
    timeout_ms: int
    validate_only: bool
    def __init__(self, *, topics: list[CreatePartitionsTopic] = ..., timeout_ms: int = ..., validate_only: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatePartitionsTopic(MessageStruct):
    name: str
    count: int
    assignments: list[CreatePartitionsAssignment] | None
    def __init__(self, *, name: str = ..., count: int = ..., assignments: list[CreatePartitionsAssignment] | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatePartitionsAssignment(MessageStruct):
    broker_ids: list[int]
    def __init__(self, *, broker_ids: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatePartitionsResponse(MessageStruct):
    throttle_time_ms: int
    results: list[CreatePartitionsTopicResult]
    def __init__(self, *, throttle_time_ms: int = ..., results: list[CreatePartitionsTopicResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CreatePartitionsTopicResult(MessageStruct):
    name: str
    error_code: int
    error_message: str | None
    def __init__(self, *, name: str = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteGroupsRequest(MessageStruct):
    groups_names: list[str]
    def __init__(self, *, groups_names: list[str] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteGroupsResponse(MessageStruct):
    throttle_time_ms: int
    results: list[DeletableGroupResult]
    def __init__(self, *, throttle_time_ms: int = ..., results: list[DeletableGroupResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeletableGroupResult(MessageStruct):
    group_id: str
    error_code: int
    error_message: str | None
    def __init__(self, *, group_id: str = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ElectLeadersRequest(MessageStruct):
    election_type: int
    topic_partitions: list[ElectLeadersRequestTopicPartitions] | None
    timeout_ms: int
    def __init__(self, *, election_type: int = ..., topic_partitions: list[ElectLeadersRequestTopicPartitions] | None = ..., timeout_ms: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ElectLeadersRequestTopicPartitions(MessageStruct):
    topic: str
    partitions: list[int]
    def __init__(self, *, topic: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ElectLeadersResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    replica_election_results: list[ReplicaElectionResult]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., replica_election_results: list[ReplicaElectionResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ReplicaElectionResult(MessageStruct):
    topic: str
    partition_result: list[PartitionResult]
    def __init__(self, *, topic: str = ..., partition_result: list[PartitionResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class PartitionResult(MessageStruct):
    partition_id: int
    error_code: int
    error_message: str | None
    def __init__(self, *, partition_id: int = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class IncrementalAlterConfigsRequest(MessageStruct):
    resources: list[AlterConfigsResource]
    validate_only: bool
    def __init__(self, *, resources: list[AlterConfigsResource] = ..., validate_only: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterConfigsResource(MessageStruct):
    resource_type: int
    resource_name: str
    configs: list[AlterableConfig]
    def __init__(self, *, resource_type: int = ..., resource_name: str = ..., configs: list[AlterableConfig] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterableConfig(MessageStruct):
    name: str
    config_operation: int
    value: str | None
    def __init__(self, *, name: str = ..., config_operation: int = ..., value: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class IncrementalAlterConfigsResponse(MessageStruct):
    throttle_time_ms: int
    responses: list[AlterConfigsResourceResponse]
    def __init__(self, *, throttle_time_ms: int = ..., responses: list[AlterConfigsResourceResponse] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterConfigsResourceResponse(MessageStruct):
    error_code: int
    error_message: str | None
    resource_type: int
    resource_name: str
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., resource_type: int = ..., resource_name: str = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetDeleteRequest(MessageStruct):
    group_id: str
    topics: list[OffsetDeleteRequestTopic]
    def __init__(self, *, group_id: str = ..., topics: list[OffsetDeleteRequestTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetDeleteRequestTopic(MessageStruct):
    name: str
    partitions: list[OffsetDeleteRequestPartition]
    def __init__(self, *, name: str = ..., partitions: list[OffsetDeleteRequestPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetDeleteRequestPartition(MessageStruct):
    partition_index: int
    def __init__(self, *, partition_index: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetDeleteResponse(MessageStruct):
    error_code: int
    throttle_time_ms: int
    topics: list[OffsetDeleteResponseTopic]
    def __init__(self, *, error_code: int = ..., throttle_time_ms: int = ..., topics: list[OffsetDeleteResponseTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetDeleteResponseTopic(MessageStruct):
    name: str
    partitions: list[OffsetDeleteResponsePartition]
    def __init__(self, *, name: str = ..., partitions: list[OffsetDeleteResponsePartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class OffsetDeleteResponsePartition(MessageStruct):
    partition_index: int
    error_code: int
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeUserScramCredentialsRequest(MessageStruct):
    users: list[UserName] | None
    def __init__(self, *, users: list[UserName] | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class UserName(MessageStruct):
    name: str
    def __init__(self, *, name: str = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeUserScramCredentialsResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    results: list[DescribeUserScramCredentialsResult]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., results: list[DescribeUserScramCredentialsResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeUserScramCredentialsResult(MessageStruct):
    user: str
    error_code: int
    error_message: str | None
    credential_infos: list[CredentialInfo]
    def __init__(self, *, user: str = ..., error_code: int = ..., error_message: str | None = ..., credential_infos: list[CredentialInfo] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class CredentialInfo(MessageStruct):
    mechanism: int
    iterations: int
    def __init__(self, *, mechanism: int = ..., iterations: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterUserScramCredentialsRequest(MessageStruct):
    deletions: list[ScramCredentialDeletion]
    upsertions: list[ScramCredentialUpsertion]
    def __init__(self, *, deletions: list[ScramCredentialDeletion] = ..., upsertions: list[ScramCredentialUpsertion] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ScramCredentialDeletion(MessageStruct):
    name: str
    mechanism: int
    def __init__(self, *, name: str = ..., mechanism: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ScramCredentialUpsertion(MessageStruct):
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes
    def __init__(self, *, name: str = ..., mechanism: int = ..., iterations: int = ..., salt: bytes = ..., salted_password: bytes = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterUserScramCredentialsResponse(MessageStruct):
    throttle_time_ms: int
    results: list[AlterUserScramCredentialsResult]
    def __init__(self, *, throttle_time_ms: int = ..., results: list[AlterUserScramCredentialsResult] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterUserScramCredentialsResult(MessageStruct):
    user: str
    error_code: int
    error_message: str | None
    def __init__(self, *, user: str = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeClusterRequest(MessageStruct):
    include_cluster_authorized_operations: bool
    endpoint_type: int
    include_fenced_brokers: bool
    def __init__(self, *, include_cluster_authorized_operations: bool = ..., endpoint_type: int = ..., include_fenced_brokers: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeClusterResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    endpoint_type: int
    cluster_id: str
    controller_id: int
    brokers: list[DescribeClusterBroker]
    cluster_authorized_operations: int
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., endpoint_type: int = ..., cluster_id: str = ..., controller_id: int = ..., brokers: list[DescribeClusterBroker] = ..., cluster_authorized_operations: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeClusterBroker(MessageStruct):
    broker_id: int
    host: str
    port: int
    rack: str | None
    is_fenced: bool
    def __init__(self, *, broker_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., is_fenced: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeProducersRequest(MessageStruct):
    topics: list[TopicRequest]
    def __init__(self, *, topics: list[TopicRequest] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TopicRequest(MessageStruct):
    name: str
    partition_indexes: list[int]
    def __init__(self, *, name: str = ..., partition_indexes: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeProducersResponse(MessageStruct):
    throttle_time_ms: int
    topics: list[TopicResponse]
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[TopicResponse] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TopicResponse(MessageStruct):
    name: str
    partitions: list[PartitionResponse]
    def __init__(self, *, name: str = ..., partitions: list[PartitionResponse] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class PartitionResponse(MessageStruct):
    partition_index: int
    error_code: int
    error_message: str | None
    active_producers: list[ProducerState]
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., error_message: str | None = ..., active_producers: list[ProducerState] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ProducerState(MessageStruct):
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int
    def __init__(self, *, producer_id: int = ..., producer_epoch: int = ..., last_sequence: int = ..., last_timestamp: int = ..., coordinator_epoch: int = ..., current_txn_start_offset: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeTransactionsRequest(MessageStruct):
    transactional_ids: list[str]
    def __init__(self, *, transactional_ids: list[str] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeTransactionsResponse(MessageStruct):
    throttle_time_ms: int
    transaction_states: list[DescribeTransactionsResponseTransactionState]
    def __init__(self, *, throttle_time_ms: int = ..., transaction_states: list[DescribeTransactionsResponseTransactionState] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeTransactionsResponseTransactionState(MessageStruct):
    error_code: int
    transactional_id: str
    transaction_state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    producer_id: int
    producer_epoch: int
    topics: list[TopicData]
    def __init__(self, *, error_code: int = ..., transactional_id: str = ..., transaction_state: str = ..., transaction_timeout_ms: int = ..., transaction_start_time_ms: int = ..., producer_id: int = ..., producer_epoch: int = ..., topics: list[TopicData] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class TopicData(MessageStruct):
    topic: str
    partitions: list[int]
    def __init__(self, *, topic: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListTransactionsRequest(MessageStruct):
    state_filters: list[str]
    producer_id_filters: list[int]
    duration_filter: int
    transactional_id_pattern: str | None
    def __init__(self, *, state_filters: list[str] = ..., producer_id_filters: list[int] = ..., duration_filter: int = ..., transactional_id_pattern: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListTransactionsResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    unknown_state_filters: list[str]
    transaction_states: list[ListTransactionsResponseTransactionState]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., unknown_state_filters: list[str] = ..., transaction_states: list[ListTransactionsResponseTransactionState] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListTransactionsResponseTransactionState(MessageStruct):
    transactional_id: str
    producer_id: int
    transaction_state: str
    def __init__(self, *, transactional_id: str = ..., producer_id: int = ..., transaction_state: str = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupHeartbeatRequest(MessageStruct):
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    topic_partitions: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None
    def __init__(self, *, group_id: str = ..., member_id: str = ..., member_epoch: int = ..., instance_id: str | None = ..., rack_id: str | None = ..., rebalance_timeout_ms: int = ..., subscribed_topic_names: list[str] | None = ..., subscribed_topic_regex: str | None = ..., server_assignor: str | None = ..., topic_partitions: list[ConsumerGroupHeartbeatRequestTopicPartitions] | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupHeartbeatRequestTopicPartitions(MessageStruct):
    topic_id: uuid.UUID
    partitions: list[int]
    def __init__(self, *, topic_id: uuid.UUID = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupHeartbeatResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: Assignment | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., member_id: str | None = ..., member_epoch: int = ..., heartbeat_interval_ms: int = ..., assignment: Assignment | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class Assignment(MessageStruct):
    topic_partitions: list[ConsumerGroupHeartbeatResponseTopicPartitions]
    def __init__(self, *, topic_partitions: list[ConsumerGroupHeartbeatResponseTopicPartitions] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupHeartbeatResponseTopicPartitions(MessageStruct):
    topic_id: uuid.UUID
    partitions: list[int]
    def __init__(self, *, topic_id: uuid.UUID = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupDescribeRequest(MessageStruct):
    group_ids: list[str]
    include_authorized_operations: bool
    def __init__(self, *, group_ids: list[str] = ..., include_authorized_operations: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupDescribeResponse(MessageStruct):
    throttle_time_ms: int
    groups: list[ConsumerGroupDescribeResponseDescribedGroup]
    def __init__(self, *, throttle_time_ms: int = ..., groups: list[ConsumerGroupDescribeResponseDescribedGroup] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupDescribeResponseDescribedGroup(MessageStruct):
    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[ConsumerGroupDescribeResponseMember]
    authorized_operations: int
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., group_id: str = ..., group_state: str = ..., group_epoch: int = ..., assignment_epoch: int = ..., assignor_name: str = ..., members: list[ConsumerGroupDescribeResponseMember] = ..., authorized_operations: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupDescribeResponseMember(MessageStruct):
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: ConsumerGroupDescribeResponseAssignment
    target_assignment: ConsumerGroupDescribeResponseAssignment
    member_type: int
    def __init__(self, *, member_id: str = ..., instance_id: str | None = ..., rack_id: str | None = ..., member_epoch: int = ..., client_id: str = ..., client_host: str = ..., subscribed_topic_names: list[str] = ..., subscribed_topic_regex: str | None = ..., assignment: ConsumerGroupDescribeResponseAssignment = ..., target_assignment: ConsumerGroupDescribeResponseAssignment = ..., member_type: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupDescribeResponseAssignment(MessageStruct):
    topic_partitions: list[ConsumerGroupDescribeResponseTopicPartitions]
    def __init__(self, *, topic_partitions: list[ConsumerGroupDescribeResponseTopicPartitions] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerGroupDescribeResponseTopicPartitions(MessageStruct):
    topic_id: uuid.UUID
    topic_name: str
    partitions: list[int]
    def __init__(self, *, topic_id: uuid.UUID = ..., topic_name: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListConfigResourcesRequest(MessageStruct):
    resource_types: list[int]
    def __init__(self, *, resource_types: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ListConfigResourcesResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    config_resources: list[ConfigResource]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., config_resources: list[ConfigResource] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConfigResource(MessageStruct):
    resource_name: str
    resource_type: int
    def __init__(self, *, resource_name: str = ..., resource_type: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupHeartbeatRequest(MessageStruct):
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: list[str] | None
    def __init__(self, *, group_id: str = ..., member_id: str = ..., member_epoch: int = ..., rack_id: str | None = ..., subscribed_topic_names: list[str] | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupHeartbeatResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: ShareGroupHeartbeatResponseAssignment | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., member_id: str | None = ..., member_epoch: int = ..., heartbeat_interval_ms: int = ..., assignment: ShareGroupHeartbeatResponseAssignment | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupHeartbeatResponseAssignment(MessageStruct):
    topic_partitions: list[ShareGroupHeartbeatResponseTopicPartitions]
    def __init__(self, *, topic_partitions: list[ShareGroupHeartbeatResponseTopicPartitions] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupHeartbeatResponseTopicPartitions(MessageStruct):
    topic_id: uuid.UUID
    partitions: list[int]
    def __init__(self, *, topic_id: uuid.UUID = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupDescribeRequest(MessageStruct):
    group_ids: list[str]
    include_authorized_operations: bool
    def __init__(self, *, group_ids: list[str] = ..., include_authorized_operations: bool = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupDescribeResponse(MessageStruct):
    throttle_time_ms: int
    groups: list[ShareGroupDescribeResponseDescribedGroup]
    def __init__(self, *, throttle_time_ms: int = ..., groups: list[ShareGroupDescribeResponseDescribedGroup] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupDescribeResponseDescribedGroup(MessageStruct):
    error_code: int
    error_message: str | None
    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[ShareGroupDescribeResponseMember]
    authorized_operations: int
    def __init__(self, *, error_code: int = ..., error_message: str | None = ..., group_id: str = ..., group_state: str = ..., group_epoch: int = ..., assignment_epoch: int = ..., assignor_name: str = ..., members: list[ShareGroupDescribeResponseMember] = ..., authorized_operations: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupDescribeResponseMember(MessageStruct):
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: ShareGroupDescribeResponseAssignment
    def __init__(self, *, member_id: str = ..., rack_id: str | None = ..., member_epoch: int = ..., client_id: str = ..., client_host: str = ..., subscribed_topic_names: list[str] = ..., assignment: ShareGroupDescribeResponseAssignment = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupDescribeResponseAssignment(MessageStruct):
    topic_partitions: list[ShareGroupDescribeResponseTopicPartitions]
    def __init__(self, *, topic_partitions: list[ShareGroupDescribeResponseTopicPartitions] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareGroupDescribeResponseTopicPartitions(MessageStruct):
    topic_id: uuid.UUID
    topic_name: str
    partitions: list[int]
    def __init__(self, *, topic_id: uuid.UUID = ..., topic_name: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchRequest(MessageStruct):
    group_id: str | None
    member_id: str | None
    share_session_epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    share_acquire_mode: int
    is_renew_ack: bool
    topics: list[ShareFetchRequestFetchTopic]
    forgotten_topics_data: list[ShareFetchRequestForgottenTopic]
    def __init__(self, *, group_id: str | None = ..., member_id: str | None = ..., share_session_epoch: int = ..., max_wait_ms: int = ..., min_bytes: int = ..., max_bytes: int = ..., max_records: int = ..., batch_size: int = ..., share_acquire_mode: int = ..., is_renew_ack: bool = ..., topics: list[ShareFetchRequestFetchTopic] = ..., forgotten_topics_data: list[ShareFetchRequestForgottenTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchRequestFetchTopic(MessageStruct):
    topic_id: uuid.UUID
    partitions: list[ShareFetchRequestFetchPartition]
    def __init__(self, *, topic_id: uuid.UUID = ..., partitions: list[ShareFetchRequestFetchPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchRequestFetchPartition(MessageStruct):
    partition_index: int
    partition_max_bytes: int
    acknowledgement_batches: list[ShareFetchRequestAcknowledgementBatch]
    def __init__(self, *, partition_index: int = ..., partition_max_bytes: int = ..., acknowledgement_batches: list[ShareFetchRequestAcknowledgementBatch] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchRequestAcknowledgementBatch(MessageStruct):
    first_offset: int
    last_offset: int
    acknowledge_types: list[int]
    def __init__(self, *, first_offset: int = ..., last_offset: int = ..., acknowledge_types: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchRequestForgottenTopic(MessageStruct):
    topic_id: uuid.UUID
    partitions: list[int]
    def __init__(self, *, topic_id: uuid.UUID = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    acquisition_lock_timeout_ms: int
    responses: list[ShareFetchableTopicResponse]
    node_endpoints: list[ShareFetchResponseNodeEndpoint]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., acquisition_lock_timeout_ms: int = ..., responses: list[ShareFetchableTopicResponse] = ..., node_endpoints: list[ShareFetchResponseNodeEndpoint] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchableTopicResponse(MessageStruct):
    topic_id: uuid.UUID
    partitions: list[ShareFetchResponsePartitionData]
    def __init__(self, *, topic_id: uuid.UUID = ..., partitions: list[ShareFetchResponsePartitionData] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchResponsePartitionData(MessageStruct):
    partition_index: int
    error_code: int
    error_message: str | None
    acknowledge_error_code: int
    acknowledge_error_message: str | None
    current_leader: ShareFetchResponseLeaderIdAndEpoch
    records: bytes | memoryview | None
    acquired_records: list[AcquiredRecords]
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., error_message: str | None = ..., acknowledge_error_code: int = ..., acknowledge_error_message: str | None = ..., current_leader: ShareFetchResponseLeaderIdAndEpoch = ..., records: bytes | memoryview | None = ..., acquired_records: list[AcquiredRecords] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchResponseLeaderIdAndEpoch(MessageStruct):
    leader_id: int
    leader_epoch: int
    def __init__(self, *, leader_id: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AcquiredRecords(MessageStruct):
    first_offset: int
    last_offset: int
    delivery_count: int
    def __init__(self, *, first_offset: int = ..., last_offset: int = ..., delivery_count: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareFetchResponseNodeEndpoint(MessageStruct):
    node_id: int
    host: str
    port: int
    rack: str | None
    def __init__(self, *, node_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareAcknowledgeRequest(MessageStruct):
    group_id: str | None
    member_id: str | None
    share_session_epoch: int
    is_renew_ack: bool
    topics: list[AcknowledgeTopic]
    def __init__(self, *, group_id: str | None = ..., member_id: str | None = ..., share_session_epoch: int = ..., is_renew_ack: bool = ..., topics: list[AcknowledgeTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AcknowledgeTopic(MessageStruct):
    topic_id: uuid.UUID
    partitions: list[AcknowledgePartition]
    def __init__(self, *, topic_id: uuid.UUID = ..., partitions: list[AcknowledgePartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AcknowledgePartition(MessageStruct):
    partition_index: int
    acknowledgement_batches: list[ShareAcknowledgeRequestAcknowledgementBatch]
    def __init__(self, *, partition_index: int = ..., acknowledgement_batches: list[ShareAcknowledgeRequestAcknowledgementBatch] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareAcknowledgeRequestAcknowledgementBatch(MessageStruct):
    first_offset: int
    last_offset: int
    acknowledge_types: list[int]
    def __init__(self, *, first_offset: int = ..., last_offset: int = ..., acknowledge_types: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareAcknowledgeResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    acquisition_lock_timeout_ms: int
    responses: list[ShareAcknowledgeTopicResponse]
    node_endpoints: list[ShareAcknowledgeResponseNodeEndpoint]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., acquisition_lock_timeout_ms: int = ..., responses: list[ShareAcknowledgeTopicResponse] = ..., node_endpoints: list[ShareAcknowledgeResponseNodeEndpoint] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareAcknowledgeTopicResponse(MessageStruct):
    topic_id: uuid.UUID
    partitions: list[ShareAcknowledgeResponsePartitionData]
    def __init__(self, *, topic_id: uuid.UUID = ..., partitions: list[ShareAcknowledgeResponsePartitionData] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareAcknowledgeResponsePartitionData(MessageStruct):
    partition_index: int
    error_code: int
    error_message: str | None
    current_leader: ShareAcknowledgeResponseLeaderIdAndEpoch
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., error_message: str | None = ..., current_leader: ShareAcknowledgeResponseLeaderIdAndEpoch = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareAcknowledgeResponseLeaderIdAndEpoch(MessageStruct):
    leader_id: int
    leader_epoch: int
    def __init__(self, *, leader_id: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ShareAcknowledgeResponseNodeEndpoint(MessageStruct):
    node_id: int
    host: str
    port: int
    rack: str | None
    def __init__(self, *, node_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeShareGroupOffsetsRequest(MessageStruct):
    groups: list[DescribeShareGroupOffsetsRequestGroup]
    def __init__(self, *, groups: list[DescribeShareGroupOffsetsRequestGroup] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeShareGroupOffsetsRequestGroup(MessageStruct):
    group_id: str
    topics: list[DescribeShareGroupOffsetsRequestTopic] | None
    def __init__(self, *, group_id: str = ..., topics: list[DescribeShareGroupOffsetsRequestTopic] | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeShareGroupOffsetsRequestTopic(MessageStruct):
    topic_name: str
    partitions: list[int]
    def __init__(self, *, topic_name: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeShareGroupOffsetsResponse(MessageStruct):
    throttle_time_ms: int
    groups: list[DescribeShareGroupOffsetsResponseGroup]
    def __init__(self, *, throttle_time_ms: int = ..., groups: list[DescribeShareGroupOffsetsResponseGroup] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeShareGroupOffsetsResponseGroup(MessageStruct):
    group_id: str
    topics: list[DescribeShareGroupOffsetsResponseTopic]
    error_code: int
    error_message: str | None
    def __init__(self, *, group_id: str = ..., topics: list[DescribeShareGroupOffsetsResponseTopic] = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeShareGroupOffsetsResponseTopic(MessageStruct):
    topic_name: str
    topic_id: uuid.UUID
    partitions: list[DescribeShareGroupOffsetsResponsePartition]
    def __init__(self, *, topic_name: str = ..., topic_id: uuid.UUID = ..., partitions: list[DescribeShareGroupOffsetsResponsePartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DescribeShareGroupOffsetsResponsePartition(MessageStruct):
    partition_index: int
    start_offset: int
    leader_epoch: int
    lag: int
    error_code: int
    error_message: str | None
    def __init__(self, *, partition_index: int = ..., start_offset: int = ..., leader_epoch: int = ..., lag: int = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterShareGroupOffsetsRequest(MessageStruct):
    group_id: str
    topics: list[AlterShareGroupOffsetsRequestTopic]
    def __init__(self, *, group_id: str = ..., topics: list[AlterShareGroupOffsetsRequestTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterShareGroupOffsetsRequestTopic(MessageStruct):
    topic_name: str
    partitions: list[AlterShareGroupOffsetsRequestPartition]
    def __init__(self, *, topic_name: str = ..., partitions: list[AlterShareGroupOffsetsRequestPartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterShareGroupOffsetsRequestPartition(MessageStruct):
    partition_index: int
    start_offset: int
    def __init__(self, *, partition_index: int = ..., start_offset: int = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterShareGroupOffsetsResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    responses: list[AlterShareGroupOffsetsResponseTopic]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., responses: list[AlterShareGroupOffsetsResponseTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterShareGroupOffsetsResponseTopic(MessageStruct):
    topic_name: str
    topic_id: uuid.UUID
    partitions: list[AlterShareGroupOffsetsResponsePartition]
    def __init__(self, *, topic_name: str = ..., topic_id: uuid.UUID = ..., partitions: list[AlterShareGroupOffsetsResponsePartition] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class AlterShareGroupOffsetsResponsePartition(MessageStruct):
    partition_index: int
    error_code: int
    error_message: str | None
    def __init__(self, *, partition_index: int = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteShareGroupOffsetsRequest(MessageStruct):
    group_id: str
    topics: list[DeleteShareGroupOffsetsRequestTopic]
    def __init__(self, *, group_id: str = ..., topics: list[DeleteShareGroupOffsetsRequestTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteShareGroupOffsetsRequestTopic(MessageStruct):
    topic_name: str
    def __init__(self, *, topic_name: str = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteShareGroupOffsetsResponse(MessageStruct):
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    responses: list[DeleteShareGroupOffsetsResponseTopic]
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., responses: list[DeleteShareGroupOffsetsResponseTopic] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class DeleteShareGroupOffsetsResponseTopic(MessageStruct):
    topic_name: str
    topic_id: uuid.UUID
    error_code: int
    error_message: str | None
    def __init__(self, *, topic_name: str = ..., topic_id: uuid.UUID = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerProtocolSubscription(MessageStruct):
    topics: list[str]
    user_data: bytes | None
    owned_partitions: list[ConsumerProtocolSubscriptionTopicPartition]
    generation_id: int
    rack_id: str | None
    def __init__(self, *, topics: list[str] = ..., user_data: bytes | None = ..., owned_partitions: list[ConsumerProtocolSubscriptionTopicPartition] = ..., generation_id: int = ..., rack_id: str | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerProtocolSubscriptionTopicPartition(MessageStruct):
    topic: str
    partitions: list[int]
    def __init__(self, *, topic: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerProtocolAssignment(MessageStruct):
    assigned_partitions: list[ConsumerProtocolAssignmentTopicPartition]
    user_data: bytes | None
    def __init__(self, *, assigned_partitions: list[ConsumerProtocolAssignmentTopicPartition] = ..., user_data: bytes | None = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

class ConsumerProtocolAssignmentTopicPartition(MessageStruct):
    topic: str
    partitions: list[int]
    def __init__(self, *, topic: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict[int, bytes] | None = ...) -> None: ...

def encode_request_frame(api_key: int, version: int, correlation_id: int, client_id: str | None, body: MessageStruct) -> bytes: ...
def decode_response_frame(api_key: int, version: int, payload: bytes | memoryview) -> tuple[int, Any]: ...
def built_unchecked(cls: type[Any], *values: Any) -> Any: ...
def decode_response_with_tables(api_key: int, version: int, payload: bytes | memoryview) -> tuple[int, Any]: ...
def decode_request_frame(payload: bytes | memoryview) -> tuple[int, int, int, str | None, Any]: ...
def encode_response_frame(api_key: int, version: int, correlation_id: int, body: MessageStruct) -> bytes: ...
def request_header_version(api_key: int, version: int) -> int: ...
def response_header_version(api_key: int, version: int) -> int: ...
def message_spec(cls: type[MessageStruct]) -> list[tuple[str, str, tuple[int, int], tuple[int, int], int, tuple[int, int]]]: ...
def encode_consumer_protocol_subscription(obj: ConsumerProtocolSubscription, version: int = ...) -> bytes: ...
def decode_consumer_protocol_subscription(data: bytes | memoryview) -> ConsumerProtocolSubscription: ...
def encode_consumer_protocol_assignment(obj: ConsumerProtocolAssignment, version: int = ...) -> bytes: ...
def decode_consumer_protocol_assignment(data: bytes | memoryview) -> ConsumerProtocolAssignment: ...
# --- END generated messages ---
