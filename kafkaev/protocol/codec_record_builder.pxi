# RecordBatchBuilder, the RecordBatch v2 encoder, and EncodedBatch, what it makes (implementation.html,
# "Record Batch" and "Record").
#
# The batch and record layout, and the header's field positions: codec.pxd.
#
# Records are appended one at a time into the builder's own buffer, with no
# per-record Python objects. That buffer is a bytes object with room for the
# batch header in front, so finish() can stamp the header in place and hand
# the object out as the batch: an uncompressed batch of up to 128 KiB is never
# copied between its records' append and the socket. Large bytes values are not
# copied at all: the buffer leaves a gap where each belongs, and the EncodedBatch
# references them, for the connection's write list (writev). build() instead copies and
# keeps the records, so a batch can be built again with a new producer epoch or base
# sequence by re-stamping the header and re-computing the CRC; the compressed
# payload is cached between builds. A finished EncodedBatch re-stamps itself.

from cpython.long cimport PyLong_CheckExact
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.buffer cimport PyBUF_READ
from libc.time cimport time_t

cdef extern from "Python.h":
    # On the pointer itself: `<object>p` would count one more reference while it is read.
    Py_ssize_t _refcount "Py_REFCNT"(PyObject *ob)

cdef extern from "Python.h":
    # Resizes a bytes object nobody else references yet; on failure frees it and sets *bytes to NULL.
    int _PyBytes_Resize(PyObject **bytes, Py_ssize_t newsize) except -1


cdef extern from "<time.h>" nogil:
    ctypedef int clockid_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(clockid_t clk, timespec *ts)
    clockid_t CLOCK_REALTIME


cdef enum:
    DEFAULT_MAX_BATCH_SIZE = 1048576   # the broker's default max.message.bytes, rounded
    # finish() hands its buffer out as bytes only up to this size. Larger blocks come from
    # mmap (glibc's threshold starts at 128 KiB and only follows the sizes freed): a fresh
    # one per batch costs a page fault per 4 KiB touched, more than a copy. A larger buffer
    # is lent out as a read-only view instead, and taken back warm by reset() once the
    # batch is done with it.
    HANDOVER_MAX_SIZE = 131072
    # Uncompressed records are summed into the batch's CRC once this many bytes are pending,
    # right after they were written: summed at finish(), a 1 MiB batch is read back from
    # beyond the L2 cache, which took ~15% of a 10000-byte producer's CPU.
    RUNNING_CRC_CHUNK = 32768
    # An uncompressed record's bytes value at least this large is referenced by the batch
    # instead of copied into it, and reaches the socket as its own write chunk. Below it,
    # one memcpy costs less than a chunk's bookkeeping (a reference, an iovec, a gap).
    VALUE_REFERENCE_MIN_SIZE = 4096
    INITIAL_VALUE_REFS = 16
    BYTES_OBJECT_OVERHEAD = 33  # a bytes object's size beyond its contents: header and the trailing NUL
    # A fresh buffer's room for records, at least: with the batch header in front, a bytes
    # object CPython's small-object allocator still serves (up to 512 bytes), so a batch of a
    # record or two never reaches malloc. It doubles from there, up to max_batch_size.
    FIRST_RECORDS_CAPACITY = 512 - BYTES_OBJECT_OVERHEAD - BATCH_HEADER_SIZE


cdef inline int _varint_size(int64_t v) noexcept nogil:
    return _uvarint_size(_zigzag64(v))


cdef inline int64_t _now_ms() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


# A key, value or header value as a pointer and length (-1 for null),
# borrowed from a bytes/str or pinned through the buffer protocol.
cdef struct _Bytes:
    const char *ptr
    Py_ssize_t len
    bint has_view


cdef int _get_bytes(object obj, _Bytes *out, Py_buffer *view, const char *what) except -1:
    out.has_view = False
    if obj is None:
        out.ptr = NULL
        out.len = NULL_LENGTH
    elif PyBytes_CheckExact(obj):
        out.ptr = PyBytes_AS_STRING(obj)
        out.len = PyBytes_GET_SIZE(obj)
    elif isinstance(obj, str):
        out.ptr = PyUnicode_AsUTF8AndSize(obj, &out.len)
    else:
        try:
            PyObject_GetBuffer(obj, view, PyBUF_SIMPLE)
        except TypeError:
            raise TypeError(
                f"{what.decode()} must be bytes-like, str or None, got {type(obj).__name__}") from None
        out.ptr = <const char *>view.buf
        out.len = view.len
        out.has_view = True
    return 0


cdef inline void _release_bytes(_Bytes *b, Py_buffer *view) noexcept:
    if b.has_view:
        PyBuffer_Release(view)
        b.has_view = False


cdef int _header_parts(object header, _Bytes *key, _Bytes *value, Py_buffer *value_view) except -1:
    cdef Py_ssize_t n
    if not isinstance(header, (tuple, list)) or len(header) != 2:
        raise TypeError(f"headers: each header must be a (str, bytes | None) pair, got {header!r}")
    name = header[0]
    if not isinstance(name, str):
        raise TypeError(f"headers: a header key must be str, got {type(name).__name__}")
    key.ptr = PyUnicode_AsUTF8AndSize(name, &n)
    key.len = n
    key.has_view = False
    _get_bytes(header[1], value, value_view, b"headers: a header value")
    return 0


cdef inline char *_put_varint(char *p, int64_t v) noexcept nogil:
    return p + _encode_uvarint(p, _zigzag64(v))


cdef inline char *_put_bytes_with_length(char *p, const char *data, Py_ssize_t n) noexcept nogil:
    if n < 0:
        return _put_varint(p, -1)
    p = _put_varint(p, n)
    memcpy(p, data, n)
    return p + n


cdef void _join_pieces(char *out, const char *stored, Py_ssize_t stored_len, list values,
                       const Py_ssize_t *offsets) noexcept:
    """``stored`` with each bytes of ``values`` slotted in at its offset (bytes of ``stored``
    before it), written to ``out``."""
    cdef Py_ssize_t i, pos = 0, offset, n
    if values is not None:
        for i in range(len(values)):
            offset = offsets[i]
            memcpy(out, stored + pos, offset - pos)
            out += offset - pos
            value = values[i]
            n = PyBytes_GET_SIZE(value)
            memcpy(out, PyBytes_AS_STRING(value), n)
            out += n
            pos = offset
    memcpy(out, stored + pos, stored_len - pos)


cdef uint32_t _pieces_crc(const char *stored, Py_ssize_t start, Py_ssize_t stored_len, list values,
                          const Py_ssize_t *offsets) noexcept:
    """CRC-32C of the batch's bytes from ``start`` (before the first value's offset) to its end:
    ``stored`` with each bytes of ``values`` slotted in at its offset."""
    cdef uint32_t crc = 0
    cdef Py_ssize_t i, pos = start, offset
    if values is not None:
        for i in range(len(values)):
            offset = offsets[i]
            crc = crc32c_update(crc, stored + pos, offset - pos)
            value = values[i]
            crc = crc32c_update(crc, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value))
            pos = offset
    return crc32c_update(crc, stored + pos, stored_len - pos)


cdef inline EncodedBatch _whole_batch(bytes data):
    """An EncodedBatch that is all of ``data``."""
    cdef EncodedBatch batch = EncodedBatch.__new__(EncodedBatch)
    batch._storage = data
    batch._stored_len = batch._size = PyBytes_GET_SIZE(data)
    batch._whole = data
    return batch


# It holds only bytes, views of bytes and a list of bytes, so it can be in no cycle: the
# collector need not track it. (These two decorators take effect here, where the class is
# defined; in codec.pxd they were silently ignored, and every batch sent was tracked.)
@cython.no_gc
@cython.freelist(16)
cdef class EncodedBatch:
    """One encoded RecordBatch v2: what ``RecordBatchBuilder.finish()`` returns, the producer
    keeps for retries and the connection writes.

    Immutable. ``len()`` is its size on the wire, ``bytes()`` its bytes (joined, for the rare
    paths that decode a batch), ``pieces`` what the connection writes: the whole batch as one
    object, or, when the builder referenced large ``bytes`` values instead of copying them, the
    stretches of its buffer between them and the values themselves. ``restamped()`` gives the
    batch with other producer fields (after an epoch bump). ``EncodedBatch(data)`` wraps a
    complete batch held in a bytes object.
    """

    def __cinit__(self):
        self._value_offsets = NULL

    def __init__(self, bytes data not None):
        if PyBytes_GET_SIZE(data) < BATCH_HEADER_SIZE or PyBytes_AS_STRING(data)[RB_MAGIC] != RB_MAGIC_VALUE:
            raise ValueError(f"EncodedBatch: not a RecordBatch v2 ({PyBytes_GET_SIZE(data)} bytes)")
        self._storage = data
        self._stored_len = self._size = PyBytes_GET_SIZE(data)
        self._whole = data

    def __dealloc__(self):
        PyMem_Free(self._value_offsets)
        self._value_offsets = NULL

    def __len__(self):
        return self._size

    def __bytes__(self):
        cdef bytes out
        if self._values is None:
            if self._stored_len == PyBytes_GET_SIZE(self._storage):
                return self._storage
            return PyBytes_FromStringAndSize(PyBytes_AS_STRING(self._storage), self._stored_len)
        out = PyBytes_FromStringAndSize(NULL, self._size)
        _join_pieces(PyBytes_AS_STRING(out), PyBytes_AS_STRING(self._storage), self._stored_len, self._values,
                     self._value_offsets)
        return out

    @property
    def pieces(self):
        """The batch as the connection writes it, in order: bytes and read-only memoryviews."""
        cdef Py_ssize_t i, pos = 0, offset
        if self._values is None:
            return (self._whole,)
        stored = memoryview(self._storage)
        out = []
        for i in range(len(self._values)):
            offset = self._value_offsets[i]
            out.append(stored[pos:offset])
            out.append(self._values[i])
            pos = offset
        out.append(stored[pos:self._stored_len])
        return tuple(out)

    def __repr__(self):
        cdef Py_ssize_t referenced = 0 if self._values is None else len(self._values)
        return f"<EncodedBatch {self._size} bytes, {referenced} values referenced>"

    cdef int write_to(self, WriteBuffer buf, bint compact, const char *what) except -1:
        cdef const char *stored = PyBytes_AS_STRING(self._storage)
        cdef Py_ssize_t i, pos = 0, offset, n = self._size
        if n >= INT32_MAX_LENGTH:
            raise ValueError(f"{what.decode()}: {n} bytes exceed the Int32 length limit")
        if compact:
            buf.write_uvarint(<uint64_t>n + 1)
        else:
            buf.write_int32(<int32_t>n)
        if self._values is None:
            # As any bytes value: referenced when large, else copied into the buffer.
            if n >= REFERENCE_MIN_SIZE:
                return buf.write_ref(self._whole, n)
            return buf.write_raw(stored, n)
        # The gaps (a few bytes of record framing each) copied, the values referenced.
        for i in range(len(self._values)):
            offset = self._value_offsets[i]
            buf.write_raw(stored + pos, offset - pos)
            value = self._values[i]
            buf.write_ref(value, PyBytes_GET_SIZE(value))
            pos = offset
        return buf.write_raw(stored + pos, self._stored_len - pos)

    cpdef EncodedBatch restamped(self, int64_t producer_id, int16_t producer_epoch, int32_t base_sequence):
        """The same batch with new ProducerId, ProducerEpoch and BaseSequence, and its CRC
        redone: a new EncodedBatch (the referenced values shared). Not stamped in place: a
        closing connection's transport may still be sending this one."""
        cdef bytes storage = PyBytes_FromStringAndSize(PyBytes_AS_STRING(self._storage), self._stored_len)
        cdef char *out = PyBytes_AS_STRING(storage)
        cdef EncodedBatch batch = EncodedBatch.__new__(EncodedBatch)
        cdef Py_ssize_t count
        if self._values is not None:
            count = len(self._values)
            batch._value_offsets = <Py_ssize_t *>PyMem_Malloc(count * sizeof(Py_ssize_t))
            if batch._value_offsets is NULL:
                raise MemoryError()
            memcpy(batch._value_offsets, self._value_offsets, count * sizeof(Py_ssize_t))
            batch._values = self._values  # never changed once finished
        else:
            batch._whole = storage
        batch._storage = storage
        batch._stored_len = self._stored_len
        batch._size = self._size
        _pack_int64(out + RB_PRODUCER_ID, producer_id)
        _pack_int16(out + RB_PRODUCER_EPOCH, producer_epoch)
        _pack_int32(out + RB_BASE_SEQUENCE, base_sequence)
        _pack_int32(out + RB_CRC, <int32_t>_pieces_crc(out, RB_ATTRIBUTES, self._stored_len, self._values,
                                                        self._value_offsets))
        return batch


# Its objects are a list of bytes values and a compressed payload (bytes): it can be in no
# cycle, so the collector need not track it. Over many partitions one is made per batch.
@cython.no_gc
cdef class RecordBatchBuilder:
    """Builds one RecordBatch v2, appending records one at a time.

    ``RecordBatchBuilder(codec=0, max_batch_size=1048576, compression_level=-1)``:
    ``codec`` is the attributes' compression number (0 none, 1 gzip, 2 snappy,
    3 lz4, 4 zstd). ``append`` returns the record's offset delta, or -1 when the
    record would take the batch past ``max_batch_size`` (counted uncompressed,
    so a compressed batch stays under it too); the first record is always
    accepted, however large, as in Kafka.
    """

    def __cinit__(self):
        self._storage = NULL
        self._lent_storage = NULL
        self._records = NULL
        self._records_len = 0
        self._capacity = 0
        self._first_capacity = FIRST_RECORDS_CAPACITY
        self._filled = False
        self._record_count = 0
        self._base_timestamp = NO_TIMESTAMP
        self._max_timestamp = NO_TIMESTAMP
        self._payload = None
        self._records_crc = 0
        self._crc_len = 0
        self._value_refs = None
        self._value_ref_offsets = NULL
        self._value_ref_capacity = 0
        self._referenced_len = 0

    def __init__(self, int codec=COMPRESSION_NONE, Py_ssize_t max_batch_size=DEFAULT_MAX_BATCH_SIZE,
                 int compression_level=COMPRESSION_LEVEL_DEFAULT):
        if codec < COMPRESSION_NONE or codec > COMPRESSION_ZSTD:
            raise ValueError(f"RecordBatchBuilder: 'codec' must be 0..4 (none, gzip, snappy, lz4, zstd), got {codec}")
        if max_batch_size < BATCH_HEADER_SIZE:
            raise ValueError(
                f"RecordBatchBuilder: 'max_batch_size' must be at least {BATCH_HEADER_SIZE}, got {max_batch_size}")
        self._codec = codec
        self._compression_level = compression_level
        self._max_batch_size = max_batch_size

    def __dealloc__(self):
        Py_XDECREF(self._storage)
        Py_XDECREF(self._lent_storage)
        self._storage = NULL
        self._lent_storage = NULL
        self._records = NULL
        PyMem_Free(self._value_ref_offsets)
        self._value_ref_offsets = NULL

    cdef bint _take_back_lent(self) noexcept:
        """Make the lent buffer the storage again once no view of it is left (True). While
        one is, keep waiting for it, unless the builder has a buffer of its own by now: then
        let it go (it is freed with its last view)."""
        cdef PyObject *lent = self._lent_storage
        if lent is NULL:
            return False
        if self._storage is not NULL:
            self._lent_storage = NULL
            Py_XDECREF(lent)
            return False
        if _refcount(lent) != 1:
            return False
        self._lent_storage = NULL
        self._storage = lent
        self._records = PyBytes_AS_STRING(<object>lent) + BATCH_HEADER_SIZE
        self._capacity = PyBytes_GET_SIZE(<object>lent) - BATCH_HEADER_SIZE
        return True

    cdef int _grow(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t needed = self._records_len + extra
        cdef Py_ssize_t new_capacity, limit
        cdef object storage
        if self._storage is NULL and self._take_back_lent() and self._capacity >= needed:
            return 0
        # Never more than the batch may hold (append refuses to go past max_batch_size;
        # only a first record may be larger).
        limit = max(needed, self._max_batch_size - BATCH_HEADER_SIZE)
        if self._storage is NULL:
            # A small first buffer, doubled as records come: most batches of a producer
            # spread over many partitions hold a record or two, and a buffer of the whole
            # capacity for each, shrunk at finish(), left the freed rest of every one
            # scattered between the live batches: at 1,000 partitions the heap grew to
            # five times what was in use.
            new_capacity = min(limit, max(needed, self._first_capacity))
            storage = PyBytes_FromStringAndSize(NULL, BATCH_HEADER_SIZE + new_capacity)
            Py_INCREF(storage)  # the builder's own reference, released in finish() or __dealloc__
            self._storage = <PyObject *>storage
        else:
            new_capacity = self._capacity * 2
            while new_capacity < needed:
                new_capacity *= 2
            new_capacity = min(new_capacity, limit)
            try:
                _PyBytes_Resize(&self._storage, BATCH_HEADER_SIZE + new_capacity)
            except MemoryError:
                self._storage = NULL
                self._records = NULL
                self._capacity = self._records_len = self._record_count = self._crc_len = 0
                self._records_crc = 0
                self._value_refs = None
                self._referenced_len = 0
                raise
        self._records = PyBytes_AS_STRING(<object>self._storage) + BATCH_HEADER_SIZE
        self._capacity = new_capacity
        return 0

    cdef int append_raw(self, int64_t timestamp_ms, const char *key, Py_ssize_t key_len,
                        const char *value, Py_ssize_t value_len, object headers, object value_owner) except -2:
        cdef int64_t timestamp_delta
        cdef int32_t offset_delta = self._record_count
        cdef Py_ssize_t header_count = 0
        cdef Py_ssize_t headers_size = 0
        cdef Py_ssize_t body_size, total_size, stored_size, i
        cdef bint reference = (value_len >= VALUE_REFERENCE_MIN_SIZE and self._codec == COMPRESSION_NONE
                               and PyBytes_CheckExact(value_owner))
        cdef _Bytes hkey, hvalue
        cdef Py_buffer hvalue_view
        cdef char *p

        if headers is not None:
            if isinstance(headers, dict):
                headers = list((<dict>headers).items())
            elif not isinstance(headers, (list, tuple)):
                headers = list(headers)
            header_count = len(headers)
            # First pass: validate and size the headers, so the record's length
            # prefix is known before anything is written.
            for i in range(header_count):
                _header_parts(headers[i], &hkey, &hvalue, &hvalue_view)
                headers_size += (_varint_size(hkey.len) + hkey.len
                                 + _varint_size(hvalue.len) + (hvalue.len if hvalue.len > 0 else 0))
                _release_bytes(&hvalue, &hvalue_view)

        if self._record_count == 0:
            self._base_timestamp = timestamp_ms
            self._max_timestamp = timestamp_ms
        timestamp_delta = timestamp_ms - self._base_timestamp

        body_size = (1 + _varint_size(timestamp_delta) + _varint_size(offset_delta)
                     + _varint_size(key_len) + (key_len if key_len > 0 else 0)
                     + _varint_size(value_len) + (value_len if value_len > 0 else 0)
                     + _varint_size(header_count) + headers_size)
        total_size = _varint_size(body_size) + body_size
        if self._record_count > 0 and (
                BATCH_HEADER_SIZE + self._records_len + self._referenced_len + total_size > self._max_batch_size):
            self._filled = True
            return -1
        stored_size = total_size - value_len if reference else total_size
        if self._records_len + stored_size > self._capacity:
            self._grow(stored_size)
        if reference:
            self._reserve_value_ref()

        p = self._records + self._records_len
        p = _put_varint(p, body_size)
        p[0] = 0                                  # Attributes => Int8 (unused)
        p += 1
        p = _put_varint(p, timestamp_delta)
        p = _put_varint(p, offset_delta)
        p = _put_bytes_with_length(p, key, key_len)
        if reference:
            p = _put_varint(p, value_len)
            self._reference_value(value_owner, value, value_len, p - self._records)
        else:
            p = _put_bytes_with_length(p, value, value_len)
        p = _put_varint(p, header_count)
        for i in range(header_count):
            _header_parts(headers[i], &hkey, &hvalue, &hvalue_view)
            p = _put_bytes_with_length(p, hkey.ptr, hkey.len)
            p = _put_bytes_with_length(p, hvalue.ptr, hvalue.len)
            _release_bytes(&hvalue, &hvalue_view)

        self._records_len += stored_size
        self._record_count += 1
        if timestamp_ms > self._max_timestamp:
            self._max_timestamp = timestamp_ms
        self._payload = None
        if self._codec == COMPRESSION_NONE and self._records_len - self._crc_len >= RUNNING_CRC_CHUNK:
            self._sum_records_crc()
        return offset_delta

    cdef void _sum_records_crc(self) noexcept:
        """Add the records written since the last call to the running CRC."""
        self._records_crc = crc32c_update(self._records_crc, self._records + self._crc_len,
                                          self._records_len - self._crc_len)
        self._crc_len = self._records_len

    cdef int _reserve_value_ref(self) except -1:
        """Room for one more referenced value, made before the record is written so that a
        failure leaves the builder as it was."""
        cdef Py_ssize_t capacity
        cdef Py_ssize_t *offsets
        if self._value_refs is None:
            self._value_refs = []
        if len(self._value_refs) < self._value_ref_capacity:
            return 0
        capacity = max(INITIAL_VALUE_REFS, 2 * self._value_ref_capacity)
        offsets = <Py_ssize_t *>PyMem_Realloc(self._value_ref_offsets, capacity * sizeof(Py_ssize_t))
        if offsets is NULL:
            raise MemoryError()
        self._value_ref_offsets = offsets
        self._value_ref_capacity = capacity
        return 0

    cdef void _reference_value(self, object value, const char *data, Py_ssize_t n, Py_ssize_t offset) noexcept:
        """Slot ``value`` in at ``offset`` of the records: its bytes join the running CRC in
        their place (the records before it first), and the batch references it."""
        self._records_crc = crc32c_update(self._records_crc, self._records + self._crc_len, offset - self._crc_len)
        self._records_crc = crc32c_update(self._records_crc, data, n)
        self._crc_len = offset
        self._value_ref_offsets[len(self._value_refs)] = offset
        self._value_refs.append(value)  # cannot fail: _reserve_value_ref made the room
        self._referenced_len += n

    cdef void _copy_records(self, char *out) noexcept:
        """The uncompressed Records section, referenced values in their place, into ``out``."""
        if self._records_len or self._referenced_len:
            _join_pieces(out, self._records, self._records_len, self._value_refs, self._value_ref_offsets)

    def append(self, timestamp_ms, key, value, headers=None):
        """Appends one record; returns its offset delta, or -1 when the batch is full.

        ``timestamp_ms``: int (CreateTime, ms since the epoch) or None for now.
        ``key``/``value``: bytes-like, str (encoded UTF-8) or None.
        ``headers``: a sequence of ``(str, bytes | str | None)`` pairs (repeated keys
        allowed), a dict of them, or None.
        """
        cdef _Bytes k, v
        cdef Py_buffer key_view, value_view
        cdef int64_t ts
        if PyLong_CheckExact(timestamp_ms):
            ts = timestamp_ms
        elif timestamp_ms is None:
            ts = _now_ms()
        elif isinstance(timestamp_ms, int):
            ts = timestamp_ms
        else:
            raise TypeError(f"append: 'timestamp_ms' must be an int or None, got {type(timestamp_ms).__name__}")
        # The common case, bytes key and value, borrows their storage directly.
        if PyBytes_CheckExact(value) and (key is None or PyBytes_CheckExact(key)):
            if key is None:
                return self.append_raw(ts, NULL, -1, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), headers,
                                       value)
            return self.append_raw(ts, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                                   PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), headers, value)
        _get_bytes(key, &k, &key_view, b"append: 'key'")
        try:
            _get_bytes(value, &v, &value_view, b"append: 'value'")
            try:
                return self.append_raw(ts, k.ptr, k.len, v.ptr, v.len, headers, value)
            finally:
                _release_bytes(&v, &value_view)
        finally:
            _release_bytes(&k, &key_view)

    cdef object _compressed_payload(self):
        if self._payload is None:
            # The compressors read the records in place through a borrowed view,
            # released right after so it can never outlive this call.
            records = PyMemoryView_FromMemory(self._records if self._records is not NULL else _EMPTY,
                                              self._records_len, PyBUF_READ)
            try:
                self._payload = compress_payload_level(self._codec, records, self._compression_level)
            finally:
                records.release()
        return self._payload

    cdef void _stamp_header(self, char *out, Py_ssize_t total, int64_t base_offset, int32_t partition_leader_epoch,
                            int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                            bint transactional, bint is_control) noexcept:
        cdef uint32_t crc
        cdef int16_t attributes = <int16_t>(self._codec & RB_ATTR_COMPRESSION_MASK)
        if transactional:
            attributes |= RB_ATTR_TRANSACTIONAL
        if is_control:
            attributes |= RB_ATTR_CONTROL
        _pack_int64(out + RB_BASE_OFFSET, base_offset)
        _pack_int32(out + RB_BATCH_LENGTH, <int32_t>(total - RB_LOG_OVERHEAD))
        _pack_int32(out + RB_LEADER_EPOCH, partition_leader_epoch)
        out[RB_MAGIC] = RB_MAGIC_VALUE
        _pack_int16(out + RB_ATTRIBUTES, attributes)
        _pack_int32(out + RB_LAST_OFFSET_DELTA, <int32_t>(self._record_count - 1))
        _pack_int64(out + RB_BASE_TIMESTAMP, self._base_timestamp)
        _pack_int64(out + RB_MAX_TIMESTAMP, self._max_timestamp)
        _pack_int64(out + RB_PRODUCER_ID, producer_id)
        _pack_int16(out + RB_PRODUCER_EPOCH, producer_epoch)
        _pack_int32(out + RB_BASE_SEQUENCE, base_sequence)
        _pack_int32(out + RB_RECORD_COUNT, <int32_t>self._record_count)
        if self._codec == COMPRESSION_NONE and self._crc_len == 0 and self._referenced_len == 0:
            # Nothing summed while appending (a batch under RUNNING_CRC_CHUNK): the records
            # follow the header in place, and one pass costs less than joining two CRCs.
            crc = crc32c_update(0, out + RB_ATTRIBUTES, total - RB_ATTRIBUTES)
        elif self._codec == COMPRESSION_NONE:
            # The records follow the header unchanged: join the header's CRC to theirs.
            self._sum_records_crc()
            crc = crc32c_combine(crc32c_update(0, out + RB_ATTRIBUTES, BATCH_HEADER_SIZE - RB_ATTRIBUTES),
                                 self._records_crc, self._records_len + self._referenced_len)
        else:
            with nogil:
                crc = crc32c_update(0, out + RB_ATTRIBUTES, total - RB_ATTRIBUTES)
        _pack_int32(out + RB_CRC, <int32_t>crc)

    cpdef bytes build(self, int64_t base_offset=0, int32_t partition_leader_epoch=NO_LEADER_EPOCH,
                      int64_t producer_id=NO_PRODUCER_ID, int16_t producer_epoch=NO_PRODUCER_EPOCH,
                      int32_t base_sequence=NO_SEQUENCE,
                      bint transactional=False, bint is_control=False):
        """The finished batch as bytes. Can be called again (e.g. with a new
        producer epoch and base sequence): only the header is re-stamped."""
        cdef const char *payload
        cdef Py_ssize_t payload_len, total
        cdef bytes batch
        cdef char *out
        if self._codec == COMPRESSION_NONE:
            # One copy: the records straight into the batch.
            payload = self._records
            payload_len = self._records_len + self._referenced_len
        else:
            compressed = self._compressed_payload()
            payload = PyBytes_AS_STRING(compressed)
            payload_len = PyBytes_GET_SIZE(compressed)
        total = BATCH_HEADER_SIZE + payload_len
        if total - RB_LOG_OVERHEAD > INT32_MAX_LENGTH:
            raise ValueError(f"RecordBatchBuilder.build: batch of {total} bytes exceeds the Int32 length")
        batch = PyBytes_FromStringAndSize(NULL, total)
        out = PyBytes_AS_STRING(batch)
        if self._codec == COMPRESSION_NONE:
            self._copy_records(out + BATCH_HEADER_SIZE)
        elif payload_len:
            memcpy(out + BATCH_HEADER_SIZE, payload, payload_len)
        self._stamp_header(out, total, base_offset, partition_leader_epoch, producer_id, producer_epoch,
                           base_sequence, transactional, is_control)
        return batch

    cpdef EncodedBatch finish(self, int64_t base_offset=0, int32_t partition_leader_epoch=NO_LEADER_EPOCH,
                              int64_t producer_id=NO_PRODUCER_ID, int16_t producer_epoch=NO_PRODUCER_EPOCH,
                              int32_t base_sequence=NO_SEQUENCE,
                              bint transactional=False, bint is_control=False):
        """The batch, as ``build`` makes it, as an EncodedBatch, after which the builder is
        empty (as after ``reset``). Uncompressed, the builder's own buffer becomes the batch,
        header stamped in place, with no copy: with referenced values, the buffer and the
        values; otherwise up to HANDOVER_MAX_SIZE the buffer itself (a fresh one comes with
        the next record), above it a read-only memoryview of the buffer. A buffer lent out
        (the first and last) is taken back when the builder is next reset or filled once
        nothing holds it, so a large batch's pages stay mapped and warm. Compressed, a new
        bytes."""
        cdef Py_ssize_t stored = BATCH_HEADER_SIZE + self._records_len
        cdef Py_ssize_t total = stored + self._referenced_len
        cdef EncodedBatch batch
        cdef object storage
        cdef Py_ssize_t i
        if self._codec != COMPRESSION_NONE or self._storage is NULL:
            batch = _whole_batch(self.build(base_offset, partition_leader_epoch, producer_id, producer_epoch,
                                            base_sequence, transactional, is_control))
            self.reset()  # keeps the records buffer: a compressed batch is a new object anyway
            return batch
        if total - RB_LOG_OVERHEAD > INT32_MAX_LENGTH:
            raise ValueError(f"RecordBatchBuilder.finish: batch of {total} bytes exceeds the Int32 length")
        self._stamp_header(PyBytes_AS_STRING(<object>self._storage), total, base_offset, partition_leader_epoch,
                           producer_id, producer_epoch, base_sequence, transactional, is_control)
        if not self._referenced_len and BATCH_HEADER_SIZE + self._capacity <= HANDOVER_MAX_SIZE:
            # Handed over: the buffer, shrunk to the batch, becomes its bytes.
            if total < BATCH_HEADER_SIZE + self._capacity:
                try:
                    _PyBytes_Resize(&self._storage, total)  # a shrink: in place
                except MemoryError:  # the storage is gone (freed by the failed resize): start empty
                    self._records = NULL
                    self._capacity = 0
                    self.reset()
                    raise
            # A batch that filled up: the next one starts with its room, so a builder kept
            # busy does not regrow from the first size each batch. Any other (over many
            # partitions, a record or two lingered out) lets the next start small again.
            self._first_capacity = (max(<Py_ssize_t>FIRST_RECORDS_CAPACITY, self._records_len) if self._filled
                                    else FIRST_RECORDS_CAPACITY)
            storage = <bytes>self._storage  # a new reference: the builder's own is dropped below
            Py_XDECREF(self._storage)
            self._storage = NULL
            self._records = NULL
            self._capacity = 0
            self.reset()
            return _whole_batch(storage)
        # Lent: the batch holds the buffer (refcount > 1 while it or a view of it is alive).
        batch = EncodedBatch.__new__(EncodedBatch)
        batch._storage = <object>self._storage
        batch._stored_len = stored
        batch._size = total
        if self._referenced_len:
            batch._values = self._value_refs
            batch._value_offsets = self._value_ref_offsets
            for i in range(len(self._value_refs)):
                self._value_ref_offsets[i] += BATCH_HEADER_SIZE  # from the records' start to the batch's
            self._value_refs = None
            self._value_ref_offsets = NULL
            self._value_ref_capacity = 0
        else:
            batch._whole = memoryview(batch._storage)[:total]
        Py_XDECREF(self._lent_storage)  # an earlier lent one not taken back yet: let it go
        self._lent_storage = self._storage
        self._storage = NULL
        self._records = NULL
        self._capacity = 0
        self.reset()
        return batch

    cpdef void reset(self):
        """Empties the builder for the next batch, keeping its memory (and taking back a
        buffer lent by finish() once no view of it is left)."""
        self._take_back_lent()
        self._records_len = 0
        self._records_crc = 0
        self._crc_len = 0
        self._value_refs = None  # the offsets array stays, for the next batch's values
        self._referenced_len = 0
        self._record_count = 0
        self._filled = False
        self._base_timestamp = NO_TIMESTAMP
        self._max_timestamp = NO_TIMESTAMP
        self._payload = None

    @property
    def record_count(self):
        return self._record_count

    @property
    def estimated_size(self):
        """Header plus records so far, uncompressed: O(1), an upper bound of the built size
        for uncompressed batches and the limit ``append`` checks."""
        return BATCH_HEADER_SIZE + self._records_len + self._referenced_len

    @property
    def max_batch_size(self):
        """The limit ``append`` checks. The producer raises it as its memory budget allows,
        so a batch's buffer grows with its records instead of being reserved up front."""
        return self._max_batch_size

    @max_batch_size.setter
    def max_batch_size(self, Py_ssize_t size):
        if size < BATCH_HEADER_SIZE + self._records_len + self._referenced_len:
            raise ValueError(
                f"RecordBatchBuilder: 'max_batch_size' must be at least the batch so far "
                f"({BATCH_HEADER_SIZE + self._records_len + self._referenced_len} bytes), got {size}")
        self._max_batch_size = size

    @property
    def codec(self):
        return self._codec

    @property
    def base_timestamp(self):
        return self._base_timestamp

    @property
    def max_timestamp(self):
        return self._max_timestamp

    def __len__(self):
        return self._record_count
