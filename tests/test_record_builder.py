"""RecordBatchBuilder: batches decode field by field with aiokafka's independent
record parser for every codec, match aiokafka's encoder byte for byte when
uncompressed, carry a CRC-32C that a pure-Python CRC confirms, and can be
re-stamped for idempotent retries."""

import gc
import struct
import time
import tracemalloc

import pytest
from aiokafka.record import _crc32c as pure_python_crc32c
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaev.protocol.codec import (
    BATCH_HEADER_SIZE,
    EncodedBatch,
    Message,
    RecordBatchBuilder,
    WriteBuffer,
    crc32c,
    read_records,
)

Py_TPFLAGS_HAVE_GC = 1 << 14  # CPython's type flag of collector-tracked types
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte RecordBatch v2 header
HEADER_FIELDS = (
    "base_offset batch_length leader_epoch magic crc attributes last_offset_delta "
    "base_timestamp max_timestamp producer_id producer_epoch base_sequence record_count"
).split()


def header_of(batch: bytes) -> dict:
    return dict(zip(HEADER_FIELDS, HEADER.unpack_from(batch), strict=True))


def independent_crc(batch: bytes) -> int:
    return pure_python_crc32c.crc(batch[21:])


RECORDS = [
    (1_700_000_000_000, b"key-0", b"value-0", [("trace", b"abc"), ("trace", b"again"), ("empty", None)]),
    (1_700_000_000_005, None, b"", []),
    (1_699_999_999_000, b"", None, [("é-unicode-key", b"\x00\xff")]),  # earlier timestamp: negative delta
    (1_700_000_000_100, b"k" * 200, b"v" * 20000, None),  # multi-byte varint lengths
    (1_700_000_000_050, b"k3", "str value é", [("s", "str header")]),
]


def expected_value(value):
    return value.encode() if isinstance(value, str) else value


def expected_headers(headers):
    return [(k, v.encode() if isinstance(v, str) else v) for k, v in headers or []]


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_batch_decodes_field_by_field_with_aiokafka(codec_name):
    codec = CODECS[codec_name]
    builder = RecordBatchBuilder(codec=codec)
    for i, (ts, key, value, headers) in enumerate(RECORDS):
        assert builder.append(ts, key, value, headers) == i
    batch = builder.build(
        base_offset=1000, partition_leader_epoch=7, producer_id=123456789, producer_epoch=3, base_sequence=42
    )

    parsed = DefaultRecordBatch(batch)
    assert parsed.validate_crc()
    assert parsed.base_offset == 1000
    assert parsed.magic == 2
    assert parsed.compression_type == codec
    assert not parsed.is_transactional and not parsed.is_control_batch
    assert parsed.timestamp_type == 0
    assert parsed.last_offset_delta == len(RECORDS) - 1
    assert parsed.first_timestamp == RECORDS[0][0]
    assert parsed.max_timestamp == max(r[0] for r in RECORDS)
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (123456789, 3, 42)
    decoded = list(parsed)
    assert len(decoded) == len(RECORDS)
    for i, (record, (ts, key, value, headers)) in enumerate(zip(decoded, RECORDS, strict=True)):
        assert record.offset == 1000 + i
        assert record.timestamp == ts
        assert record.key == key
        assert record.value == expected_value(value)
        assert record.headers == expected_headers(headers)

    header = header_of(batch)
    assert header["batch_length"] == len(batch) - 12
    assert header["leader_epoch"] == 7
    assert header["record_count"] == len(RECORDS)
    assert header["crc"] == independent_crc(batch)


def test_uncompressed_batch_is_byte_identical_to_aiokafka():
    ours = RecordBatchBuilder()
    theirs = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=0, producer_id=77, producer_epoch=2,
        base_sequence=9, batch_size=10**7,
    )  # fmt: skip
    for i, (ts, key, value, headers) in enumerate(RECORDS):
        ours.append(ts, key, value, headers)
        theirs.append(
            i, timestamp=ts, key=key, value=expected_value(value), headers=expected_headers(headers)
        )
    assert ours.build(producer_id=77, producer_epoch=2, base_sequence=9) == bytes(theirs.build())


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**41),
            st.none() | st.binary(max_size=300),
            st.none() | st.binary(max_size=300),
            st.lists(st.tuples(st.text(max_size=20), st.none() | st.binary(max_size=50)), max_size=4),
        ),
        min_size=1,
        max_size=30,
    ),
    st.sampled_from(list(CODECS.values())),
)
def test_random_records_round_trip_through_aiokafka(records, codec):
    builder = RecordBatchBuilder(codec=codec)
    for ts, key, value, headers in records:
        builder.append(ts, key, value, headers)
    batch = builder.build(base_offset=5)
    parsed = DefaultRecordBatch(batch)
    assert parsed.validate_crc()
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in parsed]
    assert got == [(5 + i, ts, k, v, list(h)) for i, (ts, k, v, h) in enumerate(records)]
    assert header_of(batch)["crc"] == independent_crc(batch)


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_rebuild_restamps_header_and_keeps_records(codec_name):
    builder = RecordBatchBuilder(codec=CODECS[codec_name])
    for i in range(50):
        builder.append(1_000 + i, b"key", b"x" * 100, None)
    first = builder.build(producer_id=9, producer_epoch=0, base_sequence=0)
    # An epoch bump re-stamps the same records with a new epoch and sequence.
    second = builder.build(producer_id=9, producer_epoch=1, base_sequence=0)
    third = builder.build(producer_id=9, producer_epoch=1, base_sequence=0)
    assert first[61:] == second[61:]
    assert second == third
    h1, h2 = header_of(first), header_of(second)
    assert (h1["producer_epoch"], h2["producer_epoch"]) == (0, 1)
    assert h1["crc"] != h2["crc"] and h2["crc"] == independent_crc(second)
    assert DefaultRecordBatch(second).validate_crc()
    # Appending after a build invalidates the cached payload.
    builder.append(2_000, b"late", b"y", None)
    fourth = builder.build()
    assert len(list(DefaultRecordBatch(fourth))) == 51


# RecordBatchBuilder's: an uncompressed batch larger than this is lent out as a view.
HANDOVER_MAX_SIZE = 128 * 1024


# (max_batch_size, records of ~115 bytes): a batch under the handover size, one past it.
FINISH_SHAPES = {"handed-over": (16384, 40), "small-under-a-large-limit": (1 << 20, 40), "lent": (1 << 20, 1500)}


@pytest.mark.parametrize("shape", list(FINISH_SHAPES))
@pytest.mark.parametrize("codec_name", list(CODECS))
def test_finish_equals_build_then_empties_the_builder(codec_name, shape):
    max_batch_size, records = FINISH_SHAPES[shape]
    builder = RecordBatchBuilder(codec=CODECS[codec_name], max_batch_size=max_batch_size)
    for i in range(records):
        builder.append(1_000 + i, b"key-%d" % i, b"x" * 100, [("h", b"%d" % i)])
    stamp = {"base_offset": 7, "producer_id": 9, "producer_epoch": 2, "base_sequence": 40, "transactional": True}
    expected = builder.build(**stamp)
    finished = builder.finish(**stamp)
    # Lent once its buffer grew past the handover size; a small batch is handed over whatever its limit.
    lent = codec_name == "none" and len(expected) > HANDOVER_MAX_SIZE
    assert type(finished) is EncodedBatch and bytes(finished) == expected and len(finished) == len(expected)
    (whole,) = finished.pieces  # no value referenced: one piece, the batch
    assert type(whole) is (memoryview if lent else bytes) and whole == expected
    if lent:
        assert whole.readonly
    else:
        assert bytes(finished) is whole  # handed over: its bytes are the builder's buffer, not a copy
    assert builder.record_count == 0 and builder.estimated_size == BATCH_HEADER_SIZE
    # The next batch starts clean and never writes into the one handed out.
    builder.append(5_000, None, b"next", None)
    assert bytes(finished) == expected
    assert [r.value for r in DefaultRecordBatch(bytes(builder.finish()))] == [b"next"]
    assert DefaultRecordBatch(bytes(finished)).validate_crc() and len(list(DefaultRecordBatch(bytes(finished)))) == records


def test_a_buffer_grows_with_its_records_not_to_its_limit():
    # A producer over many partitions opens a batch per partition, most holding a record or
    # two when they are sent: each builder allocates for its records, not its max_batch_size.
    builders = [RecordBatchBuilder(max_batch_size=16384) for _ in range(1000)]
    tracemalloc.start()
    try:
        for i, builder in enumerate(builders):
            builder.append(1_000, b"key-%d" % i, b"v" * 100, None)
        grown, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert grown < 1000 * 1024  # a buffer of the whole limit each: 16 MiB
    # and one that fills up still takes every record up to the limit, in order
    builder = builders[0]
    while builder.append(2_000, None, b"w" * 100, None) >= 0:
        pass
    assert 16384 - 200 < builder.estimated_size <= 16384
    count = builder.record_count
    batch = bytes(builder.finish())
    assert DefaultRecordBatch(batch).validate_crc() and len(list(DefaultRecordBatch(batch))) == count


def _first_append_allocates(builder) -> int:
    tracemalloc.start()
    try:
        builder.append(3_000, None, b"x" * 100, None)
        allocated, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return allocated


def test_a_batch_starts_with_the_room_its_builders_last_full_batch_took():
    # A builder kept busy does not grow each batch from a small buffer again (a realloc and
    # copy per doubling); after a batch that did not fill up (lingered out, as most over many
    # partitions are) the next starts small again.
    limit = 16384
    builder = RecordBatchBuilder(max_batch_size=limit)
    while builder.append(1_000, None, b"w" * 100, None) >= 0:
        pass
    full = builder.finish()
    assert _first_append_allocates(builder) > limit // 2
    for _ in range(99):
        builder.append(3_000, None, b"x" * 100, None)
    lingered = builder.finish()  # 100 records, not full
    assert _first_append_allocates(builder) < 1024
    assert len(list(DefaultRecordBatch(bytes(full)))) > 100 and len(list(DefaultRecordBatch(bytes(lingered)))) == 100


@pytest.mark.parametrize("value_sizes", [[1000] * 100, [40_000, 10, 70_000, 3] * 3, [5] * 7000],
                         ids=["many-mid", "mixed-large", "many-tiny"])
def test_the_checksum_summed_while_appending_covers_every_record(value_sizes):
    # Uncompressed records are summed into the CRC in chunks as they are written; the header's
    # CRC is joined to theirs at the end. Checked against a CRC of the whole batch at once.
    builder = RecordBatchBuilder(max_batch_size=4 << 20)
    for i, size in enumerate(value_sizes):
        builder.append(1_000 + i, b"k%d" % i, bytes([i % 251]) * size, [("h", b"x")] if i % 3 else None)
    first = builder.build(producer_id=3, producer_epoch=0, base_sequence=0)
    again = builder.build(producer_id=3, producer_epoch=1, base_sequence=0)  # re-stamped
    finished = bytes(builder.finish(producer_id=3, producer_epoch=1, base_sequence=0))
    for batch in (first, again, finished):
        assert header_of(batch)["crc"] == crc32c(batch[21:])  # one pass over the whole batch
        assert DefaultRecordBatch(batch).validate_crc()  # aiokafka's own CRC-32C
    assert again == finished


def test_a_lent_buffer_is_taken_back_only_once_no_view_of_it_is_left():
    builder = RecordBatchBuilder(max_batch_size=1 << 20)

    def fill(tag: bytes) -> memoryview:
        # Values below VALUE_REFERENCE_MIN_SIZE are copied in: 200 x 2000 B is a buffer past the handover size.
        for i in range(200):
            builder.append(i, None, tag * 2_000, None)
        (view,) = builder.finish().pieces  # the batch's one piece: a view of the builder's buffer
        return view

    first = fill(b"a")
    buffer = first.obj
    builder.reset()  # the batch is still out: its buffer stays with it
    second = fill(b"b")
    assert second.obj is not buffer and bytes(first[-20:-1]) == b"a" * 19
    del first
    third = fill(b"c")  # second's buffer was let go: still viewed when a new one was needed
    third_buffer_id = id(third.obj)
    del third
    builder.reset()  # no view of third's buffer is left: taken back
    fourth = fill(b"d")
    assert id(fourth.obj) == third_buffer_id
    assert bytes(second[-20:-1]) == b"b" * 19  # never written into while viewed
    assert bytes(fourth[-20:-1]) == b"d" * 19
    assert [r.value for r in DefaultRecordBatch(fourth.tobytes())] == [b"d" * 2_000] * 200


VALUE_REFERENCE_MIN_SIZE = 4096  # codec_record_builder.pxi


def test_large_bytes_values_are_referenced_and_the_batch_is_unchanged():
    # Only immutable bytes values of VALUE_REFERENCE_MIN_SIZE or more are referenced: a
    # bytearray or str (encoded), or a smaller value, is copied in as before.
    values = [b"a" * VALUE_REFERENCE_MIN_SIZE, b"b" * (VALUE_REFERENCE_MIN_SIZE - 1), bytearray(b"c" * 9000),
              "d" * 5000, b"e" * 70_000, None, b"f" * 10, b"g" * 300_000]
    builder = RecordBatchBuilder(max_batch_size=1 << 20)
    for i, value in enumerate(values):
        assert builder.append(1_000 + i, b"k%d" % i, value, [("h", b"%d" % i)] if i % 2 else None) == i
    stamp = {"base_offset": 3, "producer_id": 9, "producer_epoch": 1, "base_sequence": 17}
    expected = builder.build(**stamp)
    assert builder.estimated_size == len(expected)
    batch = builder.finish(**stamp)
    assert type(batch) is EncodedBatch and repr(batch).endswith("3 values referenced>")
    assert len(batch) == len(expected) and bytes(batch) == expected
    parsed = DefaultRecordBatch(bytes(batch))
    assert parsed.validate_crc()
    assert [r.value for r in parsed] == [v.encode() if isinstance(v, str) else v and bytes(v) for v in values]
    # The builder's next batch never writes into the buffer this one still holds...
    builder.append(5_000, None, b"x" * 20_000, None)
    second = builder.finish()
    assert bytes(batch) == expected and [r.value for r in DefaultRecordBatch(bytes(second))] == [b"x" * 20_000]
    # ...and once nothing holds a buffer, it is taken back and the batches stay whole.
    del batch, second
    for round_ in range(3):
        builder.append(5_000, None, b"%d" % round_ * 20_000, [("r", b"%d" % round_)])
        again = builder.finish()
        assert len(again.pieces) == 3 and DefaultRecordBatch(bytes(again)).validate_crc()
        assert [r.value for r in DefaultRecordBatch(bytes(again))] == [b"%d" % round_ * 20_000]


@pytest.mark.parametrize("codec_name", [name for name in CODECS if name != "none"])
def test_compressed_batches_copy_large_values(codec_name):
    builder = RecordBatchBuilder(codec=CODECS[codec_name])
    builder.append(1, None, b"z" * 50_000, None)
    batch = builder.finish()
    assert [type(p) for p in batch.pieces] == [bytes] and [r.value for r in DefaultRecordBatch(bytes(batch))] == [
        b"z" * 50_000]


def test_a_chunked_batch_is_written_as_pieces_and_restamped_whole():
    big = [bytes([i]) * 10_000 for i in range(3)]
    builder = RecordBatchBuilder()
    for i, value in enumerate(big):
        builder.append(i, None, value, [("n", b"%d" % i)])
    batch = builder.finish(producer_id=5, producer_epoch=0, base_sequence=0)
    buf = WriteBuffer()
    buf.write("compact_nullable_bytes", batch)
    chunks = buf.as_chunks()
    assert [c for c in chunks if len(c) == 10_000] == big and all(any(c is v for v in big) for c in chunks[1::2])
    compact_length = WriteBuffer().write("uvarint", len(batch) + 1).to_bytes()
    assert buf.to_bytes() == compact_length + bytes(batch)
    restamped = bytes(batch.restamped(5, 1, 0))
    assert header_of(restamped)["producer_epoch"] == 1 and DefaultRecordBatch(restamped).validate_crc()
    assert [r.value for r in DefaultRecordBatch(restamped)] == big


# (codec, max_batch_size, value size): what finish() makes of each.
BATCH_SHAPES = {
    "handed-over": (0, 16384, 100),  # uncompressed, small: the builder's buffer as one bytes
    "lent": (0, 1 << 20, 2_000),  # uncompressed, large: a view of the builder's buffer
    "chunked": (0, 1 << 20, 10_000),  # uncompressed with large bytes values referenced
    "compressed": (CODECS["zstd"], 1 << 20, 10_000),
}


def shaped_builder(shape: str) -> RecordBatchBuilder:
    codec, max_batch_size, value_size = BATCH_SHAPES[shape]
    builder = RecordBatchBuilder(codec=codec, max_batch_size=max_batch_size)
    for i in range(60):
        if builder.append(1_000 + i * 7, b"k%d" % i, bytes([i]) * value_size, [("h", b"%d" % i)] if i % 2 else None) < 0:
            break
    return builder


@pytest.mark.parametrize("shape", list(BATCH_SHAPES))
def test_restamping_in_c_equals_a_batch_built_with_those_ids(shape):
    stamp = {"base_offset": 0, "partition_leader_epoch": -1, "transactional": True}
    fresh = shaped_builder(shape).build(producer_id=4242, producer_epoch=7, base_sequence=1234, **stamp)
    batch = shaped_builder(shape).finish(producer_id=4242, producer_epoch=3, base_sequence=99, **stamp)
    restamped = batch.restamped(4242, 7, 1234)
    assert type(restamped) is EncodedBatch and bytes(restamped) == fresh and len(restamped) == len(fresh)
    assert [type(p) for p in restamped.pieces][1::2] == [type(p) for p in batch.pieces][1::2]  # values still referenced
    assert header_of(bytes(batch))["producer_epoch"] == 3  # the original is left as it was
    assert header_of(fresh)["crc"] == independent_crc(fresh) and DefaultRecordBatch(fresh).validate_crc()
    fetched = read_records("t", 0, bytes(restamped), 0)  # CRCs checked
    assert len(fetched.messages) == len(list(DefaultRecordBatch(fresh)))
    assert bytes(restamped.restamped(4242, 8, 0)) == shaped_builder(shape).build(
        producer_id=4242, producer_epoch=8, base_sequence=0, **stamp)


@pytest.mark.parametrize("shape", list(BATCH_SHAPES))
def test_the_pieces_of_an_encoded_batch_join_to_its_bytes_and_length(shape):
    expected = shaped_builder(shape).build(producer_id=1, producer_epoch=0, base_sequence=0)
    batch = shaped_builder(shape).finish(producer_id=1, producer_epoch=0, base_sequence=0)
    pieces = batch.pieces
    assert b"".join(pieces) == bytes(batch) == expected
    assert sum(len(p) for p in pieces) == len(batch) == len(expected)
    assert all(type(p) is bytes or (type(p) is memoryview and p.readonly) for p in pieces)
    assert (len(pieces) > 1) == (shape == "chunked")
    # As a request field the connection writes the same bytes, behind their length.
    buf = WriteBuffer()
    buf.write("int32", len(batch)).write("bytes", batch)
    assert buf.to_bytes() == len(batch).to_bytes(4, "big") * 2 + expected


def test_an_encoded_batch_wraps_the_bytes_of_a_batch():
    data = RecordBatchBuilder().build(producer_id=2, producer_epoch=0, base_sequence=5)
    batch = EncodedBatch(data)
    assert bytes(batch) is data and batch.pieces == (data,) and len(batch) == len(data)
    again = batch.restamped(2, 1, 0)
    assert header_of(bytes(again))["producer_epoch"] == 1 and DefaultRecordBatch(bytes(again)).validate_crc()
    for not_a_batch in (data[:BATCH_HEADER_SIZE - 1], data[:16] + b"\x01" + data[17:]):
        with pytest.raises(ValueError, match="not a RecordBatch v2"):
            EncodedBatch(not_a_batch)


def test_finish_of_an_empty_builder_and_of_an_oversized_first_record():
    builder = RecordBatchBuilder(max_batch_size=100)
    assert header_of(bytes(builder.finish()))["record_count"] == 0
    builder.append(1, None, b"x" * 3_000, None)  # past max_batch_size: the buffer grew to take it
    assert [r.value for r in DefaultRecordBatch(bytes(builder.finish()))] == [b"x" * 3_000]


def test_transactional_and_control_bits():
    builder = RecordBatchBuilder()
    # A transaction marker: key = version 0, type 1 (commit); value = version 0, coordinator epoch 5.
    builder.append(1, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5), None)
    batch = builder.build(producer_id=4, producer_epoch=0, transactional=True, is_control=True)
    assert header_of(batch)["attributes"] == 0x10 | 0x20
    parsed = DefaultRecordBatch(batch)
    assert parsed.is_transactional and parsed.is_control_batch and parsed.validate_crc()
    gzip_txn = RecordBatchBuilder(codec=1)
    gzip_txn.append(1, None, b"v", None)
    assert header_of(gzip_txn.build(transactional=True))["attributes"] == 0x10 | 1


def test_max_batch_size_and_o1_estimate():
    builder = RecordBatchBuilder(max_batch_size=300)
    assert builder.estimated_size == 61 and builder.record_count == 0
    sizes = []
    while (delta := builder.append(5, b"k", b"v" * 50, None)) != -1:
        assert delta == builder.record_count - 1
        sizes.append(builder.estimated_size)
    assert builder.record_count == len(sizes) > 1
    assert sizes[-1] <= 300
    assert sizes[-1] + (sizes[1] - sizes[0]) > 300  # the refused record really did not fit
    batch = builder.build()
    assert len(batch) == builder.estimated_size  # exact for uncompressed batches
    assert len(list(DefaultRecordBatch(batch))) == builder.record_count


def test_first_record_always_fits_even_above_the_limit():
    builder = RecordBatchBuilder(max_batch_size=100)
    assert builder.append(1, None, b"x" * 10_000, None) == 0
    assert builder.append(1, None, b"x", None) == -1
    assert [r.value for r in DefaultRecordBatch(builder.build())] == [b"x" * 10_000]


def test_empty_batch_and_reset():
    builder = RecordBatchBuilder()
    header = header_of(builder.build())
    assert header["record_count"] == 0 and header["last_offset_delta"] == -1
    assert header["base_timestamp"] == -1 == header["max_timestamp"]
    builder.append(10, b"a", b"b", None)
    builder.reset()
    assert builder.record_count == 0 and builder.estimated_size == 61
    builder.append(20, b"c", b"d", None)
    assert [(r.offset, r.timestamp, r.key) for r in DefaultRecordBatch(builder.build())] == [(0, 20, b"c")]


def test_none_timestamp_means_now_and_buffers_are_accepted():
    builder = RecordBatchBuilder()
    before = int(time.time() * 1000)
    builder.append(None, bytearray(b"ba"), memoryview(b"xmvx")[1:3], [("h", bytearray(b"hv"))])
    after = int(time.time() * 1000)
    (record,) = DefaultRecordBatch(builder.build())
    assert before <= record.timestamp <= after
    assert (record.key, record.value, record.headers) == (b"ba", b"mv", [("h", b"hv")])


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="'codec' must be 0..4"):
        RecordBatchBuilder(codec=5)
    with pytest.raises(ValueError, match="'max_batch_size' must be at least 61"):
        RecordBatchBuilder(max_batch_size=10)
    builder = RecordBatchBuilder()
    with pytest.raises(TypeError, match="'timestamp_ms' must be an int or None"):
        builder.append(1.5, None, b"v", None)
    with pytest.raises(TypeError, match="'key' must be bytes-like, str or None, got int"):
        builder.append(1, 5, b"v", None)
    with pytest.raises(TypeError, match="'value' must be bytes-like, str or None, got dict"):
        builder.append(1, None, {}, None)
    with pytest.raises(TypeError, match="header key must be str"):
        builder.append(1, None, b"v", [(b"bytes-key", b"v")])
    with pytest.raises(TypeError, match=r"each header must be a \(str, bytes \| None\) pair"):
        builder.append(1, None, b"v", [("only-key",)])
    with pytest.raises(TypeError, match="header value must be bytes-like"):
        builder.append(1, None, b"v", [("k", 3)])
    assert builder.record_count == 0  # rejected records leave no trace
    assert builder.append(1, None, b"v", (("k", b"v"),)) == 0
    assert builder.append(1, None, b"v", {"a": b"1", "b": None}) == 1
    assert builder.append(1, None, b"v", (h for h in [("g", b"en")])) == 2
    assert [r.headers for r in DefaultRecordBatch(builder.build())] == [
        [("k", b"v")],
        [("a", b"1"), ("b", None)],
        [("g", b"en")],
    ]


# --- interop through the real broker ---

PRODUCE_API_KEY = 0
# The newest non-flexible Produce version (request header v1): zstd needs v7 or later.
PRODUCE_VERSION = 7


def produce_raw(bootstrap: str, topic: str, batch: bytes) -> tuple[int, int]:
    """Sends one Produce v7 request carrying ``batch`` over a plain socket, framed
    with kafkaev's WriteBuffer and parsed with its ReadBuffer. Returns (error_code, base_offset)."""
    import socket

    from kafkaev.protocol.codec import ReadBuffer, WriteBuffer

    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    request = WriteBuffer()
    request.begin_frame()
    request.write("int16", PRODUCE_API_KEY).write("int16", PRODUCE_VERSION).write("int32", 1)
    request.write("nullable_string", "kafkaev-test")
    request.write("nullable_string", None)  # transactional_id
    request.write("int16", -1).write("int32", 30_000)  # acks=all, timeout_ms
    request.write("array_length", 1).write("string", topic)
    request.write("array_length", 1).write("int32", 0).write("nullable_bytes", batch)
    request.finish_frame()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request.to_bytes())
        size = int.from_bytes(_recv_exact(sock, 4), "big")
        response = ReadBuffer(_recv_exact(sock, size), api="Produce v7 response")
    assert response.read("int32", "correlation_id") == 1
    assert response.read("array_length", "responses") == 1
    assert response.read("string", "name") == topic
    assert response.read("array_length", "partitions") == 1
    assert response.read("int32", "index") == 0
    error_code = response.read("int16", "error_code")
    base_offset = response.read("int64", "base_offset")
    return error_code, base_offset


def _recv_exact(sock, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "broker closed the connection"
        data += chunk
    return bytes(data)


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_broker_accepts_batches_and_confluent_kafka_reads_them(kafka, make_topic, codec_name):
    """The broker re-validates the CRC and decompresses on append; librdkafka then reads
    back every field kafkaev wrote."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    topic = make_topic(partitions=1)
    records = [
        (1_700_000_000_000 + i, f"key-{i}".encode(), (f"value-{i}-" * 10).encode(), [("n", str(i).encode())])
        for i in range(200)
    ]
    records.append((1_700_000_001_000, None, None, [("dup", b"1"), ("dup", None)]))
    builder = RecordBatchBuilder(codec=CODECS[codec_name])
    for ts, key, value, headers in records:
        builder.append(ts, key, value, headers)
    error_code, base_offset = produce_raw(kafka.bootstrap, topic, builder.build())
    assert (error_code, base_offset) == (0, 0)

    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": f"check-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        got = []
        deadline = time.monotonic() + 60
        while len(got) < len(records) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.offset(), msg.timestamp()[1], msg.key(), msg.value(), msg.headers()))
    finally:
        consumer.close()
    expected = [(i, ts, key, value, headers or None) for i, (ts, key, value, headers) in enumerate(records)]
    assert got == expected


@pytest.mark.parametrize("cls", [RecordBatchBuilder, EncodedBatch, Message])
def test_one_per_batch_or_record_objects_stay_out_of_the_collector(cls):
    """These hold only bytes (and lists of bytes): the collector need not track them, and one is
    made per batch or per record. ``@cython.no_gc`` takes effect only where the class is defined;
    in codec.pxd it was silently ignored, and every EncodedBatch was tracked."""
    assert not cls.__flags__ & Py_TPFLAGS_HAVE_GC, f"{cls.__name__} is a collector-tracked type"
    builder = RecordBatchBuilder(0, 16384)
    builder.append(0, None, b"v", None)
    assert not gc.is_tracked(builder.finish()) and not gc.is_tracked(builder)
