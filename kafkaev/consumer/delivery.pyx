# cython: language_level=3
"""The consumer's per-record work, in C: handing each fetched record to ``on_message``.

The Python loop around ``on_message`` cost about a quarter of the consumer's time per record
(the loop itself, and reading the partition's ``interrupted`` flag after every call). Here the
flag is only read when something was interrupted at all since the delivery began: every
``PartitionState`` change that interrupts a delivery (pause, seek, reset, revoke) calls
``note_interruption()``, which bumps one C counter.
"""

cimport cython
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE

# How many deliveries were interrupted since the module loaded; only compared for change.
cdef unsigned long long interruptions = 0


def note_interruption():
    """A partition's delivery must stop after the current record (pause, seek, reset, revoke)."""
    global interruptions
    interruptions += 1


@cython.boundscheck(False)
@cython.wraparound(False)
def deliver_each(object on_message, list messages, object state, object report):
    """Call ``on_message(msg)`` for each record in order. An exception from the callback goes
    to ``report(exc)`` and delivery goes on. Returns the last record handed over when the
    callback interrupted ``state`` (``state.interrupted`` turned true), else None."""
    cdef unsigned long long seen = interruptions
    cdef Py_ssize_t i
    cdef object msg
    for i in range(PyList_GET_SIZE(messages)):
        msg = <object>PyList_GET_ITEM(messages, i)
        try:
            on_message(msg)
        except Exception as exc:
            report(exc)
        if interruptions != seen:
            seen = interruptions
            if state.interrupted:
                return msg
    return None
