"""The raw-socket floors' bytes: RecordBatch v2, Produce v7 and Fetch v4 request frames, their responses.

Plain Python on purpose: the floors owe nothing to kafkaev's codecs, and the broker checks what
they write (CRC-32C included). Everything here runs before a floor's clock starts.
"""

from __future__ import annotations

import socket
import struct
from typing import BinaryIO

API_PRODUCE = 0
PRODUCE_VERSION = 7
API_FETCH = 1
FETCH_VERSION = 4  # the oldest Kafka 4 serves: no sessions, no tagged fields
CONSUMER_REPLICA_ID = -1
READ_UNCOMMITTED = 0
RECORD_BATCH_MAGIC = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NULL_LENGTH = -1  # a null key or a null transactional_id
PRODUCE_TIMEOUT_MS = 30000
CLIENT_ID = b"raw-floor"
CASTAGNOLI_REFLECTED = 0x82F63B78
# baseOffset (8) + batchLength (4) + partitionLeaderEpoch (4) + magic (1) + crc (4) + attributes (2)
# + lastOffsetDelta (4) + baseTimestamp (8) + maxTimestamp (8) + producerId (8) + producerEpoch (2)
# + baseSequence (4) + records count (4): a batch's size before its first record.
BATCH_HEADER_SIZE = 61

FRAME_SIZE = struct.Struct(">i")
# Produce v7 response up to the topic name: correlation_id (header v0), responses count, name length.
RESPONSE_HEAD = struct.Struct(">iih")
# After the topic name: partitions count, partition index, error_code.
RESPONSE_PARTITION = struct.Struct(">iih")
# Fetch v4 response up to the topic name: correlation_id, throttle_time_ms, responses count, name length.
FETCH_RESPONSE_HEAD = struct.Struct(">iiih")
# After the topic name: partitions count, partition_index, error_code, high_watermark, last_stable_offset,
# aborted_transactions count (-1: null).
FETCH_RESPONSE_PARTITION = struct.Struct(">iihqqi")
ABORTED_TRANSACTION_SIZE = 16  # producer_id (8) + first_offset (8)
# A batch's baseOffset and batchLength (the bytes after them), then, 11 bytes on, its lastOffsetDelta.
BATCH_OFFSET_AND_LENGTH = struct.Struct(">qi")
LAST_OFFSET_DELTA = struct.Struct(">i")
LAST_OFFSET_DELTA_AT = 23  # baseOffset (8) + batchLength (4) + partitionLeaderEpoch (4) + magic (1) + crc (4) + attributes (2)


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ CASTAGNOLI_REFLECTED if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _record(offset_delta: int, value: bytes) -> bytes:
    """One record with a null key, no headers and the batch's own timestamp."""
    body = (
        b"\x00"  # attributes => Int8
        + _varint(0)  # timestampDelta => Varlong
        + _varint(offset_delta)  # offsetDelta => Varint
        + _varint(NULL_LENGTH)  # keyLength => Varint (null key)
        + _varint(len(value))  # valueLength => Varint
        + value
        + _varint(0)  # headers count => Varint
    )
    return _varint(len(body)) + body


def _batch(records: list[bytes], timestamp_ms: int) -> bytes:
    after_crc = struct.pack(
        ">hiqqqhii",
        0,  # attributes => Int16 (no compression, CreateTime)
        len(records) - 1,  # lastOffsetDelta => Int32
        timestamp_ms,  # baseTimestamp => Int64
        timestamp_ms,  # maxTimestamp => Int64
        NO_PRODUCER_ID,  # producerId => Int64
        NO_PRODUCER_EPOCH,  # producerEpoch => Int16
        NO_SEQUENCE,  # baseSequence => Int32
        len(records),  # records count => Int32
    ) + b"".join(records)
    after_length = struct.pack(">ibI", NO_PARTITION_LEADER_EPOCH, RECORD_BATCH_MAGIC, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length  # baseOffset, batchLength


def record_batch(value: bytes, timestamp_ms: int) -> bytes:
    """RecordBatch v2 holding one record."""
    return _batch([_record(0, value)], timestamp_ms)


def full_record_batch(value: bytes, timestamp_ms: int, batch_size: int) -> tuple[bytes, int]:
    """RecordBatch v2 holding as many records of ``value`` as fit in ``batch_size`` bytes, by the
    rule a producer fills a batch with (the first record always fits); returns it and its record count."""
    records: list[bytes] = []
    size = BATCH_HEADER_SIZE
    while True:
        record = _record(len(records), value)
        if records and size + len(record) > batch_size:
            return _batch(records, timestamp_ms), len(records)
        records.append(record)
        size += len(record)


def record_batches(value: bytes, timestamp_ms: int, most: int) -> list[bytes]:
    """RecordBatch v2 of 1, 2, ... ``most`` records of ``value``: entry ``k - 1`` holds ``k``."""
    records = [_record(delta, value) for delta in range(most)]
    return [_batch(records[:count], timestamp_ms) for count in range(1, most + 1)]


def produce_request(correlation_id: int, topic: str, partition: int, batch: bytes, acks: int) -> bytes:
    """Produce v7 (request header v1), one topic, one partition, size-prefixed."""
    name = topic.encode()
    body = (
        struct.pack(">hhih", API_PRODUCE, PRODUCE_VERSION, correlation_id, len(CLIENT_ID)) + CLIENT_ID
        + struct.pack(">hhi", NULL_LENGTH, acks, PRODUCE_TIMEOUT_MS)  # transactional_id, acks, timeout_ms
        + struct.pack(">ih", 1, len(name)) + name  # one topic
        + struct.pack(">iii", 1, partition, len(batch)) + batch  # one partition and its records
    )
    return FRAME_SIZE.pack(len(body)) + body


def fetch_request(correlation_id: int, topic: str, partition: int, offset: int, max_wait_ms: int,
                  max_bytes: int) -> bytes:
    """Fetch v4 (request header v1) of one partition from ``offset``, waiting up to ``max_wait_ms``
    for a byte; size-prefixed."""
    name = topic.encode()
    body = (
        struct.pack(">hhih", API_FETCH, FETCH_VERSION, correlation_id, len(CLIENT_ID)) + CLIENT_ID
        # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level
        + struct.pack(">iiiib", CONSUMER_REPLICA_ID, max_wait_ms, 1, max_bytes, READ_UNCOMMITTED)
        + struct.pack(">ih", 1, len(name)) + name  # one topic
        + struct.pack(">iiqi", 1, partition, offset, max_bytes)  # one partition: index, fetch_offset, max_bytes
    )
    return FRAME_SIZE.pack(len(body)) + body


def fetch_answer(response: bytes) -> tuple[int, list[tuple[int, int]]]:
    """``(error_code, [(base_offset, record_count), ...])`` of a one-topic, one-partition Fetch v4
    response (the frame without its size prefix): its whole record batches, in order. A batch cut
    short by ``max_bytes`` is left out; the next fetch starts at it."""
    *_, name_length = FETCH_RESPONSE_HEAD.unpack_from(response)
    at = FETCH_RESPONSE_HEAD.size + name_length
    _partitions, _index, error_code, _high_watermark, _stable, aborted = FETCH_RESPONSE_PARTITION.unpack_from(
        response, at)
    at += FETCH_RESPONSE_PARTITION.size + max(aborted, 0) * ABORTED_TRANSACTION_SIZE
    (records_size,) = FRAME_SIZE.unpack_from(response, at)
    at += FRAME_SIZE.size
    end = at + max(records_size, 0)
    batches = []
    while at + BATCH_OFFSET_AND_LENGTH.size <= end:
        base_offset, length = BATCH_OFFSET_AND_LENGTH.unpack_from(response, at)
        batch_end = at + BATCH_OFFSET_AND_LENGTH.size + length
        if batch_end > end:
            break
        (last_offset_delta,) = LAST_OFFSET_DELTA.unpack_from(response, at + LAST_OFFSET_DELTA_AT)
        batches.append((base_offset, last_offset_delta + 1))
        at = batch_end
    return error_code, batches


def connect(bootstrap: str) -> socket.socket:
    """A blocking TCP_NODELAY socket to the first bootstrap address (the floors assume it leads
    every partition they write, as the embedded single node does)."""
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def produce_answer(response: bytes) -> tuple[int, int, int]:
    """``(correlation_id, partition, error_code)`` of a one-topic, one-partition Produce v7 response
    (the frame without its size prefix)."""
    correlation_id, _topics, name_length = RESPONSE_HEAD.unpack_from(response)
    _partitions, partition, error_code = RESPONSE_PARTITION.unpack_from(response, RESPONSE_HEAD.size + name_length)
    return correlation_id, partition, error_code


def read_frame(reader: BinaryIO) -> bytes:
    """The next response frame from a buffered reader on the socket, without its size prefix."""
    head = reader.read(FRAME_SIZE.size)
    if len(head) == FRAME_SIZE.size:
        size = FRAME_SIZE.unpack(head)[0]
        frame = reader.read(size)
        if len(frame) == size:
            return frame
    raise ConnectionError("broker closed the connection")
