"""Fuzzing the record-set decoders: truncations, flipped bytes, huge lengths, negative
counts, bad varints and corrupt compressed payloads must only ever raise ProtocolError
(or decode), never crash, hang or allocate beyond what the input justifies.

KAFKAEV_FUZZ_EXAMPLES (default 150) sets the hypothesis examples per property; e.g.
KAFKAEV_FUZZ_EXAMPLES=20000 pytest tests/test_records_fuzz.py for a long run."""

from __future__ import annotations

import ctypes
import mmap
import os
import struct
import tracemalloc

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaev.errors import ProtocolError
from kafkaev.protocol.codec import compress, decode_record_batches, decompress, read_records

EXAMPLES = int(os.environ.get("KAFKAEV_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMIT = 1 << 20  # max_uncompressed_size while fuzzing: keeps every case fast
PROT_NONE = 0  # mprotect: no access
TS = 1_700_000_000_000


def v2_batch(codec: int, base_offset: int, count: int, producer_id: int = -1) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=producer_id >= 0, producer_id=producer_id,
        producer_epoch=0, base_sequence=0, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=TS + i, key=b"k%d" % i if i % 2 else None, value=b"value-%d" % i,
                       headers=[("h", b"x"), ("n", None)] if i % 3 == 0 else [])
    return struct.pack(">q", base_offset) + bytes(builder.build())[8:]


def legacy_set(magic: int, codec: int, count: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i in range(count):
        builder.append(i, timestamp=TS + i if magic else None, key=None, value=b"legacy-%d" % i)
    return bytes(builder.build())


CORPUS = {
    "v2-multi": v2_batch(0, 0, 3) + v2_batch(0, 3, 4, producer_id=7) + v2_batch(0, 7, 1),
    **{f"v2-codec{c}": v2_batch(c, 0, 6) for c in (1, 2, 3, 4)},
    "legacy-v0": legacy_set(0, 0, 3),
    "legacy-v1-gzip": legacy_set(1, 1, 4),
    "legacy-v1-snappy": legacy_set(1, 2, 4),
    "legacy-v1-lz4": legacy_set(1, 3, 4),
}


class GuardedRegion:
    """Bytes placed right before an inaccessible page: a decoder reading one byte past
    the end of its input crashes the test instead of reading neighbouring memory."""

    SIZE = 1 << 16

    def __init__(self) -> None:
        page = mmap.PAGESIZE
        self._map = mmap.mmap(-1, self.SIZE + page)
        self._anchor = (ctypes.c_char * (self.SIZE + page)).from_buffer(self._map)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        if libc.mprotect(ctypes.addressof(self._anchor) + self.SIZE, page, PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect")

    def place(self, data: bytes) -> memoryview:
        assert len(data) <= self.SIZE
        start = self.SIZE - len(data)
        self._map[start:self.SIZE] = data
        return memoryview(self._map)[start:self.SIZE]


GUARD = GuardedRegion()


def decode_everything(data: bytes | bytearray) -> None:
    """Run every decoder path over `data` (placed against a guard page); only
    ProtocolError may come out."""
    data = GUARD.place(bytes(data))
    for committed in (False, True):
        try:
            read_records("fuzz", 0, data, 2, check_crcs=False, read_committed=committed,
                         aborted_transactions=[(7, 0)], max_uncompressed_size=LIMIT)
        except ProtocolError:
            pass
    try:
        decode_record_batches(data, check_crcs=False, allow_truncated=True, max_uncompressed_size=LIMIT)
    except ProtocolError:
        pass
    try:
        read_records("fuzz", 0, data, 0, max_uncompressed_size=LIMIT)  # CRCs on
    except ProtocolError:
        pass


# --- deterministic ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", CORPUS)
def test_truncation_at_every_offset_is_never_an_error(name: str) -> None:
    data = CORPUS[name]
    full = read_records("fuzz", 0, data, 0)
    for cut in range(len(data)):
        fetched = read_records("fuzz", 0, GUARD.place(data[:cut]), 0)
        assert fetched.bytes_read <= cut
        assert fetched.truncated == (fetched.bytes_read != cut)
        assert [m.offset for m in fetched.messages] == [m.offset for m in full.messages][:len(fetched.messages)]


@pytest.mark.parametrize("name", CORPUS)
def test_every_single_byte_flip(name: str) -> None:
    data = CORPUS[name]
    for pos in range(len(data)):
        for mask in (0x01, 0x80, 0xFF):
            mutated = bytearray(data)
            mutated[pos] ^= mask
            decode_everything(mutated)


def test_v2_entry_shorter_than_its_header_at_the_end_of_the_buffer() -> None:
    batch = v2_batch(0, 0, 1)
    for length in range(14, 49):
        entry = batch[:8] + struct.pack(">i", length) + batch[12:12 + length]
        with pytest.raises(ProtocolError, match="shorter than the v2 header"):
            read_records("fuzz", 0, GUARD.place(entry), 0, check_crcs=False)
        with pytest.raises(ProtocolError, match="shorter than the v2 header"):
            decode_record_batches(GUARD.place(entry), check_crcs=False)


def test_huge_and_negative_header_fields() -> None:
    base = CORPUS["v2-multi"][:len(v2_batch(0, 0, 3))]
    cases = []
    for field_offset, fmt in ((8, ">i"), (23, ">i"), (57, ">i")):  # batch length, last offset delta, count
        for value in (-1, -(2**31), 2**31 - 1, 0):
            mutated = bytearray(base)
            struct.pack_into(fmt, mutated, field_offset, value)
            cases.append(bytes(mutated))
    for data in cases:
        decode_everything(data)
    huge_count = bytearray(base)
    struct.pack_into(">i", huge_count, 57, 2**31 - 1)
    with pytest.raises(ProtocolError):
        read_records("fuzz", 0, bytes(huge_count), 0, check_crcs=False)
    negative_count = bytearray(base)
    struct.pack_into(">i", negative_count, 57, -5)
    with pytest.raises(ProtocolError, match="negative RecordsCount"):
        read_records("fuzz", 0, bytes(negative_count), 0, check_crcs=False)


def test_bad_varints_in_every_record_field() -> None:
    base = bytearray(v2_batch(0, 0, 1))
    for pos in range(61, len(base)):
        for filler in (b"\xff" * 10, b"\x80" * 6, b"\xfe\xff\xff\xff\x0f"):
            mutated = bytes(base[:pos]) + filler + bytes(base[pos + len(filler):])
            decode_everything(mutated[:len(base)])
            decode_everything(mutated)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_corrupt_compressed_payloads_inside_batches(codec: int) -> None:
    batch = bytearray(v2_batch(codec, 0, 20))
    payload = bytes(batch[61:])
    garbage_payloads = [b"", b"\x00" * 8, b"\xff" * 40, payload[: len(payload) // 2], payload[:-1],
                        payload + b"\x00", payload[:10] + bytes(reversed(payload[10:]))]
    for garbage in garbage_payloads:
        mutated = bytearray(batch[:61]) + garbage
        struct.pack_into(">i", mutated, 8, len(mutated) - 12)
        decode_everything(mutated)
    with pytest.raises(ProtocolError):
        mutated = bytearray(batch[:61]) + b"\xff" * 40
        struct.pack_into(">i", mutated, 8, len(mutated) - 12)
        read_records("fuzz", 0, bytes(mutated), 0, check_crcs=False)


def test_records_that_decompress_beyond_the_limit_are_refused() -> None:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=4, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 26)
    builder.append(0, timestamp=TS, key=None, value=b"\x00" * (4 << 20), headers=[])
    batch = bytes(builder.build())
    assert len(batch) < 64 << 10
    with pytest.raises(ProtocolError, match="more than 1048576 bytes"):
        read_records("fuzz", 0, batch, 0, max_uncompressed_size=1 << 20)
    assert len(read_records("fuzz", 0, batch, 0).messages[0].value) == 4 << 20


def test_a_small_frame_claiming_gigabytes_allocates_almost_nothing() -> None:
    small = bytearray(v2_batch(0, 0, 1))
    assert len(small) < 120
    claims = []
    for offset, value in ((8, 2**31 - 1), (57, 2**31 - 1)):   # batch length, records count
        mutated = bytearray(small)
        struct.pack_into(">i", mutated, offset, value)
        claims.append(bytes(mutated))
    # First record: length varint claiming 2**30, then a key length claiming 2**30.
    claims.append(bytes(small[:61]) + b"\x80\x80\x80\x80\x08" + bytes(small[66:]))
    claims.append(bytes(small[:65]) + b"\x80\x80\x80\x80\x08" + bytes(small[70:]))
    # Headers count claiming 2**30.
    claims.append(bytes(small[:-14]) + b"\x80\x80\x80\x80\x08" + bytes(small[-9:]))
    tracemalloc.start()
    try:
        for data in claims:
            tracemalloc.reset_peak()
            before, _ = tracemalloc.get_traced_memory()
            decode_everything(data)
            _, peak = tracemalloc.get_traced_memory()
            assert peak - before < 64 * 1024, (data.hex(), peak - before)
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompress_fuzzed_payloads_only_raise_protocol_error(codec: int) -> None:
    good = compress(codec, b"some compressible payload " * 200)
    for pos in range(0, len(good)):
        mutated = bytearray(good)
        mutated[pos] ^= 0xA5
        try:
            decompress(codec, bytes(mutated), LIMIT)
        except ProtocolError:
            pass


# --- hypothesis --------------------------------------------------------------------------------

@FUZZ
@given(st.binary(max_size=600))
def test_random_bytes(data: bytes) -> None:
    decode_everything(data)


@FUZZ
@given(st.sampled_from(sorted(CORPUS)), st.data())
def test_mutated_corpus(name: str, draw: st.DataObject) -> None:
    data = bytearray(CORPUS[name])
    for _ in range(draw.draw(st.integers(1, 6))):
        action = draw.draw(st.sampled_from(["flip", "set", "insert", "delete", "cut"]))
        pos = draw.draw(st.integers(0, max(0, len(data) - 1)))
        if action == "flip" and data:
            data[pos] ^= draw.draw(st.integers(1, 255))
        elif action == "set" and data:
            value = draw.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
            data[pos:pos + 4] = bytes([value]) * 4
        elif action == "insert":
            data[pos:pos] = draw.draw(st.binary(min_size=1, max_size=8))
        elif action == "delete":
            del data[pos:pos + draw.draw(st.integers(1, 8))]
        else:
            del data[pos:]
    decode_everything(data)


@FUZZ
@given(st.integers(0, 4), st.binary(max_size=300))
def test_random_compressed_payloads(codec: int, payload: bytes) -> None:
    try:
        decompress(codec, payload, LIMIT)
    except ProtocolError:
        pass
