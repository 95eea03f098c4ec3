# The delivery callbacks of one batch, from append until the batch's answer.
#
# A record with a callback adds the callback to a list and its offset delta and CreateTime
# to a C array: no tuple per record, nothing more for the garbage collector to track. When
# the batch completes, complete() or fail() calls every callback once, in record order, in
# a C loop (a Future's result is set instead); a callback that raises is passed to ``report`` and the others still run.

cdef struct DeliverySlot:
    int64_t timestamp       # the record's CreateTime (ms), reported unless the topic uses LogAppendTime
    int32_t offset_delta    # the record's index in its batch

cdef enum:
    # Doubled as records come: over many partitions most batches carry a record or two, and
    # thousands of them may wait for their answers at once (64 slots were 1 KiB each).
    INITIAL_DELIVERY_SLOTS = 4

cdef extern from *:
    """
    /* RecordMetadata(topic, partition, offset, timestamp) without the NamedTuple's Python-level
       __new__: a tuple subclass filled as tuple.__new__ fills one. It holds only a str and
       ints, so it can never be part of a cycle: the collector need not track it. */
    static PyObject *kev_record_metadata(PyObject *type, PyObject *topic, PyObject *partition,
                                         PyObject *offset, PyObject *timestamp) {
        PyTypeObject *tp = (PyTypeObject *)type;
        PyObject *meta = tp->tp_alloc(tp, 4);
        if (meta == NULL) return NULL;
        Py_INCREF(topic);
        PyTuple_SET_ITEM(meta, 0, topic);
        Py_INCREF(partition);
        PyTuple_SET_ITEM(meta, 1, partition);
        Py_INCREF(offset);
        PyTuple_SET_ITEM(meta, 2, offset);
        Py_INCREF(timestamp);
        PyTuple_SET_ITEM(meta, 3, timestamp);
        if (PyObject_IS_GC(meta)) PyObject_GC_UnTrack(meta);
        return meta;
    }
    """
    object kev_record_metadata(object type, object topic, object partition, object offset, object timestamp)


cdef object _RECORD_METADATA = RecordMetadata
# A record's callback may be an asyncio.Future instead (kafkaev.aio's awaitable produce): it is
# settled here, in the same loop, so an awaited record costs no Python frame of its own. Only
# exact Futures (the C-accelerated type every loop's create_future() gives) take this path.
cdef object _FUTURE = asyncio.Future


cdef inline void _settle(object cb, object meta, object err, object report):
    """Hand one record's outcome to its callback or Future; what a callback raises goes to
    ``report`` (a user callback must not starve the others). A Future cancelled by its
    awaiter is left alone: the record was sent all the same."""
    try:
        if type(cb) is _FUTURE:
            if not cb.done():
                if err is None:
                    cb.set_result(meta)
                else:
                    cb.set_exception(err)
        else:
            cb(meta, err)
    except Exception as exc:
        report(exc)


def settle(cb, meta, err, report):
    """``_settle`` for the Python paths (records that waited for their topic)."""
    _settle(cb, meta, err, report)


@cython.final
@cython.no_gc_clear  # a collected cycle must not leave _callbacks None under a later add()/complete()
cdef class Deliveries:
    """The delivery callbacks of one batch's records (only of the records that have one)."""

    cdef list _callbacks
    cdef DeliverySlot *_slots       # _slots[i] belongs to _callbacks[i]
    cdef Py_ssize_t _capacity

    def __cinit__(self):
        self._callbacks = []
        self._slots = NULL
        self._capacity = 0

    def __dealloc__(self):
        PyMem_Free(self._slots)

    def __len__(self):
        return PyList_GET_SIZE(self._callbacks)

    cpdef int add(self, cb, int32_t offset_delta, int64_t timestamp) except -1:
        """Remember ``cb`` for the record at ``offset_delta`` in the batch, produced at ``timestamp``."""
        cdef Py_ssize_t n = PyList_GET_SIZE(self._callbacks)
        cdef Py_ssize_t capacity
        cdef DeliverySlot *slots
        if n == self._capacity:
            capacity = self._capacity * 2 if self._capacity else INITIAL_DELIVERY_SLOTS
            slots = <DeliverySlot *>PyMem_Realloc(self._slots, capacity * sizeof(DeliverySlot))
            if slots is NULL:
                raise MemoryError()
            self._slots = slots
            self._capacity = capacity
        self._callbacks.append(cb)
        self._slots[n].timestamp = timestamp
        self._slots[n].offset_delta = offset_delta
        return 0

    cpdef Deliveries split(self, int32_t first_delta):
        """Move the callbacks of the records from offset delta ``first_delta`` on into a new
        Deliveries, their deltas counted from there (a batch split in two)."""
        cdef Deliveries tail = Deliveries()
        cdef Py_ssize_t i, keep = 0, n = PyList_GET_SIZE(self._callbacks)
        for i in range(n):
            if self._slots[i].offset_delta < first_delta:
                keep += 1  # slots are in record order: every earlier record comes first
            else:
                tail.add(<object>PyList_GET_ITEM(self._callbacks, i), self._slots[i].offset_delta - first_delta,
                         self._slots[i].timestamp)
        del self._callbacks[keep:]
        return tail

    cdef list _take(self, DeliverySlot **slots):
        """Hand over every callback and slot and start empty: each callback runs once, even
        if one of them produces again or the batch is failed while completing."""
        callbacks = self._callbacks
        slots[0] = self._slots
        self._callbacks = []
        self._slots = NULL
        self._capacity = 0
        return callbacks

    def complete(self, str topic not None, partition, int64_t base_offset, int64_t log_append_time, report):
        """Call every callback with ``(RecordMetadata, None)``: offset ``base_offset`` + the
        record's offset delta (-1 when ``base_offset`` is -1, acks=0), timestamp
        ``log_append_time`` when the topic uses LogAppendTime (>= 0), else the record's CreateTime."""
        cdef DeliverySlot *slots = NULL
        cdef list callbacks = self._take(&slots)
        cdef Py_ssize_t i, n = PyList_GET_SIZE(callbacks)
        cdef int64_t timestamp, last_timestamp = 0
        cdef object offset, timestamp_obj = None
        cdef object no_offset = -1
        if log_append_time >= 0:
            timestamp_obj = log_append_time
        try:
            for i in range(n):
                offset = base_offset + slots[i].offset_delta if base_offset >= 0 else no_offset
                if log_append_time < 0:
                    timestamp = slots[i].timestamp
                    if timestamp_obj is None or timestamp != last_timestamp:
                        timestamp_obj = timestamp  # records of one millisecond share one int
                        last_timestamp = timestamp
                meta = kev_record_metadata(_RECORD_METADATA, topic, partition, offset, timestamp_obj)
                _settle(<object>PyList_GET_ITEM(callbacks, i), meta, None, report)
        finally:
            PyMem_Free(slots)

    def fail(self, err, report):
        """Call every callback with ``(None, err)``."""
        cdef DeliverySlot *slots = NULL
        cdef list callbacks = self._take(&slots)
        PyMem_Free(slots)
        for cb in callbacks:
            _settle(cb, None, err, report)
