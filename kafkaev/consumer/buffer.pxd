# C declarations of kafkaev.consumer.buffer (cimported by kafkaev.aio.pull, which calls take_one in C).

cimport cython


@cython.final
cdef class BufferedRecords:
    cdef public object state  # the PartitionState
    cdef public object generation  # the partition's generation when fetched: stale once it moves
    cdef public list messages
    cdef public object next_offset  # the position once every record was handed out
    cdef public object next_epoch  # the leader epoch that position belongs to (NO_LEADER_EPOCH: keep the last record's)
    cdef public object error  # a corrupt entry right after these records: the partition stops there
    cdef public Py_ssize_t size  # what it counts against max_buffered_bytes
    cdef public Py_ssize_t index


@cython.final
cdef class RecordBuffer:
    cdef public Py_ssize_t limit
    cdef readonly Py_ssize_t size  # the queued sets' sizes: compared with limit (max_buffered_bytes)
    cdef object _sets  # deque of BufferedRecords
    cdef dict _per_partition  # record sets queued per PartitionState
    cdef object _subscription
    cdef object _on_settled  # a record set was handed out whole: move its position to the end
    cdef object _on_room  # the buffer went from full to below the limit: fetch again
    cdef list _waiters  # called once at the next put()
    cdef bint _at_boundary  # the last take_one() ended a record set
    cdef readonly bint closed  # close(): the consumer is gone
    cdef BufferedRecords _current  # the head set take_one() is handing out
    cdef bint _unsynced  # take_one() took from _current past what state.position says

    cdef void _sync(self) except *
    cdef void _append(self, BufferedRecords records) except *
    cdef void _wake(self) except *

    cdef BufferedRecords _head(self)
    cdef void _pop(self) except *
    cpdef object take_one(self)
    cpdef dict take(self, Py_ssize_t max_records)
