# cython: language_level=3
"""The runner's common path, in C: one partition's delivered records handed to the handler one
after another, for as long as each finishes at once.

A no-op handler costs the runner little more than the call itself only if nothing else is
done per record in Python: the scheduler checks once per batch that the records may run
inline (their lane idle, a slot free), then ``InlineRun.run`` calls the handler on each,
stepping a coroutine's first ``send`` in C (``PyIter_Send``), and the scheduler advances the
partition's offsets and counters once for all of those that finished. The loop stops at the
first record that does not finish at once (it raised, or its coroutine waits) or when the
loop turn's budget is spent; that record (and the rest of the batch) goes the per-record way.
The clock is read once every few records, as many as the pace so far says fit in half of the
budget left (at most ``CLOCK_STRIDE_MAX``): a read costs as much as a third of a no-op
handler's call on a virtual machine, and a run ends within about one record of its deadline.
"""

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport PyObject, Py_XDECREF
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

cdef extern from "Python.h":
    ctypedef enum PySendResult:
        PYGEN_RETURN
        PYGEN_ERROR
        PYGEN_NEXT
    PySendResult PyIter_Send(object iterator, object arg, PyObject** presult)
    bint PyCoro_CheckExact(object obj)

# Why ``InlineRun.run`` stopped before the end of the records.
STOPPED_NONE = 0  # it did not: every record finished
STOPPED_RAISED = 1  # the record's handler raised: ``error``
STOPPED_WAITING = 2  # the record's coroutine waits on ``waiting_on``: ``pending`` is the coroutine
STOPPED_RETURNED = 3  # the handler returned something not None and not a coroutine: ``pending``
STOPPED_BUDGET = 4  # the turn's budget was spent, or ``halted`` set, before the record started

# The most records run between two reads of the clock: at a no-op handler's pace (well under a
# microsecond each) a few tens of microseconds, nothing next to a 20 ms budget.
cdef enum:
    CLOCK_STRIDE_MAX = 64


cdef inline double monotonic_s() noexcept nogil:
    # CLOCK_MONOTONIC is what time.monotonic() reads on Linux: comparable with its deadlines.
    cdef timespec now
    clock_gettime(CLOCK_MONOTONIC, &now)
    return now.tv_sec + now.tv_nsec * 1e-9


cdef class InlineRun:
    """One scheduler's reusable record of why the last ``run`` stopped (no allocation per
    batch): ``stopped`` is one of the ``STOPPED_*`` values, ``error``, ``pending`` and
    ``waiting_on`` describe the stopping record. ``halted`` set while a run goes on (the
    consumer stops, or gives partitions up) ends it after the current record."""

    cdef public int stopped
    cdef public bint halted
    cdef public object error
    cdef public object pending
    cdef public object waiting_on

    def __init__(self):
        self.stopped = STOPPED_NONE
        self.halted = False
        self.error = None
        self.pending = None
        self.waiting_on = None

    def clear(self):
        """Drop the references to the last stopping record's outcome."""
        self.error = None
        self.pending = None
        self.waiting_on = None

    def run(self, object handler, list messages, Py_ssize_t start, double deadline):
        """Call ``handler(msg)`` on ``messages[start:]`` in order while each call finishes at
        once and ``deadline`` (a ``time.monotonic()`` value) has not passed; returns the index
        of the first record that did not finish (``len(messages)`` when all did). A record
        stopped on for the budget was not started; one stopped on for another reason was."""
        cdef Py_ssize_t count = PyList_GET_SIZE(messages)
        cdef Py_ssize_t i
        cdef Py_ssize_t next_check = start + 1  # the clock is read after the first record
        cdef double began = monotonic_s()
        cdef object msg
        cdef object result
        cdef PyObject* sent = NULL
        cdef PySendResult outcome
        self.stopped = STOPPED_NONE
        self.halted = False
        for i in range(start, count):
            if i > start:
                if self.halted:
                    self.stopped = STOPPED_BUDGET
                    return i
                if i >= next_check:
                    next_check = i + clock_stride(began, deadline, i - start)
                    if next_check == i:
                        self.stopped = STOPPED_BUDGET
                        return i
            msg = <object>PyList_GET_ITEM(messages, i)
            try:
                result = handler(msg)
            except Exception as exc:
                self.error = exc
                self.stopped = STOPPED_RAISED
                return i
            if result is None:
                continue
            if not PyCoro_CheckExact(result):
                # Another awaitable, or a plain function's value: calls.go_on tells which.
                self.pending = result
                self.stopped = STOPPED_RETURNED
                return i
            outcome = PyIter_Send(result, None, &sent)
            if outcome == PYGEN_RETURN:
                Py_XDECREF(sent)
                sent = NULL
                continue
            if outcome == PYGEN_NEXT:
                self.pending = result
                self.waiting_on = <object>sent
                Py_XDECREF(sent)
                sent = NULL
                self.stopped = STOPPED_WAITING
                return i
            try:
                raise_current()
            except Exception as exc:
                self.error = exc
                self.stopped = STOPPED_RAISED
                return i
        return count


cdef inline Py_ssize_t clock_stride(double began, double deadline, Py_ssize_t done) noexcept nogil:
    # 0 once the deadline passed; else how many more records fit in half of what is left, at
    # the pace of the ``done`` records run since ``began``: between 1 and CLOCK_STRIDE_MAX.
    cdef double now = monotonic_s()
    if now > deadline:
        return 0
    cdef double pace = (now - began) / done
    cdef double fit = (deadline - now) / (2.0 * pace) if pace > 0.0 else CLOCK_STRIDE_MAX
    if fit >= CLOCK_STRIDE_MAX:
        return CLOCK_STRIDE_MAX
    return 1 if fit < 1.0 else <Py_ssize_t>fit


cdef int raise_current() except -1:
    # PyIter_Send returned PYGEN_ERROR with the coroutine's exception set: raise it here.
    return -1
