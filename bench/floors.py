"""The floor for round-trip latency: a minimal raw-socket Kafka client.

It sends one pre-encoded Produce v7 request (a single-record RecordBatch v2, acks=1) over a
blocking TCP socket, reads the response frame and repeats. No client library does less work per
round trip, so its latency is the broker + loopback cost every client pays.
"""

from __future__ import annotations

import socket
import struct
import time

from bench.measure import Section, histogram, make_value, summarize_latencies
from bench.spec import RunResult, RunSpec

API_PRODUCE = 0
PRODUCE_VERSION = 7
ERROR_NONE = 0
RECORD_BATCH_MAGIC = 2
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
CLIENT_ID = b"raw-floor"
CASTAGNOLI_REFLECTED = 0x82F63B78


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


def record_batch(value: bytes, timestamp_ms: int) -> bytes:
    """RecordBatch v2 holding one record with a null key and no headers."""
    record_body = (
        b"\x00"  # attributes => Int8
        + _varint(0)  # timestampDelta => Varlong
        + _varint(0)  # offsetDelta => Varint
        + _varint(-1)  # keyLength => Varint (null key)
        + _varint(len(value))  # valueLength => Varint
        + value
        + _varint(0)  # headers count => Varint
    )
    record = _varint(len(record_body)) + record_body
    after_crc = struct.pack(
        ">hiqqqhii",
        0,  # attributes => Int16 (no compression, CreateTime)
        0,  # lastOffsetDelta => Int32
        timestamp_ms,  # baseTimestamp => Int64
        timestamp_ms,  # maxTimestamp => Int64
        NO_PRODUCER_ID,  # producerId => Int64
        NO_PRODUCER_EPOCH,  # producerEpoch => Int16
        NO_SEQUENCE,  # baseSequence => Int32
        1,  # records count => Int32
    ) + record
    after_length = struct.pack(">ibI", NO_PARTITION_LEADER_EPOCH, RECORD_BATCH_MAGIC, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length  # baseOffset, batchLength


def produce_request(correlation_id: int, topic: str, partition: int, batch: bytes, acks: int) -> bytes:
    """Produce v7 (request header v1), one topic, one partition."""
    name = topic.encode()
    body = (
        struct.pack(">hhih", API_PRODUCE, PRODUCE_VERSION, correlation_id, len(CLIENT_ID)) + CLIENT_ID
        + struct.pack(">hhi", -1, acks, 30000)  # transactional_id null, acks, timeout_ms
        + struct.pack(">ih", 1, len(name)) + name  # one topic
        + struct.pack(">iii", 1, partition, len(batch)) + batch  # one partition and its records
    )
    return struct.pack(">i", len(body)) + body


def _read_exact(sock: socket.socket, size: int) -> bytes:
    view = bytearray(size)
    got = 0
    while got < size:
        n = sock.recv_into(memoryview(view)[got:], size - got)
        if n == 0:
            raise ConnectionError("broker closed the connection")
        got += n
    return bytes(view)


def _error_code(response: bytes, topic_length: int) -> int:
    # correlation_id, responses count, topic name, partitions count, partition index, then error_code.
    offset = 4 + 4 + 2 + topic_length + 4 + 4
    return struct.unpack_from(">h", response, offset)[0]


def roundtrip(spec: RunSpec) -> RunResult:
    host, _, port = spec.bootstrap.split(",")[0].rpartition(":")
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    batch = record_batch(make_value(spec.value_size), int(time.time() * 1000))
    topic_length = len(spec.topic.encode())
    warmup = max(100, spec.count // 10)
    latencies: list[float] = []
    failed = 0
    with Section() as section:
        for i in range(warmup + spec.count):
            request = produce_request(i, spec.topic, 0, batch, spec.acks)
            started = time.perf_counter_ns()
            sock.sendall(request)
            size = struct.unpack(">i", _read_exact(sock, 4))[0]
            response = _read_exact(sock, size)
            elapsed_us = (time.perf_counter_ns() - started) / 1000.0
            if _error_code(response, topic_length) != ERROR_NONE:
                failed += 1
            elif i >= warmup:
                latencies.append(elapsed_us)
    sock.close()
    return RunResult(
        records=len(latencies),
        failed=failed,
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        latency_us=summarize_latencies(latencies),
        histogram=histogram(latencies),
        settings={"request": f"Produce v{PRODUCE_VERSION}, one pre-encoded record, TCP_NODELAY", "acks": spec.acks},
    )
