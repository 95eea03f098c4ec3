# Record-set reader for the records section of a Fetch response partition (or a log
# segment), which is a sequence of entries whose format is told by the magic byte at
# offset 16 of each entry: a RecordBatch (magic 2; its layout, and its records', is in
# codec.pxd, with the names of its header fields' positions) or a legacy message:
#
#   Legacy message (magic 0 and 1)
#   Offset      => Int64    0
#   MessageSize => Int32    8
#   Crc         => Uint32  12 (CRC-32, magic..end)
#   Magic       => Int8    16
#   Attributes  => Int8    17 (bits 0-2 codec, 3 ts type)
#   Timestamp   => Int64   18 (magic 1 only)
#   Key         => Bytes (Int32 length, -1 null)
#   Value       => Bytes (compressed: an inner set)
#
# The broker may cut the last entry short (fetch size limits): that is reported as
# `truncated`, not as an error. Anything else malformed is a ProtocolError. Every length,
# count and varint is checked against the end of its entry before use, so no input reads
# out of bounds or allocates more than its bytes justify.

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_Append
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

import zlib as _zlib

# Message.timestamp_type values (librdkafka/confluent-kafka numbering shifted by one:
# Kafka's own attribute bit is 0 for CreateTime and 1 for LogAppendTime).
TIMESTAMP_NOT_AVAILABLE = -1
TIMESTAMP_CREATE_TIME = 0
TIMESTAMP_LOG_APPEND_TIME = 1

# ControlRecord.type values (the Int16 after the version in a control record's key).
CONTROL_ABORT = 0
CONTROL_COMMIT = 1

cdef enum:
    # RecordBatch (magic 2): the layout and attributes bits of codec.pxd (RB_*, BATCH_HEADER_SIZE).
    _RR_LEGACY_CRC_OFFSET = 12
    _RR_LEGACY_V0_MIN_SIZE = 14      # MessageSize of a magic 0 message with null key and value
    _RR_LEGACY_V1_MIN_SIZE = 22      # ... magic 1 (adds Timestamp)
    _RR_CONTROL_KEY_SIZE = 4         # version Int16 + type Int16

    _RR_MAX_VARINT_BYTES = 5
    _RR_MAX_VARLONG_BYTES = 10


# What went wrong inside a record, for the error message.
cdef enum _RecordFault:
    _RF_OK = 0
    _RF_LENGTH
    _RF_ATTRIBUTES
    _RF_TIMESTAMP_DELTA
    _RF_OFFSET_DELTA
    _RF_KEY_LENGTH
    _RF_KEY
    _RF_VALUE_LENGTH
    _RF_VALUE
    _RF_HEADER_COUNT
    _RF_HEADER_KEY_LENGTH
    _RF_HEADER_KEY
    _RF_HEADER_VALUE_LENGTH
    _RF_HEADER_VALUE
    _RF_SIZE_MISMATCH

_RECORD_FAULT_FIELDS = (
    "", "length", "attributes", "timestampDelta", "offsetDelta", "keyLength", "key",
    "valueLength", "value", "headersCount", "headerKeyLength", "headerKey",
    "headerValueLength", "headerValue", "length",
)


# ------------------------------------------------------------------ raw-pointer reads

cdef inline int16_t _rr_be16(const uint8_t *p) noexcept nogil:
    return <int16_t>((<uint16_t>p[0] << 8) | p[1])


cdef inline int32_t _rr_be32(const uint8_t *p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16)
                     | (<uint32_t>p[2] << 8) | <uint32_t>p[3])


cdef inline int64_t _rr_be64(const uint8_t *p) noexcept nogil:
    return <int64_t>((<uint64_t><uint32_t>_rr_be32(p) << 32) | <uint32_t>_rr_be32(p + 4))


cdef inline bint _rr_uvarint(const uint8_t **pp, const uint8_t *end, int max_bytes,
                             uint64_t *out) noexcept nogil:
    """Unsigned LEB128 at *pp; False when it runs past `end` or over `max_bytes`."""
    cdef const uint8_t *p = pp[0]
    cdef uint64_t value = 0
    cdef int shift = 0, i
    for i in range(max_bytes):
        if p >= end:
            return False
        value |= (<uint64_t>(p[0] & 0x7F)) << shift
        if p[0] < 0x80:
            pp[0] = p + 1
            out[0] = value
            return True
        p += 1
        shift += 7
    return False


cdef bint _rr_varint_long_form(const uint8_t **pp, const uint8_t *end, int64_t *out) noexcept nogil:
    cdef uint64_t raw
    if not _rr_uvarint(pp, end, _RR_MAX_VARINT_BYTES, &raw) or raw > 0xFFFFFFFFULL:
        return False
    out[0] = <int32_t>((<uint32_t>raw >> 1) ^ -(<uint32_t>raw & 1))
    return True


cdef inline bint _rr_varint(const uint8_t **pp, const uint8_t *end, int64_t *out) noexcept nogil:
    """Zig-zag Varint (at most 5 bytes, an Int32). Only the one- and two-byte forms (lengths
    and deltas below 8192) are inline: small enough that the compiler inlines them at every
    call."""
    cdef const uint8_t *p = pp[0]
    cdef uint32_t raw
    if p < end and p[0] < 0x80:
        pp[0] = p + 1
        out[0] = <int64_t>(p[0] >> 1) ^ -<int64_t>(p[0] & 1)
        return True
    if end - p >= 2 and p[1] < 0x80:
        raw = (<uint32_t>p[0] & 0x7F) | (<uint32_t>p[1] << 7)
        pp[0] = p + 2
        out[0] = <int64_t>(raw >> 1) ^ -<int64_t>(raw & 1)
        return True
    return _rr_varint_long_form(pp, end, out)


cdef inline bint _rr_varlong(const uint8_t **pp, const uint8_t *end, int64_t *out) noexcept nogil:
    """Zig-zag Varlong (at most 10 bytes, an Int64)."""
    cdef uint64_t raw
    cdef const uint8_t *p = pp[0]
    if p < end and p[0] < 0x80:              # one byte: timestamp deltas within +-63 ms
        pp[0] = p + 1
        out[0] = <int64_t>(p[0] >> 1) ^ -<int64_t>(p[0] & 1)
        return True
    if not _rr_uvarint(pp, end, _RR_MAX_VARLONG_BYTES, &raw):
        return False
    out[0] = <int64_t>((raw >> 1) ^ -(raw & 1))
    return True


# ------------------------------------------------------------------ one v2 record

cdef struct _RawRecord:
    int8_t attributes
    int64_t timestamp_delta
    int64_t offset_delta
    const uint8_t *key             # NULL for a null key
    Py_ssize_t key_len
    const uint8_t *value           # NULL for a null value
    Py_ssize_t value_len
    const uint8_t *headers         # first header; validated by _rr_parse_record
    Py_ssize_t header_count
    const uint8_t *end             # first byte after the record


cdef _RecordFault _rr_parse_record(const uint8_t *p, const uint8_t *end,
                                   _RawRecord *r) noexcept nogil:
    """Validate the record at p (the set ends at `end`) and note where its parts are."""
    cdef int64_t length, n, i
    if not _rr_varint(&p, end, &length) or length < 0 or length > end - p:
        return _RF_LENGTH
    end = p + length
    r.end = end
    if p >= end:
        return _RF_ATTRIBUTES
    r.attributes = <int8_t>p[0]
    p += 1
    if not _rr_varlong(&p, end, &r.timestamp_delta):
        return _RF_TIMESTAMP_DELTA
    if not _rr_varint(&p, end, &r.offset_delta):
        return _RF_OFFSET_DELTA
    if not _rr_varint(&p, end, &n) or n < -1:
        return _RF_KEY_LENGTH
    if n > end - p:
        return _RF_KEY
    r.key = p
    if n < 0:
        r.key = NULL
    r.key_len = n
    if n > 0:
        p += n
    if not _rr_varint(&p, end, &n) or n < -1:
        return _RF_VALUE_LENGTH
    if n > end - p:
        return _RF_VALUE
    r.value = p
    if n < 0:
        r.value = NULL
    r.value_len = n
    if n > 0:
        p += n
    # A header takes at least two bytes, so a count the record cannot hold is refused
    # before anything is allocated for it.
    if not _rr_varint(&p, end, &n) or n < 0 or n > (end - p) // 2:
        return _RF_HEADER_COUNT
    r.headers = p
    r.header_count = n
    for i in range(n):
        if not _rr_varint(&p, end, &length) or length < 0:
            return _RF_HEADER_KEY_LENGTH
        if length > end - p:
            return _RF_HEADER_KEY
        p += length
        if not _rr_varint(&p, end, &length) or length < -1:
            return _RF_HEADER_VALUE_LENGTH
        if length > end - p:
            return _RF_HEADER_VALUE
        if length > 0:
            p += length
    if p != end:
        return _RF_SIZE_MISMATCH
    return _RF_OK


cdef inline object _rr_nullable_bytes(const uint8_t *p, Py_ssize_t n):
    if p == NULL:
        return None
    return PyBytes_FromStringAndSize(<const char *>p, n)


cdef list _rr_build_headers(const uint8_t *p, Py_ssize_t count, const uint8_t *end):
    """Headers of a record _rr_parse_record already validated: [(str, bytes | None)]."""
    cdef list headers = []
    cdef int64_t key_len = 0, value_len = 0
    cdef Py_ssize_t i
    cdef const uint8_t *key
    for i in range(count):
        _rr_varint(&p, end, &key_len)
        key = p
        p += key_len
        _rr_varint(&p, end, &value_len)
        try:
            name = PyUnicode_DecodeUTF8(<const char *>key, key_len, NULL)
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"record header key is not valid UTF-8: {exc}") from None
        if value_len < 0:
            headers.append((name, None))
        else:
            headers.append((name, PyBytes_FromStringAndSize(<const char *>p, value_len)))
            p += value_len
    return headers


# ------------------------------------------------------------------ public result types

@cython.final
# A 1 MiB fetch of 100-byte records is ~9,500 Messages, all freed together once handled: kept
# for the next set instead of given back, their memory is not faulted in again each time
# (the allocator returns an emptied arena to the system). ~1.5 MiB held once it filled.
@cython.freelist(16384)
@cython.no_gc      # holds no container but the headers list, which stays tracked itself:
                   # skipping the collector's bookkeeping halves the consumer's per-record cost
cdef class Message:
    """One record as the consumer delivers it.

    timestamp_type is TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME or
    TIMESTAMP_NOT_AVAILABLE (magic 0 messages carry no timestamp; timestamp is then -1).
    headers is an ordered list of (key, value) pairs; keys may repeat, values may be None.
    leader_epoch is the batch's partition leader epoch, -1 when unknown (legacy formats).
    """
    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly int timestamp_type
    cdef readonly object key
    cdef readonly object value
    cdef list _headers            # None until a record has headers or someone asks for them
    cdef readonly int32_t leader_epoch

    @property
    def headers(self):
        """[(key, value)]: ordered, keys may repeat, values may be None."""
        if self._headers is None:
            self._headers = []
        return self._headers

    def __init__(self, str topic, int32_t partition, int64_t offset, key=None, value=None, *,
                 int64_t timestamp=NO_TIMESTAMP, int timestamp_type=TIMESTAMP_NOT_AVAILABLE,
                 list headers=None, int32_t leader_epoch=NO_LEADER_EPOCH):
        # The decoder bypasses this (Message.__new__ + direct slots); it serves tests and
        # users building messages by hand.
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self._headers = headers
        self.leader_epoch = leader_epoch

    def __repr__(self):
        return (f"Message(topic={self.topic!r}, partition={self.partition}, offset={self.offset}, "
                f"timestamp={self.timestamp}, timestamp_type={self.timestamp_type}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r}, leader_epoch={self.leader_epoch})")

    def __eq__(self, other):
        if not isinstance(other, Message):
            return NotImplemented
        cdef Message o = other
        return (self.topic == o.topic and self.partition == o.partition and self.offset == o.offset
                and self.timestamp == o.timestamp and self.timestamp_type == o.timestamp_type
                and self.key == o.key and self.value == o.value and (self._headers or []) == (o._headers or [])
                and self.leader_epoch == o.leader_epoch)

    __hash__ = None


# CPython 3.11+ specializes loading a member descriptor (LOAD_ATTR_SLOT: one read at a fixed
# offset) but not the getset property Cython generates for a `readonly` field, which takes the
# generic attribute lookup: about 11 ns more for every `msg.value` in a consumer's callback.
# The object fields a callback reads per record are therefore re-exposed as read-only member
# descriptors of Message once, when the module loads.
cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        const char *name
        int type
        Py_ssize_t offset
        int flags
        const char *doc
    int T_OBJECT_EX
    int READONLY

cdef extern from *:
    """
    /* Cython's name for Message's instance struct: a rename is a compile error here, not a
       wrong offset. */
    #define KEV_MESSAGE_OFFSET(field) \
        ((Py_ssize_t)offsetof(struct __pyx_obj_7kafkaev_8protocol_5codec_Message, field))
    #define KEV_MESSAGE_TOPIC_OFFSET KEV_MESSAGE_OFFSET(topic)
    #define KEV_MESSAGE_KEY_OFFSET KEV_MESSAGE_OFFSET(key)
    #define KEV_MESSAGE_VALUE_OFFSET KEV_MESSAGE_OFFSET(value)
    """
    Py_ssize_t KEV_MESSAGE_TOPIC_OFFSET
    Py_ssize_t KEV_MESSAGE_KEY_OFFSET
    Py_ssize_t KEV_MESSAGE_VALUE_OFFSET

cdef extern from "Python.h":
    ctypedef struct PyTypeObjectWithDict "PyTypeObject":
        PyObject *tp_dict
    object PyDescr_NewMember(type cls, PyMemberDef *member)
    void PyType_Modified(type cls)

cdef PyMemberDef _message_members[3]  # read by the descriptors for the module's lifetime


cdef void _expose_message_member(Py_ssize_t slot, const char *name, Py_ssize_t offset) except *:
    cdef PyMemberDef *m = &_message_members[slot]
    m.name = name
    m.type = T_OBJECT_EX  # never NULL: Message.__new__ sets every object field to None
    m.offset = offset
    m.flags = READONLY
    m.doc = NULL
    namespace = <dict>(<PyTypeObjectWithDict *>Message).tp_dict
    namespace[name.decode()] = PyDescr_NewMember(Message, m)


cdef void _expose_message_members() except *:
    _expose_message_member(0, "topic", KEV_MESSAGE_TOPIC_OFFSET)
    _expose_message_member(1, "key", KEV_MESSAGE_KEY_OFFSET)
    _expose_message_member(2, "value", KEV_MESSAGE_VALUE_OFFSET)
    PyType_Modified(Message)


_expose_message_members()


@cython.final
cdef class ControlRecord:
    """A transaction marker (control record) seen in the record set; never delivered.

    type is CONTROL_ABORT or CONTROL_COMMIT (other values are kept as read)."""
    cdef readonly int64_t offset
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int16_t type

    def __init__(self, int64_t offset, int64_t producer_id, int16_t producer_epoch, int16_t type):
        self.offset = offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.type = type

    def __repr__(self):
        kind = {CONTROL_ABORT: "ABORT", CONTROL_COMMIT: "COMMIT"}.get(self.type, str(self.type))
        return (f"ControlRecord(offset={self.offset}, producer_id={self.producer_id}, "
                f"producer_epoch={self.producer_epoch}, type={kind})")

    def __eq__(self, other):
        if not isinstance(other, ControlRecord):
            return NotImplemented
        cdef ControlRecord o = other
        return (self.offset == o.offset and self.producer_id == o.producer_id
                and self.producer_epoch == o.producer_epoch and self.type == o.type)

    __hash__ = None


@cython.final
cdef class FetchedRecords:
    """What read_records found in one partition's record set.

    messages        the deliverable records at or above the fetch offset, in offset order
    control         transaction markers (ControlRecord) at or above the fetch offset
    next_offset     where the next fetch starts: one past the last complete entry (even if
                    all its records were control, aborted or below the fetch offset), and
                    never below the fetch offset
    truncated       the broker cut the last entry short; the complete ones are all here
    batch_count     complete entries (batches, or legacy top-level messages) read
    last_leader_epoch   partition leader epoch of the last complete v2 batch, else -1
    bytes_read      bytes of the complete entries
    aborted_count   records skipped as part of aborted transactions (read_committed)
    error           with ``stop_at_corrupt``: the ProtocolError of the first malformed entry,
                    which ends the set; everything above describes the entries before it
                    (``next_offset`` is where the malformed one starts). Else None.
    """
    cdef readonly list messages
    cdef readonly list control
    cdef readonly int64_t next_offset
    cdef readonly bint truncated
    cdef readonly Py_ssize_t batch_count
    cdef readonly int32_t last_leader_epoch
    cdef readonly Py_ssize_t bytes_read
    cdef readonly Py_ssize_t aborted_count
    cdef readonly object error

    def __repr__(self):
        return (f"FetchedRecords(messages=<{len(self.messages)}>, control={self.control!r}, "
                f"next_offset={self.next_offset}, truncated={self.truncated}, "
                f"batch_count={self.batch_count}, last_leader_epoch={self.last_leader_epoch}, "
                f"error={self.error!r})")


# ------------------------------------------------------------------ the reader

cdef struct _BatchHeader:
    int64_t base_offset
    int32_t batch_length
    int32_t leader_epoch
    int8_t magic
    uint32_t crc
    int16_t attributes
    int32_t last_offset_delta
    int64_t base_timestamp
    int64_t max_timestamp
    int64_t producer_id
    int16_t producer_epoch
    int32_t base_sequence
    int32_t records_count


cdef inline void _rr_read_v2_header(const uint8_t *p, _BatchHeader *h) noexcept nogil:
    h.base_offset = _rr_be64(p + RB_BASE_OFFSET)
    h.batch_length = _rr_be32(p + RB_BATCH_LENGTH)
    h.leader_epoch = _rr_be32(p + RB_LEADER_EPOCH)
    h.magic = <int8_t>p[RB_MAGIC]
    h.crc = <uint32_t>_rr_be32(p + RB_CRC)
    h.attributes = _rr_be16(p + RB_ATTRIBUTES)
    h.last_offset_delta = _rr_be32(p + RB_LAST_OFFSET_DELTA)
    h.base_timestamp = _rr_be64(p + RB_BASE_TIMESTAMP)
    h.max_timestamp = _rr_be64(p + RB_MAX_TIMESTAMP)
    h.producer_id = _rr_be64(p + RB_PRODUCER_ID)
    h.producer_epoch = _rr_be16(p + RB_PRODUCER_EPOCH)
    h.base_sequence = _rr_be32(p + RB_BASE_SEQUENCE)
    h.records_count = _rr_be32(p + RB_RECORD_COUNT)


cdef object _rr_error(_BatchHeader *h, str detail):
    return ProtocolError(f"record batch (magic {h.magic}) at offset {h.base_offset}: {detail}")


cdef object _rr_short_v2_header(const uint8_t *entry):
    # Only the first 17 bytes (up to the magic) are known to be inside the entry here.
    return ProtocolError(
        f"record batch (magic 2) at offset {_rr_be64(entry)}: batch length {_rr_be32(entry + RB_BATCH_LENGTH)} "
        f"is shorter than the v2 header ({BATCH_HEADER_SIZE - RB_LOG_OVERHEAD})")


cdef object _rr_record_error(_BatchHeader *h, Py_ssize_t index, _RecordFault fault):
    if fault == _RF_SIZE_MISMATCH:
        detail = "its fields do not add up to its length"
    else:
        detail = "runs past the end of the record or is out of range"
    return _rr_error(h, f"record {index}: field '{_RECORD_FAULT_FIELDS[fault]}' {detail}")


cdef int _rr_check_v2_crc(_BatchHeader *h, const uint8_t *entry) except -1:
    cdef uint32_t computed = crc32c_update(
        0, <const char *>entry + RB_ATTRIBUTES,
        h.batch_length + RB_LOG_OVERHEAD - RB_ATTRIBUTES)
    if computed != h.crc:
        raise _rr_error(h, f"CRC-32C mismatch (stored 0x{h.crc:08x}, computed 0x{computed:08x})")
    return 0


cdef class _RecordSetReader:
    """Walks one partition's record set and fills a FetchedRecords."""
    cdef str topic
    cdef int32_t partition
    cdef int64_t fetch_offset
    cdef bint check_crcs
    cdef bint read_committed
    cdef Py_ssize_t max_uncompressed
    cdef list aborted               # [(first_offset, producer_id)] sorted by first_offset
    cdef Py_ssize_t aborted_next    # index of the first not yet consumed
    cdef set aborted_producers      # producer ids inside an aborted transaction right now
    cdef FetchedRecords out
    cdef bint stop_at_corrupt       # a malformed entry ends the set (out.error) instead of raising
    cdef object view                # memoryview of the whole record set
    cdef const uint8_t *base        # its first byte

    cdef object _region(self, const uint8_t *start, const uint8_t *end):
        """The bytes [start, end) of the record set as a memoryview (no copy)."""
        return self.view[start - self.base:end - self.base]

    # -------------------------------------------------------------- read_committed

    cdef int _consume_aborted_up_to(self, int64_t offset) except -1:
        # Java's CompletedFetch.consumeAbortedTransactionsUpTo: every aborted transaction
        # that starts at or before this batch's last offset is now open.
        cdef tuple entry
        while self.aborted_next < len(self.aborted):
            entry = <tuple>self.aborted[self.aborted_next]
            if <int64_t>entry[0] > offset:
                break
            self.aborted_producers.add(entry[1])
            self.aborted_next += 1
        return 0

    # -------------------------------------------------------------- v2

    cdef int _read_control_batch(self, _BatchHeader *h, const uint8_t *p,
                                 const uint8_t *end) except -1:
        cdef _RawRecord r
        cdef _RecordFault fault
        cdef Py_ssize_t i
        cdef int64_t offset
        cdef int16_t kind
        for i in range(h.records_count):
            fault = _rr_parse_record(p, end, &r)
            if fault != _RF_OK:
                raise _rr_record_error(h, i, fault)
            if r.key == NULL or r.key_len < _RR_CONTROL_KEY_SIZE:
                raise _rr_error(h, f"control record {i}: key is shorter than version + type")
            kind = _rr_be16(r.key + 2)
            offset = h.base_offset + r.offset_delta
            if (self.read_committed and i == 0 and kind == CONTROL_ABORT
                    and h.producer_id >= 0):
                # The marker closes the producer's aborted transaction.
                self.aborted_producers.discard(h.producer_id)
            if offset >= self.fetch_offset:
                self.out.control.append(
                    ControlRecord(offset, h.producer_id, h.producer_epoch, kind))
            p = r.end
        if p != end:
            raise _rr_error(h, "data after the last of its RecordsCount records")
        return 0

    cdef int _read_v2(self, const uint8_t *entry, Py_ssize_t entry_size) except -1:
        cdef _BatchHeader h
        cdef _RawRecord r
        cdef _RecordFault fault
        cdef const uint8_t *p
        cdef const uint8_t *end
        cdef Py_ssize_t i
        cdef int codec
        cdef int64_t offset, timestamp
        cdef int timestamp_type
        cdef bint log_append_time
        cdef bytes plain = None
        cdef Message msg
        cdef list messages = self.out.messages
        cdef str topic = self.topic
        cdef int64_t fetch_offset = self.fetch_offset

        if entry_size < BATCH_HEADER_SIZE:
            raise _rr_short_v2_header(entry)
        _rr_read_v2_header(entry, &h)
        if self.check_crcs:
            _rr_check_v2_crc(&h, entry)
        if h.records_count < 0:
            raise _rr_error(&h, f"negative RecordsCount {h.records_count}")
        if h.last_offset_delta < 0:
            raise _rr_error(&h, f"negative LastOffsetDelta {h.last_offset_delta}")

        self.out.last_leader_epoch = h.leader_epoch
        self.out.next_offset = max(self.out.next_offset, h.base_offset + h.last_offset_delta + 1)

        codec = h.attributes & RB_ATTR_COMPRESSION_MASK
        p = entry + BATCH_HEADER_SIZE
        end = entry + entry_size

        if self.read_committed and h.producer_id >= 0:
            self._consume_aborted_up_to(h.base_offset + h.last_offset_delta)
            if (not (h.attributes & RB_ATTR_CONTROL) and h.attributes & RB_ATTR_TRANSACTIONAL
                    and h.producer_id in self.aborted_producers):
                self.out.aborted_count += h.records_count
                return 0
        if not (h.attributes & RB_ATTR_CONTROL) and h.base_offset + h.last_offset_delta < fetch_offset:
            return 0      # all below the fetch offset: not even decompressed

        if codec != COMPRESSION_NONE:
            plain = decompress_payload(codec, self._region(p, end), self.max_uncompressed)
            p = <const uint8_t *>PyBytes_AS_STRING(plain)
            end = p + PyBytes_GET_SIZE(plain)

        if h.attributes & RB_ATTR_CONTROL:
            return self._read_control_batch(&h, p, end)

        log_append_time = h.attributes & RB_ATTR_LOG_APPEND_TIME
        timestamp_type = TIMESTAMP_LOG_APPEND_TIME if log_append_time else TIMESTAMP_CREATE_TIME
        for i in range(h.records_count):
            fault = _rr_parse_record(p, end, &r)
            if fault != _RF_OK:
                raise _rr_record_error(&h, i, fault)
            p = r.end
            offset = h.base_offset + r.offset_delta
            if offset < fetch_offset:
                continue
            msg = Message.__new__(Message)
            msg.topic = topic
            msg.partition = self.partition
            msg.offset = offset
            msg.timestamp = h.max_timestamp if log_append_time else h.base_timestamp + r.timestamp_delta
            msg.timestamp_type = timestamp_type
            msg.key = _rr_nullable_bytes(r.key, r.key_len)
            msg.value = _rr_nullable_bytes(r.value, r.value_len)
            if r.header_count:
                msg._headers = _rr_build_headers(r.headers, r.header_count, r.end)
            msg.leader_epoch = h.leader_epoch
            PyList_Append(messages, msg)
        if p != end:
            raise _rr_error(&h, "data after the last of its RecordsCount records")
        return 0

    # -------------------------------------------------------------- magic 0 and 1

    cdef int _read_legacy(self, const uint8_t *entry, Py_ssize_t entry_size) except -1:
        cdef int64_t wrapper_offset = _rr_be64(entry)
        cdef tuple item
        cdef Message msg
        self.out.next_offset = max(self.out.next_offset, wrapper_offset + 1)
        if wrapper_offset < self.fetch_offset:
            return 0      # a wrapper's offset is its last inner offset: all below
        for item in _rr_expand_legacy(self, entry, entry_size):
            if <int64_t>item[0] < self.fetch_offset:
                continue
            msg = Message.__new__(Message)
            msg.topic = self.topic
            msg.partition = self.partition
            msg.offset = item[0]
            msg.timestamp = item[1]
            msg.timestamp_type = item[2]
            msg.key = item[4]
            msg.value = item[5]
            msg.leader_epoch = NO_LEADER_EPOCH
            self.out.messages.append(msg)
        return 0

    # -------------------------------------------------------------- the set

    cdef int read_set(self, const uint8_t *data, Py_ssize_t n) except -1:
        cdef Py_ssize_t pos = 0, remaining, entry_size
        cdef FetchedRecords out = self.out
        cdef Py_ssize_t kept_messages, kept_control
        cdef int64_t kept_next_offset
        cdef int32_t kept_epoch
        while pos < n:
            remaining = n - pos
            if remaining < RB_LOG_OVERHEAD:
                out.truncated = True
                break
            if not self.stop_at_corrupt:
                entry_size = self._read_entry(data + pos, pos, remaining)
            else:
                kept_messages, kept_control = len(out.messages), len(out.control)
                kept_next_offset, kept_epoch = out.next_offset, out.last_leader_epoch
                try:
                    entry_size = self._read_entry(data + pos, pos, remaining)
                except ProtocolError as exc:
                    # What the good entries before it gave stands; none of this one's records do.
                    del out.messages[kept_messages:]
                    del out.control[kept_control:]
                    out.next_offset, out.last_leader_epoch = kept_next_offset, kept_epoch
                    out.error = exc
                    break
            if entry_size == 0:
                out.truncated = True      # the broker cut the last entry: not an error
                break
            pos += entry_size
            out.batch_count += 1
            out.bytes_read = pos
        return 0

    cdef Py_ssize_t _read_entry(self, const uint8_t *entry, Py_ssize_t pos, Py_ssize_t remaining) except -1:
        """Read the entry at byte ``pos``; its size, or 0 when the set ends inside it."""
        cdef int32_t length = _rr_be32(entry + RB_BATCH_LENGTH)
        cdef int magic
        if length < _RR_LEGACY_V0_MIN_SIZE:
            raise ProtocolError(
                f"record set entry at offset {_rr_be64(entry)} (byte {pos}): length {length} "
                f"is below the smallest entry ({_RR_LEGACY_V0_MIN_SIZE})")
        if length > remaining - RB_LOG_OVERHEAD:
            return 0
        magic = entry[RB_MAGIC]
        if magic == RB_MAGIC_VALUE:
            self._read_v2(entry, RB_LOG_OVERHEAD + length)
        elif magic == 0 or magic == 1:
            self._read_legacy(entry, RB_LOG_OVERHEAD + length)
        else:
            raise ProtocolError(
                f"record set entry at offset {_rr_be64(entry)} (byte {pos}): unknown magic {magic}")
        return RB_LOG_OVERHEAD + length


# ------------------------------------------------------------------ legacy messages

cdef struct _LegacyMessage:
    int64_t offset
    uint32_t crc
    int8_t magic
    int8_t attributes
    int64_t timestamp               # -1 for magic 0
    const uint8_t *key              # NULL for null
    Py_ssize_t key_len
    const uint8_t *value            # NULL for null
    Py_ssize_t value_len


cdef object _rr_legacy_error(const uint8_t *entry, str detail):
    return ProtocolError(f"message (magic {entry[RB_MAGIC]}) at offset {_rr_be64(entry)}: {detail}")


cdef int _rr_parse_legacy(const uint8_t *entry, Py_ssize_t entry_size, bint check_crc,
                          _LegacyMessage *m) except -1:
    """Validate one complete magic 0/1 entry (Offset + MessageSize + message)."""
    cdef const uint8_t *end = entry + entry_size
    cdef const uint8_t *p
    cdef int32_t n
    cdef uint32_t computed
    m.offset = _rr_be64(entry)
    m.magic = <int8_t>entry[RB_MAGIC]
    if entry_size - RB_LOG_OVERHEAD < (_RR_LEGACY_V1_MIN_SIZE if m.magic == 1 else _RR_LEGACY_V0_MIN_SIZE):
        raise _rr_legacy_error(entry, f"MessageSize {entry_size - RB_LOG_OVERHEAD} is below the minimum")
    m.crc = <uint32_t>_rr_be32(entry + _RR_LEGACY_CRC_OFFSET)
    if check_crc:
        computed = _zlib.crc32(PyBytes_FromStringAndSize(
            <const char *>entry + RB_MAGIC, entry_size - RB_MAGIC))
        if computed != m.crc:
            raise _rr_legacy_error(entry, f"CRC-32 mismatch (stored 0x{m.crc:08x}, computed 0x{computed:08x})")
    m.attributes = <int8_t>entry[RB_MAGIC + 1]
    p = entry + RB_MAGIC + 2
    if m.magic == 1:
        m.timestamp = _rr_be64(p)
        p += 8
    else:
        m.timestamp = NO_TIMESTAMP
    n = _rr_be32(p)
    p += 4
    if n < -1 or n > end - p:
        raise _rr_legacy_error(entry, f"field 'key' length {n} is out of range ({end - p} bytes left)")
    m.key = p
    if n < 0:
        m.key = NULL
    m.key_len = n
    if n > 0:
        p += n
    if end - p < 4:
        raise _rr_legacy_error(entry, "field 'value' length runs past the end of the message")
    n = _rr_be32(p)
    p += 4
    if n < -1 or n > end - p:
        raise _rr_legacy_error(entry, f"field 'value' length {n} is out of range ({end - p} bytes left)")
    m.value = p
    if n < 0:
        m.value = NULL
    m.value_len = n
    if n > 0:
        p += n
    if p != end:
        raise _rr_legacy_error(entry, f"{end - p} bytes after the value")
    return 0


cdef list _rr_expand_legacy(_RecordSetReader reader, const uint8_t *entry, Py_ssize_t entry_size):
    """The records of one top-level magic 0/1 entry, decompressing a wrapper message:
    [(offset, timestamp, timestamp_type, attributes, key, value)]."""
    cdef _LegacyMessage m, inner
    cdef int codec
    cdef bytes plain
    cdef const uint8_t *q
    cdef const uint8_t *qend
    cdef int32_t length
    cdef int64_t base
    cdef list inners = []
    cdef tuple item
    _rr_parse_legacy(entry, entry_size, reader.check_crcs, &m)
    codec = m.attributes & RB_ATTR_COMPRESSION_MASK
    if codec == COMPRESSION_NONE:
        return [(m.offset, m.timestamp, _rr_legacy_timestamp_type(&m), m.attributes,
                 _rr_nullable_bytes(m.key, m.key_len), _rr_nullable_bytes(m.value, m.value_len))]
    if codec > COMPRESSION_LZ4:
        raise _rr_legacy_error(entry, f"compression codec {codec} is not valid before magic 2")
    if m.value == NULL:
        raise _rr_legacy_error(entry, "compressed wrapper message has a null value")
    payload = reader._region(m.value, m.value + m.value_len)
    if codec == COMPRESSION_LZ4 and m.magic == 0:
        payload = _fix_legacy_lz4_header(payload)
    plain = decompress_payload(codec, payload, reader.max_uncompressed)
    q = <const uint8_t *>PyBytes_AS_STRING(plain)
    qend = q + PyBytes_GET_SIZE(plain)
    while q < qend:
        if qend - q < RB_LOG_OVERHEAD:
            raise _rr_legacy_error(entry, "inner message set ends inside an entry header")
        length = _rr_be32(q + 8)
        if length < _RR_LEGACY_V0_MIN_SIZE or length > qend - q - RB_LOG_OVERHEAD:
            raise _rr_legacy_error(entry, f"inner message length {length} is out of range")
        if q[RB_MAGIC] > 1:
            raise _rr_legacy_error(entry, f"inner message has magic {q[RB_MAGIC]}")
        _rr_parse_legacy(q, RB_LOG_OVERHEAD + length, reader.check_crcs, &inner)
        if inner.attributes & RB_ATTR_COMPRESSION_MASK:
            raise _rr_legacy_error(entry, "inner message is itself compressed")
        if m.magic == 1 and m.attributes & RB_ATTR_LOG_APPEND_TIME:
            # The broker stamped the wrapper only; it stands for every inner message.
            item = (inner.offset, m.timestamp, TIMESTAMP_LOG_APPEND_TIME, inner.attributes,
                    _rr_nullable_bytes(inner.key, inner.key_len),
                    _rr_nullable_bytes(inner.value, inner.value_len))
        else:
            item = (inner.offset, inner.timestamp, _rr_legacy_timestamp_type(&inner), inner.attributes,
                    _rr_nullable_bytes(inner.key, inner.key_len),
                    _rr_nullable_bytes(inner.value, inner.value_len))
        inners.append(item)
        q += RB_LOG_OVERHEAD + length
    if m.magic == 1 and inners:
        # Magic 1 inner offsets are relative; the wrapper carries the last one's absolute offset.
        base = m.offset - <int64_t>(<tuple>inners[len(inners) - 1])[0]
        inners = [(base + <int64_t>it[0],) + it[1:] for it in inners]
    return inners


cdef inline int _rr_legacy_timestamp_type(_LegacyMessage *m) noexcept:
    if m.magic == 0:
        return TIMESTAMP_NOT_AVAILABLE
    return TIMESTAMP_LOG_APPEND_TIME if m.attributes & RB_ATTR_LOG_APPEND_TIME else TIMESTAMP_CREATE_TIME


# ------------------------------------------------------------------ entry points

cdef object _rr_byte_view(object data, str argument):
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(f"{argument}: expected a bytes-like object, got {type(data).__name__}") from None
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    elif view.format != "B":
        view = view.cast("B")
    return view


cdef list _rr_sorted_aborted(object aborted_transactions):
    # Accepts (producer_id, first_offset) pairs or the Fetch response's AbortedTransaction
    # objects (producer_id, first_offset attributes).
    cdef list out = []
    for txn in aborted_transactions:
        if isinstance(txn, tuple):
            producer_id, first_offset = txn
        else:
            producer_id, first_offset = txn.producer_id, txn.first_offset
        out.append((int(first_offset), int(producer_id)))
    out.sort()
    return out


def read_records(str topic not None, int32_t partition, records, int64_t fetch_offset=0, *,
                 bint check_crcs=True, bint read_committed=False, aborted_transactions=None,
                 Py_ssize_t max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE, bint stop_at_corrupt=False):
    """Decode one partition's record set (a Fetch response's `records`) into a FetchedRecords.

    Records below `fetch_offset` are dropped (a batch may start before it). With
    read_committed, records of the transactions in `aborted_transactions`
    ((producer_id, first_offset) pairs from the same response) are skipped as the Java
    consumer skips them. CRCs are verified unless check_crcs is False. A batch whose
    records decompress to more than max_uncompressed_size bytes is refused.
    Malformed input raises kafkaev.errors.ProtocolError; with `stop_at_corrupt` the entries
    before the first malformed one are returned instead, its error in `error` (what the
    consumer delivers before stopping there, as the Java consumer does).
    """
    if max_uncompressed_size < 0:
        raise ValueError(f"max_uncompressed_size: must be >= 0, got {max_uncompressed_size}")
    cdef FetchedRecords out = FetchedRecords.__new__(FetchedRecords)
    out.messages = []
    out.control = []
    out.next_offset = fetch_offset
    out.last_leader_epoch = NO_LEADER_EPOCH
    if records is None:
        return out
    cdef _RecordSetReader reader = _RecordSetReader.__new__(_RecordSetReader)
    reader.topic = topic
    reader.partition = partition
    reader.fetch_offset = fetch_offset
    reader.check_crcs = check_crcs
    reader.read_committed = read_committed
    reader.max_uncompressed = max_uncompressed_size
    reader.aborted = _rr_sorted_aborted(aborted_transactions) if read_committed and aborted_transactions else []
    reader.aborted_producers = set()
    reader.out = out
    reader.stop_at_corrupt = stop_at_corrupt
    reader.view = _rr_byte_view(records, "records")
    cdef Py_buffer buf
    PyObject_GetBuffer(reader.view, &buf, PyBUF_SIMPLE)
    try:
        reader.base = <const uint8_t *>buf.buf
        reader.read_set(reader.base, buf.len)
    finally:
        PyBuffer_Release(&buf)
        reader.view = None
    return out


cdef int64_t _rr_scan_next_offset(const uint8_t *data, Py_ssize_t n, int64_t next_offset,
                                  int32_t *last_epoch) noexcept nogil:
    """read_set's next_offset from the entry headers alone, and in ``last_epoch`` the partition
    leader epoch of the entry that ends there (-1 for a legacy one; untouched when no entry
    moves the offset). Stops at a cut or malformed entry: read_records either reports the same
    cut as truncated or raises for the malformed one."""
    cdef Py_ssize_t pos = 0
    cdef int32_t length, last_offset_delta, entry_epoch
    cdef int64_t entry_next
    cdef int magic
    cdef const uint8_t *entry
    while n - pos >= RB_LOG_OVERHEAD:
        entry = data + pos
        length = _rr_be32(entry + RB_BATCH_LENGTH)
        if length < _RR_LEGACY_V0_MIN_SIZE or length > n - pos - RB_LOG_OVERHEAD:
            break
        magic = entry[RB_MAGIC]
        if magic == RB_MAGIC_VALUE:
            if RB_LOG_OVERHEAD + length < BATCH_HEADER_SIZE:
                break
            last_offset_delta = _rr_be32(entry + RB_LAST_OFFSET_DELTA)
            if last_offset_delta < 0:
                break
            entry_next = _rr_be64(entry) + last_offset_delta + 1
            entry_epoch = _rr_be32(entry + RB_LEADER_EPOCH)
        elif magic == 0 or magic == 1:
            entry_next = _rr_be64(entry) + 1       # a wrapper's offset is its last inner one
            entry_epoch = NO_LEADER_EPOCH  # a legacy entry carries none
        else:
            break
        if entry_next > next_offset:
            next_offset = entry_next
            last_epoch[0] = entry_epoch
        pos += RB_LOG_OVERHEAD + length
    return next_offset


def next_fetch_offset(records, int64_t fetch_offset=0):
    """Where the fetch after this record set starts: what read_records(..., fetch_offset)
    reports as next_offset for a well-formed set, read from the entry headers only (no record
    decoded, no CRC checked), so the next Fetch can go out before the records are decoded.
    For a malformed set it stops at the bad entry; read_records then raises for it."""
    return next_fetch_position(records, fetch_offset)[0]


def next_fetch_position(records, int64_t fetch_offset=0, int32_t fetch_epoch=NO_LEADER_EPOCH):
    """``(next_fetch_offset(records, fetch_offset), epoch)``: the epoch is the partition leader
    epoch of the batch that ends right before that offset, the LastFetchedEpoch of the next
    Fetch (KIP-320); ``fetch_epoch`` when no batch moves the offset, -1 after a legacy one."""
    if records is None:
        return fetch_offset, fetch_epoch
    cdef object view = _rr_byte_view(records, "records")
    cdef Py_buffer buf
    cdef int32_t epoch = fetch_epoch
    cdef int64_t next_offset
    PyObject_GetBuffer(view, &buf, PyBUF_SIMPLE)
    try:
        next_offset = _rr_scan_next_offset(<const uint8_t *>buf.buf, buf.len, fetch_offset, &epoch)
    finally:
        PyBuffer_Release(&buf)
    return next_offset, epoch


# ------------------------------------------------------------------ the inspection decoder

@cython.final
cdef class DecodedRecord:
    """One record with its raw framing fields, as decode_record_batches returns it."""
    cdef readonly int attributes
    cdef readonly int64_t timestamp_delta
    cdef readonly int64_t offset_delta
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object key
    cdef readonly object value
    cdef readonly list headers

    def __repr__(self):
        return (f"DecodedRecord(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")


@cython.final
cdef class DecodedBatch:
    """One record-set entry with every header field. Legacy (magic 0/1) entries fill the
    v2-only fields with -1 and base/last offsets from their (inner) messages."""
    cdef readonly int64_t base_offset
    cdef readonly int32_t batch_length
    cdef readonly int32_t partition_leader_epoch
    cdef readonly int magic
    cdef readonly uint32_t crc
    cdef readonly int attributes
    cdef readonly int compression
    cdef readonly int timestamp_type
    cdef readonly bint is_transactional
    cdef readonly bint is_control
    cdef readonly int32_t last_offset_delta
    cdef readonly int64_t base_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly int32_t records_count
    cdef readonly list records

    @property
    def next_offset(self):
        return self.base_offset + self.last_offset_delta + 1

    def __repr__(self):
        return (f"DecodedBatch(base_offset={self.base_offset}, magic={self.magic}, "
                f"attributes=0x{self.attributes:x}, records_count={self.records_count}, "
                f"producer_id={self.producer_id}, base_sequence={self.base_sequence})")


cdef DecodedBatch _rr_decode_v2_batch(_RecordSetReader reader, const uint8_t *entry,
                                      Py_ssize_t entry_size):
    cdef _BatchHeader h
    cdef _RawRecord r
    cdef _RecordFault fault
    cdef DecodedBatch batch = DecodedBatch.__new__(DecodedBatch)
    cdef DecodedRecord rec
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef bytes plain
    cdef Py_ssize_t i
    if entry_size < BATCH_HEADER_SIZE:
        raise _rr_short_v2_header(entry)
    _rr_read_v2_header(entry, &h)
    if reader.check_crcs:
        _rr_check_v2_crc(&h, entry)
    if h.records_count < 0:
        raise _rr_error(&h, f"negative RecordsCount {h.records_count}")
    batch.base_offset = h.base_offset
    batch.batch_length = h.batch_length
    batch.partition_leader_epoch = h.leader_epoch
    batch.magic = h.magic
    batch.crc = h.crc
    batch.attributes = h.attributes
    batch.compression = h.attributes & RB_ATTR_COMPRESSION_MASK
    batch.timestamp_type = (TIMESTAMP_LOG_APPEND_TIME if h.attributes & RB_ATTR_LOG_APPEND_TIME
                            else TIMESTAMP_CREATE_TIME)
    batch.is_transactional = (h.attributes & RB_ATTR_TRANSACTIONAL) != 0
    batch.is_control = (h.attributes & RB_ATTR_CONTROL) != 0
    batch.last_offset_delta = h.last_offset_delta
    batch.base_timestamp = h.base_timestamp
    batch.max_timestamp = h.max_timestamp
    batch.producer_id = h.producer_id
    batch.producer_epoch = h.producer_epoch
    batch.base_sequence = h.base_sequence
    batch.records_count = h.records_count
    batch.records = []
    p = entry + BATCH_HEADER_SIZE
    end = entry + entry_size
    if batch.compression != COMPRESSION_NONE:
        plain = decompress_payload(batch.compression, reader._region(p, end), reader.max_uncompressed)
        p = <const uint8_t *>PyBytes_AS_STRING(plain)
        end = p + PyBytes_GET_SIZE(plain)
    for i in range(h.records_count):
        fault = _rr_parse_record(p, end, &r)
        if fault != _RF_OK:
            raise _rr_record_error(&h, i, fault)
        rec = DecodedRecord.__new__(DecodedRecord)
        rec.attributes = r.attributes
        rec.timestamp_delta = r.timestamp_delta
        rec.offset_delta = r.offset_delta
        rec.offset = h.base_offset + r.offset_delta
        rec.timestamp = (h.max_timestamp if h.attributes & RB_ATTR_LOG_APPEND_TIME
                         else h.base_timestamp + r.timestamp_delta)
        rec.key = _rr_nullable_bytes(r.key, r.key_len)
        rec.value = _rr_nullable_bytes(r.value, r.value_len)
        rec.headers = _rr_build_headers(r.headers, r.header_count, r.end)
        batch.records.append(rec)
        p = r.end
    if p != end:
        raise _rr_error(&h, "data after the last of its RecordsCount records")
    return batch


cdef DecodedBatch _rr_decode_legacy_entry(_RecordSetReader reader, const uint8_t *entry,
                                          Py_ssize_t entry_size):
    cdef DecodedBatch batch = DecodedBatch.__new__(DecodedBatch)
    cdef DecodedRecord rec
    cdef list items = _rr_expand_legacy(reader, entry, entry_size)
    cdef int64_t first = items[0][0] if items else _rr_be64(entry)
    cdef int attributes = entry[RB_MAGIC + 1]
    batch.base_offset = first
    batch.batch_length = entry_size - RB_LOG_OVERHEAD
    batch.partition_leader_epoch = NO_LEADER_EPOCH
    batch.magic = entry[RB_MAGIC]
    batch.crc = <uint32_t>_rr_be32(entry + _RR_LEGACY_CRC_OFFSET)
    batch.attributes = attributes
    batch.compression = attributes & RB_ATTR_COMPRESSION_MASK
    if batch.magic == 0:
        batch.timestamp_type = TIMESTAMP_NOT_AVAILABLE
        batch.base_timestamp = batch.max_timestamp = NO_TIMESTAMP
    else:
        batch.timestamp_type = (TIMESTAMP_LOG_APPEND_TIME if attributes & RB_ATTR_LOG_APPEND_TIME
                                else TIMESTAMP_CREATE_TIME)
        batch.base_timestamp = batch.max_timestamp = _rr_be64(entry + RB_MAGIC + 2)
    batch.last_offset_delta = _rr_be64(entry) - first
    batch.producer_id = NO_PRODUCER_ID
    batch.producer_epoch = NO_PRODUCER_EPOCH
    batch.base_sequence = NO_SEQUENCE
    batch.records_count = len(items)
    batch.records = []
    for item in items:
        rec = DecodedRecord.__new__(DecodedRecord)
        rec.attributes = item[3]
        rec.offset = item[0]
        rec.offset_delta = rec.offset - first
        rec.timestamp = item[1]
        rec.timestamp_delta = 0
        rec.key = item[4]
        rec.value = item[5]
        rec.headers = []
        batch.records.append(rec)
    return batch


def decode_record_batches(data, bint check_crcs=True, *, bint allow_truncated=False,
                          Py_ssize_t max_uncompressed_size=DEFAULT_MAX_UNCOMPRESSED_SIZE):
    """Decode every entry of a record set into DecodedBatch objects with all header fields
    and records (for tests and tools; the consumer uses read_records).

    A trailing partial entry is a ProtocolError unless allow_truncated, then it is ignored.
    """
    cdef _RecordSetReader reader = _RecordSetReader.__new__(_RecordSetReader)
    cdef Py_buffer buf
    cdef const uint8_t *entry
    cdef Py_ssize_t pos = 0, n
    cdef int32_t length
    cdef int magic
    cdef list batches = []
    reader.check_crcs = check_crcs
    reader.max_uncompressed = max_uncompressed_size
    reader.view = _rr_byte_view(data, "data")
    PyObject_GetBuffer(reader.view, &buf, PyBUF_SIMPLE)
    try:
        reader.base = <const uint8_t *>buf.buf
        n = buf.len
        while pos < n:
            entry = reader.base + pos
            length = _rr_be32(entry + RB_BATCH_LENGTH) if n - pos >= RB_LOG_OVERHEAD else -1
            if n - pos < RB_LOG_OVERHEAD or (length >= _RR_LEGACY_V0_MIN_SIZE
                                               and length > n - pos - RB_LOG_OVERHEAD):
                if allow_truncated:
                    break
                raise ProtocolError(f"record set: entry at byte {pos} is cut off "
                                    f"({n - pos} bytes left)")
            if length < _RR_LEGACY_V0_MIN_SIZE:
                raise ProtocolError(f"record set: entry at byte {pos} has length {length}")
            magic = entry[RB_MAGIC]
            if magic == RB_MAGIC_VALUE:
                batches.append(_rr_decode_v2_batch(reader, entry, RB_LOG_OVERHEAD + length))
            elif magic == 0 or magic == 1:
                batches.append(_rr_decode_legacy_entry(reader, entry, RB_LOG_OVERHEAD + length))
            else:
                raise ProtocolError(f"record set: entry at byte {pos} has unknown magic {magic}")
            pos += RB_LOG_OVERHEAD + length
    finally:
        PyBuffer_Release(&buf)
        reader.view = None
    return batches
