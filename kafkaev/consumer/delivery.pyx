# cython: language_level=3
"""The consumer's per-record work, in C: handing each fetched record to ``on_message``.

The Python loop around ``on_message`` cost about a quarter of the consumer's time per record
(the loop itself, and reading the partition's ``interrupted`` flag after every call). Here the
flag is only read when something was interrupted at all since the delivery began: every
``PartitionState`` change that interrupts a delivery (pause, seek, reset, revoke) calls
``note_interruption()``, which bumps one C counter; so does ``kafkaev.stop()``.

While a delivery runs, its ``DeliveryCursor`` says which record the callback holds (a C
store per record, no Python attribute write), so ``commit()`` and ``position()`` called
from inside the callback count everything handed over so far, the running record included.
"""

cimport cython
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE

from kafkaev.protocol.probes cimport PROBES_COMPILED, STAGE_DELIVER, mark

# How many deliveries were interrupted since the module loaded; only compared for change.
cdef unsigned long long interruptions = 0
# Loops that kafkaev.stop() was called for and that have not been turned again since.
cdef set stopping = set()


def note_interruption():
    """A partition's delivery must stop after the current record (pause, seek, reset, revoke)."""
    global interruptions
    interruptions += 1


def note_stop(object loop):
    """``kafkaev.stop()`` was called for ``loop``: every delivery on it stops after the current
    record, and no other starts until ``clear_stop(loop)``."""
    global interruptions
    stopping.add(loop)
    interruptions += 1


def clear_stop(object loop):
    """``loop`` is being turned again: deliveries on it go on."""
    stopping.discard(loop)


def stop_requested(object loop):
    """True between ``note_stop(loop)`` and ``clear_stop(loop)``."""
    return loop in stopping


cdef class DeliveryCursor:
    """One consumer's delivery in progress: the partition, its records and the index of the
    one the callback holds (one consumer delivers one partition at a time, on its loop)."""

    cdef public object loop
    cdef object state
    cdef list messages
    cdef Py_ssize_t index
    cdef object generation

    def __init__(self, object loop):
        self.loop = loop
        self.state = None
        self.messages = None
        self.index = -1
        self.generation = None

    def begin(self, object state, list messages, Py_ssize_t index):
        """``messages[:index + 1]`` of ``state`` are handed over (on_batch: all of them)."""
        self.state = state
        self.messages = messages
        self.index = index
        self.generation = state.generation

    def end(self):
        self.state = None
        self.messages = None
        self.index = -1
        self.generation = None

    def delivered(self, object state):
        """``(position, leader epoch)`` of ``state`` counting the records handed over by the
        delivery in progress, the running one included; None when none of its records is being
        delivered (or a seek, reset or revoke from the callback made its position stand)."""
        if (self.state is not state or self.index < 0 or self.messages is None
                or state.generation != self.generation):
            return None
        msg = self.messages[self.index]
        return msg.offset + 1, msg.leader_epoch


@cython.boundscheck(False)
@cython.wraparound(False)
def deliver_each(object on_message, list messages, Py_ssize_t start, object state, object report,
                 DeliveryCursor cursor):
    """Call ``on_message(msg)`` for each record of ``messages[start:]`` in order. An exception
    from the callback goes to ``report(exc)`` and delivery goes on. Returns the index after the
    last record handed over: ``len(messages)``, or less when the callback interrupted ``state``
    (``state.interrupted`` turned true) or stopped the cursor's loop (``kafkaev.stop()``)
    before the last record."""
    cdef unsigned long long seen = interruptions
    cdef Py_ssize_t i
    cdef Py_ssize_t count = PyList_GET_SIZE(messages)
    cdef object msg
    if start < 0 or start > count:  # read unchecked below
        raise ValueError(f"deliver_each: 'start' must be within 0..{count}, got {start}")
    cursor.begin(state, messages, -1)
    try:
        for i in range(start, count):
            msg = <object>PyList_GET_ITEM(messages, i)
            cursor.index = i
            if PROBES_COMPILED:
                mark(STAGE_DELIVER, 0)
            try:
                on_message(msg)
            except Exception as exc:
                report(exc)
            if interruptions != seen:
                seen = interruptions
                if state.interrupted or cursor.loop in stopping:
                    return i + 1
        return count
    finally:
        cursor.end()
