# Record-batch compression: the codecs of attributes bits 0-2.
#
# Wire formats, as the Java client writes and reads them:
#   gzip    RFC 1952 member(s) (java.util.zip.GZIPOutputStream); written and read with
#           ISA-L (python-isal), several times faster than zlib at comparable ratios
#   snappy  xerial framing: "\x82SNAPPY\x00" + Int32 version + Int32 compat, then
#           [Int32 big-endian block length, raw snappy block]... (SnappyOutputStream);
#           raw snappy (librdkafka, old clients) is read too, as Java's SnappyInputStream does
#   lz4     KIP-57 LZ4 frame, independent 64 KiB blocks, no content size or checksum
#           (magic 0 message sets carry a broken header checksum: see _fix_legacy_lz4_header)
#   zstd    one or more zstd frames, usually without a content size (ZstdOutputStream)
#
# Every decompressor grows its output chunk by chunk and stops at max_size, so a hostile
# payload can neither allocate more than it produces nor exhaust memory; every failure is
# a ProtocolError naming the codec.

import struct as _struct
import threading

import importlib

from kafkaev.errors import ProtocolError

# Compression level meaning "the codec's own default" (librdkafka's -1).
COMPRESSION_LEVEL_DEFAULT = -1
# Defaults match librdkafka's: fast lz4, zlib's 6, zstd's 3.
cdef int _GZIP_DEFAULT_LEVEL = 6
# gzip levels are zlib's 0-9 (Kafka's compression.gzip.level); ISA-L has 0-3, so each of its
# levels stands for three of zlib's (zlib 6, the default, is ISA-L 2).
cdef int _ZLIB_LEVELS_PER_ISAL_LEVEL = 3
cdef int _ISAL_MAX_LEVEL = 3
cdef int _DEFLATED = 8
cdef int _LZ4_DEFAULT_LEVEL = 0
cdef int _ZSTD_DEFAULT_LEVEL = 3

# zlib window bits: 16 + 15 writes a gzip member; 32 + 15 reads gzip or zlib.
cdef int _GZIP_WRITE_WBITS = 31
cdef int _GZIP_READ_WBITS = 47

cdef bytes _XERIAL_MAGIC = b"\x82SNAPPY\x00"
cdef Py_ssize_t _XERIAL_HEADER_SIZE = 16   # magic (8) + version (4) + compat (4)
cdef Py_ssize_t _XERIAL_BLOCK_SIZE = 32 * 1024   # SnappyOutputStream's default block
cdef bytes _XERIAL_HEADER = _XERIAL_MAGIC + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")
_XERIAL_BLOCK_LENGTH = _struct.Struct(">I")
# A snappy element of n input bytes yields at most ~21 n output bytes (3-byte copy of 64);
# a declared length beyond this bound cannot be honest and is refused before allocating.
cdef Py_ssize_t _SNAPPY_MAX_EXPANSION = 32

# Decompression output grows in chunks of this size (bounds the memory a bomb can claim).
cdef Py_ssize_t _DECOMPRESS_CHUNK = 256 * 1024

_CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

# Default cap on one batch's decompressed records section (a decompression-bomb guard;
# far above anything a broker's max.message.bytes lets a producer write at sane ratios).
DEFAULT_MAX_UNCOMPRESSED_SIZE = 256 * 1024 * 1024

# zstd contexts are reusable but not safe for concurrent use from two threads
# (zstandard releases the GIL), so each thread keeps its own.
_zstd_local = threading.local()

# The codec libraries are imported at their first batch, not with this module: most
# producers and consumers never meet three of the four, and together they are ~3 MiB
# of a process's resident memory.
cdef object _lz4_frame_module = None
cdef object _isal_zlib_module = None
cdef object _snappy_module = None
cdef object _zstd_module = None


cdef object _lz4_frame():
    global _lz4_frame_module
    if _lz4_frame_module is None:
        _lz4_frame_module = importlib.import_module("lz4.frame")
    return _lz4_frame_module


cdef object _isal_zlib():
    global _isal_zlib_module
    if _isal_zlib_module is None:
        _isal_zlib_module = importlib.import_module("isal.isal_zlib")
    return _isal_zlib_module


cdef object _snappy():
    global _snappy_module
    if _snappy_module is None:
        _snappy_module = importlib.import_module("snappy")
    return _snappy_module


cdef object _zstd():
    global _zstd_module
    if _zstd_module is None:
        _zstd_module = importlib.import_module("zstandard")
    return _zstd_module


def codec_name(int codec):
    """The lower-case name of a compression codec number ("none", "gzip", ...)."""
    if 0 <= codec < len(_CODEC_NAMES):
        return _CODEC_NAMES[codec]
    return f"codec {codec}"


cdef object _corrupt(int codec, str detail):
    return ProtocolError(f"{codec_name(codec)} payload is corrupt: {detail}")


cdef object _too_large(int codec, Py_ssize_t max_size):
    return ProtocolError(
        f"{codec_name(codec)} payload decompresses to more than {max_size} bytes (the limit)")


cdef object _zstd_compressor(int level):
    cache = getattr(_zstd_local, "compressors", None)
    if cache is None:
        cache = _zstd_local.compressors = {}
    cctx = cache.get(level)
    if cctx is None:
        cctx = cache[level] = _zstd().ZstdCompressor(level=level)
    return cctx


cdef object _zstd_decompressor():
    dctx = getattr(_zstd_local, "decompressor", None)
    if dctx is None:
        dctx = _zstd_local.decompressor = _zstd().ZstdDecompressor()
    return dctx


# ---------------------------------------------------------------------------- compress

cdef bytes _snappy_xerial_compress(object data):
    # One join, no intermediate buffer: most batches fit in a single 32 KiB block.
    mv = memoryview(data).cast("B")
    cdef Py_ssize_t n = len(mv), pos = 0, end
    parts = [_XERIAL_HEADER]
    while pos < n:
        end = min(pos + _XERIAL_BLOCK_SIZE, n)
        block = _snappy().compress(mv[pos:end] if pos or end < n else data)
        parts.append(_XERIAL_BLOCK_LENGTH.pack(len(block)))
        parts.append(block)
        pos = end
    return b"".join(parts)


cdef bytes compress_payload_level(int codec, object data, int level):
    """Compress a batch's records section with `codec` at `level` (-1: codec default)."""
    if codec == COMPRESSION_GZIP:
        level = _GZIP_DEFAULT_LEVEL if level < 0 else level
        gz = _isal_zlib().compressobj(min(level // _ZLIB_LEVELS_PER_ISAL_LEVEL, _ISAL_MAX_LEVEL), _DEFLATED,
                                    _GZIP_WRITE_WBITS)
        return gz.compress(data) + gz.flush()
    if codec == COMPRESSION_SNAPPY:
        return _snappy_xerial_compress(data)
    if codec == COMPRESSION_LZ4:
        return _lz4_frame().compress(
            data,
            compression_level=_LZ4_DEFAULT_LEVEL if level < 0 else level,
            block_size=_lz4_frame().BLOCKSIZE_MAX64KB,
            block_linked=False,      # Kafka's LZ4 reader refuses dependent blocks
            content_checksum=False,
            store_size=False,
        )
    if codec == COMPRESSION_ZSTD:
        return _zstd_compressor(_ZSTD_DEFAULT_LEVEL if level < 0 else level).compress(data)
    if codec == COMPRESSION_NONE:
        return bytes(data)
    raise ValueError(f"codec: unknown compression codec {codec}")


cdef bytes compress_payload(int codec, object data):
    """Compress a batch's records section with `codec` at the codec's default level."""
    return compress_payload_level(codec, data, COMPRESSION_LEVEL_DEFAULT)


# -------------------------------------------------------------------------- decompress

cdef bytes _gzip_decompress(object data, Py_ssize_t max_size):
    # Java's GZIPInputStream reads concatenated members, so do we.
    cdef Py_ssize_t produced = 0
    chunks = []
    pending = data
    while True:
        d = _isal_zlib().decompressobj(_GZIP_READ_WBITS)
        while True:
            chunk = d.decompress(pending, max_size + 1 - produced)
            produced += len(chunk)
            if produced > max_size:
                raise _too_large(COMPRESSION_GZIP, max_size)
            chunks.append(chunk)
            pending = d.unconsumed_tail
            if d.eof or not pending:
                break
        if not d.eof:
            raise _corrupt(COMPRESSION_GZIP, "the stream ends before the end of its member")
        pending = d.unused_data
        if not pending:
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


cdef Py_ssize_t _snappy_declared_length(const unsigned char[:] block) except -2:
    """The uncompressed length in a raw snappy block's varint preamble, or -1 if malformed."""
    cdef Py_ssize_t i, n = block.shape[0]
    cdef uint64_t value = 0
    for i in range(min(n, 5)):
        value |= (<uint64_t>(block[i] & 0x7F)) << (7 * i)
        if block[i] < 0x80:
            return <Py_ssize_t>value if value <= 0xFFFFFFFF else -1
    return -1


cdef bytes _snappy_raw_block(object block, Py_ssize_t budget, Py_ssize_t max_size):
    cdef const unsigned char[:] view = block
    if view.shape[0] == 0:
        raise _corrupt(COMPRESSION_SNAPPY, "empty block")
    cdef Py_ssize_t declared = _snappy_declared_length(view)
    if declared < 0:
        raise _corrupt(COMPRESSION_SNAPPY, "bad uncompressed-length preamble")
    if declared > budget:
        raise _too_large(COMPRESSION_SNAPPY, max_size)
    if declared > _SNAPPY_MAX_EXPANSION * view.shape[0] + 16:
        raise _corrupt(COMPRESSION_SNAPPY,
                       f"block of {view.shape[0]} bytes claims {declared} uncompressed bytes")
    return _snappy().uncompress(block)


cdef bytes _snappy_decompress(object data, Py_ssize_t max_size):
    mv = memoryview(data).cast("B")
    cdef const unsigned char[:] view = mv
    cdef Py_ssize_t n = view.shape[0], pos, block_len, produced = 0
    if n < _XERIAL_HEADER_SIZE or bytes(view[:8]) != _XERIAL_MAGIC:
        return _snappy_raw_block(mv, max_size, max_size)
    # Version and compat (Int32 each) are informational: every xerial version frames the
    # same way, so they are skipped like SnappyInputStream does.
    chunks = []
    pos = _XERIAL_HEADER_SIZE
    while pos < n:
        if n - pos < 4:
            raise _corrupt(COMPRESSION_SNAPPY, f"xerial block length cut off at byte {pos}")
        block_len = ((<Py_ssize_t>view[pos] << 24) | (<Py_ssize_t>view[pos + 1] << 16)
                     | (<Py_ssize_t>view[pos + 2] << 8) | <Py_ssize_t>view[pos + 3])
        pos += 4
        if block_len > n - pos:
            raise _corrupt(COMPRESSION_SNAPPY,
                           f"xerial block of {block_len} bytes at byte {pos} runs past the end "
                           f"({n - pos} left)")
        chunk = _snappy_raw_block(mv[pos:pos + block_len], max_size - produced, max_size)
        produced += len(chunk)
        chunks.append(chunk)
        pos += block_len
    return b"".join(chunks)


# An LZ4 sequence of n bytes yields at most ~255 n bytes; with the input that small
# against the limit, whole frames are decoded in one call each (the fast path).
cdef Py_ssize_t _LZ4_MAX_EXPANSION = 256


cdef object _lz4_decompress_whole(object mv):
    """All frames at once, or None when a frame declares a content size (the library would
    allocate whatever it claims, so such payloads take the bounded path)."""
    cdef Py_ssize_t pos = 0, n = len(mv), used
    chunks = []
    while pos < n:
        if n - pos >= 5 and mv[pos + 4] & _LZ4_FLG_CONTENT_SIZE:
            return None
        chunk, used = _lz4_frame().decompress(mv[pos:], return_bytes_read=True)
        if used <= 0:
            raise _corrupt(COMPRESSION_LZ4, "frame made no progress")
        chunks.append(chunk)
        pos += used
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


cdef bytes _lz4_decompress(object data, Py_ssize_t max_size):
    # A payload may hold several frames back to back.
    cdef Py_ssize_t produced = 0
    mv = memoryview(data).cast("B")
    if len(mv) == 0:
        raise _corrupt(COMPRESSION_LZ4, "empty payload")
    if len(mv) <= max_size // _LZ4_MAX_EXPANSION:
        # The input cannot expand past the limit: decode whole frames.
        whole = _lz4_decompress_whole(mv)
        if whole is not None:
            return whole
    # Otherwise decode in bounded chunks, stopping at the limit.
    chunks = []
    pending = data
    while True:
        d = _lz4_frame().LZ4FrameDecompressor()
        chunk = d.decompress(pending, min(_DECOMPRESS_CHUNK, max_size + 1 - produced))
        while True:
            produced += len(chunk)
            if produced > max_size:
                raise _too_large(COMPRESSION_LZ4, max_size)
            chunks.append(chunk)
            if d.eof or d.needs_input:
                break
            chunk = d.decompress(b"", min(_DECOMPRESS_CHUNK, max_size + 1 - produced))
        if not d.eof:
            raise _corrupt(COMPRESSION_LZ4, "the frame ends early")
        pending = d.unused_data
        if not pending:
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


# zstd frame layout (RFC 8878), walked before decoding so a truncated frame is caught
# (the streaming decoder would silently return what it had) and the output size is bounded.
cdef uint32_t _ZSTD_MAGIC = 0xFD2FB528U
cdef uint32_t _ZSTD_SKIPPABLE_MAGIC = 0x184D2A50U   # low 4 bits are free
cdef uint32_t _ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0U
cdef Py_ssize_t _ZSTD_MAX_BLOCK = 128 * 1024         # a block never regenerates more
cdef int _ZSTD_BLOCK_RAW = 0
cdef int _ZSTD_BLOCK_RLE = 1
cdef int _ZSTD_BLOCK_COMPRESSED = 2


cdef Py_ssize_t _zstd_output_bound(const unsigned char[:] v) except -1:
    """Check every frame of a zstd payload is complete; return an upper bound of its output."""
    cdef Py_ssize_t n = v.shape[0], pos = 0, bound = 0, header_len, block_size
    cdef uint32_t magic, block_header, skip_len
    cdef int fhd, block_type, dict_id_len, fcs_len
    cdef bint last
    if n == 0:
        raise _corrupt(COMPRESSION_ZSTD, "empty payload")
    while pos < n:
        if n - pos < 4:
            raise _corrupt(COMPRESSION_ZSTD, f"frame magic cut off at byte {pos}")
        magic = _cmp_le32(&v[pos])
        if (magic & _ZSTD_SKIPPABLE_MASK) == _ZSTD_SKIPPABLE_MAGIC:
            if n - pos < 8:
                raise _corrupt(COMPRESSION_ZSTD, f"skippable frame cut off at byte {pos}")
            skip_len = _cmp_le32(&v[pos + 4])
            if skip_len > n - pos - 8:
                raise _corrupt(COMPRESSION_ZSTD, f"skippable frame at byte {pos} runs past the end")
            pos += 8 + skip_len
            continue
        if magic != _ZSTD_MAGIC:
            raise _corrupt(COMPRESSION_ZSTD, f"bad frame magic 0x{magic:08x} at byte {pos}")
        if n - pos < 5:
            raise _corrupt(COMPRESSION_ZSTD, f"frame header cut off at byte {pos}")
        fhd = v[pos + 4]
        dict_id_len = (0, 1, 2, 4)[fhd & 0x03]
        fcs_len = (1 if fhd & 0x20 else 0, 2, 4, 8)[fhd >> 6]
        header_len = 5 + (0 if fhd & 0x20 else 1) + dict_id_len + fcs_len
        if n - pos < header_len:
            raise _corrupt(COMPRESSION_ZSTD, f"frame header cut off at byte {pos}")
        pos += header_len
        last = False
        while not last:
            if n - pos < 3:
                raise _corrupt(COMPRESSION_ZSTD, f"block header cut off at byte {pos}")
            block_header = v[pos] | (<uint32_t>v[pos + 1] << 8) | (<uint32_t>v[pos + 2] << 16)
            pos += 3
            last = block_header & 1
            block_type = (block_header >> 1) & 0x03
            block_size = block_header >> 3
            if block_size > _ZSTD_MAX_BLOCK:
                raise _corrupt(COMPRESSION_ZSTD, f"block of {block_size} bytes at byte {pos}")
            if block_type == _ZSTD_BLOCK_RLE:
                if n - pos < 1:
                    raise _corrupt(COMPRESSION_ZSTD, f"block cut off at byte {pos}")
                pos += 1
                bound += block_size
            elif block_type == _ZSTD_BLOCK_RAW or block_type == _ZSTD_BLOCK_COMPRESSED:
                if n - pos < block_size:
                    raise _corrupt(COMPRESSION_ZSTD, f"block cut off at byte {pos}")
                pos += block_size
                bound += block_size if block_type == _ZSTD_BLOCK_RAW else _ZSTD_MAX_BLOCK
            else:
                raise _corrupt(COMPRESSION_ZSTD, f"reserved block type at byte {pos}")
        if fhd & 0x04:   # content checksum
            if n - pos < 4:
                raise _corrupt(COMPRESSION_ZSTD, f"content checksum cut off at byte {pos}")
            pos += 4
    return bound


cdef bytes _zstd_decompress(object data, Py_ssize_t max_size):
    # Java writes frames without a content size and a payload may hold several frames.
    cdef const unsigned char[:] view = memoryview(data).cast("B")
    cdef Py_ssize_t bound = _zstd_output_bound(view), produced = 0
    dctx = _zstd_decompressor()
    if bound <= max_size:
        # The frames cannot produce more than `bound`: decode in one call.
        out = dctx.decompressobj(read_across_frames=True).decompress(data)
        if len(out) > bound:
            raise _corrupt(COMPRESSION_ZSTD, "output larger than its blocks allow")
        return out
    # Possibly larger than allowed: stream in bounded chunks and stop at the limit.
    chunks = []
    reader = dctx.stream_reader(data, read_across_frames=True)
    try:
        while True:
            chunk = reader.read(min(_DECOMPRESS_CHUNK, max_size + 1 - produced))
            if not chunk:
                break
            produced += len(chunk)
            if produced > max_size:
                raise _too_large(COMPRESSION_ZSTD, max_size)
            chunks.append(chunk)
    finally:
        reader.close()
    return b"".join(chunks)


cdef bytes decompress_payload(int codec, object data, Py_ssize_t max_size):
    """Decompress a batch's records section; ProtocolError if corrupt or beyond max_size."""
    try:
        if codec == COMPRESSION_GZIP:
            return _gzip_decompress(data, max_size)
        if codec == COMPRESSION_SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec == COMPRESSION_LZ4:
            return _lz4_decompress(data, max_size)
        if codec == COMPRESSION_ZSTD:
            return _zstd_decompress(data, max_size)
        if codec == COMPRESSION_NONE:
            if len(data) > max_size:
                raise _too_large(codec, max_size)
            return bytes(data)
    except ProtocolError:
        raise
    except MemoryError:
        raise
    except Exception as exc:
        # isal's IsalError, snappy.UncompressError, lz4's RuntimeError, zstd.ZstdError, ...:
        # the libraries disagree on exception types, the caller needs one.
        raise _corrupt(codec, f"{type(exc).__name__}: {exc}") from exc
    raise ProtocolError(f"unknown compression codec {codec} in the batch attributes")


# --------------------------------------------------- legacy (magic 0) lz4 header checksum

cdef uint32_t _XXH_PRIME1 = 2654435761U
cdef uint32_t _XXH_PRIME2 = 2246822519U
cdef uint32_t _XXH_PRIME3 = 3266489917U
cdef uint32_t _XXH_PRIME4 = 668265263U
cdef uint32_t _XXH_PRIME5 = 374761393U


cdef inline uint32_t _xxh_rotl32(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef inline uint32_t _cmp_le32(const unsigned char *p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef uint32_t _xxh32(const unsigned char *p, Py_ssize_t n, uint32_t seed) noexcept nogil:
    """xxHash32, the hash the LZ4 frame header checksum is taken from."""
    cdef const unsigned char *end = p + n
    cdef uint32_t v1, v2, v3, v4, h
    if n >= 16:
        v1 = seed + _XXH_PRIME1 + _XXH_PRIME2
        v2 = seed + _XXH_PRIME2
        v3 = seed
        v4 = seed - _XXH_PRIME1
        while end - p >= 16:
            v1 = _xxh_rotl32(v1 + _cmp_le32(p) * _XXH_PRIME2, 13) * _XXH_PRIME1
            v2 = _xxh_rotl32(v2 + _cmp_le32(p + 4) * _XXH_PRIME2, 13) * _XXH_PRIME1
            v3 = _xxh_rotl32(v3 + _cmp_le32(p + 8) * _XXH_PRIME2, 13) * _XXH_PRIME1
            v4 = _xxh_rotl32(v4 + _cmp_le32(p + 12) * _XXH_PRIME2, 13) * _XXH_PRIME1
            p += 16
        h = _xxh_rotl32(v1, 1) + _xxh_rotl32(v2, 7) + _xxh_rotl32(v3, 12) + _xxh_rotl32(v4, 18)
    else:
        h = seed + _XXH_PRIME5
    h += <uint32_t>n
    while end - p >= 4:
        h = _xxh_rotl32(h + _cmp_le32(p) * _XXH_PRIME3, 17) * _XXH_PRIME4
        p += 4
    while p < end:
        h = _xxh_rotl32(h + p[0] * _XXH_PRIME5, 11) * _XXH_PRIME1
        p += 1
    h ^= h >> 15
    h *= _XXH_PRIME2
    h ^= h >> 13
    h *= _XXH_PRIME3
    h ^= h >> 16
    return h


def xxh32(data, uint32_t seed=0):
    """xxHash32 of a bytes-like object (exposed for tests)."""
    cdef const unsigned char[:] view = memoryview(data).cast("B")
    if view.shape[0] == 0:
        return _xxh32(<const unsigned char *>b"", 0, seed)
    return _xxh32(&view[0], view.shape[0], seed)


# LZ4 frame descriptor: magic (4), FLG (1), BD (1), [content size (8) if FLG bit 3], HC (1).
cdef Py_ssize_t _LZ4_DESCRIPTOR_START = 4
cdef int _LZ4_FLG_CONTENT_SIZE = 0x08


cdef object _fix_legacy_lz4_header(object data):
    """Kafka before KIP-57 (magic 0) took the header checksum over the magic number too;
    recompute it the standard way so the frame decoder accepts it."""
    cdef const unsigned char[:] view = memoryview(data).cast("B")
    cdef Py_ssize_t n = view.shape[0], hc_pos
    if n < 7:
        return data   # the frame decoder reports the truncation
    hc_pos = 6 + (8 if view[4] & _LZ4_FLG_CONTENT_SIZE else 0)
    if hc_pos >= n:
        return data
    fixed = bytearray(view)
    fixed[hc_pos] = (_xxh32(&view[_LZ4_DESCRIPTOR_START], hc_pos - _LZ4_DESCRIPTOR_START, 0) >> 8) & 0xFF
    return fixed


# ------------------------------------------------------------------- Python-level API

def compress(int codec, data, int level=COMPRESSION_LEVEL_DEFAULT):
    """Compress `data` as Kafka's `codec` (1 gzip, 2 snappy, 3 lz4, 4 zstd) writes it.

    `level` is the codec's own scale (-1: its default): zlib's 0-9 for gzip, lz4's
    0-16, zstd's -7..22; snappy has none."""
    if codec < COMPRESSION_NONE or codec > COMPRESSION_ZSTD:
        raise ValueError(f"codec: unknown compression codec {codec}")
    return compress_payload_level(codec, data, level)


def decompress(int codec, data, Py_ssize_t max_size=DEFAULT_MAX_UNCOMPRESSED_SIZE):
    """Decompress a payload of `codec`; ProtocolError if corrupt or larger than max_size."""
    if max_size < 0:
        raise ValueError(f"max_size: must be >= 0, got {max_size}")
    return decompress_payload(codec, data, max_size)
