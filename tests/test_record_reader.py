"""The record-set reader: v2 batches from kafkaev's builder, aiokafka's encoder and
confluent-kafka (through the real broker's log segments) decode to the same records;
legacy magic 0/1 message sets with each codec; fetch-offset filtering, truncation,
LogAppendTime, control records and read_committed filtering as the Java consumer does it."""

from __future__ import annotations

import gzip
import struct
import time
import zlib
from pathlib import Path

import lz4.frame
import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkaev.errors import ProtocolError
from kafkaev.protocol.codec import (
    CONTROL_ABORT,
    CONTROL_COMMIT,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    ControlRecord,
    Message,
    RecordBatchBuilder,
    crc32c,
    decode_record_batches,
    next_fetch_offset,
    next_fetch_position,
    read_records,
    xxh32,
)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
LEGACY_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}
TS = 1_700_000_000_000

RECORDS = [
    (TS, b"key-0", b"value-0", [("trace", b"abc"), ("trace", b"again"), ("empty", None)]),
    (TS + 5, None, b"", []),
    (TS - 1000, b"", None, [("\u00e9-unicode", b"\x00\xff")]),
    (TS + 100, b"k" * 200, b"v" * 20000, []),
    (TS + 50, b"k4", b"x" * 100, []),
]


# --- batch construction helpers -------------------------------------------------------------

def aiokafka_batch(records=RECORDS, codec: int = 0, base_offset: int = 0, producer_id: int = -1,
                   transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional, producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1, base_sequence=0 if producer_id >= 0 else -1,
        batch_size=1 << 24)
    for i, (ts, key, value, headers) in enumerate(records):
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=headers) is not None
    return set_base_offset(bytes(builder.build()), base_offset)


def set_base_offset(batch: bytes, base_offset: int) -> bytes:
    return struct.pack(">q", base_offset) + batch[8:]  # not covered by the CRC


def restamp(batch: bytes, attributes_or: int = 0, max_timestamp: int | None = None) -> bytes:
    """Set attribute bits / the max timestamp and recompute the CRC-32C."""
    b = bytearray(batch)
    (attributes,) = struct.unpack_from(">h", b, 21)
    struct.pack_into(">h", b, 21, attributes | attributes_or)
    if max_timestamp is not None:
        struct.pack_into(">q", b, 35, max_timestamp)
    struct.pack_into(">I", b, 17, crc32c(bytes(b[21:])))
    return bytes(b)


def control_batch(offset: int, producer_id: int, kind: int) -> bytes:
    key = struct.pack(">hh", 0, kind)
    value = struct.pack(">hi", 0, 7)  # version, coordinator epoch
    batch = aiokafka_batch([(TS, key, value, [])], base_offset=offset, producer_id=producer_id,
                           transactional=True)
    return restamp(batch, attributes_or=0x20)


def data_batch(offset: int, count: int, producer_id: int = -1, transactional: bool = False) -> bytes:
    return aiokafka_batch([(TS + i, None, b"v%d" % (offset + i), []) for i in range(count)],
                          base_offset=offset, producer_id=producer_id, transactional=transactional)


def legacy_message(offset: int, magic: int, attributes: int, key: bytes | None, value: bytes | None,
                   timestamp: int = TS) -> bytes:
    body = struct.pack(">bb", magic, attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def as_tuples(messages: list[Message]) -> list[tuple]:
    return [(m.offset, m.timestamp, m.key, m.value, m.headers) for m in messages]


# --- v2 -------------------------------------------------------------------------------------

@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_batches_decode_field_by_field(codec: str) -> None:
    batch = aiokafka_batch(codec=CODECS[codec], base_offset=1000)
    fetched = read_records("topic-a", 3, batch, 1000)
    assert as_tuples(fetched.messages) == [
        (1000 + i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(RECORDS)]
    first = fetched.messages[0]
    assert (first.topic, first.partition, first.timestamp_type, first.leader_epoch) == (
        "topic-a", 3, TIMESTAMP_CREATE_TIME, -1)  # aiokafka writes no leader epoch
    assert fetched.next_offset == 1005
    assert (fetched.batch_count, fetched.truncated, fetched.bytes_read) == (1, False, len(batch))
    [decoded] = decode_record_batches(batch)
    assert decoded.compression == CODECS[codec]
    assert decoded.base_offset == 1000 and decoded.records_count == 5 and decoded.last_offset_delta == 4
    assert [r.offset_delta for r in decoded.records] == [0, 1, 2, 3, 4]
    assert [r.timestamp_delta for r in decoded.records] == [ts - TS for ts, *_ in RECORDS]


@pytest.mark.parametrize("codec", CODECS)
def test_kafkaev_builder_round_trip(codec: str) -> None:
    from kafkaev.protocol.codec import RecordBatchBuilder

    builder = RecordBatchBuilder(CODECS[codec])
    for ts, key, value, headers in RECORDS:
        builder.append(ts, key, value, headers)
    batch = builder.build(base_offset=42, partition_leader_epoch=9, producer_id=77, producer_epoch=3,
                          base_sequence=11, transactional=True)
    [decoded] = decode_record_batches(batch)
    assert (decoded.base_offset, decoded.partition_leader_epoch, decoded.producer_id,
            decoded.producer_epoch, decoded.base_sequence, decoded.is_transactional, decoded.is_control) == (
        42, 9, 77, 3, 11, True, False)
    # Base timestamp is the first record's (as Java writes it); deltas may be negative.
    assert (decoded.base_timestamp, decoded.max_timestamp) == (RECORDS[0][0], max(r[0] for r in RECORDS))
    fetched = read_records("t", 0, batch, 0)
    assert as_tuples(fetched.messages) == [(42 + i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(RECORDS)]
    assert fetched.last_leader_epoch == 9 and {m.leader_epoch for m in fetched.messages} == {9}


def test_several_batches_and_fetch_offset_inside_a_batch() -> None:
    data = data_batch(0, 3) + data_batch(3, 4) + data_batch(7, 2)
    fetched = read_records("t", 0, data, 5)
    assert [m.offset for m in fetched.messages] == [5, 6, 7, 8]
    assert [m.value for m in fetched.messages] == [b"v5", b"v6", b"v7", b"v8"]
    assert fetched.next_offset == 9 and fetched.batch_count == 3
    # A set entirely below the fetch offset still moves the position forward.
    below = read_records("t", 0, data_batch(0, 3), 2)
    assert [m.offset for m in below.messages] == [2]
    assert read_records("t", 0, data_batch(0, 3), 10).next_offset == 10


def test_truncated_last_batch_keeps_the_complete_ones_at_every_cut() -> None:
    first, second = data_batch(0, 3), data_batch(3, 4, producer_id=5)
    data = first + second
    for cut in range(len(data) + 1):
        fetched = read_records("t", 0, data[:cut], 0)
        complete = 2 if cut == len(data) else 1 if cut >= len(first) else 0
        assert fetched.batch_count == complete, cut
        assert len(fetched.messages) == (0, 3, 7)[complete]
        assert fetched.truncated == (cut not in (0, len(first), len(data)))
        assert fetched.next_offset == (0, 3, 7)[complete]
        assert fetched.bytes_read == (0, len(first), len(data))[complete]


def test_next_fetch_offset_from_headers_agrees_with_decoding() -> None:
    """The fetcher sends its next Fetch from next_fetch_offset before decoding: it must say
    what read_records says, for every kind of entry and at every cut of the set."""
    inner = b"".join(legacy_message(i, 1, 0, None, b"v%d" % i, timestamp=TS + i) for i in range(3))
    compressed_wrapper = legacy_message(12, 1, 1, None, gzip.compress(inner))
    data = (data_batch(0, 3) + control_batch(3, producer_id=5, kind=CONTROL_COMMIT)
            + legacy_message(4, 0, 0, None, b"a") + legacy_message(5, 1, 0, b"k", b"b")
            + aiokafka_batch(codec=CODECS["gzip"], base_offset=6) + compressed_wrapper)
    assert read_records("t", 0, data, 0).next_offset == 13
    for cut in range(len(data) + 1):
        for fetch_offset in (0, 4, 9, 13, 20):
            expected = read_records("t", 0, data[:cut], fetch_offset).next_offset
            assert next_fetch_offset(data[:cut], fetch_offset) == expected, (cut, fetch_offset)
    assert next_fetch_offset(memoryview(bytearray(data)), 0) == 13
    assert next_fetch_offset(None, 7) == 7


def test_next_fetch_position_names_the_leader_epoch_of_the_batch_it_ends_after() -> None:
    def epoch_batch(offset: int, count: int, leader_epoch: int) -> bytes:
        builder = RecordBatchBuilder(0)
        for i in range(count):
            builder.append(TS + i, None, b"v", None)
        return builder.build(base_offset=offset, partition_leader_epoch=leader_epoch)

    first, second = epoch_batch(0, 3, 4), epoch_batch(3, 2, 7)
    assert next_fetch_position(first + second, 0) == (5, 7)
    assert next_fetch_position(first + second[:-1], 0) == (3, 4)  # the cut batch is fetched again
    assert next_fetch_position(first, 3, 9) == (3, 9)  # nothing past the fetch offset: unchanged
    assert next_fetch_position(None, 3, 9) == (3, 9)
    assert next_fetch_position(first + legacy_message(3, 1, 0, None, b"x"), 0) == (4, -1)  # no epoch


def test_log_append_time_uses_the_batch_max_timestamp() -> None:
    batch = restamp(aiokafka_batch(codec=1), attributes_or=0x08, max_timestamp=TS + 99_999)
    fetched = read_records("t", 0, batch, 0)
    assert {m.timestamp for m in fetched.messages} == {TS + 99_999}
    assert {m.timestamp_type for m in fetched.messages} == {TIMESTAMP_LOG_APPEND_TIME}


def test_crc_mismatch_is_detected_unless_disabled() -> None:
    batch = bytearray(aiokafka_batch())
    batch[-2] ^= 0x01  # last byte of the last value: still well-formed
    with pytest.raises(ProtocolError, match="CRC-32C mismatch"):
        read_records("t", 0, bytes(batch), 0)
    fetched = read_records("t", 0, bytes(batch), 0, check_crcs=False)
    assert fetched.messages[-1].value == b"x" * 99 + b"y"
    # The partition leader epoch is outside the CRC: changing it is fine.
    epoch_changed = bytearray(aiokafka_batch())
    struct.pack_into(">i", epoch_changed, 12, 77)
    assert read_records("t", 0, bytes(epoch_changed), 0).last_leader_epoch == 77


def test_record_fields_running_past_the_record_name_the_field() -> None:
    batch = bytearray(aiokafka_batch([(TS, b"key", b"value", [])]))
    # Records start at 61: length varint, attributes, timestamp delta, offset delta, key length.
    batch[61 + 4] = 0x7E  # key length 63 > what the record holds
    with pytest.raises(ProtocolError, match="record 0: field 'key'"):
        read_records("t", 0, bytes(batch), 0, check_crcs=False)


def test_unknown_magic_and_bad_lengths_are_protocol_errors() -> None:
    batch = bytearray(data_batch(0, 1))
    batch[16] = 3
    with pytest.raises(ProtocolError, match="unknown magic 3"):
        read_records("t", 0, bytes(batch), 0)
    short = bytearray(data_batch(0, 1))
    struct.pack_into(">i", short, 8, 5)
    with pytest.raises(ProtocolError, match="length 5"):
        read_records("t", 0, bytes(short), 0)


def test_stop_at_corrupt_returns_the_entries_before_the_first_malformed_one() -> None:
    good = data_batch(0, 3) + control_batch(3, 7, CONTROL_COMMIT)
    bad_crc = bytearray(data_batch(4, 2))
    bad_crc[-1] ^= 0x01
    bad_record = bytearray(aiokafka_batch([(TS, b"k", b"v", []), (TS, b"key", b"value", [])], base_offset=4))
    # Records start at 61, each after its zig-zag varint length (one byte here). The second's
    # key length runs past it, after the first was decoded: that one must not come out either.
    second = 61 + 1 + (bad_record[61] >> 1)
    bad_record[second + 4] = 0x7E
    for corrupt, check_crcs in ((bytes(bad_crc), True), (bytes(bad_record), False)):
        records = good + corrupt + data_batch(6, 2)
        with pytest.raises(ProtocolError):
            read_records("t", 0, records, 0, check_crcs=check_crcs)
        fetched = read_records("t", 0, records, 1, check_crcs=check_crcs, stop_at_corrupt=True)
        assert [m.offset for m in fetched.messages] == [1, 2]
        assert [c.offset for c in fetched.control] == [3]
        assert (fetched.next_offset, fetched.batch_count, fetched.truncated) == (4, 2, False)
        assert isinstance(fetched.error, ProtocolError) and "offset 4" in str(fetched.error)
    first = read_records("t", 0, bytes(bad_crc), 4, stop_at_corrupt=True)
    assert (first.messages, first.next_offset, first.batch_count) == ([], 4, 0)
    assert "CRC-32C mismatch" in str(first.error)
    assert read_records("t", 0, good, 0, stop_at_corrupt=True).error is None


def test_message_fields_are_read_only_and_read_by_callbacks_at_slot_speed() -> None:
    # topic, key and value are member descriptors (specialized by the interpreter), the rest
    # Cython properties: both read the same fields and refuse assignment alike.
    decoded = read_records("t", 3, aiokafka_batch([(TS, None, b"v0", []), (TS, b"k1", None, [])]), 0).messages
    assert [(m.topic, m.partition, m.offset, m.key, m.value) for m in decoded] == [
        ("t", 3, 0, None, b"v0"), ("t", 3, 1, b"k1", None)]
    assert type(Message.__dict__["value"]).__name__ == "member_descriptor"
    for field in ("topic", "key", "value", "offset"):
        with pytest.raises(AttributeError):
            setattr(decoded[0], field, b"x")
    blank = Message.__new__(Message)
    assert (blank.topic, blank.key, blank.value) == (None, None, None)


def test_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="records"):
        read_records("t", 0, 12345, 0)
    with pytest.raises(ValueError, match="max_uncompressed_size"):
        read_records("t", 0, b"", 0, max_uncompressed_size=-1)
    empty = read_records("t", 0, None, 17)
    assert (empty.messages, empty.next_offset, empty.batch_count) == ([], 17, 0)


def test_memoryview_input_is_not_copied_wrongly() -> None:
    data = b"\x00" * 7 + data_batch(10, 2)
    fetched = read_records("t", 0, memoryview(data)[7:], 0)
    assert [m.value for m in fetched.messages] == [b"v10", b"v11"]


# --- control records and transactions -------------------------------------------------------

def test_control_records_are_reported_not_delivered() -> None:
    data = data_batch(0, 2, producer_id=7, transactional=True) + control_batch(2, 7, CONTROL_COMMIT)
    fetched = read_records("t", 0, data, 0)
    assert [m.offset for m in fetched.messages] == [0, 1]
    assert fetched.control == [ControlRecord(2, 7, 0, CONTROL_COMMIT)]
    assert fetched.next_offset == 3


def test_read_committed_skips_aborted_transactions_like_the_java_consumer() -> None:
    data = (
        data_batch(0, 3, producer_id=7, transactional=True)      # aborted below
        + data_batch(3, 1)                                          # not transactional
        + data_batch(4, 2, producer_id=8, transactional=True)      # committed
        + control_batch(6, 7, CONTROL_ABORT)
        + control_batch(7, 8, CONTROL_COMMIT)
        + data_batch(8, 2, producer_id=7, transactional=True)      # producer 7 again: committed
        + control_batch(10, 7, CONTROL_COMMIT)
    )
    aborted = [(7, 0)]
    committed = read_records("t", 0, data, 0, read_committed=True, aborted_transactions=aborted)
    assert [m.offset for m in committed.messages] == [3, 4, 5, 8, 9]
    assert committed.aborted_count == 3
    assert [(c.offset, c.producer_id, c.type) for c in committed.control] == [
        (6, 7, CONTROL_ABORT), (7, 8, CONTROL_COMMIT), (10, 7, CONTROL_COMMIT)]
    assert committed.next_offset == 11
    uncommitted = read_records("t", 0, data, 0, aborted_transactions=aborted)
    assert [m.offset for m in uncommitted.messages] == [0, 1, 2, 3, 4, 5, 8, 9]


def test_aborted_transactions_accept_response_objects() -> None:
    class AbortedTransaction:
        def __init__(self, producer_id: int, first_offset: int) -> None:
            self.producer_id, self.first_offset = producer_id, first_offset

    data = data_batch(0, 2, producer_id=3, transactional=True) + control_batch(2, 3, CONTROL_ABORT)
    fetched = read_records("t", 0, data, 0, read_committed=True,
                           aborted_transactions=[AbortedTransaction(3, 0)])
    assert fetched.messages == [] and fetched.next_offset == 3


# --- legacy message sets (magic 0 and 1) ----------------------------------------------------

# aiokafka writes no lz4 for magic 0 (pre-KIP-57 framing): a hand-built test covers it below.
@pytest.mark.parametrize("magic,codec", [(m, c) for m in (0, 1) for c in LEGACY_CODECS if (m, c) != (0, "lz4")])
def test_aiokafka_legacy_message_sets_decode(magic: int, codec: str) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=LEGACY_CODECS[codec], batch_size=1 << 20)
    for i in range(5):
        builder.append(i, timestamp=TS + i if magic else None, key=b"k%d" % i if i % 2 else None, value=b"v%d" % i)
    data = bytes(builder.build())
    base = 100 if magic == 1 and codec != "none" else 0
    if codec != "none":
        # The broker sets the wrapper's offset to the last inner absolute offset (magic 1
        # inner offsets stay relative 0..4; magic 0 ones are absolute).
        data = struct.pack(">q", base + 4) + data[8:]
    fetched = read_records("t", 0, data, 0)
    assert [m.offset for m in fetched.messages] == [base + i for i in range(5)]
    assert [m.key for m in fetched.messages] == [None, b"k1", None, b"k3", None]
    assert [m.value for m in fetched.messages] == [b"v%d" % i for i in range(5)]
    if magic == 1:
        assert [m.timestamp for m in fetched.messages] == [TS + i for i in range(5)]
        assert {m.timestamp_type for m in fetched.messages} == {TIMESTAMP_CREATE_TIME}
    else:
        assert {(m.timestamp, m.timestamp_type) for m in fetched.messages} == {(-1, TIMESTAMP_NOT_AVAILABLE)}
    assert fetched.next_offset == base + 5
    assert all(m.headers == [] and m.leader_epoch == -1 for m in fetched.messages)


def test_magic1_wrapper_log_append_time_applies_to_inner_messages() -> None:
    inner = b"".join(legacy_message(i, 1, 0, None, b"v%d" % i, timestamp=TS + i) for i in range(3))
    wrapper = legacy_message(52, 1, 0x08 | 1, None, gzip.compress(inner), timestamp=TS + 777)
    fetched = read_records("t", 0, wrapper, 51)
    assert [(m.offset, m.timestamp, m.timestamp_type) for m in fetched.messages] == [
        (51, TS + 777, TIMESTAMP_LOG_APPEND_TIME), (52, TS + 777, TIMESTAMP_LOG_APPEND_TIME)]


def test_magic0_lz4_with_the_pre_kip57_broken_header_checksum() -> None:
    inner = b"".join(legacy_message(i, 0, 0, None, b"old-%d" % i) for i in range(3))
    frame = bytearray(lz4.frame.compress(inner, block_linked=False))
    hc_pos = 6 + (8 if frame[4] & 0x08 else 0)
    frame[hc_pos] = (xxh32(bytes(frame[:hc_pos])) >> 8) & 0xFF  # checksum over magic too: the old bug
    wrapper = legacy_message(2, 0, 3, None, bytes(frame))
    assert [m.value for m in read_records("t", 0, wrapper, 0).messages] == [b"old-0", b"old-1", b"old-2"]


def test_legacy_crc32_is_checked() -> None:
    message = bytearray(legacy_message(0, 1, 0, b"k", b"value"))
    message[-1] ^= 0xFF
    with pytest.raises(ProtocolError, match="CRC-32 mismatch"):
        read_records("t", 0, bytes(message), 0)
    assert read_records("t", 0, bytes(message), 0, check_crcs=False).messages[0].value == b"valu\x9a"


def test_mixed_legacy_and_v2_entries_in_one_set() -> None:
    data = legacy_message(0, 0, 0, None, b"a") + legacy_message(1, 1, 0, b"k", b"b") + data_batch(2, 2)
    fetched = read_records("t", 0, data, 0)
    assert [m.value for m in fetched.messages] == [b"a", b"b", b"v2", b"v3"]
    assert fetched.next_offset == 4 and fetched.batch_count == 3
    assert [b.magic for b in decode_record_batches(data)] == [0, 1, 2]


def test_legacy_zstd_wrapper_is_refused() -> None:
    with pytest.raises(ProtocolError, match="not valid before magic 2"):
        read_records("t", 0, legacy_message(0, 1, 4, None, b"x" * 10), 0)


# --- interop with confluent-kafka through the real broker ----------------------------------

def segment_bytes(kafka, topic: str) -> bytes:
    nodes = getattr(kafka, "nodes", None)
    if not nodes:
        pytest.skip("needs the local cluster's data directory")
    for node in nodes.values():
        segments = sorted(Path(node.data_dir).rglob(f"{topic}-0/*.log"))
        if segments:
            return b"".join(p.read_bytes() for p in segments)
    raise AssertionError(f"no log segment for {topic}-0")


def produce_with_confluent(kafka, topic: str, codec: str, count: int) -> list[tuple]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": kafka.bootstrap, "compression.type": codec,
                         "linger.ms": 20, "batch.num.messages": 37})
    sent = []
    for i in range(count):
        key = None if i % 5 == 0 else b"key-%d" % i
        value = b"%06d-" % i + b"x" * 100
        headers = [("h", b"%d" % i), ("h", None), ("\u00e9", b"")] if i % 3 == 0 else []
        producer.produce(topic, value=value, key=key, headers=headers or None, timestamp=TS + i, partition=0)
        sent.append((i, TS + i, key, value, headers))
    assert producer.flush(30) == 0
    return sent


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_batches_from_the_broker_log_decode(kafka, make_topic, codec: str) -> None:
    topic = make_topic()
    sent = produce_with_confluent(kafka, topic, codec, 300)
    deadline = time.monotonic() + 10
    while True:
        data = segment_bytes(kafka, topic)
        fetched = read_records(topic, 0, data, 0)
        if len(fetched.messages) >= 300 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert as_tuples(fetched.messages) == sent
    batches = decode_record_batches(data, allow_truncated=True)
    assert len(batches) > 1
    assert {b.compression for b in batches} == {CODECS[codec]}
    assert fetched.next_offset == 300


def test_broker_log_append_time_topic(kafka, make_topic) -> None:
    topic = make_topic(config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    produce_with_confluent(kafka, topic, "lz4", 50)
    after = int(time.time() * 1000) + 1
    time.sleep(0.2)
    fetched = read_records(topic, 0, segment_bytes(kafka, topic), 0)
    assert len(fetched.messages) == 50
    assert {m.timestamp_type for m in fetched.messages} == {TIMESTAMP_LOG_APPEND_TIME}
    assert all(before <= m.timestamp <= after for m in fetched.messages)


def test_confluent_transactions_leave_control_records(kafka, make_topic) -> None:
    from confluent_kafka import Producer

    topic = make_topic()
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": f"{topic}-txn"})
    producer.init_transactions(30)
    for commit in (True, False):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, value=b"%s-%d" % (b"c" if commit else b"a", i), partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    time.sleep(0.3)
    data = segment_bytes(kafka, topic)
    fetched = read_records(topic, 0, data, 0)
    assert [m.value for m in fetched.messages] == [b"c-0", b"c-1", b"c-2", b"a-0", b"a-1", b"a-2"]
    assert [c.type for c in fetched.control] == [CONTROL_COMMIT, CONTROL_ABORT]
    pid = fetched.control[0].producer_id
    assert pid >= 0 and fetched.control[1].producer_id == pid
    # The broker's AbortedTransactions entry for the second transaction starts at offset 4.
    committed = read_records(topic, 0, data, 0, read_committed=True, aborted_transactions=[(pid, 4)])
    assert [m.value for m in committed.messages] == [b"c-0", b"c-1", b"c-2"]
    assert committed.next_offset == 8
