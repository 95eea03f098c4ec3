"""WriteBuffer/ReadBuffer: every primitive round-trips, edge values encode as
the protocol says (checked against aiokafka's independent varint codec), and
every malformed input fails with a ProtocolError naming the api and field."""

import os
import struct
import uuid

import pytest
from aiokafka.record.util import encode_varint as aiokafka_encode_varint
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaev.errors import PROTOCOL, ProtocolError
from kafkaev.protocol.codec import ReadBuffer, WriteBuffer

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
# KAFKAEV_FUZZ_EXAMPLES=100000 turns the random-frame test into a long fuzz run.
FUZZ_EXAMPLES = int(os.environ.get("KAFKAEV_FUZZ_EXAMPLES", "300"))


def encode(kind, value):
    return WriteBuffer().write(kind, value).to_bytes()


def decode_all(kind, data):
    reader = ReadBuffer(data, api="Test v0 response")
    value = reader.read(kind, field="f")
    assert reader.remaining_bytes == 0, "the reader must consume exactly the encoded bytes"
    return value


@pytest.mark.parametrize(
    "kind, value, fmt",
    [
        ("int8", -128, ">b"),
        ("int8", 127, ">b"),
        ("int16", -32768, ">h"),
        ("int16", 32767, ">h"),
        ("int32", -(2**31), ">i"),
        ("int32", 2**31 - 1, ">i"),
        ("int64", -(2**63), ">q"),
        ("int64", 2**63 - 1, ">q"),
        ("uint32", 0xFFFFFFFF, ">I"),
        ("uint32", 0, ">I"),
        ("float64", -1.5, ">d"),
        ("float64", 1e300, ">d"),
    ],
)
def test_fixed_width_is_big_endian(kind, value, fmt):
    data = encode(kind, value)
    assert data == struct.pack(fmt, value)
    assert decode_all(kind, data) == value


def test_bool():
    assert encode("bool", True) == b"\x01"
    assert encode("bool", False) == b"\x00"
    assert decode_all("bool", b"\x02") is True


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_varint_edges(value, expected):
    assert encode("varint", value) == expected
    assert decode_all("varint", expected) == value


@given(INT32)
def test_varint_matches_aiokafka(value):
    out = bytearray()
    aiokafka_encode_varint(value, out.append)
    assert encode("varint", value) == bytes(out)
    assert decode_all("varint", bytes(out)) == value


@given(INT64)
def test_varlong_round_trip_and_matches_aiokafka(value):
    out = bytearray()
    aiokafka_encode_varint(value, out.append)
    assert encode("varlong", value) == bytes(out)
    assert decode_all("varlong", bytes(out)) == value


@pytest.mark.parametrize("value, size", [(0, 1), (127, 1), (128, 2), (16383, 2), (16384, 3), (2**64 - 1, 10)])
def test_uvarint_sizes(value, size):
    data = encode("uvarint", value)
    assert len(data) == size
    assert decode_all("uvarint", data) == value


def test_varint_too_long_is_refused():
    with pytest.raises(ProtocolError, match="varint longer than 5 bytes"):
        decode_all("varint", b"\x80\x80\x80\x80\x80\x01")
    with pytest.raises(ProtocolError, match="varint longer than 10 bytes"):
        decode_all("varlong", b"\x80" * 10 + b"\x01")
    with pytest.raises(ProtocolError, match="runs past the end"):
        decode_all("uvarint", b"\x80\x80")


@pytest.mark.parametrize(
    "kind, value, expected",
    [
        ("string", "", b"\x00\x00"),
        ("string", "ab", b"\x00\x02ab"),
        ("nullable_string", None, b"\xff\xff"),
        ("nullable_string", "é", b"\x00\x02\xc3\xa9"),
        ("bytes", b"", b"\x00\x00\x00\x00"),
        ("bytes", b"xy", b"\x00\x00\x00\x02xy"),
        ("nullable_bytes", None, b"\xff\xff\xff\xff"),
        ("compact_string", "", b"\x01"),
        ("compact_string", "ab", b"\x03ab"),
        ("compact_nullable_string", None, b"\x00"),
        ("compact_nullable_string", "", b"\x01"),
        ("compact_bytes", b"", b"\x01"),
        ("compact_nullable_bytes", None, b"\x00"),
        ("compact_nullable_bytes", b"\x00", b"\x02\x00"),
        ("array_length", -1, b"\xff\xff\xff\xff"),
        ("array_length", 0, b"\x00\x00\x00\x00"),
        ("compact_array_length", -1, b"\x00"),
        ("compact_array_length", 0, b"\x01"),
    ],
)
def test_strings_bytes_arrays_null_vs_empty(kind, value, expected):
    assert encode(kind, value) == expected
    assert decode_all(kind, expected) == value


def test_compact_array_count_needs_the_bytes():
    # An element takes at least a byte: a count of 3 needs 3 bytes left.
    assert ReadBuffer(b"\x04abc").read("compact_array_length") == 3
    with pytest.raises(ProtocolError, match="claims 3 elements but only 2 bytes"):
        ReadBuffer(b"\x04ab", api="X v1 response").read("compact_array_length", field="topics")


@given(st.text(max_size=300))
def test_strings_round_trip(text):
    for kind in ("string", "nullable_string", "compact_string", "compact_nullable_string"):
        assert decode_all(kind, encode(kind, text)) == text


@given(st.binary(max_size=2000))
def test_bytes_round_trip_any_bytes_like(data):
    for kind in ("bytes", "nullable_bytes", "compact_bytes", "compact_nullable_bytes"):
        for wrapped in (data, bytearray(data), memoryview(data)):
            assert decode_all(kind, encode(kind, wrapped)) == data


def test_writers_reject_bad_input_naming_it():
    with pytest.raises(TypeError, match="None is not allowed"):
        encode("string", None)
    with pytest.raises(TypeError, match="expected str, got int"):
        encode("compact_string", 5)
    with pytest.raises(TypeError, match="expected a bytes-like object, got str"):
        encode("bytes", "text")
    with pytest.raises(ValueError, match="exceeds the Int16 length limit"):
        encode("string", "x" * 32768)
    assert len(encode("string", "x" * 32767)) == 32769
    with pytest.raises(ValueError, match="invalid array length"):
        encode("array_length", -2)
    with pytest.raises(OverflowError):
        encode("int8", 128)


def test_uuid():
    u = uuid.uuid4()
    assert encode("uuid", u) == u.bytes
    assert encode("uuid", None) == bytes(16)
    assert encode("uuid", u.bytes) == u.bytes
    assert decode_all("uuid", u.bytes) == u
    with pytest.raises(TypeError, match="write_uuid"):
        encode("uuid", b"short")


def test_a_decoded_uuid_is_built_once_and_every_id_stays_its_own():
    u = uuid.uuid4()
    first, second = decode_all("uuid", u.bytes), decode_all("uuid", u.bytes)
    assert first == u and first is second  # the topic id of every answer: one object
    # far more ids than the cache keeps: each still decodes to itself
    ids = [uuid.UUID(int=i * 7919 + 1) for i in range(10_000)]
    assert [decode_all("uuid", i.bytes) for i in ids] == ids
    assert decode_all("uuid", u.bytes) == u


def test_tagged_fields_read_kept_and_skipped():
    assert encode("tagged_fields", None) == b"\x00"
    assert decode_all("tagged_fields", b"\x00") is None
    # two tagged fields: tag 0 with 2 bytes, tag 300 (uvarint 0xac 0x02) with 1 byte
    frame = b"\x02" + b"\x00\x02hi" + b"\xac\x02\x01z"
    assert decode_all("tagged_fields", frame) == {0: b"hi", 300: b"z"}
    assert decode_all("skip_tagged_fields", frame) is None
    with pytest.raises(ProtocolError, match="runs past the end"):
        decode_all("tagged_fields", b"\x01\x00\x05ab")
    with pytest.raises(ProtocolError, match="claims 100 tagged fields"):
        decode_all("skip_tagged_fields", b"\x64\x00")


def test_short_reads_name_api_and_field():
    reader = ReadBuffer(b"\x00\x00\x0f\xa0" + b"x" * 12, api="Fetch v12 response")
    with pytest.raises(ProtocolError) as info:
        reader.read("records", field="records")
    err = info.value
    assert err.code == PROTOCOL
    assert err.message == (
        "Fetch v12 response: field 'records' runs past the end of the frame (needs 4000 bytes, 12 left)"
    )


@pytest.mark.parametrize(
    "kind, data, problem",
    [
        ("int16", b"\x00", "needs 2 bytes, 1 left"),
        ("int64", b"\x00" * 7, "needs 8 bytes, 7 left"),
        ("string", b"\xff\xff", "is null but the field is not nullable"),
        ("string", b"\xff\xfe", "invalid length -2"),
        ("string", b"\x00\x05abc", "needs 5 bytes, 3 left"),
        ("bytes", b"\xff\xff\xff\xff", "is null but the field is not nullable"),
        ("nullable_bytes", b"\x80\x00\x00\x00", "invalid length -2147483648"),
        ("nullable_bytes", b"\x7f\xff\xff\xff", "needs 2147483647 bytes, 0 left"),
        ("compact_string", b"\x00", "is null but the field is not nullable"),
        ("compact_bytes", b"\xff\xff\xff\xff\x0f", "invalid compact length 4294967295"),
        ("compact_bytes", b"\xff\xff\xff\xff\x07", "needs 2147483646 bytes, 0 left"),
        ("array_length", b"\x7f\xff\xff\xff", "claims 2147483647 elements but only 0 bytes"),
        ("array_length", b"\xff\xff\xff\xfe", "invalid array length -2"),
        ("compact_string", b"\x03\xff\xfe", "is not valid UTF-8"),
        ("uuid", b"\x00" * 15, "needs 16 bytes, 15 left"),
    ],
)
def test_malformed_input_is_a_protocol_error(kind, data, problem):
    with pytest.raises(ProtocolError) as info:
        ReadBuffer(data, api="Metadata v12 response").read(kind, field="name")
    assert info.value.message.startswith("Metadata v12 response: field 'name' ")
    assert problem in info.value.message


def test_error_without_api_or_field_still_explains():
    with pytest.raises(ProtocolError) as info:
        ReadBuffer(b"").read("int32")
    assert info.value.message == "frame: runs past the end of the frame (needs 4 bytes, 0 left)"


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(
    st.binary(max_size=64),
    st.sampled_from(
        [
            "int8",
            "int16",
            "int32",
            "int64",
            "uvarint",
            "varint",
            "varlong",
            "string",
            "nullable_string",
            "bytes",
            "nullable_bytes",
            "array_length",
            "compact_string",
            "compact_nullable_string",
            "compact_bytes",
            "compact_nullable_bytes",
            "compact_array_length",
            "records",
            "compact_records",
            "uuid",
            "tagged_fields",
            "skip_tagged_fields",
        ]
    ),
)
def test_random_bytes_only_ever_raise_protocol_error(data, kind):
    reader = ReadBuffer(data)
    try:
        reader.read(kind)
    except ProtocolError:
        pass
    assert 0 <= reader.position <= len(data)


def test_records_is_a_zero_copy_slice():
    frame = bytearray(b"\x00\x00\x00\x03abcTAIL")
    reader = ReadBuffer(frame)
    records = reader.read("records")
    assert isinstance(records, memoryview) and bytes(records) == b"abc"
    assert reader.read("raw:4") == b"TAIL"
    frame_ro = b"\x04abc"
    assert bytes(ReadBuffer(frame_ro).read("compact_records")) == b"abc"
    assert ReadBuffer(b"\x00").read("compact_records") is None


def test_sub_cursor_is_bounded_and_advances_parent():
    reader = ReadBuffer(b"\x00\x01\x00\x02\x00\x03", api="Produce v9 response")
    child = reader.read("sub:4")
    assert reader.read("int16") == 3
    assert child.read("int16") == 1
    assert child.read("int16") == 2
    with pytest.raises(ProtocolError, match="Produce v9 response: .*needs 2 bytes, 0 left"):
        child.read("int16")
    with pytest.raises(ProtocolError, match="needs 5 bytes"):
        ReadBuffer(b"abcd").read("sub:5")


def test_reader_keeps_its_owner_alive():
    reader = ReadBuffer(bytearray(b"\x00\x00\x00\x07"))
    assert reader.read("int32") == 7  # the temporary bytearray was pinned by the reader
    with pytest.raises(TypeError):
        ReadBuffer("not bytes")


def test_frames_and_growth():
    buf = WriteBuffer()
    buf.begin_frame()
    buf.write("raw", b"z" * 5000)  # grows past the inline storage
    buf.finish_frame()
    buf.begin_frame()
    buf.write("int16", 7)
    buf.finish_frame()
    data = buf.to_bytes()
    assert data[:4] == struct.pack(">i", 5000) and data[4:5004] == b"z" * 5000
    assert data[5004:] == b"\x00\x00\x00\x02\x00\x07"
    assert len(buf) == len(data)
    with pytest.raises(ValueError, match="no frame is open"):
        buf.finish_frame()
    buf.begin_frame()
    with pytest.raises(ValueError, match="already open"):
        buf.begin_frame()


def test_exported_view_blocks_growth_and_reset():
    buf = WriteBuffer().write("raw", b"abc")
    view = memoryview(buf)
    assert bytes(view) == b"abc" and view.readonly
    buf.write("raw", b"d")  # appending within capacity leaves the exported bytes alone
    with pytest.raises(BufferError, match="cannot grow"):
        buf.write("raw", b"x" * 1000)
    with pytest.raises(BufferError, match="cannot reset"):
        buf.clear()
    view.release()
    buf.write("raw", b"x" * 1000)
    buf.clear()
    assert buf.to_bytes() == b""


def test_large_bytes_are_referenced_not_copied():
    batch = bytes(range(256)) * 100  # 25,600 bytes: a record batch, say
    buf = WriteBuffer()
    buf.begin_frame()
    buf.write("int16", 1)
    buf.write("compact_bytes", batch)
    buf.write("int32", 9)
    buf.finish_frame()
    chunks = buf.as_chunks()
    assert len(chunks) == 3 and chunks[1] is batch  # the batch goes out as it is
    data = buf.to_bytes()
    assert data == b"".join(chunks) and len(buf) == len(data)
    body = 2 + 3 + len(batch) + 4  # int16, uvarint(len + 1) of 3 bytes, batch, int32
    assert data[:4] == struct.pack(">i", body) and data[4:6] == b"\x00\x01"
    assert data[9 : 9 + len(batch)] == batch and data[-4:] == struct.pack(">i", 9)
    with pytest.raises(BufferError, match="referenced"):
        memoryview(buf)


def test_large_read_only_views_of_bytes_are_referenced_and_other_buffers_copied():
    batch = bytes(range(256)) * 100
    lent = memoryview(batch)[: len(batch) - 1]  # how a builder lends a large batch
    writable = bytearray(batch)
    for value, referenced in ((lent, True), (memoryview(writable), False), (writable, False),
                              (memoryview(writable).toreadonly(), False)):
        buf = WriteBuffer()
        buf.write("bytes", value)
        chunks = buf.as_chunks()
        assert (len(chunks) == 2 and chunks[1] is value) == referenced
        assert buf.to_bytes()[4:] == bytes(value)
    buf = WriteBuffer()
    buf.write("bytes", lent)
    buf.write("int32", 7)
    assert len(buf) == 4 + len(lent) + 4


def test_small_bytes_are_copied():
    buf = WriteBuffer().write("bytes", b"x" * 100)
    assert len(buf.as_chunks()) == 1 and memoryview(buf).nbytes == 104


def test_rewind_drops_what_came_after_the_mark():
    first, second = b"a" * 20000, b"b" * 30000
    buf = WriteBuffer()
    buf.begin_frame()
    buf.write("bytes", first)
    buf.finish_frame()
    kept = buf.to_bytes()
    mark = buf.position()
    buf.begin_frame()  # a request that fails half-way through encoding
    buf.write("bytes", second)
    buf.rewind_to(mark)
    assert buf.to_bytes() == kept and len(buf) == len(kept)
    buf.begin_frame()  # the rewind closed the abandoned frame
    buf.write("int8", 1)
    buf.finish_frame()
    assert buf.to_bytes() == kept + b"\x00\x00\x00\x01\x01"
    buf.clear()
    assert buf.as_chunks() == [b""] and len(buf) == 0
