# WriteBuffer and ReadBuffer: Kafka's primitive types (protocol.html,
# "Protocol Primitive Types"), big-endian fixed-width ints, zig-zag varints,
# classic (Int16/Int32 length) and compact (unsigned varint length + 1)
# strings, bytes and arrays, UUIDs and tagged fields.
#
# WriteBuffer is pgproto-style: inline storage that grows, a reserved size
# prefix filled in by end_frame(). ReadBuffer is a bounds-checked cursor over
# one complete frame: every read checks the bytes left first, every length is
# validated against the bytes left before anything is allocated, and every
# failure is a ProtocolError naming the API and the field.

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_WRITABLE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize, PyBytes_CheckExact
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from cpython.unicode cimport PyUnicode_CheckExact, PyUnicode_DecodeUTF8
from libc.stdint cimport uint16_t
from libc.string cimport memcpy, memset

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


# Limits of the length prefixes (protocol.html: STRING is Int16-prefixed,
# BYTES and arrays Int32-prefixed; compact lengths are unsigned varints of
# length + 1 that must still fit an Int32).
cdef enum:
    INT16_MAX_LENGTH = 32767
    INT32_MAX_LENGTH = 2147483647
    MAX_VARINT32_BYTES = 5
    MAX_VARINT64_BYTES = 10
    UUID_SIZE = 16
    INLINE_BUFFER_SIZE = 512     # must match WriteBuffer._small in codec.pxd
    # A bytes value (or a read-only view of one) at least this large, a record batch
    # typically (EncodedBatch follows the same rule), is referenced by the buffer instead of
    # copied into it, and goes to the socket as its own write chunk; below it one memcpy is
    # cheaper than one more chunk.
    REFERENCE_MIN_SIZE = 16384
    # Topic ids decoded before, kept as their uuid.UUID objects: each Produce and Fetch v13+
    # answer names its topics by id, and building a uuid.UUID (Python code) cost ~2 µs per
    # topic per answer. Emptied when full: a client rarely sees this many topics.
    UUID_CACHE_MAX = 4096

cdef char _EMPTY[1]
# the raw 16 bytes -> that id's uuid.UUID (immutable, so one object serves every answer)
cdef dict _decoded_uuids = {}


cdef extern from "Python.h":
    bint PyMemoryView_Check(object ob)
    PyObject *PyMemoryView_GET_BASE(object mview)  # the exporting object, borrowed; may be NULL


cdef inline bint _is_view_of_bytes(object b, Py_buffer *view) noexcept:
    """A read-only memoryview whose memory is a bytes object's: as immutable as bytes."""
    cdef PyObject *base
    if not PyMemoryView_Check(b) or not view.readonly:
        return False
    base = PyMemoryView_GET_BASE(b)
    return base is not NULL and PyBytes_CheckExact(<object>base)


# --- big-endian packing helpers (compilers turn these into bswap + mov) ---

cdef inline void _pack_int16(char *p, int16_t v) noexcept nogil:
    cdef uint16_t u = <uint16_t>v
    p[0] = <char>(u >> 8)
    p[1] = <char>u

cdef inline void _pack_int32(char *p, int32_t v) noexcept nogil:
    cdef uint32_t u = <uint32_t>v
    p[0] = <char>(u >> 24)
    p[1] = <char>(u >> 16)
    p[2] = <char>(u >> 8)
    p[3] = <char>u

cdef inline void _pack_int64(char *p, int64_t v) noexcept nogil:
    cdef uint64_t u = <uint64_t>v
    p[0] = <char>(u >> 56)
    p[1] = <char>(u >> 48)
    p[2] = <char>(u >> 40)
    p[3] = <char>(u >> 32)
    p[4] = <char>(u >> 24)
    p[5] = <char>(u >> 16)
    p[6] = <char>(u >> 8)
    p[7] = <char>u

cdef inline uint16_t _unpack_uint16(const char *p) noexcept nogil:
    cdef const uint8_t *b = <const uint8_t *>p
    return (<uint16_t>b[0] << 8) | b[1]

cdef inline uint32_t _unpack_uint32(const char *p) noexcept nogil:
    cdef const uint8_t *b = <const uint8_t *>p
    return (<uint32_t>b[0] << 24) | (<uint32_t>b[1] << 16) | (<uint32_t>b[2] << 8) | b[3]

cdef inline uint64_t _unpack_uint64(const char *p) noexcept nogil:
    return (<uint64_t>_unpack_uint32(p) << 32) | _unpack_uint32(p + 4)


# Unsigned LEB128 into p (room for 10 bytes); returns the bytes written.
cdef inline int _encode_uvarint(char *p, uint64_t v) noexcept nogil:
    cdef int n = 0
    while v >= 0x80:
        p[n] = <char>((v & 0x7F) | 0x80)
        v >>= 7
        n += 1
    p[n] = <char>v
    return n + 1

cdef inline int _uvarint_size(uint64_t v) noexcept nogil:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n

cdef inline uint32_t _zigzag32(int32_t v) noexcept nogil:
    return (<uint32_t>v << 1) ^ <uint32_t>(v >> 31)

cdef inline uint64_t _zigzag64(int64_t v) noexcept nogil:
    return (<uint64_t>v << 1) ^ <uint64_t>(v >> 63)



cdef enum:
    NO_FRAME = -1  # WriteBuffer._frame_start when no frame is open

cdef class WriteBuffer:
    """A growable byte buffer that writes Kafka primitives and frames requests.

    Python code can read it back with ``to_bytes()`` or export it zero-copy
    (``memoryview(buf)``); while a view is alive the buffer refuses to grow or
    reset, so the exported bytes can never move under the reader.

    Large ``bytes`` values (record batches) are not copied in: the buffer keeps a
    reference and ``chunks()`` hands them to the socket as they are: a built
    batch is not copied again before the kernel takes it.
    """

    def __cinit__(self):
        self._buf = self._small
        self._size = INLINE_BUFFER_SIZE
        self._length = 0
        self._frame_start = NO_FRAME
        self._view_count = 0
        self._referenced = None
        self._referenced_size = 0
        self._frame_referenced = 0

    def __dealloc__(self):
        if self._buf != self._small:
            PyMem_Free(self._buf)
        self._buf = NULL

    cdef inline int _ensure(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t needed = self._length + extra
        cdef Py_ssize_t new_size
        cdef char *new_buf
        if needed <= self._size:
            return 0
        if self._view_count > 0:
            raise BufferError("WriteBuffer: cannot grow while a memoryview of it is alive")
        new_size = self._size * 2
        if new_size < needed:
            new_size = needed
        if self._buf == self._small:
            new_buf = <char *>PyMem_Malloc(new_size)
            if new_buf is NULL:
                raise MemoryError()
            memcpy(new_buf, self._small, self._length)
        else:
            new_buf = <char *>PyMem_Realloc(self._buf, new_size)
            if new_buf is NULL:
                raise MemoryError()
        self._buf = new_buf
        self._size = new_size
        return 0

    # --- framing ---

    cdef int start_frame(self) except -1:
        if self._frame_start != NO_FRAME:
            raise ValueError("WriteBuffer: a frame is already open")
        self._ensure(4)
        self._frame_start = self._length
        self._frame_referenced = self._referenced_size
        self._length += 4
        return 0

    cdef int end_frame(self) except -1:
        cdef Py_ssize_t size
        if self._frame_start == NO_FRAME:
            raise ValueError("WriteBuffer: no frame is open")
        size = self._length - self._frame_start - 4 + (self._referenced_size - self._frame_referenced)
        if size > INT32_MAX_LENGTH:
            raise ValueError(f"WriteBuffer: frame of {size} bytes exceeds the Int32 size prefix")
        _pack_int32(self._buf + self._frame_start, <int32_t>size)
        self._frame_start = NO_FRAME
        return 0

    cdef int reset(self) except -1:
        if self._view_count > 0:
            raise BufferError("WriteBuffer: cannot reset while a memoryview of it is alive")
        self._length = 0
        self._frame_start = NO_FRAME
        self._referenced = None
        self._referenced_size = 0
        return 0

    cdef WriteMark mark(self) noexcept:
        cdef WriteMark m
        m.length = self._length
        m.referenced = len(self._referenced) if self._referenced is not None else 0
        return m

    cdef int rewind(self, WriteMark mark) except -1:
        """Forgets everything written after ``mark`` (a half-encoded request), including a
        frame opened after it."""
        cdef Py_ssize_t i
        if self._referenced is not None:
            for i in range(mark.referenced, len(self._referenced)):
                self._referenced_size -= len((<tuple>self._referenced[i])[1])
            del self._referenced[mark.referenced:]
        self._length = mark.length
        if self._frame_start >= mark.length:
            self._frame_start = NO_FRAME
        return 0

    cdef Py_ssize_t total_length(self) noexcept:
        return self._length + self._referenced_size

    cdef list chunks(self):
        """The contents in order: copies of the written stretches (bytes), the referenced
        values themselves. For ``transport.writelines``."""
        cdef Py_ssize_t start = 0, offset
        if self._referenced is None:
            return [PyBytes_FromStringAndSize(self._buf, self._length)]
        out = []
        for offset, data in self._referenced:
            if offset > start:
                out.append(PyBytes_FromStringAndSize(self._buf + start, offset - start))
            out.append(data)
            start = offset
        if self._length > start:
            out.append(PyBytes_FromStringAndSize(self._buf + start, self._length - start))
        return out

    # --- fixed width ---

    cdef int write_int8(self, int8_t v) except -1:
        self._ensure(1)
        self._buf[self._length] = <char>v
        self._length += 1
        return 0

    cdef int write_int16(self, int16_t v) except -1:
        self._ensure(2)
        _pack_int16(self._buf + self._length, v)
        self._length += 2
        return 0

    cdef int write_int32(self, int32_t v) except -1:
        self._ensure(4)
        _pack_int32(self._buf + self._length, v)
        self._length += 4
        return 0

    cdef int write_int64(self, int64_t v) except -1:
        self._ensure(8)
        _pack_int64(self._buf + self._length, v)
        self._length += 8
        return 0

    cdef int write_uint32(self, uint32_t v) except -1:
        return self.write_int32(<int32_t>v)

    cdef int write_float64(self, double v) except -1:
        cdef int64_t bits
        memcpy(&bits, &v, 8)
        return self.write_int64(bits)

    cdef int write_bool(self, bint v) except -1:
        return self.write_int8(1 if v else 0)

    # --- varints ---

    cdef int write_uvarint(self, uint64_t v) except -1:
        self._ensure(MAX_VARINT64_BYTES)
        self._length += _encode_uvarint(self._buf + self._length, v)
        return 0

    cdef int write_varint(self, int32_t v) except -1:
        return self.write_uvarint(_zigzag32(v))

    cdef int write_varlong(self, int64_t v) except -1:
        return self.write_uvarint(_zigzag64(v))

    # --- raw ---

    cdef int write_raw(self, const char *data, Py_ssize_t n) except -1:
        self._ensure(n)
        memcpy(self._buf + self._length, data, n)
        self._length += n
        return 0

    cdef int write_ref(self, object data, Py_ssize_t size) except -1:
        if self._referenced is None:
            self._referenced = []
        self._referenced.append((self._length, data))
        self._referenced_size += size
        return 0

    cdef int write_pybuffer(self, object data) except -1:
        cdef Py_buffer view
        if PyBytes_CheckExact(data):
            return self.write_raw(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            self.write_raw(<const char *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
        return 0

    # --- strings and bytes ---

    cdef int _write_utf8(self, object s, bint compact, const char *what) except -1:
        cdef Py_ssize_t n
        cdef const char *p
        if not isinstance(s, str):
            raise TypeError(f"{what.decode()}: expected str, got {type(s).__name__}")
        p = PyUnicode_AsUTF8AndSize(s, &n)
        if compact:
            if n >= INT32_MAX_LENGTH:
                raise ValueError(f"{what.decode()}: string of {n} bytes is too long")
            self.write_uvarint(<uint64_t>n + 1)
        else:
            if n > INT16_MAX_LENGTH:
                raise ValueError(
                    f"{what.decode()}: string of {n} UTF-8 bytes exceeds the Int16 length limit {INT16_MAX_LENGTH}")
            self.write_int16(<int16_t>n)
        return self.write_raw(p, n)

    cdef int _write_buffer_with_length(self, object b, bint compact, const char *what) except -1:
        cdef Py_buffer view
        cdef const char *p
        cdef Py_ssize_t n
        cdef bint release = False
        if PyBytes_CheckExact(b):
            p = PyBytes_AS_STRING(b)
            n = PyBytes_GET_SIZE(b)
        elif type(b) is EncodedBatch:
            return (<EncodedBatch>b).write_to(self, compact, what)
        else:
            try:
                PyObject_GetBuffer(b, &view, PyBUF_SIMPLE)
            except TypeError:
                raise TypeError(f"{what.decode()}: expected a bytes-like object, got {type(b).__name__}") from None
            release = True
            p = <const char *>view.buf
            n = view.len
        try:
            if n >= INT32_MAX_LENGTH:
                raise ValueError(f"{what.decode()}: {n} bytes exceed the Int32 length limit")
            if compact:
                self.write_uvarint(<uint64_t>n + 1)
            else:
                self.write_int32(<int32_t>n)
            if n >= REFERENCE_MIN_SIZE and (not release or _is_view_of_bytes(b, &view)):
                self.write_ref(b, n)
            else:
                self.write_raw(p, n)
        finally:
            if release:
                PyBuffer_Release(&view)
        return 0

    cdef int write_string(self, object s) except -1:
        if s is None:
            raise TypeError("write_string: None is not allowed for a non-nullable STRING")
        return self._write_utf8(s, False, b"write_string")

    cdef int write_nullable_string(self, object s) except -1:
        if s is None:
            return self.write_int16(NULL_LENGTH)
        return self._write_utf8(s, False, b"write_nullable_string")

    cdef int write_bytes(self, object b) except -1:
        if b is None:
            raise TypeError("write_bytes: None is not allowed for non-nullable BYTES")
        return self._write_buffer_with_length(b, False, b"write_bytes")

    cdef int write_nullable_bytes(self, object b) except -1:
        if b is None:
            return self.write_int32(NULL_LENGTH)
        return self._write_buffer_with_length(b, False, b"write_nullable_bytes")

    cdef int write_array_length(self, Py_ssize_t n) except -1:
        if n < -1 or n > INT32_MAX_LENGTH:
            raise ValueError(f"write_array_length: invalid array length {n}")
        return self.write_int32(<int32_t>n)

    cdef int write_compact_string(self, object s) except -1:
        if s is None:
            raise TypeError("write_compact_string: None is not allowed for a non-nullable COMPACT_STRING")
        return self._write_utf8(s, True, b"write_compact_string")

    cdef int write_compact_nullable_string(self, object s) except -1:
        if s is None:
            return self.write_uvarint(0)
        return self._write_utf8(s, True, b"write_compact_nullable_string")

    cdef int write_compact_bytes(self, object b) except -1:
        if b is None:
            raise TypeError("write_compact_bytes: None is not allowed for non-nullable COMPACT_BYTES")
        return self._write_buffer_with_length(b, True, b"write_compact_bytes")

    cdef int write_compact_nullable_bytes(self, object b) except -1:
        if b is None:
            return self.write_uvarint(0)
        return self._write_buffer_with_length(b, True, b"write_compact_nullable_bytes")

    cdef int write_compact_array_length(self, Py_ssize_t n) except -1:
        if n < -1 or n >= INT32_MAX_LENGTH:
            raise ValueError(f"write_compact_array_length: invalid array length {n}")
        return self.write_uvarint(<uint64_t>(n + 1))

    cdef int write_uuid(self, object u) except -1:
        cdef bytes raw
        if u is None:
            self._ensure(UUID_SIZE)
            memset(self._buf + self._length, 0, UUID_SIZE)
            self._length += UUID_SIZE
            return 0
        if isinstance(u, _UUID):
            raw = u.bytes
        elif isinstance(u, (bytes, bytearray, memoryview)) and len(u) == UUID_SIZE:
            raw = bytes(u)
        else:
            raise TypeError(f"write_uuid: expected uuid.UUID, 16 bytes or None, got {u!r}")
        return self.write_raw(PyBytes_AS_STRING(raw), UUID_SIZE)

    cdef int write_empty_tagged_fields(self) except -1:
        return self.write_int8(0)   # uvarint 0: no tagged fields

    # --- Python surface ---

    cpdef bytes to_bytes(self):
        if self._referenced is None:
            return PyBytes_FromStringAndSize(self._buf, self._length)
        return b"".join(self.chunks())

    def __len__(self):
        return self.total_length()

    def __getbuffer__(self, Py_buffer *view, int flags):
        if flags & PyBUF_WRITABLE:
            raise BufferError("WriteBuffer exports read-only views")
        if self._referenced is not None:
            raise BufferError("WriteBuffer: holds referenced values, not one contiguous block (use to_bytes)")
        view.buf = self._buf
        view.obj = self
        view.len = self._length
        view.readonly = 1
        view.itemsize = 1
        view.format = NULL
        view.ndim = 1
        view.shape = NULL
        view.strides = NULL
        view.suboffsets = NULL
        view.internal = NULL
        self._view_count += 1

    def __releasebuffer__(self, Py_buffer *view):
        self._view_count -= 1

    def write(self, str kind, value):
        """Writes one primitive named like its writer without the ``write_`` prefix
        (``"int32"``, ``"compact_nullable_string"``, ``"tagged_fields"``...).

        The Python-level twin of the C writers, for tests and tools; C code
        calls the typed writers directly.
        """
        if kind == "int8":
            self.write_int8(value)
        elif kind == "int16":
            self.write_int16(value)
        elif kind == "int32":
            self.write_int32(value)
        elif kind == "int64":
            self.write_int64(value)
        elif kind == "uint32":
            self.write_uint32(value)
        elif kind == "float64":
            self.write_float64(value)
        elif kind == "bool":
            self.write_bool(value)
        elif kind == "uvarint":
            self.write_uvarint(value)
        elif kind == "varint":
            self.write_varint(value)
        elif kind == "varlong":
            self.write_varlong(value)
        elif kind == "raw":
            self.write_pybuffer(value)
        elif kind == "string":
            self.write_string(value)
        elif kind == "nullable_string":
            self.write_nullable_string(value)
        elif kind == "bytes":
            self.write_bytes(value)
        elif kind == "nullable_bytes":
            self.write_nullable_bytes(value)
        elif kind == "array_length":
            self.write_array_length(value)
        elif kind == "compact_string":
            self.write_compact_string(value)
        elif kind == "compact_nullable_string":
            self.write_compact_nullable_string(value)
        elif kind == "compact_bytes":
            self.write_compact_bytes(value)
        elif kind == "compact_nullable_bytes":
            self.write_compact_nullable_bytes(value)
        elif kind == "compact_array_length":
            self.write_compact_array_length(value)
        elif kind == "uuid":
            self.write_uuid(value)
        elif kind == "tagged_fields":
            if value:
                raise ValueError("write('tagged_fields'): only empty tagged fields are written")
            self.write_empty_tagged_fields()
        else:
            raise ValueError(f"WriteBuffer.write: unknown kind {kind!r}")
        return self

    def begin_frame(self):
        """Python twin of start_frame(): reserves the Int32 size prefix."""
        self.start_frame()

    def finish_frame(self):
        """Python twin of end_frame(): fills in the size prefix."""
        self.end_frame()

    def clear(self):
        """Python twin of reset()."""
        self.reset()

    def position(self):
        """Python twin of mark(): ``(bytes written, values referenced)``."""
        cdef WriteMark m = self.mark()
        return (m.length, m.referenced)

    def rewind_to(self, position):
        """Python twin of rewind(), taking what ``position()`` returned."""
        cdef WriteMark m
        m.length, m.referenced = position
        self.rewind(m)

    def as_chunks(self):
        """Python twin of chunks()."""
        return self.chunks()


cdef ReadBuffer _new_read_buffer():
    return ReadBuffer.__new__(ReadBuffer)


cdef ReadBuffer read_buffer_over(object owner, const char *data, Py_ssize_t size, bytes api):
    cdef ReadBuffer r = _new_read_buffer()
    r._owner = owner
    r._data = data
    r._end = size
    r._api_owner = api
    r.api = PyBytes_AS_STRING(api)
    return r


cdef class ReadBuffer:
    """A bounds-checked cursor over one complete frame.

    ``ReadBuffer(data, api="Fetch v12 response")`` accepts any contiguous
    bytes-like object and keeps it alive; reads never go past the end and fail
    with ``ProtocolError`` naming ``api`` and the current ``field``.
    """

    def __cinit__(self):
        self._data = _EMPTY
        self._pos = 0
        self._end = 0
        self.api = NULL
        self.field = NULL

    def __init__(self, data, api=None):
        cdef Py_buffer view
        if PyBytes_CheckExact(data):
            self._owner = data
            self._data = PyBytes_AS_STRING(data)
            self._end = PyBytes_GET_SIZE(data)
        else:
            # A private memoryview pins the exporter's buffer for our lifetime.
            mv = memoryview(data)
            PyObject_GetBuffer(mv, &view, PyBUF_SIMPLE)
            self._data = <const char *>view.buf if view.buf is not NULL else _EMPTY
            self._end = view.len
            PyBuffer_Release(&view)
            self._owner = mv
        self._pos = 0
        if api is not None:
            self._api_owner = str(api).encode()
            self.api = PyBytes_AS_STRING(self._api_owner)

    # --- errors ---

    cdef int _fail(self, str problem) except -1:
        api = self.api.decode("utf-8", "replace") if self.api is not NULL else "frame"
        if self.field is not NULL:
            raise ProtocolError(f"{api}: field '{self.field.decode('utf-8', 'replace')}' {problem}")
        raise ProtocolError(f"{api}: {problem}")

    cdef int _short(self, Py_ssize_t need) except -1:
        return self._fail(
            f"runs past the end of the frame (needs {need} bytes, {self._end - self._pos} left)")

    cdef inline Py_ssize_t remaining(self):
        return self._end - self._pos

    # --- fixed width ---

    cdef int8_t read_int8(self) except? -1:
        if self._end - self._pos < 1:
            self._short(1)
        self._pos += 1
        return <int8_t>self._data[self._pos - 1]

    cdef int16_t read_int16(self) except? -1:
        if self._end - self._pos < 2:
            self._short(2)
        self._pos += 2
        return <int16_t>_unpack_uint16(self._data + self._pos - 2)

    cdef int32_t read_int32(self) except? -1:
        if self._end - self._pos < 4:
            self._short(4)
        self._pos += 4
        return <int32_t>_unpack_uint32(self._data + self._pos - 4)

    cdef int64_t read_int64(self) except? -1:
        if self._end - self._pos < 8:
            self._short(8)
        self._pos += 8
        return <int64_t>_unpack_uint64(self._data + self._pos - 8)

    cdef uint32_t read_uint32(self) except? 0xFFFFFFFF:
        if self._end - self._pos < 4:
            self._short(4)
        self._pos += 4
        return _unpack_uint32(self._data + self._pos - 4)

    cdef double read_float64(self) except? -1:
        cdef uint64_t bits
        cdef double v
        if self._end - self._pos < 8:
            self._short(8)
        bits = _unpack_uint64(self._data + self._pos)
        self._pos += 8
        memcpy(&v, &bits, 8)
        return v

    cdef bint read_bool(self) except? -1:
        return self.read_int8() != 0

    # --- varints ---

    cdef uint64_t _read_uvarint_max(self, int max_bytes) except? 0xFFFFFFFFFFFFFFFF:
        cdef uint64_t result = 0
        cdef int shift = 0
        cdef int i
        cdef uint8_t b
        for i in range(max_bytes):
            if self._pos >= self._end:
                self._short(1)
            b = <uint8_t>self._data[self._pos]
            self._pos += 1
            result |= <uint64_t>(b & 0x7F) << shift
            if not (b & 0x80):
                return result
            shift += 7
        self._fail(f"is a varint longer than {max_bytes} bytes")
        return 0

    cdef uint64_t read_uvarint(self) except? 0xFFFFFFFFFFFFFFFF:
        return self._read_uvarint_max(MAX_VARINT64_BYTES)

    cdef int32_t read_varint(self) except? -1:
        cdef uint32_t u = <uint32_t>self._read_uvarint_max(MAX_VARINT32_BYTES)
        return <int32_t>((u >> 1) ^ (0 - (u & 1)))

    cdef int64_t read_varlong(self) except? -1:
        cdef uint64_t u = self._read_uvarint_max(MAX_VARINT64_BYTES)
        return <int64_t>((u >> 1) ^ (0 - (u & 1)))

    # --- raw ---

    cdef const char *read_raw(self, Py_ssize_t n) except NULL:
        if n < 0:
            self._fail(f"has an invalid length {n}")
        if self._end - self._pos < n:
            self._short(n)
        self._pos += n
        return self._data + self._pos - n

    # --- strings and bytes ---

    cdef Py_ssize_t _read_length(self, bint compact, bint nullable) except -2:
        """The length prefix of a string/bytes/records field, -1 for null,
        checked against the bytes left so nothing is allocated for a lie."""
        cdef int64_t n
        if compact:
            n = <int64_t>self._read_uvarint_max(MAX_VARINT32_BYTES) - 1
            if n > INT32_MAX_LENGTH:
                self._fail(f"has an invalid compact length {n + 1}")
        else:
            n = self.read_int32()
        if n < -1:
            self._fail(f"has an invalid length {n}")
        if n == NULL_LENGTH:
            if not nullable:
                self._fail("is null but the field is not nullable")
            return -1
        if n > self._end - self._pos:
            self._short(<Py_ssize_t>n)
        return <Py_ssize_t>n

    cdef object _decode_utf8(self, Py_ssize_t n):
        cdef const char *p = self._data + self._pos
        self._pos += n
        try:
            return PyUnicode_DecodeUTF8(p, n, NULL)
        except UnicodeDecodeError as exc:
            self._fail(f"is not valid UTF-8 ({exc.reason} at byte {exc.start})")

    cdef object read_string(self):
        cdef Py_ssize_t n
        cdef int16_t n16 = self.read_int16()
        if n16 < 0:
            self._fail(f"has an invalid length {n16}" if n16 != NULL_LENGTH else "is null but the field is not nullable")
        n = n16
        if n > self._end - self._pos:
            self._short(n)
        return self._decode_utf8(n)

    cdef object read_nullable_string(self):
        cdef Py_ssize_t n
        cdef int16_t n16 = self.read_int16()
        if n16 == NULL_LENGTH:
            return None
        if n16 < 0:
            self._fail(f"has an invalid length {n16}")
        n = n16
        if n > self._end - self._pos:
            self._short(n)
        return self._decode_utf8(n)

    cdef object read_bytes(self):
        cdef Py_ssize_t n = self._read_length(False, False)
        return PyBytes_FromStringAndSize(self.read_raw(n), n)

    cdef object read_nullable_bytes(self):
        cdef Py_ssize_t n = self._read_length(False, True)
        if n == NULL_LENGTH:
            return None
        return PyBytes_FromStringAndSize(self.read_raw(n), n)

    cdef Py_ssize_t read_array_length(self) except -2:
        cdef int32_t n = self.read_int32()
        if n == NULL_LENGTH:
            return -1
        if n < 0:
            self._fail(f"has an invalid array length {n}")
        # Every element takes at least one byte: a count the frame cannot
        # hold is a lie, refused before anyone allocates for it.
        if n > self._end - self._pos:
            self._fail(f"claims {n} elements but only {self._end - self._pos} bytes are left")
        return n

    cdef object read_compact_string(self):
        cdef Py_ssize_t n = self._read_length(True, False)
        return self._decode_utf8(n)

    cdef object read_compact_nullable_string(self):
        cdef Py_ssize_t n = self._read_length(True, True)
        if n == NULL_LENGTH:
            return None
        return self._decode_utf8(n)

    cdef object read_compact_bytes(self):
        cdef Py_ssize_t n = self._read_length(True, False)
        return PyBytes_FromStringAndSize(self.read_raw(n), n)

    cdef object read_compact_nullable_bytes(self):
        cdef Py_ssize_t n = self._read_length(True, True)
        if n == NULL_LENGTH:
            return None
        return PyBytes_FromStringAndSize(self.read_raw(n), n)

    cdef Py_ssize_t read_compact_array_length(self) except -2:
        cdef uint64_t u = self._read_uvarint_max(MAX_VARINT32_BYTES)
        cdef int64_t n = <int64_t>u - 1
        if n == NULL_LENGTH:
            return -1
        if n > self._end - self._pos:
            self._fail(f"claims {n} elements but only {self._end - self._pos} bytes are left")
        return <Py_ssize_t>n

    cdef object read_records(self, bint compact):
        cdef Py_ssize_t n = self._read_length(compact, True)
        cdef Py_ssize_t start
        if n == NULL_LENGTH:
            return None
        start = self._pos
        self._pos += n
        if self._owner is None:
            return memoryview(b"")
        return memoryview(self._owner)[start:start + n]

    cdef object read_uuid(self):
        cdef const char *p = self.read_raw(UUID_SIZE)
        raw = PyBytes_FromStringAndSize(p, UUID_SIZE)
        found = _decoded_uuids.get(raw)
        if found is None:
            if len(_decoded_uuids) >= UUID_CACHE_MAX:
                _decoded_uuids.clear()
            found = _decoded_uuids[raw] = _UUID(bytes=raw)
        return found

    # --- tagged fields ---

    cdef object read_tagged_fields(self):
        cdef uint64_t count = self._read_uvarint_max(MAX_VARINT32_BYTES)
        cdef uint64_t i
        cdef Py_ssize_t size
        cdef dict fields
        if count == 0:
            return None
        # Each tagged field takes at least two bytes (tag and size).
        if count > <uint64_t>(self._end - self._pos):
            self._fail(f"claims {count} tagged fields but only {self._end - self._pos} bytes are left")
        fields = {}
        for i in range(count):
            tag = self._read_uvarint_max(MAX_VARINT32_BYTES)
            size = <Py_ssize_t>self._read_uvarint_max(MAX_VARINT32_BYTES)
            fields[tag] = PyBytes_FromStringAndSize(self.read_raw(size), size)
        return fields

    cdef int skip_tagged_fields(self) except -1:
        cdef uint64_t count = self._read_uvarint_max(MAX_VARINT32_BYTES)
        cdef uint64_t i
        if count > <uint64_t>(self._end - self._pos):
            self._fail(f"claims {count} tagged fields but only {self._end - self._pos} bytes are left")
        for i in range(count):
            self._read_uvarint_max(MAX_VARINT32_BYTES)
            self.read_raw(<Py_ssize_t>self._read_uvarint_max(MAX_VARINT32_BYTES))
        return 0

    # --- bounded child cursor ---

    cdef ReadBuffer sub(self, Py_ssize_t n):
        cdef ReadBuffer child
        if n < 0:
            self._fail(f"has an invalid length {n}")
        if n > self._end - self._pos:
            self._short(n)
        child = _new_read_buffer()
        child._owner = self._owner
        child._api_owner = self._api_owner
        child._data = self._data
        child._pos = self._pos
        child._end = self._pos + n
        child.api = self.api
        child.field = self.field
        self._pos += n
        return child

    # --- Python surface ---

    @property
    def position(self):
        return self._pos

    @property
    def remaining_bytes(self):
        return self._end - self._pos

    def read(self, str kind, field=None):
        """Reads one primitive named like its reader without the ``read_`` prefix
        (``"int32"``, ``"compact_nullable_string"``, ``"tagged_fields"``...);
        ``raw``/``sub`` take the byte count as ``kind="raw:N"`` / ``"sub:N"``.

        The Python-level twin of the C readers, for tests and tools. ``field``
        names the field in error messages.
        """
        cdef bytes field_bytes = None
        cdef Py_ssize_t n
        if field is not None:
            field_bytes = str(field).encode()
            self.field = PyBytes_AS_STRING(field_bytes)
        try:
            if kind == "int8":
                return self.read_int8()
            if kind == "int16":
                return self.read_int16()
            if kind == "int32":
                return self.read_int32()
            if kind == "int64":
                return self.read_int64()
            if kind == "uint32":
                return self.read_uint32()
            if kind == "float64":
                return self.read_float64()
            if kind == "bool":
                return self.read_bool()
            if kind == "uvarint":
                return self.read_uvarint()
            if kind == "varint":
                return self.read_varint()
            if kind == "varlong":
                return self.read_varlong()
            if kind == "string":
                return self.read_string()
            if kind == "nullable_string":
                return self.read_nullable_string()
            if kind == "bytes":
                return self.read_bytes()
            if kind == "nullable_bytes":
                return self.read_nullable_bytes()
            if kind == "array_length":
                return self.read_array_length()
            if kind == "compact_string":
                return self.read_compact_string()
            if kind == "compact_nullable_string":
                return self.read_compact_nullable_string()
            if kind == "compact_bytes":
                return self.read_compact_bytes()
            if kind == "compact_nullable_bytes":
                return self.read_compact_nullable_bytes()
            if kind == "compact_array_length":
                return self.read_compact_array_length()
            if kind == "records":
                return self.read_records(False)
            if kind == "compact_records":
                return self.read_records(True)
            if kind == "uuid":
                return self.read_uuid()
            if kind == "tagged_fields":
                return self.read_tagged_fields()
            if kind == "skip_tagged_fields":
                self.skip_tagged_fields()
                return None
            if kind.startswith("raw:"):
                n = int(kind[4:])
                return PyBytes_FromStringAndSize(self.read_raw(n), n)
            if kind.startswith("sub:"):
                return self.sub(int(kind[4:]))
            raise ValueError(f"ReadBuffer.read: unknown kind {kind!r}")
        finally:
            if field_bytes is not None:
                self.field = NULL
