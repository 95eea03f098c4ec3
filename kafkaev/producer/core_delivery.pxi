# The delivery callbacks of one batch, from append until the batch's answer.
#
# Records are remembered in runs: consecutive records with the same callback and the same
# CreateTime share one entry (the callback in a list, its first offset delta, count and
# timestamp in a C array). A producer passing one callback for every record, at up to
# thousands of records a millisecond, keeps a run or two per batch instead of a list slot
# and an array slot per record: over 1,000 partitions with buffer_memory full, those were
# ~30 bytes a record outside the budget, a quarter again of a 100-byte record's bytes.
# Distinct callbacks (kafkaev.aio's Futures) make one-record runs, as before. When the batch
# completes, complete() or fail() calls every record's callback once, in record order, in a
# C loop (a Future's result is set instead); a callback that raises is passed to ``report``
# and the others still run.

cdef struct DeliveryRun:
    int64_t timestamp       # the records' CreateTime (ms), reported unless the topic uses LogAppendTime
    int32_t first_delta     # the first record's index in its batch
    int32_t count           # records in the run, at consecutive indexes

cdef enum:
    # Doubled as runs come: over many partitions most batches carry a record or two, and
    # thousands of them may wait for their answers at once.
    INITIAL_DELIVERY_RUNS = 2


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

cdef extern from *:
    """
    /* kafkaev.aio hands a record's Future over untracked (kafkaev/aio/send.pyx). It is
       tracked again when it takes an exception, or was cancelled: an exception's traceback
       can lead back to it. Settled with its RecordMetadata it stays untracked: it then
       refers to its loop and an untracked tuple of str and ints only (setting the result
       hands its callbacks to the loop, and it has no __dict__), so it can be in no cycle. */
    static void kev_track_again(PyObject *obj) {
        if (!PyObject_GC_IsTracked(obj)) PyObject_GC_Track(obj);
    }
    """
    void kev_track_again(object obj)
# A record's callback may be an asyncio.Future instead (kafkaev.aio's awaitable produce): it is
# settled here, in the same loop, so an awaited record costs no Python frame of its own. Only
# exact Futures (the C-accelerated type every loop's create_future() gives) take this path.
cdef object _FUTURE = asyncio.Future
cdef object _INVALID_STATE = asyncio.InvalidStateError


cdef inline void _settle(object cb, object meta, object err, object report):
    """Hand one record's outcome to its callback or Future; what a callback raises goes to
    ``report`` (a user callback must not starve the others). A Future cancelled by its
    awaiter is left alone: the record was sent all the same. One already done otherwise is
    reported: a record's outcome came twice."""
    try:
        if type(cb) is _FUTURE:
            # Set without asking done() first: one call a record instead of two. Only a
            # Future its awaiter cancelled is done here, and it refuses the result.
            try:
                if err is None:
                    cb.set_result(meta)
                else:
                    kev_track_again(cb)
                    cb.set_exception(err)
            except _INVALID_STATE:
                kev_track_again(cb)
                if not cb.cancelled():  # done, and not by its awaiter: settled twice
                    raise _INVALID_STATE(f"a record's outcome came for a Future already done: {cb!r}")
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

    cdef list _callbacks            # one per run: _callbacks[i] is the callback of _runs[i]'s records
    cdef DeliveryRun *_runs
    cdef Py_ssize_t _capacity       # runs allocated
    cdef Py_ssize_t _records        # records with a callback, over every run

    def __cinit__(self):
        self._callbacks = []
        self._runs = NULL
        self._capacity = 0
        self._records = 0

    def __dealloc__(self):
        PyMem_Free(self._runs)

    def __len__(self):
        """Records with a callback."""
        return self._records

    cpdef int add(self, cb, int32_t offset_delta, int64_t timestamp) except -1:
        """Remember ``cb`` for the record at ``offset_delta`` in the batch, produced at ``timestamp``
        (after every record added before it)."""
        cdef Py_ssize_t n = PyList_GET_SIZE(self._callbacks)
        cdef DeliveryRun *run
        if n:
            run = &self._runs[n - 1]
            if (run.timestamp == timestamp and run.first_delta + run.count == offset_delta
                    and <PyObject *>cb == PyList_GET_ITEM(self._callbacks, n - 1)):
                run.count += 1
                self._records += 1
                return 0
        self._add_run(cb, offset_delta, 1, timestamp)
        return 0

    cdef int _add_run(self, cb, int32_t first_delta, int32_t count, int64_t timestamp) except -1:
        cdef Py_ssize_t n = PyList_GET_SIZE(self._callbacks)
        cdef Py_ssize_t capacity
        cdef DeliveryRun *runs
        if n == self._capacity:
            capacity = self._capacity * 2 if self._capacity else INITIAL_DELIVERY_RUNS
            runs = <DeliveryRun *>PyMem_Realloc(self._runs, capacity * sizeof(DeliveryRun))
            if runs is NULL:
                raise MemoryError()
            self._runs = runs
            self._capacity = capacity
        self._callbacks.append(cb)
        self._runs[n].timestamp = timestamp
        self._runs[n].first_delta = first_delta
        self._runs[n].count = count
        self._records += count
        return 0

    cpdef Deliveries split(self, int32_t first_delta):
        """Move the callbacks of the records from offset delta ``first_delta`` on into a new
        Deliveries, their deltas counted from there (a batch split in two)."""
        cdef Deliveries tail = Deliveries()
        cdef Py_ssize_t i, keep = 0, n = PyList_GET_SIZE(self._callbacks)
        cdef DeliveryRun *run
        cdef int32_t head_count
        for i in range(n):
            run = &self._runs[i]
            cb = <object>PyList_GET_ITEM(self._callbacks, i)
            if run.first_delta + run.count <= first_delta:
                keep += 1  # runs are in record order: every earlier record comes first
            elif run.first_delta >= first_delta:
                tail._add_run(cb, run.first_delta - first_delta, run.count, run.timestamp)
            else:  # the split falls inside this run: its first records stay
                head_count = first_delta - run.first_delta
                tail._add_run(cb, 0, run.count - head_count, run.timestamp)
                run.count = head_count
                keep += 1
        del self._callbacks[keep:]
        self._records -= tail._records
        return tail

    cdef list _take(self, DeliveryRun **runs):
        """Hand over every callback and run and start empty: each callback runs once, even
        if one of them produces again or the batch is failed while completing."""
        callbacks = self._callbacks
        runs[0] = self._runs
        self._callbacks = []
        self._runs = NULL
        self._capacity = 0
        self._records = 0
        return callbacks

    def complete(self, str topic not None, partition, int64_t base_offset, int64_t log_append_time, report):
        """Call every callback with ``(RecordMetadata, None)``: offset ``base_offset`` + the
        record's offset delta (-1 when ``base_offset`` is -1, acks=0), timestamp
        ``log_append_time`` when the topic uses LogAppendTime (>= 0), else the record's CreateTime."""
        cdef DeliveryRun *runs = NULL
        cdef list callbacks = self._take(&runs)
        cdef Py_ssize_t i, j, n = PyList_GET_SIZE(callbacks)
        cdef int64_t first_offset, last_timestamp = 0
        cdef object offset = -1
        cdef object timestamp_obj = None
        if log_append_time >= 0:
            timestamp_obj = log_append_time
        try:
            for i in range(n):
                cb = <object>PyList_GET_ITEM(callbacks, i)
                if log_append_time < 0 and (timestamp_obj is None or runs[i].timestamp != last_timestamp):
                    # records of one millisecond share one int, across runs too (one-record
                    # runs of distinct callbacks, kafkaev.aio's Futures)
                    last_timestamp = runs[i].timestamp
                    timestamp_obj = last_timestamp
                first_offset = base_offset + runs[i].first_delta
                for j in range(runs[i].count):
                    if base_offset >= 0:
                        offset = first_offset + j
                    meta = kev_record_metadata(_RECORD_METADATA, topic, partition, offset, timestamp_obj)
                    _settle(cb, meta, None, report)
        finally:
            PyMem_Free(runs)

    def fail(self, err, report):
        """Call every record's callback with ``(None, err)``."""
        cdef DeliveryRun *runs = NULL
        cdef list callbacks = self._take(&runs)
        cdef Py_ssize_t i, j
        try:
            for i in range(PyList_GET_SIZE(callbacks)):
                cb = <object>PyList_GET_ITEM(callbacks, i)
                for j in range(runs[i].count):
                    _settle(cb, None, err, report)
        finally:
            PyMem_Free(runs)
