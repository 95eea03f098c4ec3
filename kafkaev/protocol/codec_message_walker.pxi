# Schema-driven encoder and decoder of Kafka request/response bodies.
#
# tools/gen_messages.py turns Kafka's JSON message schemas into field tables
# (kafkaev/codec_messages.pxi); this file walks them. One interpreter instead of
# one generated function per struct and version keeps _proto's C small enough to
# compile in seconds, and every version rule lives in one place:
#   - a field is on the wire only in its "versions";
#   - flexible versions use compact strings/bytes/arrays and end each struct with
#     tagged fields; a field's "taggedVersions" move it into that section;
#   - "nullableVersions" allow null (-1 length, 0 compact length, Int8 -1 for structs).

from cpython.buffer cimport PyObject_CheckBuffer
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
import enum as _enum
import uuid as _uuid

ZERO_UUID = _uuid.UUID(int=0)


cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        Py_ssize_t offset

cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    PyObject *PyType_GenericAlloc(PyTypeObject *type, Py_ssize_t nitems) except NULL


# Message fields are __slots__; the codec reads and writes them at their offsets, as the
# slot descriptors do, without a getattr/setattr lookup per field (the Fetch/Produce paths).
cdef Py_ssize_t _slot_offset(type cls, str name) except -1:
    descr = cls.__dict__.get(name) if name in cls.__dict__ else None
    if descr is None or type(descr).__name__ != "member_descriptor":
        raise TypeError(f"{cls.__name__}.{name} is not a slot")
    return (<PyMemberDescrObject *><PyObject *>descr).d_member.offset


cdef inline object _slot_get(object o, Py_ssize_t offset, str name):
    cdef PyObject *value = (<PyObject **>((<char *><PyObject *>o) + offset))[0]
    if value == NULL:
        raise AttributeError(f"{type(o).__name__}.{name} is not set")
    return <object>value


cdef inline void _slot_set(object o, Py_ssize_t offset, object value):
    cdef PyObject **slot = <PyObject **>((<char *><PyObject *>o) + offset)
    cdef PyObject *old = slot[0]
    Py_INCREF(value)
    slot[0] = <PyObject *>value
    Py_XDECREF(old)


cdef enum FieldKind:
    K_INT8 = 0
    K_INT16 = 1
    K_INT32 = 2
    K_INT64 = 3
    K_UINT16 = 4
    K_UINT32 = 5
    K_FLOAT64 = 6
    K_BOOL = 7
    K_STRING = 8
    K_BYTES = 9
    K_RECORDS = 10
    K_UUID = 11
    K_STRUCT = 12

cdef enum:
    VERSION_OPEN = 0x7FFF  # upper bound of an open-ended range ("3+")
    ERR_UNSUPPORTED_VERSION = 35  # errors.UNSUPPORTED_VERSION, see _decode_api_versions_fallback

# Python names of the kinds, for the tables and error messages.
KIND_NAMES = ("int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "bool",
              "string", "bytes", "records", "uuid", "struct")
# Value ranges of the integer kinds, checked when a message is built.
_INT_RANGES = {
    K_INT8: (-(1 << 7), (1 << 7) - 1),
    K_INT16: (-(1 << 15), (1 << 15) - 1),
    K_INT32: (-(1 << 31), (1 << 31) - 1),
    K_INT64: (-(1 << 63), (1 << 63) - 1),
    K_UINT16: (0, (1 << 16) - 1),
    K_UINT32: (0, (1 << 32) - 1),
}


cdef class _StructSpec


cdef class _FieldSpec:
    """One schema field: wire type and the version ranges it follows."""
    cdef readonly str name          # snake_case attribute
    cdef bytes cname                # the same, for ReadBuffer.field
    cdef readonly int kind
    cdef readonly bint array
    cdef int16_t vmin, vmax         # present in these versions
    cdef int16_t nmin, nmax         # nullable in these (nmin > nmax: never)
    cdef int16_t tmin, tmax         # tagged in these
    cdef readonly int32_t tag       # -1: not a tagged field
    cdef bint classic               # never compact, even in flexible versions
    cdef readonly _StructSpec struct
    cdef readonly object default    # a value, or a factory when `fresh`
    cdef readonly bint fresh        # lists and structs are built anew per message
    cdef Py_ssize_t offset          # of the slot in the message class

    cdef inline bint present(self, int16_t v):
        return self.vmin <= v <= self.vmax

    cdef inline bint nullable(self, int16_t v):
        return self.nmin <= v <= self.nmax

    cdef inline object make_default(self):
        return self.default() if self.fresh else self.default

    def versions(self):
        """(first, last) version the field exists in; last is 32767 when open-ended."""
        return (self.vmin, self.vmax)

    def nullable_versions(self):
        return (self.nmin, self.nmax)

    def tagged_versions(self):
        return (self.tmin, self.tmax)


cdef class _StructSpec:
    """A message or nested struct: its class and fields in wire order."""
    cdef readonly str name
    cdef readonly object cls
    cdef readonly int16_t min_version, max_version
    cdef int16_t flex_min           # first flexible version (VERSION_OPEN: never)
    cdef readonly list fields       # regular fields, in wire order
    cdef readonly list tagged       # tagged fields, ascending tag
    cdef readonly list all_fields   # schema order (constructor keywords)
    cdef dict by_tag
    cdef PyTypeObject *type         # cls, for allocating decoded messages


cdef tuple _parse_versions(object spec):
    """"3+" -> (3, open), "0-7" -> (0, 7), "5" -> (5, 5), "none" -> empty (1, 0)."""
    if spec is None or spec == "none":
        return (1, 0)
    if spec.endswith("+"):
        return (int(spec[:-1]), VERSION_OPEN)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


cdef _FieldSpec _make_field_spec(str name, int kind, str versions, str nullable, str tagged, int tag,
                       object default, bint fresh, bint array, _StructSpec struct, bint classic):
    cdef _FieldSpec f = _FieldSpec.__new__(_FieldSpec)
    f.name = name
    f.cname = name.encode()
    f.kind = kind
    f.array = array
    f.vmin, f.vmax = _parse_versions(versions)
    f.nmin, f.nmax = _parse_versions(nullable)
    f.tmin, f.tmax = _parse_versions(tagged)
    f.tag = tag
    f.classic = classic
    f.struct = struct
    f.default = default
    f.fresh = fresh
    return f


cdef _StructSpec _make_struct_spec(type cls, str versions, str flexible, list fields):
    """Binds a message class to its fields."""
    cdef _StructSpec s = _StructSpec.__new__(_StructSpec)
    cdef _FieldSpec f
    s.name = cls.__name__
    s.cls = cls
    s.min_version, s.max_version = _parse_versions(versions)
    flo, fhi = _parse_versions(flexible)
    s.flex_min = flo if flo <= fhi else VERSION_OPEN
    s.all_fields = fields
    s.fields = [f for f in fields if f.tag < 0]
    s.tagged = sorted([f for f in fields if f.tag >= 0], key=_tag_key)
    s.by_tag = {f.tag: f for f in s.tagged}
    s.type = <PyTypeObject *>cls
    for f in fields:
        f.offset = _slot_offset(cls, f.name)
    cls._spec = s
    cls._fields = tuple(f.name for f in fields)
    return s


def _tag_key(_FieldSpec f):
    return f.tag


# ---- message objects


class MessageStruct:
    """Base of every message and struct: keyword construction with the schema's
    defaults, field-wise equality, a readable repr. Fields are slots."""

    __slots__ = ("unknown_tagged_fields",)
    _fields = ()
    _spec = None

    def __init__(self, **fields):
        _init_struct(self, fields)

    def __repr__(self):
        parts = [f"{name}={getattr(self, name)!r}" for name in type(self)._fields]
        if self.unknown_tagged_fields:
            parts.append(f"unknown_tagged_fields={self.unknown_tagged_fields!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        for name in type(self)._fields:
            if getattr(self, name) != getattr(other, name):
                return False
        return (self.unknown_tagged_fields or None) == (other.unknown_tagged_fields or None)

    __hash__ = None

    def to_dict(self):
        """The fields as a dict, nested structs and lists converted too (for logs and tools)."""
        return {name: _plain(getattr(self, name)) for name in type(self)._fields}


cdef Py_ssize_t _UNKNOWN_TAGS_OFFSET = _slot_offset(MessageStruct, "unknown_tagged_fields")


def built_unchecked(cls, *values):
    """A ``cls`` message holding ``values`` in its fields' schema order, with none of the keyword
    constructor's checks: for the connection's own requests, whose typed request records
    checked every value when they were made (on the produce path the three structs of a
    one-batch request cost ~14 µs through the keyword constructor)."""
    cdef _StructSpec spec = <_StructSpec?>cls._spec
    cdef _FieldSpec f
    cdef Py_ssize_t i
    if len(values) != len(spec.all_fields):
        raise TypeError(f"built_unchecked: {spec.name} has {len(spec.all_fields)} fields, got {len(values)} values")
    cdef object o = <object>PyType_GenericAlloc(spec.type, 0)
    Py_DECREF(o)  # <object> took a second reference to the new object
    for i in range(len(values)):
        f = <_FieldSpec>spec.all_fields[i]
        _slot_set(o, f.offset, values[i])
    _slot_set(o, _UNKNOWN_TAGS_OFFSET, None)
    return o


def _plain(value):
    if isinstance(value, MessageStruct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(x) for x in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


cdef object _MISSING = object()


cdef int _init_struct(object self, dict given) except -1:
    cdef _StructSpec spec = <_StructSpec>type(self)._spec
    cdef _FieldSpec f
    cdef Py_ssize_t left = len(given)
    for f in spec.all_fields:
        value = given.get(f.name, _MISSING) if left else _MISSING
        if value is _MISSING:
            value = f.make_default()
        else:
            left -= 1
            _check_value(spec, f, value)
        _slot_set(self, f.offset, value)
    unknown = None
    if left and "unknown_tagged_fields" in given:
        unknown = given["unknown_tagged_fields"]
        left -= 1
    _slot_set(self, _UNKNOWN_TAGS_OFFSET, unknown)
    if left:
        names = set(given) - {f.name for f in spec.all_fields} - {"unknown_tagged_fields"}
        raise TypeError(f"{spec.name}() got unexpected keyword argument(s): {', '.join(sorted(names))}")
    return 0


cdef int _check_value(_StructSpec spec, _FieldSpec f, object value) except -1:
    """Rejects a wrongly typed constructor argument at once, naming it."""
    if value is None:
        return 0  # nullability depends on the version: checked when encoding
    if f.array:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{spec.name}.{f.name} must be a list, got {type(value).__name__}")
        for item in value:
            _check_scalar(spec, f, item)
        return 0
    return _check_scalar(spec, f, value)


cdef int _check_scalar(_StructSpec spec, _FieldSpec f, object value) except -1:
    cdef int kind = f.kind
    if kind <= K_UINT32:
        if not isinstance(value, int):
            raise TypeError(f"{spec.name}.{f.name} must be an int, got {type(value).__name__}")
        lo, hi = _INT_RANGES[kind]
        if not lo <= value <= hi:
            raise ValueError(f"{spec.name}.{f.name} = {value} is out of range for {KIND_NAMES[kind]}")
    elif kind == K_FLOAT64:
        if not isinstance(value, (int, float)):
            raise TypeError(f"{spec.name}.{f.name} must be a float, got {type(value).__name__}")
    elif kind == K_BOOL:
        if not isinstance(value, (bool, int)):
            raise TypeError(f"{spec.name}.{f.name} must be a bool, got {type(value).__name__}")
    elif kind == K_STRING:
        if not isinstance(value, str):
            raise TypeError(f"{spec.name}.{f.name} must be a str, got {type(value).__name__}")
    elif kind == K_BYTES:
        if not PyObject_CheckBuffer(value):
            raise TypeError(f"{spec.name}.{f.name} must be bytes-like, got {type(value).__name__}")
    elif kind == K_RECORDS:
        if not PyObject_CheckBuffer(value) and type(value) is not EncodedBatch:
            raise TypeError(f"{spec.name}.{f.name} must be bytes-like or an EncodedBatch, got {type(value).__name__}")
    elif kind == K_UUID:
        if not isinstance(value, _uuid.UUID):
            raise TypeError(f"{spec.name}.{f.name} must be a uuid.UUID, got {type(value).__name__}")
    elif kind == K_STRUCT:
        if not isinstance(value, f.struct.cls):
            raise TypeError(f"{spec.name}.{f.name} must be a {f.struct.name}, got {type(value).__name__}")
    return 0


# ---- encoding


cdef object _not_nullable(_StructSpec spec, _FieldSpec f, int16_t v):
    return ValueError(f"{spec.name}.{f.name} must not be None in version {v}")


cdef int _encode_struct(WriteBuffer buf, _StructSpec spec, object o, int16_t v) except -1:
    cdef bint flex = v >= spec.flex_min
    cdef _FieldSpec f = None
    cdef list tags = None
    cdef WriteBuffer tb
    if not isinstance(o, spec.cls):
        raise TypeError(f"expected a {spec.name}, got {type(o).__name__}")
    try:
        for f in spec.fields:
            if f.present(v):
                _write_field(buf, spec, f, _slot_get(o, f.offset, f.name), v, flex and not f.classic)
        if flex:
            for f in spec.tagged:
                if not (f.tmin <= v <= f.tmax):
                    continue
                value = _slot_get(o, f.offset, f.name)
                # A tagged field at its default is left out, as the Java client does.
                if value is None or (not value if f.fresh else value == f.default):
                    continue
                tb = WriteBuffer()
                _write_field(tb, spec, f, value, v, True)
                if tags is None:
                    tags = []
                tags.append((f.tag, tb.to_bytes()))
            f = None
            _write_tagged_fields(buf, tags, _slot_get(o, _UNKNOWN_TAGS_OFFSET, "unknown_tagged_fields"))
    except (TypeError, OverflowError) as exc:
        if f is None or str(exc).startswith(spec.name + "."):
            raise
        raise type(exc)(f"{spec.name}.{f.name}: {exc}") from exc
    return 0


cdef int _write_field(WriteBuffer buf, _StructSpec spec, _FieldSpec f, object value, int16_t v,
                      bint flex) except -1:
    cdef Py_ssize_t n
    if not f.array:
        return _write_value(buf, spec, f, value, v, flex, f.nullable(v))
    if value is None:
        if not f.nullable(v):
            raise _not_nullable(spec, f, v)
        n = NULL_LENGTH
    else:
        n = len(value)
    if flex:
        buf.write_compact_array_length(n)
    else:
        buf.write_array_length(n)
    if n > 0:
        for item in value:
            _write_value(buf, spec, f, item, v, flex, False)
    return 0


cdef int _write_value(WriteBuffer buf, _StructSpec spec, _FieldSpec f, object value, int16_t v,
                      bint flex, bint nullable) except -1:
    cdef int kind = f.kind
    if kind == K_INT32:
        buf.write_int32(value)
    elif kind == K_INT64:
        buf.write_int64(value)
    elif kind == K_INT16:
        buf.write_int16(value)
    elif kind == K_INT8:
        buf.write_int8(value)
    elif kind == K_BOOL:
        buf.write_bool(value)
    elif kind == K_UINT16:
        buf.write_int16(<int16_t><uint16_t>value)
    elif kind == K_UINT32:
        buf.write_uint32(value)
    elif kind == K_FLOAT64:
        buf.write_float64(value)
    elif kind == K_UUID:
        buf.write_uuid(value)
    elif value is None:
        if not nullable:
            raise _not_nullable(spec, f, v)
        if kind == K_STRUCT:
            buf.write_int8(NULL_LENGTH)
        elif flex:
            buf.write_uvarint(0)
        elif kind == K_STRING:
            buf.write_int16(NULL_LENGTH)
        else:
            buf.write_int32(NULL_LENGTH)
    elif kind == K_STRING:
        if flex:
            buf.write_compact_string(value)
        else:
            buf.write_string(value)
    elif kind == K_BYTES or kind == K_RECORDS:
        if flex:
            buf.write_compact_bytes(value)
        else:
            buf.write_bytes(value)
    else:  # K_STRUCT
        if nullable:
            buf.write_int8(1)
        _encode_struct(buf, f.struct, value, v)
    return 0


cdef int _write_tagged_fields(WriteBuffer buf, list tags, object unknown) except -1:
    if tags is None and not unknown:
        buf.write_uvarint(0)
        return 0
    if tags is None:
        tags = []
    if unknown:
        tags.extend(unknown.items())
    tags.sort(key=_first)  # readers may rely on ascending tags, as Java writes them
    buf.write_uvarint(len(tags))
    for tag, payload in tags:
        buf.write_uvarint(tag)
        buf.write_uvarint(len(payload))
        buf.write_pybuffer(payload)
    return 0


def _first(pair):
    return pair[0]


# ---- decoding


cdef object _decode_struct(ReadBuffer r, _StructSpec spec, int16_t v):
    cdef bint flex = v >= spec.flex_min
    cdef _FieldSpec f
    # Allocated without __init__: every slot is filled below.
    cdef object o = <object>PyType_GenericAlloc(spec.type, 0)
    Py_DECREF(o)  # <object> took a second reference to the new object
    for f in spec.fields:
        if f.present(v):
            r.field = <const char *>f.cname
            _slot_set(o, f.offset, _read_field(r, f, v, flex and not f.classic))
        else:
            _slot_set(o, f.offset, f.make_default())
    for f in spec.tagged:
        _slot_set(o, f.offset, f.make_default())
    _slot_set(o, _UNKNOWN_TAGS_OFFSET, _read_tagged_section(r, spec, o, v) if flex else None)
    return o


cdef object _read_tagged_section(ReadBuffer r, _StructSpec spec, object o, int16_t v):
    """A flexible struct's tagged fields: the known ones into their slots of ``o`` (which hold
    their defaults), the others returned as {tag: bytes}, or None when there are none."""
    cdef _FieldSpec f
    cdef uint64_t ntags, i, tag, size
    cdef object unknown = None
    cdef ReadBuffer sub
    r.field = b"tagged fields"
    ntags = r.read_uvarint()
    for i in range(ntags):
        tag = r.read_uvarint()
        size = r.read_uvarint()
        if size > <uint64_t>r.remaining():
            r._short(<Py_ssize_t>min(size, <uint64_t>0x7FFFFFFFFFFFFFFF))
        f = spec.by_tag.get(tag) if spec.tagged else None
        if f is not None and f.tmin <= v <= f.tmax:
            # A bounded cursor: a tagged value never reads into what follows it.
            sub = r.sub(<Py_ssize_t>size)
            sub.field = <const char *>f.cname
            _slot_set(o, f.offset, _read_field(sub, f, v, True))
        else:
            if unknown is None:
                unknown = {}
            unknown[tag] = r.read_raw(<Py_ssize_t>size)[:<Py_ssize_t>size]
    return unknown


cdef object _read_field(ReadBuffer r, _FieldSpec f, int16_t v, bint flex):
    cdef Py_ssize_t n, i
    cdef list items
    if not f.array:
        return _read_value(r, f, v, flex, f.nullable(v))
    n = r.read_compact_array_length() if flex else r.read_array_length()
    if n < 0:
        if not f.nullable(v):
            r._fail("is null but the field is not nullable")
        return None
    items = []
    for i in range(n):
        items.append(_read_value(r, f, v, flex, False))
    return items


cdef object _read_value(ReadBuffer r, _FieldSpec f, int16_t v, bint flex, bint nullable):
    cdef int kind = f.kind
    cdef object value
    if kind == K_INT32:
        return r.read_int32()
    if kind == K_INT64:
        return r.read_int64()
    if kind == K_INT16:
        return r.read_int16()
    if kind == K_INT8:
        return r.read_int8()
    if kind == K_BOOL:
        return r.read_bool()
    if kind == K_UINT16:
        return <uint16_t>r.read_int16()
    if kind == K_UINT32:
        return r.read_uint32()
    if kind == K_FLOAT64:
        return r.read_float64()
    if kind == K_UUID:
        return r.read_uuid()
    if kind == K_RECORDS:
        return r.read_records(flex)  # zero-copy memoryview into the frame
    if kind == K_STRING:
        value = r.read_compact_nullable_string() if flex else r.read_nullable_string()
    elif kind == K_BYTES:
        value = r.read_compact_nullable_bytes() if flex else r.read_nullable_bytes()
    else:  # K_STRUCT
        if nullable and r.read_int8() < 0:
            return None
        return _decode_struct(r, f.struct, v)
    if value is None and not nullable:
        r._fail("is null but the field is not nullable")
    return value


# ---- APIs, headers and frames


cdef class _ApiSpec:
    """One API: key, version range, first flexible version, request/response tables."""
    cdef readonly str name
    cdef readonly int16_t key, min_version, max_version
    cdef int16_t first_flexible     # VERSION_OPEN: never flexible
    cdef readonly _StructSpec request, response
    cdef tuple request_labels       # b"Fetch v12 request", kept alive for ReadBuffer.api
    cdef tuple response_labels


cdef list _APIS_BY_KEY = []


cdef _ApiSpec _make_api_spec(str name, int key, _StructSpec request, _StructSpec response, str flexible):
    cdef _ApiSpec a = _ApiSpec.__new__(_ApiSpec)
    a.name = name
    a.key = key
    a.min_version = request.min_version
    a.max_version = request.max_version
    flo, fhi = _parse_versions(flexible)
    a.first_flexible = flo if flo <= fhi else VERSION_OPEN
    a.request = request
    a.response = response
    a.request_labels = tuple(f"{name} v{v} request".encode() for v in range(a.max_version + 1))
    a.response_labels = tuple(f"{name} v{v} response".encode() for v in range(a.max_version + 1))
    while len(_APIS_BY_KEY) <= key:
        _APIS_BY_KEY.append(None)
    _APIS_BY_KEY[key] = a
    return a


cdef _ApiSpec _api_spec(int16_t api_key):
    if 0 <= api_key < len(_APIS_BY_KEY):
        return <_ApiSpec>_APIS_BY_KEY[api_key]
    return None


cdef _ApiSpec _checked_api(int16_t api_key, int16_t version, bint from_wire):
    """The API of a key/version pair the caller chose (ValueError) or read (ProtocolError)."""
    cdef _ApiSpec a = _api_spec(api_key)
    if a is None:
        if from_wire:
            raise ProtocolError(f"request header: unknown api_key {api_key}")
        raise ValueError(f"api_key {api_key} is not an API kafkaev speaks")
    if version < a.min_version or version > a.max_version:
        if from_wire:
            raise ProtocolError(f"{a.name} request: unsupported version {version}")
        raise ValueError(f"api_version {version} is not supported for {a.name} "
                         f"(versions {a.min_version}..{a.max_version})")
    return a


cdef bint request_header_flexible(int16_t api_key, int16_t api_version):
    """Request header v2 (tagged fields) from the API's first flexible version, else v1."""
    cdef _ApiSpec a = _api_spec(api_key)
    return a is not None and api_version >= a.first_flexible


cdef bint response_header_flexible(int16_t api_key, int16_t api_version):
    """Response header v1 for flexible versions, except ApiVersions: always v0, so that a
    client can read the answer before it knows what the broker supports."""
    if api_key == API_API_VERSIONS:
        return False
    return request_header_flexible(api_key, api_version)


cdef int encode_request(WriteBuffer buf, int16_t api_key, int16_t api_version, int32_t correlation_id,
                        object client_id, object body) except -1:
    """Writes one complete request frame: size prefix, header, body."""
    cdef _ApiSpec a = _checked_api(api_key, api_version, False)
    cdef WriteMark mark = buf.mark()
    if not isinstance(body, a.request.cls):
        raise TypeError(f"body must be a {a.request.name} for {a.name}, got {type(body).__name__}")
    buf.start_frame()
    try:
        buf.write_int16(api_key)
        buf.write_int16(api_version)
        buf.write_int32(correlation_id)
        buf.write_nullable_string(client_id)  # classic even in header v2
        if api_version >= a.first_flexible:
            buf.write_uvarint(0)
        _encode_struct(buf, a.request, body, api_version)
        buf.end_frame()
    except BaseException:
        # Drop the half-written frame: the buffer may hold other requests for the socket.
        buf.rewind(mark)
        raise
    return 0


cdef int32_t decode_response_header(ReadBuffer r, int16_t api_key, int16_t api_version) except? -1:
    """Reads the correlation id (and the tagged fields of header v1)."""
    cdef _ApiSpec a = _checked_api(api_key, api_version, False)
    cdef int32_t correlation_id
    r.api = <const char *>a.response_labels[api_version]
    r.field = b"correlation_id"
    correlation_id = r.read_int32()
    if response_header_flexible(api_key, api_version):
        r.field = b"header tagged fields"
        r.skip_tagged_fields()
    return correlation_id


cdef object decode_response_body(ReadBuffer r, int16_t api_key, int16_t api_version):
    """Decodes a response body. Bytes after it are ignored: a newer broker may append."""
    cdef _ApiSpec a = _checked_api(api_key, api_version, False)
    if api_key == API_API_VERSIONS and api_version > 0:
        api_version = _api_versions_body_version(r, api_version)
    r.api = <const char *>a.response_labels[api_version]
    if api_key == API_PRODUCE:
        return decode_produce_response(r, api_version)  # the hot answer, by hand
    return _decode_struct(r, a.response, api_version)


cdef int16_t _api_versions_body_version(ReadBuffer r, int16_t api_version) except -1:
    """A broker that does not know the requested ApiVersions version answers with a v0
    body and UNSUPPORTED_VERSION (KIP-511), whatever version was asked for."""
    cdef Py_ssize_t start = r._pos
    if r.remaining() >= 2:
        r.field = b"error_code"
        if r.read_int16() == ERR_UNSUPPORTED_VERSION:
            api_version = 0
        r._pos = start
    return api_version


# ---- Python surface (tests, tools, fake brokers)


def encode_request_frame(int api_key, int version, int correlation_id, client_id, body):
    """The complete request frame (Int32 size prefix included) as bytes."""
    cdef WriteBuffer buf = WriteBuffer()
    encode_request(buf, api_key, version, correlation_id, client_id, body)
    return buf.to_bytes()


def decode_response_frame(int api_key, int version, payload):
    """Decodes a response frame without its size prefix: (correlation_id, body)."""
    cdef ReadBuffer r = ReadBuffer(payload)
    cdef int32_t correlation_id = decode_response_header(r, api_key, version)
    return correlation_id, decode_response_body(r, api_key, version)


def decode_request_frame(payload):
    """Decodes a request frame without its size prefix, as a broker does:
    (api_key, version, correlation_id, client_id, body)."""
    cdef ReadBuffer r = ReadBuffer(payload, "request header")
    cdef int16_t api_key, version
    cdef int32_t correlation_id
    cdef _ApiSpec a
    r.field = b"api_key"
    api_key = r.read_int16()
    r.field = b"api_version"
    version = r.read_int16()
    a = _checked_api(api_key, version, True)
    r.api = <const char *>a.request_labels[version]
    r.field = b"correlation_id"
    correlation_id = r.read_int32()
    r.field = b"client_id"
    client_id = r.read_nullable_string()
    if version >= a.first_flexible:
        r.field = b"header tagged fields"
        r.skip_tagged_fields()
    return api_key, version, correlation_id, client_id, _decode_struct(r, a.request, version)


def encode_response_frame(int api_key, int version, int correlation_id, body):
    """A complete response frame (Int32 size prefix included) as a broker sends it."""
    cdef _ApiSpec a = _checked_api(api_key, version, False)
    cdef WriteBuffer buf = WriteBuffer()
    if not isinstance(body, a.response.cls):
        raise TypeError(f"body must be a {a.response.name} for {a.name}, got {type(body).__name__}")
    buf.start_frame()
    buf.write_int32(correlation_id)
    if response_header_flexible(api_key, version):
        buf.write_uvarint(0)
    _encode_struct(buf, a.response, body, version)
    buf.end_frame()
    return buf.to_bytes()


def request_header_version(int api_key, int version):
    """1 or 2: the request header version of this API version."""
    return 2 if request_header_flexible(api_key, version) else 1


def response_header_version(int api_key, int version):
    """0 or 1: the response header version of this API version."""
    return 1 if response_header_flexible(api_key, version) else 0


def message_spec(cls):
    """The field table of a message class: [(name, type, (first, last) versions, ...)]
    for tools and tests; `last` is 32767 for open-ended ranges."""
    cdef _StructSpec spec = <_StructSpec?>cls._spec
    cdef _FieldSpec f
    return [
        (f.name, ("[]" if f.array else "") + (f.struct.name if f.kind == K_STRUCT else KIND_NAMES[f.kind]),
         (f.vmin, f.vmax), (f.nmin, f.nmax), f.tag, (f.tmin, f.tmax))
        for f in spec.all_fields
    ]


cdef bytes _encode_data(str name, object obj, int version):
    """A "data" schema (no header): Int16 version, then the struct."""
    cdef _StructSpec spec = _STRUCTS[name]
    cdef WriteBuffer buf
    if version < spec.min_version or version > spec.max_version:
        raise ValueError(f"version {version} is not supported for {spec.name} "
                         f"(versions {spec.min_version}..{spec.max_version})")
    buf = WriteBuffer()
    buf.write_int16(version)
    _encode_struct(buf, spec, obj, version)
    return buf.to_bytes()


cdef object _decode_data(str name, object data):
    """Newer versions decode with the newest known one: data schemas only ever append
    fields, so the known prefix still reads (as the Java client does)."""
    cdef _StructSpec spec = _STRUCTS[name]
    cdef ReadBuffer r = ReadBuffer(data, name)
    cdef int16_t version
    r.field = b"version"
    version = r.read_int16()
    if version < spec.min_version:
        r._fail(f"has the invalid version {version}")
    if version > spec.max_version:
        version = spec.max_version
    return _decode_struct(r, spec, version)


# ---- building the tables from the generated data (kafkaev/codec_messages.pxi)

cdef enum:
    FIELD_FRESH = 1    # the default is built anew per message: a list, or the struct itself
    FIELD_CLASSIC = 2  # never compact, even in flexible versions

cdef dict _STRUCTS = {}  # class name -> _StructSpec


cdef _FieldSpec _field_from(tuple entry):
    """(name, type, versions, nullable versions, tagged versions, tag, default, flags)"""
    name, type_name, versions, nullable, tagged, tag, default, flags = entry
    cdef bint array = type_name.startswith("[]")
    cdef str base = type_name[2:] if array else type_name
    cdef _StructSpec struct = None
    cdef int kind
    if base in KIND_NAMES:
        kind = KIND_NAMES.index(base)
    else:
        kind = K_STRUCT
        struct = _STRUCTS[base]  # nested structs come first in the data
    if flags & FIELD_FRESH:
        default = list if array else struct.cls
    elif kind == K_UUID and not array:
        default = ZERO_UUID
    return _make_field_spec(name, kind, versions, nullable, tagged, tag, default, flags & FIELD_FRESH, array, struct,
                  flags & FIELD_CLASSIC)


def _build_message_tables(dict namespace, tuple structs, tuple apis):
    """Creates the message classes (slots named after the fields) and their field tables,
    and registers the APIs. Data instead of generated code keeps _proto quick to compile."""
    cdef tuple entry
    for name, versions, flexible, doc, fields in structs:
        cls = type(name, (MessageStruct,), {
            "__slots__": tuple([entry[0] for entry in fields]), "__doc__": doc, "__module__": __name__})
        namespace[name] = cls
        _STRUCTS[name] = _make_struct_spec(cls, versions, flexible, [_field_from(entry) for entry in fields])
    for name, key, request, response, flexible in apis:
        _make_api_spec(name, key, _STRUCTS[request], _STRUCTS[response], flexible)


def _message_classes(bint requests):
    """{ApiKey: request (or response) class} of every API."""
    cdef _ApiSpec a
    return {ApiKey(a.key): (a.request if requests else a.response).cls for a in _APIS_BY_KEY if a is not None}
