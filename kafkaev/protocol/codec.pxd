# C-level interface of kafkaev.protocol.codec, cimported by kafkaev.protocol.connection.
# The buffers follow asyncpg's pgproto: a growable write buffer that frames
# requests, and a bounds-checked read cursor over one complete frame.

cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t


# A position in a WriteBuffer to rewind to: bytes written and large bytes referenced.
cdef struct WriteMark:
    Py_ssize_t length
    Py_ssize_t referenced


# final: no subclasses, so method calls bind directly instead of through the vtable.
@cython.final
cdef class WriteBuffer:
    cdef:
        char *_buf
        Py_ssize_t _size          # allocated bytes
        Py_ssize_t _length        # bytes written
        Py_ssize_t _frame_start   # offset of the open frame's size prefix, or -1
        char _small[512]          # inline storage: most requests never allocate
        int _view_count           # exported buffers; growing while > 0 is refused
        # Large bytes values are referenced in place of being copied: (offset in _buf they
        # follow, the bytes object). None while there are none.
        list _referenced
        Py_ssize_t _referenced_size      # bytes held by _referenced
        Py_ssize_t _frame_referenced     # _referenced_size when the open frame started

    cdef inline int _ensure(self, Py_ssize_t extra) except -1
    cdef int start_frame(self) except -1          # reserve the Int32 size prefix
    cdef int end_frame(self) except -1            # fill it in with the frame's length
    cdef int reset(self) except -1                # forget the contents, keep the memory
    cdef WriteMark mark(self) noexcept
    cdef int rewind(self, WriteMark mark) except -1  # drop what was written after mark
    cdef Py_ssize_t total_length(self) noexcept      # written plus referenced bytes
    cdef list chunks(self)                           # the contents as bytes objects, in order

    cdef int write_int8(self, int8_t v) except -1
    cdef int write_int16(self, int16_t v) except -1
    cdef int write_int32(self, int32_t v) except -1
    cdef int write_int64(self, int64_t v) except -1
    cdef int write_uint32(self, uint32_t v) except -1
    cdef int write_float64(self, double v) except -1
    cdef int write_bool(self, bint v) except -1
    cdef int write_uvarint(self, uint64_t v) except -1     # unsigned LEB128
    cdef int write_varint(self, int32_t v) except -1       # zig-zag
    cdef int write_varlong(self, int64_t v) except -1      # zig-zag
    cdef int write_raw(self, const char *data, Py_ssize_t n) except -1
    cdef int write_pybuffer(self, object data) except -1   # any bytes-like, no prefix
    # No prefix, no copy: referenced. ``data`` is bytes, or a read-only memoryview of bytes.
    cdef int write_ref(self, object data, Py_ssize_t size) except -1

    # Classic encodings: Int16/Int32 length prefix, -1 for null.
    cdef int write_string(self, object s) except -1            # str; None not allowed
    cdef int write_nullable_string(self, object s) except -1
    cdef int write_bytes(self, object b) except -1
    cdef int write_nullable_bytes(self, object b) except -1
    cdef int write_array_length(self, Py_ssize_t n) except -1  # Int32; -1 for null
    # Compact encodings (flexible versions): unsigned varint of length + 1, 0 for null.
    cdef int write_compact_string(self, object s) except -1
    cdef int write_compact_nullable_string(self, object s) except -1
    cdef int write_compact_bytes(self, object b) except -1
    cdef int write_compact_nullable_bytes(self, object b) except -1
    cdef int write_compact_array_length(self, Py_ssize_t n) except -1  # -1 for null
    cdef int write_uuid(self, object u) except -1             # 16 bytes; None = all zero
    cdef int write_empty_tagged_fields(self) except -1

    cdef int _write_utf8(self, object s, bint compact, const char *what) except -1
    cdef int _write_buffer_with_length(self, object b, bint compact, const char *what) except -1
    cpdef bytes to_bytes(self)


# final: no subclasses, so method calls bind directly instead of through the vtable.
@cython.final
cdef class ReadBuffer:
    cdef:
        object _owner             # keeps the underlying bytes-like alive
        const char *_data         # start of _owner's buffer: read_records slices _owner at _pos
        Py_ssize_t _pos
        Py_ssize_t _end
        const char *api           # for error messages: "Fetch v12 response"
        const char *field         # the field being read, set by the decoders
        object _api_owner         # keeps a Python-supplied api name alive

    cdef int _short(self, Py_ssize_t need) except -1       # raises ProtocolError
    cdef int _fail(self, str problem) except -1            # raises ProtocolError naming api+field
    cdef Py_ssize_t _read_length(self, bint compact, bint nullable) except -2  # string/bytes length
    cdef uint64_t _read_uvarint_max(self, int max_bytes) except? 0xFFFFFFFFFFFFFFFF
    cdef object _decode_utf8(self, Py_ssize_t n)
    cdef inline Py_ssize_t remaining(self)
    cdef int8_t read_int8(self) except? -1
    cdef int16_t read_int16(self) except? -1
    cdef int32_t read_int32(self) except? -1
    cdef int64_t read_int64(self) except? -1
    cdef uint32_t read_uint32(self) except? 0xFFFFFFFF
    cdef double read_float64(self) except? -1
    cdef bint read_bool(self) except? -1
    cdef uint64_t read_uvarint(self) except? 0xFFFFFFFFFFFFFFFF
    cdef int32_t read_varint(self) except? -1
    cdef int64_t read_varlong(self) except? -1
    cdef const char *read_raw(self, Py_ssize_t n) except NULL   # pointer into the frame
    cdef object read_string(self)                 # str
    cdef object read_nullable_string(self)        # str or None
    cdef object read_bytes(self)                  # bytes
    cdef object read_nullable_bytes(self)
    cdef Py_ssize_t read_array_length(self) except -2          # -1 for null
    cdef object read_compact_string(self)
    cdef object read_compact_nullable_string(self)
    cdef object read_compact_bytes(self)
    cdef object read_compact_nullable_bytes(self)
    cdef Py_ssize_t read_compact_array_length(self) except -2  # -1 for null
    cdef object read_records(self, bint compact)  # memoryview slice of the frame, or None
    cdef object read_uuid(self)                   # uuid.UUID
    cdef object read_tagged_fields(self)          # dict {tag: bytes} or None when empty
    cdef int skip_tagged_fields(self) except -1
    cdef ReadBuffer sub(self, Py_ssize_t n)       # a bounded cursor over the next n bytes

# A ReadBuffer over ``size`` bytes at ``data``, kept alive by ``owner`` (a received frame),
# naming ``api`` (b"Fetch v12 response") in its errors: no copy, no buffer-protocol call.
cdef ReadBuffer read_buffer_over(object owner, const char *data, Py_ssize_t size, bytes api)


# --- hashing (codec_hashing.pxi) ---
# CRC-32C continuing from `crc` (0 to start), SSE4.2 when available.
cdef uint32_t crc32c_update(uint32_t crc, const char *data, Py_ssize_t n) noexcept nogil
# Java's Utils.toPositive(Utils.murmur2(data)): the partitioner hash.
cdef int32_t murmur2_positive(const char *data, Py_ssize_t n) noexcept nogil


# --- compression (codec_compression.pxi) ---
# Codec numbers of RecordBatch attributes bits 0-2.
# The wire's "none" values: what a field holds when there is nothing to say.
cdef enum:
    NULL_LENGTH = -1        # the length of a null string, bytes, array or struct (non-flexible)
    NO_PRODUCER_ID = -1     # a batch not written by an idempotent or transactional producer
    NO_PRODUCER_EPOCH = -1
    NO_SEQUENCE = -1
    NO_LEADER_EPOCH = -1    # no leader epoch known, or none to check against
    NO_TIMESTAMP = -1       # Java's RecordBatch.NO_TIMESTAMP: a batch with no records, a legacy entry

cdef enum CompressionCodec:
    COMPRESSION_NONE = 0
    COMPRESSION_GZIP = 1
    COMPRESSION_SNAPPY = 2
    COMPRESSION_LZ4 = 3
    COMPRESSION_ZSTD = 4

# Compress a batch's records section as the Java client writes it (codec default level).
cdef bytes compress_payload(int codec, object data)
# Same at a given level; -1 selects the codec's default.
cdef bytes compress_payload_level(int codec, object data, int level)
# Decompress; ProtocolError naming the codec if corrupt or larger than max_size bytes.
cdef bytes decompress_payload(int codec, object data, Py_ssize_t max_size)


# --- RecordBatch v2 layout (implementation.html, "Record Batch"), defined here only: the
# builder stamps it, the reader parses it, EncodedBatch re-stamps it.
#
#   BaseOffset => Int64                    0
#   BatchLength => Int32                   8   bytes after this field
#   PartitionLeaderEpoch => Int32         12
#   Magic => Int8 (2)                     16
#   CRC => Uint32                         17   CRC-32C of Attributes..end
#   Attributes => Int16                   21
#   LastOffsetDelta => Int32              23
#   BaseTimestamp => Int64                27
#   MaxTimestamp => Int64                 35
#   ProducerId => Int64                   43
#   ProducerEpoch => Int16                51
#   BaseSequence => Int32                 53
#   RecordCount => Int32                  57
#   Records => [Record]                   61   compressed as one block when a codec is set
#
#   Record =>
#     Length => Varint                    bytes after this field
#     Attributes => Int8 (unused, 0)
#     TimestampDelta => Varlong           from BaseTimestamp
#     OffsetDelta => Varint               from BaseOffset
#     KeyLength => Varint (-1 for null), Key => Bytes
#     ValueLength => Varint (-1 for null), Value => Bytes
#     HeaderCount => Varint
#     [HeaderKeyLength => Varint, HeaderKey => String (UTF-8),
#      HeaderValueLength => Varint (-1 for null), HeaderValue => Bytes]
cdef enum:
    # Where each header field starts, in bytes from the batch's start.
    RB_BASE_OFFSET = 0
    RB_BATCH_LENGTH = 8
    RB_LEADER_EPOCH = 12
    RB_MAGIC = 16
    RB_CRC = 17
    RB_ATTRIBUTES = 21
    RB_LAST_OFFSET_DELTA = 23
    RB_BASE_TIMESTAMP = 27
    RB_MAX_TIMESTAMP = 35
    RB_PRODUCER_ID = 43
    RB_PRODUCER_EPOCH = 51
    RB_BASE_SEQUENCE = 53
    RB_RECORD_COUNT = 57
    # BaseOffset and BatchLength, which BatchLength does not count. A legacy message (magic 0
    # and 1) starts the same way, its magic at RB_MAGIC too, so a reader can tell them apart.
    RB_LOG_OVERHEAD = 12
    RB_MAGIC_VALUE = 2
    # Attributes bits (the first two mean the same in a legacy message's Int8 attributes).
    RB_ATTR_COMPRESSION_MASK = 0x07
    RB_ATTR_LOG_APPEND_TIME = 0x08
    RB_ATTR_TRANSACTIONAL = 0x10
    RB_ATTR_CONTROL = 0x20

# Also module constants, for the producer's sizing of batches and records.
cpdef enum:
    BATCH_HEADER_SIZE = 61      # RecordCount's end: where the records start
    # A record's framing besides its key, value and headers, at most, wherever it lands in a batch:
    RECORD_OVERHEAD_MAX = 36    # Attributes 1 + TimestampDelta varlong 10 + 5 varints (Length, OffsetDelta, Key/ValueLength, HeaderCount) of 5


# --- encoded batches and the RecordBatch v2 encoder (codec_record_builder.pxi) ---
# One encoded RecordBatch, as the connection writes it and the producer keeps it for retries.
# Its bytes are _storage's first _stored_len, with each of _values slotted in at its offset:
# the builder's buffer handed over (bytes) or lent (a larger bytes it takes back once this is
# gone), or a new bytes (compressed, re-stamped). One per batch sent: a freelist, and no GC
# tracking (both set where the class is defined, codec_record_builder.pxi: here they are ignored).
@cython.final
cdef class EncodedBatch:
    cdef:
        object _storage             # bytes: the header, then the records minus referenced values
        Py_ssize_t _stored_len      # bytes of _storage that are the batch's
        Py_ssize_t _size            # the batch's length on the wire
        # With no values referenced, what the connection references for a large batch:
        # _storage itself, or a read-only view of its first _stored_len bytes. Else None.
        object _whole
        list _values                # referenced values (bytes) in order, or None
        Py_ssize_t *_value_offsets  # where in _storage each value belongs (bytes before it)

    # Length prefix (classic Int32 or compact), then the batch: copied, or referenced in pieces.
    cdef int write_to(self, WriteBuffer buf, bint compact, const char *what) except -1
    # The same batch with new producer fields and CRC, as a new EncodedBatch.
    cpdef EncodedBatch restamped(self, int64_t producer_id, int16_t producer_epoch, int32_t base_sequence)


# final: no subclasses, so method calls bind directly instead of through the vtable.
@cython.final
cdef class RecordBatchBuilder:
    cdef:
        # A bytes object owned by this builder alone (refcount 1) until finish() hands it
        # out: room for the batch header, then the uncompressed Records section. NULL
        # before the first record and after finish().
        PyObject *_storage
        # A large buffer finish() lent out as a view (the batch): taken back as _storage
        # once no view of it is left (refcount 1); let go if the builder needed a new buffer
        # before that. NULL when none.
        PyObject *_lent_storage
        char *_records              # the Records section inside _storage
        Py_ssize_t _records_len     # bytes written to _records (referenced values excluded)
        Py_ssize_t _capacity
        Py_ssize_t _first_capacity  # a fresh buffer's room: the last handed-over batch's if it filled up
        bint _filled                # append refused a record for room since the last reset
        int32_t _record_count
        int64_t _base_timestamp
        int64_t _max_timestamp
        int _codec                  # CompressionCodec
        int _compression_level      # -1: the codec's default
        Py_ssize_t _max_batch_size
        object _payload             # cached compressed Records, None when stale
        # Uncompressed: the CRC-32C of the records' first _crc_len bytes, summed as they are
        # written (while in cache) instead of over the whole batch at the end.
        uint32_t _records_crc
        Py_ssize_t _crc_len
        # Uncompressed: bytes values of VALUE_REFERENCE_MIN_SIZE or more are referenced, not
        # copied (see EncodedBatch). The objects, where in _records each belongs, their bytes.
        list _value_refs
        Py_ssize_t *_value_ref_offsets
        Py_ssize_t _value_ref_capacity
        Py_ssize_t _referenced_len

    cdef int _grow(self, Py_ssize_t extra) except -1
    cdef void _sum_records_crc(self) noexcept
    cdef bint _take_back_lent(self) noexcept
    cdef int _reserve_value_ref(self) except -1
    cdef void _reference_value(self, object value, const char *data, Py_ssize_t n, Py_ssize_t offset) noexcept
    cdef void _copy_records(self, char *out) noexcept
    # The producer's hot path: key/value as pointer + length (-1 and NULL for null),
    # headers a sequence of (str, bytes-like | str | None) or None. ``value_owner`` is the
    # object ``value`` points into: an exact bytes may be referenced instead of copied.
    # Returns the record's offset delta, or -1 when the batch is full.
    cdef int append_raw(self, int64_t timestamp_ms, const char *key, Py_ssize_t key_len,
                        const char *value, Py_ssize_t value_len, object headers, object value_owner) except -2
    cdef object _compressed_payload(self)
    cpdef bytes build(self, int64_t base_offset=*, int32_t partition_leader_epoch=*,
                      int64_t producer_id=*, int16_t producer_epoch=*, int32_t base_sequence=*,
                      bint transactional=*, bint is_control=*)
    cpdef EncodedBatch finish(self, int64_t base_offset=*, int32_t partition_leader_epoch=*,
                              int64_t producer_id=*, int16_t producer_epoch=*, int32_t base_sequence=*,
                              bint transactional=*, bint is_control=*)
    cdef void _stamp_header(self, char *out, Py_ssize_t total, int64_t base_offset, int32_t partition_leader_epoch,
                            int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                            bint transactional, bint is_control) noexcept
    cpdef void reset(self)


# ---- request/response codecs (generated by tools/gen_messages.py) ----
include "codec_messages_decl.pxi"
