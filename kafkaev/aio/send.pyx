# cython: language_level=3
"""``kafkaev.aio.Client.produce`` and ``produce_nowait`` in C: the base class whose methods they are.

An awaited record's way was a Python frame (``Client.produce``) around the C producer: the
Future made, the room waiters looked at, the producer called. Here it is one C method of the
client's base class, so ``client.produce(...)`` calls C directly: the record's Future comes from
the loop's ``create_future``, goes to ``ProducerCore.produce`` as the record's callback (the
delivery loop settles it), and is returned itself. Only the slow path (others wait for room, or
the buffer is full) goes back to Python: the subclass's ``_produce_after_room`` coroutine.
"""


import asyncio

from kafkaev.producer import BufferFullError


cdef extern from "Python.h":
    void PyObject_GC_Track(object obj)
    void PyObject_GC_UnTrack(object obj)
    int PyObject_GC_IsTracked(object obj)


cdef object _FUTURE = asyncio.Future


cdef class ProducingClient:
    """The asyncio client's produce methods. ``_init_producing`` wires them to the producer;
    the subclass provides ``_produce_after_room`` (the coroutine that waits for room)."""

    cdef object _core_produce  # ProducerCore.produce, bound
    cdef object _new_future    # how a record's Future is made (the loop's create_future)
    cdef object _room_waiters  # RoomQueue.waiters: true while awaited calls wait for room

    def _init_producing(self, core_produce, new_future, room_waiters):
        self._core_produce = core_produce
        self._new_future = new_future
        self._room_waiters = room_waiters

    def produce(self, topic, key, value, *, partition=None, headers=None, timestamp_ms=None):
        """Send one record; awaiting it waits for its acknowledgement: its RecordMetadata, or
        the KafkaError it failed with. Waits for room while ``buffer_memory`` is full (in turn
        with the other waiting calls). A bad argument raises at once. Cancelling the await does
        not take the record back: once it was queued it is sent (and acknowledged or failed)
        all the same, only its outcome is no longer reported; cancelled while it still waited
        for room, it was never queued.

        With room in the buffer the awaitable is the record's Future itself (no coroutine per
        record); otherwise a coroutine that waits for room first. ``asyncio.ensure_future``
        takes either."""
        fut = self._new_future()
        if self._room_waiters:  # others wait for room: queue behind them
            return self._produce_after_room(topic, key, value, fut, partition, headers, timestamp_ms)
        try:
            self._queue(topic, key, value, fut, partition, headers, timestamp_ms)
        except BufferFullError:
            return self._produce_after_room(topic, key, value, fut, partition, headers, timestamp_ms)
        return fut

    def produce_nowait(self, topic, key, value, *, partition=None, headers=None, timestamp_ms=None):
        """Queue one record and return at once a Future of its RecordMetadata (for pipelining
        many records). Raises BufferFullError when ``buffer_memory`` is full (``await
        produce()`` waits instead). Cancelling the Future does not take the record back."""
        fut = self._new_future()
        self._queue(topic, key, value, fut, partition, headers, timestamp_ms)
        return fut

    cdef inline int _queue(self, topic, key, value, fut, partition, headers, timestamp_ms) except -1:
        """Hand the record and its Future to the producer (no keywords on the common path).

        The Future goes untracked by the collector: until the delivery loop settles it it
        refers only to its loop and its awaiter, and the producer settles every record it took
        exactly once; a failed or cancelled one is tracked again then (``core_delivery.pxi``).
        Tracked, a window of pending Futures outlived the young collections and brought on
        full ones (DESIGN.md)."""
        cdef bint untracked = type(fut) is _FUTURE
        if untracked:
            PyObject_GC_UnTrack(fut)
        try:
            if partition is None and headers is None and timestamp_ms is None:
                self._core_produce(topic, key, value, fut)
            else:
                self._core_produce(topic, key, value, fut, partition=partition, headers=headers,
                                   timestamp_ms=timestamp_ms)
        except BaseException:
            if untracked and not PyObject_GC_IsTracked(fut):  # not taken: the caller keeps it
                PyObject_GC_Track(fut)
            raise
        return 0
