"""Standalone probes over a plain socket: what one particular broker says.

The test harness must not lean on kafkaev's own codecs (they are what the tests check), so this is a
tiny, independent encoder/decoder for exactly two requests: ApiVersions v3, whose response also carries
the cluster's finalized features such as ``metadata.version``, and Metadata v12, asked of one chosen
node (a peer client sends metadata requests to whichever broker it likes, and brokers' views differ
for a moment after every change).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

API_VERSIONS_KEY = 18
API_VERSIONS_VERSION = 3
METADATA_KEY = 3
METADATA_VERSION = 12
DESCRIBE_QUORUM_KEY = 55
DESCRIBE_QUORUM_VERSION = 0
METADATA_LOG_TOPIC = "__cluster_metadata"
METADATA_LOG_PARTITION = 0
PROBE_CORRELATION_ID = 0x6B65
PROBE_CLIENT_ID = b"kafkaev-probe"
PROBE_SOFTWARE_NAME = b"kafkaev-probe"
PROBE_SOFTWARE_VERSION = b"1"
NO_ERROR = 0
# ApiVersionsResponse tagged fields (ApiVersionsResponse.json).
TAG_SUPPORTED_FEATURES = 0
TAG_FINALIZED_FEATURES_EPOCH = 1
TAG_FINALIZED_FEATURES = 2
MAX_RESPONSE_BYTES = 1 << 20


class ProbeError(RuntimeError):
    """The broker's answer was missing, malformed or carried an error code."""


@dataclass(frozen=True, slots=True)
class ApiRange:
    api_key: int
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class BrokerApiVersions:
    """The ApiVersions answer of one broker."""

    apis: dict[int, ApiRange]
    # Cluster-wide finalized feature levels, e.g. {"metadata.version": 27}.
    finalized_features: dict[str, int]


def _compact_string(value: bytes) -> bytes:
    return _uvarint(len(value) + 1) + value


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _frame(api_key: int, api_version: int, body: bytes) -> bytes:
    # RequestHeader v2: ApiKey int16, ApiVersion int16, CorrelationId int32,
    # ClientId nullable string (int16 length, not compact), TaggedFields.
    header = struct.pack(">hhih", api_key, api_version, PROBE_CORRELATION_ID, len(PROBE_CLIENT_ID))
    payload = header + PROBE_CLIENT_ID + _uvarint(0) + body
    return struct.pack(">i", len(payload)) + payload


def encode_api_versions_request() -> bytes:
    """The size-prefixed ApiVersions v3 request frame."""
    # ApiVersionsRequest v3: ClientSoftwareName compact string, ClientSoftwareVersion compact string, TaggedFields.
    body = _compact_string(PROBE_SOFTWARE_NAME) + _compact_string(PROBE_SOFTWARE_VERSION) + _uvarint(0)
    return _frame(API_VERSIONS_KEY, API_VERSIONS_VERSION, body)


def encode_metadata_request(topics: list[str] | None) -> bytes:
    """The size-prefixed Metadata v12 request frame; ``None`` asks for every topic."""
    # MetadataRequest v12: Topics nullable compact array of (TopicId uuid, Name compact nullable
    # string, TaggedFields), AllowAutoTopicCreation bool, IncludeTopicAuthorizedOperations bool, TaggedFields.
    if topics is None:
        body = _uvarint(0)
    else:
        body = _uvarint(len(topics) + 1)
        for name in topics:
            body += bytes(16) + _compact_string(name.encode()) + _uvarint(0)
    body += b"\x00\x00" + _uvarint(0)  # no auto-creation: a probe must not change the cluster
    return _frame(METADATA_KEY, METADATA_VERSION, body)


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, size: int) -> bytes:
        if self.pos + size > len(self.data):
            raise ProbeError(f"ApiVersions response truncated at byte {self.pos} (wanted {size} more)")
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return chunk

    def unpack(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        return int(struct.unpack(fmt, self.take(size))[0])

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ProbeError("ApiVersions response has an overlong varint")

    def compact_string(self) -> str:
        length = self.uvarint() - 1
        return self.take(length).decode() if length > 0 else ""

    def int32_array(self) -> tuple[int, ...]:
        return tuple(self.unpack(">i") for _ in range(self.uvarint() - 1))

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def decode_api_versions_response(frame: bytes) -> BrokerApiVersions:
    """Decode the response frame (without its size prefix)."""
    reader = _Reader(frame)
    # ApiVersions answers with ResponseHeader v0 even when the body is flexible.
    correlation_id = reader.unpack(">i")
    if correlation_id != PROBE_CORRELATION_ID:
        raise ProbeError(f"ApiVersions correlation id {correlation_id} != {PROBE_CORRELATION_ID}")
    error_code = reader.unpack(">h")
    if error_code != NO_ERROR:
        raise ProbeError(f"ApiVersions failed with error code {error_code}")
    apis: dict[int, ApiRange] = {}
    for _ in range(reader.uvarint() - 1):
        api_key, min_version, max_version = (reader.unpack(">h") for _ in range(3))
        reader.skip_tagged_fields()
        apis[api_key] = ApiRange(api_key, min_version, max_version)
    reader.unpack(">i")  # ThrottleTimeMs
    finalized: dict[str, int] = {}
    for _ in range(reader.uvarint()):
        tag = reader.uvarint()
        field = _Reader(reader.take(reader.uvarint()))
        if tag == TAG_FINALIZED_FEATURES:
            for _ in range(field.uvarint() - 1):
                name = field.compact_string()
                max_level = field.unpack(">h")
                field.unpack(">h")  # MinVersionLevel
                field.skip_tagged_fields()
                finalized[name] = max_level
    return BrokerApiVersions(apis=apis, finalized_features=finalized)


@dataclass(frozen=True, slots=True)
class PartitionView:
    error_code: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicView:
    error_code: int
    partitions: dict[int, PartitionView]


@dataclass(frozen=True, slots=True)
class NodeMetadata:
    """One node's own view of the cluster."""

    brokers: dict[int, tuple[str, int]]
    cluster_id: str
    controller_id: int
    topics: dict[str, TopicView]


def decode_metadata_response(frame: bytes) -> NodeMetadata:
    """Decode a Metadata v12 response frame (without its size prefix)."""
    reader = _Reader(frame)
    # ResponseHeader v1: CorrelationId int32, TaggedFields.
    correlation_id = reader.unpack(">i")
    if correlation_id != PROBE_CORRELATION_ID:
        raise ProbeError(f"Metadata correlation id {correlation_id} != {PROBE_CORRELATION_ID}")
    reader.skip_tagged_fields()
    reader.unpack(">i")  # ThrottleTimeMs
    brokers: dict[int, tuple[str, int]] = {}
    for _ in range(reader.uvarint() - 1):
        node_id = reader.unpack(">i")
        host = reader.compact_string()
        port = reader.unpack(">i")
        reader.compact_string()  # Rack
        reader.skip_tagged_fields()
        brokers[node_id] = (host, port)
    cluster_id = reader.compact_string()
    controller_id = reader.unpack(">i")
    topics: dict[str, TopicView] = {}
    for _ in range(reader.uvarint() - 1):
        topic_error = reader.unpack(">h")
        name = reader.compact_string()
        reader.take(16)  # TopicId
        reader.take(1)  # IsInternal
        partitions: dict[int, PartitionView] = {}
        for _ in range(reader.uvarint() - 1):
            error_code = reader.unpack(">h")
            index = reader.unpack(">i")
            leader = reader.unpack(">i")
            epoch = reader.unpack(">i")
            replicas = reader.int32_array()
            isr = reader.int32_array()
            reader.int32_array()  # OfflineReplicas
            reader.skip_tagged_fields()
            partitions[index] = PartitionView(error_code, leader, epoch, replicas, isr)
        reader.unpack(">i")  # TopicAuthorizedOperations
        reader.skip_tagged_fields()
        topics[name] = TopicView(topic_error, partitions)
    reader.skip_tagged_fields()
    return NodeMetadata(brokers, cluster_id, controller_id, topics)


def encode_describe_quorum_request() -> bytes:
    """The size-prefixed DescribeQuorum v0 request for the metadata log's single partition."""
    # DescribeQuorumRequest v0 (flexible): Topics compact array of (TopicName compact string,
    # Partitions compact array of (PartitionIndex int32, TaggedFields), TaggedFields), TaggedFields.
    body = _uvarint(2) + _compact_string(METADATA_LOG_TOPIC.encode())
    body += _uvarint(2) + struct.pack(">i", METADATA_LOG_PARTITION) + _uvarint(0)
    body += _uvarint(0) + _uvarint(0)
    return _frame(DESCRIBE_QUORUM_KEY, DESCRIBE_QUORUM_VERSION, body)


def decode_quorum_leader(frame: bytes) -> int:
    """The LeaderId of a DescribeQuorum v0 response frame: the active controller."""
    reader = _Reader(frame)
    # ResponseHeader v1: CorrelationId int32, TaggedFields.
    correlation_id = reader.unpack(">i")
    if correlation_id != PROBE_CORRELATION_ID:
        raise ProbeError(f"DescribeQuorum correlation id {correlation_id} != {PROBE_CORRELATION_ID}")
    reader.skip_tagged_fields()
    error_code = reader.unpack(">h")
    if error_code != NO_ERROR:
        raise ProbeError(f"DescribeQuorum failed with error code {error_code}")
    if reader.uvarint() - 1 != 1:
        raise ProbeError("DescribeQuorum answered for other than one topic")
    reader.compact_string()  # TopicName
    if reader.uvarint() - 1 != 1:
        raise ProbeError("DescribeQuorum answered for other than one partition")
    reader.unpack(">i")  # PartitionIndex
    partition_error = reader.unpack(">h")
    if partition_error != NO_ERROR:
        raise ProbeError(f"DescribeQuorum partition failed with error code {partition_error}")
    # Only LeaderId is needed; the voter and observer states that follow are left unread.
    return reader.unpack(">i")


def _read_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ProbeError(f"broker closed the connection after {len(chunks)} of {size} bytes")
        chunks += chunk
    return bytes(chunks)


def _exchange(host: str, port: int, request: bytes, timeout: float) -> bytes:
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(request)
        size = struct.unpack(">i", _read_exact(sock, 4))[0]
        if not 0 < size <= MAX_RESPONSE_BYTES:
            raise ProbeError(f"response size {size} out of range")
        return _read_exact(sock, size)


def api_versions(host: str, port: int, timeout: float = 5.0) -> BrokerApiVersions:
    """Ask the broker at ``host:port`` (a PLAINTEXT listener) for its ApiVersions."""
    return decode_api_versions_response(_exchange(host, port, encode_api_versions_request(), timeout))


def quorum_leader(host: str, port: int, timeout: float = 5.0) -> int:
    """The node id of the active KRaft controller, asked through the broker at ``host:port``."""
    return decode_quorum_leader(_exchange(host, port, encode_describe_quorum_request(), timeout))


def node_metadata(
    host: str, port: int, topics: list[str] | None = None, timeout: float = 5.0
) -> NodeMetadata:
    """Ask the broker at ``host:port`` (a PLAINTEXT listener) for its own metadata view."""
    return decode_metadata_response(_exchange(host, port, encode_metadata_request(topics), timeout))
