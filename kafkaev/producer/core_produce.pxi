# produce(): argument checks, partition choice and one append into the partition's open
# batch, in one C call. Anything else (opening a batch, a topic not known yet) is a slow path
# in Python, reached only when needed. readmit() takes the same path for a record that waited
# for its topic's metadata.

from libc.time cimport time_t

cdef extern from "<time.h>" nogil:
    ctypedef int clockid_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(clockid_t clk, timespec *ts)
    clockid_t CLOCK_REALTIME

cdef enum:
    # What each header adds beyond its key and value (the two varint lengths, rounded up).
    HEADER_OVERHEAD = 8
    NS_PER_MS = 1000000
    MS_PER_S = 1000

_BYTES_LIKE = (bytearray, memoryview)


cdef inline int64_t _wall_clock_ms() noexcept nogil:
    """CreateTime now: milliseconds since the epoch, as time.time_ns() // 1_000_000."""
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * MS_PER_S + ts.tv_nsec // NS_PER_MS


def coerce_bytes(value, str name):
    """key/value: bytes-like, str (UTF-8) or None; anything else is the caller's bug."""
    if value is None or PyBytes_CheckExact(value):
        return value
    if isinstance(value, str):
        return (<str>value).encode()
    if isinstance(value, (bytes, *_BYTES_LIKE)):
        return bytes(value)
    raise TypeError(f"produce: '{name}' must be bytes, bytearray, memoryview, str or None, got {type(value).__name__}")


def coerce_headers(headers):
    """A list of (str, bytes|str|None) pairs, or a dict; repeated keys are allowed in the list form."""
    cdef list out = []
    if isinstance(headers, Mapping):
        items = headers.items()
    elif isinstance(headers, (list, tuple)):
        items = headers
    else:
        raise TypeError(f"produce: 'headers' must be a list of (str, bytes) pairs or a dict, got {type(headers).__name__}")
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[0], str):
            raise TypeError(f"produce: 'headers' entries must be (str, bytes|str|None) pairs, got {item!r}")
        hv = item[1]
        if hv is not None and not PyBytes_CheckExact(hv):
            if isinstance(hv, str):
                hv = (<str>hv).encode()
            elif isinstance(hv, _BYTES_LIKE):
                hv = bytes(hv)
            else:
                raise TypeError(f"produce: value of header {item[0]!r} must be bytes, str or None, got {type(hv).__name__}")
        out.append((item[0], hv))
    return out


cdef inline bint _borrow(obj, const char **data, Py_ssize_t *size) except -1:
    """Pointer and length of a None, bytes or str key/value (-1 for None); False for any
    other type, which the builder's own append then converts or refuses by name."""
    if obj is None:
        data[0] = NULL
        size[0] = -1
    elif PyBytes_CheckExact(obj):
        data[0] = PyBytes_AS_STRING(obj)
        size[0] = PyBytes_GET_SIZE(obj)
    elif PyUnicode_CheckExact(obj):
        data[0] = PyUnicode_AsUTF8AndSize(obj, size)
    else:
        return False
    return True


cdef Py_ssize_t _append_record(ProducerBatch batch, int64_t timestamp, key, value, cb, headers) except -2:
    """Append one record to an open batch and remember its callback; the record's offset
    delta, or -1 when the batch is full."""
    cdef const char *key_data
    cdef const char *value_data
    cdef Py_ssize_t key_size, value_size, delta
    builder = batch.builder
    if (type(builder) is RecordBatchBuilder and _borrow(key, &key_data, &key_size)
            and _borrow(value, &value_data, &value_size)):
        delta = (<RecordBatchBuilder>builder).append_raw(timestamp, key_data, key_size, value_data, value_size,
                                                        headers, value)
    else:
        delta = builder.append(timestamp, key, value, headers)
    if delta >= 0 and cb is not None:
        batch.deliveries.add(cb, <int32_t>delta, timestamp)
    return delta


cdef int _refuse_full(MemoryBudget budget) except -1:
    raise BufferFullError(budget.refusal())


cdef int _refuse_closed() except -1:
    raise KafkaError(STATE, "produce: the client is closed")


cdef class ProducerCore:
    """The per-record path of ``kafkaev.producer.Producer``, which subclasses it.

    ``accumulator`` holds ``topics`` (name -> TopicState) and ``batches`` (``Batches``), which
    opens, grows and closes the batches the records go into; ``wake()`` tells
    the sender that a batch is ready; ``custom_partition(topic, key, num_partitions)`` is the
    checked user partitioner or None; ``unknown_topic(topic, key, value, cb, partition, headers,
    timestamp_ms)`` takes a record whose topic is not in ``topics`` yet. ``lifecycle`` goes from
    OPEN to CLOSING to CLOSED, only forward (``_start_closing``, ``_finish_closing``); the
    caller closes every open batch once closing starts, and no batch opens after that.
    """

    cdef readonly object _acc
    cdef readonly dict _topics
    cdef Batches _batches               # the accumulator's: opens, grows and closes batches
    cdef MemoryBudget _budget           # its budget: records are counted here as they are appended
    cdef object _wake
    cdef object _custom_partition
    cdef object _unknown_topic
    cdef readonly Py_ssize_t _max_request_size
    cdef ProducerLifecycle _lifecycle
    cdef bint _readmitting              # inside readmit(): the new batch is not refused for memory
    # admit(part, readmitted), or None: asked before a batch opens (a transactional producer
    # refuses records outside a transaction); raises to refuse the record.
    cdef object _admit

    def __init__(self, accumulator, wake, custom_partition, Py_ssize_t max_request_size, unknown_topic):
        self._acc = accumulator
        self._topics = accumulator.topics
        self._batches = accumulator.batches
        self._budget = self._batches.budget
        self._wake = wake
        self._custom_partition = custom_partition
        self._max_request_size = max_request_size
        self._unknown_topic = unknown_topic
        self._lifecycle = OPEN
        self._readmitting = False
        self._admit = None

    @property
    def lifecycle(self):
        """OPEN, CLOSING (close() is failing what was not sent) or CLOSED."""
        return ProducerLifecycle(self._lifecycle)

    def _start_closing(self):
        """OPEN -> CLOSING: from now on produce() raises STATE. False when already closing
        or closed."""
        if self._lifecycle != OPEN:
            return False
        self._lifecycle = CLOSING
        return True

    def set_admission(self, admit):
        """``admit(part, readmitted)`` is called before each new batch opens and raises to refuse
        the record. Batches open only while admitted, so a record joining an open batch needs no
        check: the owner of the admission closes every open batch when it stops admitting."""
        if admit is not None and not callable(admit):
            raise TypeError(f"set_admission: 'admit' must be callable or None, got {type(admit).__name__}")
        self._admit = admit

    def _finish_closing(self):
        """CLOSING -> CLOSED: everything not sent has been failed."""
        if self._lifecycle != CLOSING:
            raise RuntimeError(f"cannot finish closing a producer that is {self.lifecycle.name}")
        self._lifecycle = CLOSED

    def produce(self, topic, key, value, cb=None, *, partition=None, headers=None, timestamp_ms=None):
        """Queue one record; ``cb(RecordMetadata, None)`` or ``cb(None, KafkaError)`` exactly once
        (``cb`` may be an ``asyncio.Future``: its result or exception is set instead).

        Raises at once, queueing nothing: TypeError/ValueError naming a bad argument, KafkaError
        MESSAGE_TOO_LARGE, BufferFullError when ``buffer_memory`` or ``buffer_records`` is full,
        STATE once closed.
        """
        cdef int64_t timestamp
        cdef Py_ssize_t p, num_partitions
        cdef TopicState tstate
        if PROBES_COMPILED:
            mark(STAGE_PRODUCE, 0)
        if headers is not None:
            headers = coerce_headers(headers)
        if timestamp_ms is None:
            timestamp = _wall_clock_ms()  # CreateTime, also reported to the callback
        elif type(timestamp_ms) is not int or timestamp_ms < 0:
            raise TypeError(f"produce: 'timestamp_ms' must be an int >= 0 or None, got {timestamp_ms!r}")
        else:
            timestamp = timestamp_ms
        if cb is not None and not callable(cb) and type(cb) is not _FUTURE:
            raise TypeError(f"produce: 'cb' must be callable, an asyncio.Future or None, got {type(cb).__name__}")
        found = self._topics.get(topic)
        if found is None:  # not known yet
            if self._lifecycle != OPEN:
                _refuse_closed()
            self._unknown_topic(topic, key, value, cb, partition, headers, timestamp)
            return
        if self._budget.records_full() and not self._readmitting:
            _refuse_full(self._budget)
        tstate = <TopicState>found
        num_partitions = tstate.num_partitions
        if num_partitions <= 0:  # the metadata layer never hands over such a topic; no modulo by zero
            raise KafkaError(UNKNOWN_TOPIC_OR_PARTITION, f"produce: topic {topic!r} has no partitions")
        if partition is None:
            if self._custom_partition is not None:
                p = self._custom_partition(topic, key, num_partitions)
            elif key is None:
                self._append_sticky(tstate, timestamp, value, cb, headers)
                self._budget.count_record()
                return
            elif PyBytes_CheckExact(key):
                p = murmur2_positive(PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key)) % num_partitions
            else:
                p = murmur2(key) % num_partitions  # str or bytes-like; its TypeError names 'key'
        elif type(partition) is not int or partition < 0:
            raise ValueError(f"produce: 'partition' must be an int >= 0 or None, got {partition!r}")
        elif partition >= num_partitions:  # the same error the callback gets when the count came later
            raise UnknownPartitionError(topic, partition, num_partitions)
        else:
            p = partition
        self._append(<PartitionState>tstate.parts[p], timestamp, key, value, cb, headers)
        self._budget.count_record()

    def readmit(self, str topic not None, key, value, cb, partition, headers, int64_t timestamp_ms):
        """Append a record that waited for its topic's metadata, now known: checked as
        produce() checks it, ``timestamp_ms`` stamped when it was produced, but not against
        ``buffer_memory`` or ``buffer_records`` again, which admitted it then."""
        # The waiver lasts this one call and reaches only _append_new (a slow path), so
        # produce()'s per-record path carries nothing for it; no user code runs meanwhile.
        self._readmitting = True
        try:
            self.produce(topic, key, value, cb, partition=partition, headers=headers, timestamp_ms=timestamp_ms)
        finally:
            self._readmitting = False

    cdef int _append_sticky(self, TopicState tstate, int64_t timestamp, value, cb, headers) except -1:
        """A keyless record joins the topic's sticky partition (KIP-480)."""
        cdef StickyPartition sticky = tstate.sticky
        cdef Py_ssize_t p = sticky.current
        cdef PartitionState part
        if p < 0:
            p = sticky.choose(tstate.num_partitions, tstate.available)
        part = <PartitionState>tstate.parts[p]
        batch = part.batch
        if batch is not None:
            if (_append_record(batch, timestamp, None, value, cb, headers) >= 0
                    or self._append_grown(batch, timestamp, None, value, cb, headers) >= 0):
                return 0
            # the sticky partition's batch is full: send it and move on to another partition
            self._batches.close(batch)
            self._wake()
            part = <PartitionState>tstate.parts[sticky.choose(tstate.num_partitions, tstate.available)]
            if part.batch is not None:
                self._batches.close(part.batch)  # a batch left over from keyed/explicit records
        return self._append_new(part, timestamp, None, value, cb, headers)

    cdef int _append(self, PartitionState part, int64_t timestamp, key, value, cb, headers) except -1:
        batch = part.batch
        if batch is not None:
            if (_append_record(batch, timestamp, key, value, cb, headers) >= 0
                    or self._append_grown(batch, timestamp, key, value, cb, headers) >= 0):
                return 0
            self._batches.close(batch)
            self._wake()
        return self._append_new(part, timestamp, key, value, cb, headers)

    cdef Py_ssize_t _append_grown(self, ProducerBatch batch, int64_t timestamp, key, value, cb, headers) except -2:
        """The record did not fit the open batch's reserved size: grow the batch a step at a
        time while the memory budget allows, and append (its offset delta), or -1 when the
        batch is full."""
        cdef Py_ssize_t delta = -1
        while delta < 0 and self._batches.grow(batch):
            delta = _append_record(batch, timestamp, key, value, cb, headers)
        return delta

    cdef int _append_new(self, PartitionState part, int64_t timestamp, key, value, cb, headers) except -1:
        """Open a batch for ``part`` sized for this record, and append the record."""
        cdef Py_ssize_t size
        # Closing closes every open batch first, so once the producer is not OPEN each record
        # comes here (or to the unknown-topic path): the check costs the per-record path nothing.
        if self._lifecycle != OPEN:
            _refuse_closed()
        if self._admit is not None:
            self._admit(part, self._readmitting)
        key = coerce_bytes(key, "key")
        value = coerce_bytes(value, "value")
        size = RECORD_OVERHEAD_MAX + (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
        if headers:
            for name, header_value in headers:
                size += len(name) + (len(header_value) if header_value is not None else 0) + HEADER_OVERHEAD
        if size > self._max_request_size:
            raise KafkaError(
                MESSAGE_TOO_LARGE,
                f"produce: record of {size} bytes (key + value + headers) is larger than "
                f"max_request_size ({self._max_request_size})",
            )
        batch = self._batches.open_batch(part, size, self._readmitting)
        if _append_record(batch, timestamp, key, value, cb, headers) < 0:
            # cannot happen with capacity >= size; never lose the record silently
            raise KafkaError(MESSAGE_TOO_LARGE, f"produce: record of {size} bytes did not fit an empty batch")
        return 0

