# ProduceResponse, decoded by hand: the answer every acknowledged batch waits for. It builds
# the same message objects as the generated tables' walker (codec_message_walker.pxi), field
# for field and with the same error names, but reads its fixed layout straight through instead
# of interpreting a field table per value. Its rare parts (record errors, the tagged current
# leader and node endpoints of a NOT_LEADER answer, unknown tags) go through the walker's own
# code. tests/test_produce_response.py checks both decoders agree on every version we send.


cdef class _ProduceResponseLayout:
    """The slots and defaults of the three hand-decoded structs, read once from the tables."""
    cdef _StructSpec response, topic, partition
    cdef _FieldSpec responses, throttle_time_ms, node_endpoints
    cdef _FieldSpec name, topic_id, partition_responses
    cdef _FieldSpec index, error_code, base_offset, log_append_time_ms, log_start_offset
    cdef _FieldSpec record_errors, error_message, current_leader


cdef _FieldSpec _field_named(_StructSpec spec, str name):
    cdef _FieldSpec f
    for f in spec.all_fields:
        if f.name == name:
            return f
    raise TypeError(f"{spec.name} has no field {name!r}")


cdef _ProduceResponseLayout _produce_response_layout():
    cdef _ProduceResponseLayout l = _ProduceResponseLayout.__new__(_ProduceResponseLayout)
    l.response = _STRUCTS["ProduceResponse"]
    l.topic = _STRUCTS["TopicProduceResponse"]
    l.partition = _STRUCTS["PartitionProduceResponse"]
    l.responses = _field_named(l.response, "responses")
    l.throttle_time_ms = _field_named(l.response, "throttle_time_ms")
    l.node_endpoints = _field_named(l.response, "node_endpoints")
    l.name = _field_named(l.topic, "name")
    l.topic_id = _field_named(l.topic, "topic_id")
    l.partition_responses = _field_named(l.topic, "partition_responses")
    l.index = _field_named(l.partition, "index")
    l.error_code = _field_named(l.partition, "error_code")
    l.base_offset = _field_named(l.partition, "base_offset")
    l.log_append_time_ms = _field_named(l.partition, "log_append_time_ms")
    l.log_start_offset = _field_named(l.partition, "log_start_offset")
    l.record_errors = _field_named(l.partition, "record_errors")
    l.error_message = _field_named(l.partition, "error_message")
    l.current_leader = _field_named(l.partition, "current_leader")
    return l


cdef _ProduceResponseLayout _PRODUCE = None  # built on first use, once the tables exist


cdef inline object _new_message(_StructSpec spec):
    """A message object with no slot set yet (the caller sets every one)."""
    cdef object o = <object>PyType_GenericAlloc(spec.type, 0)
    Py_DECREF(o)  # <object> took a second reference to the new object
    return o


cdef inline Py_ssize_t _array_length(ReadBuffer r, _FieldSpec f, bint flex) except -2:
    cdef Py_ssize_t n
    r.field = <const char *>f.cname
    n = r.read_compact_array_length() if flex else r.read_array_length()
    if n < 0:
        r._fail("is null but the field is not nullable")  # none of these arrays is nullable
    return n


cdef object _decode_partition_produce_response(ReadBuffer r, _ProduceResponseLayout l, int16_t v, bint flex):
    cdef object o = _new_message(l.partition)
    r.field = <const char *>l.index.cname
    _slot_set(o, l.index.offset, r.read_int32())
    r.field = <const char *>l.error_code.cname
    _slot_set(o, l.error_code.offset, r.read_int16())
    r.field = <const char *>l.base_offset.cname
    _slot_set(o, l.base_offset.offset, r.read_int64())
    # log_append_time_ms exists from v2, below every version the tables know (3+)
    r.field = <const char *>l.log_append_time_ms.cname
    _slot_set(o, l.log_append_time_ms.offset, r.read_int64())
    if l.log_start_offset.present(v):
        r.field = <const char *>l.log_start_offset.cname
        _slot_set(o, l.log_start_offset.offset, r.read_int64())
    else:
        _slot_set(o, l.log_start_offset.offset, l.log_start_offset.make_default())
    if l.record_errors.present(v):
        r.field = <const char *>l.record_errors.cname
        _slot_set(o, l.record_errors.offset, _read_field(r, l.record_errors, v, flex))  # rare: the walker's
        r.field = <const char *>l.error_message.cname
        message = r.read_compact_nullable_string() if flex else r.read_nullable_string()
        _slot_set(o, l.error_message.offset, message)
    else:
        _slot_set(o, l.record_errors.offset, l.record_errors.make_default())
        _slot_set(o, l.error_message.offset, l.error_message.make_default())
    _slot_set(o, l.current_leader.offset, l.current_leader.make_default())
    _slot_set(o, _UNKNOWN_TAGS_OFFSET, _read_tagged_section(r, l.partition, o, v) if flex else None)
    return o


cdef object _decode_topic_produce_response(ReadBuffer r, _ProduceResponseLayout l, int16_t v, bint flex):
    cdef object o = _new_message(l.topic)
    cdef Py_ssize_t n, i
    cdef list partitions
    if l.name.present(v):
        r.field = <const char *>l.name.cname
        name = r.read_compact_nullable_string() if flex else r.read_nullable_string()
        if name is None:
            r._fail("is null but the field is not nullable")
        _slot_set(o, l.name.offset, name)
    else:
        _slot_set(o, l.name.offset, l.name.make_default())
    if l.topic_id.present(v):
        r.field = <const char *>l.topic_id.cname
        _slot_set(o, l.topic_id.offset, r.read_uuid())
    else:
        _slot_set(o, l.topic_id.offset, l.topic_id.make_default())
    n = _array_length(r, l.partition_responses, flex)
    partitions = []
    for i in range(n):
        partitions.append(_decode_partition_produce_response(r, l, v, flex))
    _slot_set(o, l.partition_responses.offset, partitions)
    _slot_set(o, _UNKNOWN_TAGS_OFFSET, _read_tagged_section(r, l.topic, o, v) if flex else None)
    return o


cdef object decode_produce_response(ReadBuffer r, int16_t v):
    """A ProduceResponse body of version ``v`` (the tables' range, checked by the caller)."""
    global _PRODUCE
    cdef _ProduceResponseLayout l = _PRODUCE
    cdef bint flex
    cdef Py_ssize_t n, i
    cdef list topics
    if l is None:
        l = _PRODUCE = _produce_response_layout()
    flex = v >= l.response.flex_min
    cdef object o = _new_message(l.response)
    n = _array_length(r, l.responses, flex)
    topics = []
    for i in range(n):
        topics.append(_decode_topic_produce_response(r, l, v, flex))
    _slot_set(o, l.responses.offset, topics)
    # throttle_time_ms exists from v1, below every version the tables know (3+)
    r.field = <const char *>l.throttle_time_ms.cname
    _slot_set(o, l.throttle_time_ms.offset, r.read_int32())
    _slot_set(o, l.node_endpoints.offset, l.node_endpoints.make_default())
    _slot_set(o, _UNKNOWN_TAGS_OFFSET, _read_tagged_section(r, l.response, o, v) if flex else None)
    return o


def decode_response_with_tables(int api_key, int version, payload):
    """As decode_response_frame, (correlation_id, body), but the body always decoded by the
    generated tables' walker, never a hand-written decoder: what tests compare those against."""
    cdef ReadBuffer r = ReadBuffer(payload)
    cdef int32_t correlation_id = decode_response_header(r, api_key, version)
    cdef _ApiSpec a = _checked_api(<int16_t>api_key, <int16_t>version, False)
    r.api = <const char *>a.response_labels[version]
    return correlation_id, _decode_struct(r, a.response, <int16_t>version)
