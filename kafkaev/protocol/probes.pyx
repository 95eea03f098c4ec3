# cython: language_level=3
"""Latency probes: CLOCK_MONOTONIC timestamps (``time.perf_counter_ns``'s clock) at the stages
of one record's way through the client, for ``bench/breakdown.py``.

Only a build made with ``KAFKAEV_PROBES=1 python setup.py build_ext --inplace`` has the probes
in its call sites; a normal build compiles them out (``PROBES_COMPILED`` is 0 there), and
``compiled()`` says which build this is. Marks go into one C array allocated by ``enable()``;
nothing is recorded before it, nor past its capacity (``dropped()`` counts those).
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

STAGE_NAMES = ("produce", "encode", "write", "read", "frame", "callback", "deliver")

cdef struct Mark:
    int stage
    int tag
    int64_t ns

cdef Mark *_marks = NULL
cdef Py_ssize_t _capacity = 0
cdef Py_ssize_t _count = 0
cdef Py_ssize_t _dropped = 0


cdef void mark(int stage, int tag) noexcept:
    global _count, _dropped
    cdef timespec ts
    if _count >= _capacity:
        if _marks != NULL:
            _dropped += 1
        return
    clock_gettime(CLOCK_MONOTONIC, &ts)
    _marks[_count].stage = stage
    _marks[_count].tag = tag
    _marks[_count].ns = <int64_t>ts.tv_sec * 1000000000 + ts.tv_nsec
    _count += 1


def compiled():
    """True in a KAFKAEV_PROBES=1 build: the call sites record marks once ``enable()`` ran."""
    return bool(PROBES_COMPILED)


def enable(Py_ssize_t capacity):
    """Record up to ``capacity`` marks from now on (earlier ones are discarded)."""
    global _marks, _capacity, _count, _dropped
    if capacity <= 0:
        raise ValueError(f"capacity must be positive, got {capacity}")
    if not PROBES_COMPILED:
        raise RuntimeError("this build has no probes: rebuild with KAFKAEV_PROBES=1 python setup.py build_ext --inplace")
    free(_marks)
    _marks = <Mark *>malloc(capacity * sizeof(Mark))
    if _marks == NULL:
        _capacity = 0
        raise MemoryError(f"no room for {capacity} probe marks")
    _capacity = capacity
    _count = 0
    _dropped = 0


def clear():
    """Forget the marks recorded so far (the capacity stays)."""
    global _count, _dropped
    _count = 0
    _dropped = 0


def dropped():
    """Marks not recorded because the array was full."""
    return _dropped


def marks():
    """The marks so far, oldest first: (stage, tag, ns) tuples."""
    return [(_marks[i].stage, _marks[i].tag, _marks[i].ns) for i in range(_count)]
