# cython: language_level=3
"""``async for msg in client`` in C: ``__anext__`` takes the next buffered record and returns an
awaitable that is already complete, so a record costs no coroutine of its own.

Awaiting it gives the record at once, through the ``am_send`` slot (no StopIteration is raised
for it, so no exception object per record); under a tracer, which bypasses that slot, its
``__next__`` returns the record the ordinary way. Only when nothing is buffered (or at the end
of a record set, so the loop turns between sets) does ``__anext__`` return the Python
coroutine that waits (``kafkaev.aio.iteration.next_record``).
"""

cimport cython
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF

from kafkaev.consumer.buffer cimport RecordBuffer


cdef extern from "Python.h":
    ctypedef enum PySendResult:
        PYGEN_RETURN
        PYGEN_ERROR
        PYGEN_NEXT

cdef extern from *:
    """
    typedef PySendResult (*kev_sendfunc)(PyObject *, PyObject *, PyObject **);
    static void kev_set_am_send(PyTypeObject *tp, kev_sendfunc send) {
        if (tp->tp_as_async != NULL) tp->tp_as_async->am_send = (sendfunc)send;
    }
    """
    ctypedef PySendResult (*kev_sendfunc)(PyObject *, PyObject *, PyObject **) noexcept
    void kev_set_am_send(PyTypeObject *tp, kev_sendfunc send)


@cython.final
@cython.freelist(16)
@cython.no_gc  # holds one Message, which holds no reference back
cdef class Taken:
    """A record already taken: ``await`` gives it at once (once)."""

    cdef object msg

    def __await__(self):
        return self

    def __iter__(self):
        return self

    def __next__(self):
        msg = self.msg
        self.msg = None
        raise StopIteration(msg)


cdef PySendResult _taken_send(PyObject *self, PyObject *arg, PyObject **result) noexcept:
    cdef Taken taken = <Taken>self
    msg = taken.msg
    taken.msg = None
    Py_INCREF(msg)
    result[0] = <PyObject *>msg
    return PYGEN_RETURN


kev_set_am_send(<PyTypeObject *>Taken, _taken_send)


@cython.final
cdef class MessageIterator:
    """``async for msg in client``: records in order per partition, until the client closes."""

    cdef RecordBuffer _buffer
    cdef object _loop
    cdef object _next_record  # the coroutine function that waits: next_record(loop, buffer)

    def __init__(self, loop, RecordBuffer buffer not None, next_record):
        self._loop = loop
        self._buffer = buffer
        self._next_record = next_record

    def __aiter__(self):
        return self

    def __anext__(self):
        cdef Taken taken
        msg = self._buffer.take_one()
        if msg is None:
            return self._next_record(self._loop, self._buffer)
        taken = Taken.__new__(Taken)
        taken.msg = msg
        return taken
