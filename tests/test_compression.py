"""Compression codecs: round trips, the exact wire framing the Java client reads and writes
(xerial snappy, KIP-57 lz4 frames, multi-frame zstd, multi-member gzip), decompression-bomb
limits, and corrupt payloads surfacing as ProtocolError naming the codec."""

import gzip
import os
import struct
import subprocess
import sys
import zlib

import lz4.frame
import pytest
import snappy
import zstandard
from aiokafka import codec as aiokafka_codec

from kafkaev.errors import PROTOCOL, ProtocolError
from kafkaev.protocol.codec import compress, decompress, xxh32

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
CODECS = {"gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
MiB = 1024 * 1024


def sample(size: int) -> bytes:
    """Compressible but not trivial: random words repeated."""
    words = [os.urandom(8).hex().encode() for _ in range(64)]
    out = bytearray()
    i = 0
    while len(out) < size:
        out += words[(i * 7919) % 64] + b" "
        i += 1
    return bytes(out[:size])


@pytest.mark.parametrize("name", CODECS)
@pytest.mark.parametrize("size", [1, 100, 32 * 1024, 32 * 1024 + 1, 300_000])
def test_round_trip(name: str, size: int) -> None:
    data = sample(size)
    packed = compress(CODECS[name], data)
    assert decompress(CODECS[name], packed) == data
    assert decompress(CODECS[name], memoryview(packed)) == data


@pytest.mark.parametrize("name,level", [("gzip", 1), ("gzip", 9), ("lz4", 9), ("zstd", 1), ("zstd", 19)])
def test_levels_round_trip(name: str, level: int) -> None:
    data = sample(50_000)
    assert decompress(CODECS[name], compress(CODECS[name], data, level)) == data


def test_unknown_codec_is_refused_naming_the_argument() -> None:
    with pytest.raises(ValueError, match="codec"):
        compress(7, b"x")
    with pytest.raises(ValueError, match="max_size"):
        decompress(GZIP, b"x", -1)


# --- gzip ----------------------------------------------------------------------------------

def test_gzip_writes_a_gzip_member_the_stdlib_reads() -> None:
    data = sample(10_000)
    packed = compress(GZIP, data)
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == data


def test_gzip_reads_concatenated_members() -> None:
    assert decompress(GZIP, gzip.compress(b"first ") + gzip.compress(b"second")) == b"first second"


# --- snappy --------------------------------------------------------------------------------

def test_snappy_writes_xerial_framing_in_32k_blocks() -> None:
    data = sample(70_000)
    packed = compress(SNAPPY, data)
    assert packed[:16] == XERIAL_HEADER
    pos, blocks = 16, []
    while pos < len(packed):
        (length,) = struct.unpack_from(">i", packed, pos)
        blocks.append(snappy.uncompress(packed[pos + 4:pos + 4 + length]))
        pos += 4 + length
    assert pos == len(packed)
    assert [len(b) for b in blocks] == [32768, 32768, 70_000 - 65536]
    assert b"".join(blocks) == data


def test_snappy_interop_with_aiokafka_codec() -> None:
    data = sample(100_000)
    assert aiokafka_codec.snappy_decode(compress(SNAPPY, data)) == data
    assert decompress(SNAPPY, aiokafka_codec.snappy_encode(data, xerial_compatible=True)) == data


def test_snappy_reads_raw_blocks_as_librdkafka_may_write_them() -> None:
    data = sample(5000)
    assert decompress(SNAPPY, snappy.compress(data)) == data


def test_snappy_refuses_a_declared_length_the_block_cannot_hold() -> None:
    # Preamble claims 100 MB from a 10-byte block: refused before allocating.
    lying = bytes([0x80, 0xAD, 0xE2, 0x2F]) + b"\x00" * 6
    with pytest.raises(ProtocolError, match="snappy"):
        decompress(SNAPPY, lying)


def test_snappy_xerial_block_running_past_the_end() -> None:
    packed = compress(SNAPPY, sample(1000))
    with pytest.raises(ProtocolError, match="snappy.*past the end"):
        decompress(SNAPPY, packed[:-5])


# --- lz4 -----------------------------------------------------------------------------------

def test_lz4_frame_flags_are_what_kafkas_reader_accepts() -> None:
    data = sample(200_000)
    packed = compress(LZ4, data)
    assert packed[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg, bd = packed[4], packed[5]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # independent blocks (Kafka's reader refuses linked blocks)
    assert not flg & 0x08  # no content size
    assert not flg & 0x04  # no content checksum
    assert (bd >> 4) & 0x07 == 4  # 64 KiB maximum block size
    assert lz4.frame.decompress(packed) == data


def test_lz4_reads_frames_written_by_other_libraries() -> None:
    data = sample(150_000)
    for linked in (False, True):
        for checksum in (False, True):
            packed = lz4.frame.compress(data, block_linked=linked, content_checksum=checksum, store_size=True)
            assert decompress(LZ4, packed) == data
    assert decompress(LZ4, aiokafka_codec.lz4_encode(data)) == data


def test_lz4_reads_back_to_back_frames() -> None:
    assert decompress(LZ4, lz4.frame.compress(b"one ") + lz4.frame.compress(b"two")) == b"one two"


def test_xxh32_matches_the_lz4_frame_header_checksum() -> None:
    # lz4's own encoder is the oracle: HC = (xxh32(descriptor) >> 8) & 0xFF.
    for kwargs in ({}, {"store_size": True}, {"content_checksum": True}, {"block_size": lz4.frame.BLOCKSIZE_MAX4MB}):
        frame = lz4.frame.compress(b"payload", **kwargs)
        hc_pos = 6 + (8 if frame[4] & 0x08 else 0)
        assert frame[hc_pos] == (xxh32(frame[4:hc_pos]) >> 8) & 0xFF
    assert xxh32(b"") == 0x02CC5D05  # the xxHash reference value
    long_input = sample(1000)
    assert xxh32(long_input) != xxh32(long_input[:-1])


# --- zstd ----------------------------------------------------------------------------------

def test_zstd_reads_frames_without_content_size_and_several_frames() -> None:
    data = sample(300_000)
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.frame_content_size(no_size) == -1
    assert decompress(ZSTD, no_size) == data
    with_checksum = zstandard.ZstdCompressor(write_checksum=True).compress(b"tail")
    assert decompress(ZSTD, no_size + with_checksum) == data + b"tail"


def test_zstd_reads_a_streamed_frame_like_javas_zstd_output_stream() -> None:
    data = sample(400_000)
    cobj = zstandard.ZstdCompressor().compressobj()
    streamed = b"".join(cobj.compress(data[i:i + 10_000]) for i in range(0, len(data), 10_000)) + cobj.flush()
    assert decompress(ZSTD, streamed) == data


def test_zstd_skippable_frames_are_skipped() -> None:
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"abc"
    assert decompress(ZSTD, skippable + compress(ZSTD, b"data")) == b"data"


def test_zstd_truncated_frame_is_an_error_not_short_data() -> None:
    packed = zstandard.ZstdCompressor(write_content_size=False).compress(sample(50_000))
    for cut in (1, 3, 10, len(packed) // 2, len(packed) - 1):
        with pytest.raises(ProtocolError, match="zstd"):
            decompress(ZSTD, packed[:cut])


# --- limits and corruption -----------------------------------------------------------------

@pytest.mark.parametrize("name", CODECS)
def test_decompression_bomb_is_refused_at_the_limit(name: str) -> None:
    zeros = b"\x00" * (16 * MiB)
    if name == "snappy":
        bomb = aiokafka_codec.snappy_encode(zeros)  # xerial blocks of 32 KiB
    else:
        bomb = compress(CODECS[name], zeros)
    assert len(bomb) < MiB
    with pytest.raises(ProtocolError, match=f"{name}.*more than {MiB} bytes"):
        decompress(CODECS[name], bomb, MiB)
    assert len(decompress(CODECS[name], bomb, 16 * MiB)) == 16 * MiB  # exactly at the limit is fine


def test_zstd_bomb_with_lying_content_size_does_not_allocate_it() -> None:
    import tracemalloc

    bomb = zstandard.ZstdCompressor(write_content_size=False).compress(b"\x00" * (64 * MiB))
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            decompress(ZSTD, bomb, MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB


@pytest.mark.parametrize("name", CODECS)
def test_corrupt_payloads_raise_protocol_error_naming_the_codec(name: str) -> None:
    codec = CODECS[name]
    original = sample(20_000)
    good = compress(codec, original)
    # (b"\x00" alone is a valid raw snappy block: the empty string.)
    for bad in (b"", b"\x00" if codec != SNAPPY else b"\x05", b"\xff" * 64, good[: len(good) // 2], good[:-1]):
        with pytest.raises(ProtocolError, match=name) as info:
            decompress(codec, bad)
        assert info.value.code == PROTOCOL
    # Flipped bytes: codecs without a checksum may decode to something else, but the only
    # exception that may come out is ProtocolError.
    flipped = bytearray(good)
    for i in range(len(flipped) // 3, len(flipped), 97):
        flipped[i] ^= 0x5A
    try:
        out = decompress(codec, bytes(flipped))
    except ProtocolError as exc:
        assert name in str(exc)
    else:
        assert out != original


def test_zlib_stream_is_also_accepted_for_gzip() -> None:
    # Some old producers wrote zlib-wrapped deflate under the gzip codec.
    assert decompress(GZIP, zlib.compress(b"zlib data")) == b"zlib data"


CODEC_LIBRARIES = {"gzip": "isal", "snappy": "snappy", "lz4": "lz4", "zstd": "zstandard"}


@pytest.mark.parametrize("name", list(CODEC_LIBRARIES))
def test_a_codec_library_is_imported_at_its_first_batch_only(name: str) -> None:
    # A client that never meets a codec does not carry its library (~3 MiB resident for the four).
    script = (
        "import sys\n"
        "import kafkaev.client\n"
        "from kafkaev.protocol.codec import compress, decompress\n"
        f"libraries = {sorted(CODEC_LIBRARIES.values())!r}\n"
        "assert not [m for m in libraries if m in sys.modules], [m for m in libraries if m in sys.modules]\n"
        f"data = compress({CODECS[name]}, b'records ' * 100)\n"
        f"assert decompress({CODECS[name]}, data) == b'records ' * 100\n"
        f"assert {CODEC_LIBRARIES[name]!r} in sys.modules\n"
        f"print([m for m in libraries if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == repr([CODEC_LIBRARIES[name]])
