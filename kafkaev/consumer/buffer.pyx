# cython: language_level=3
"""Fetched records held until they are pulled (``kafkaev.aio``'s ``async for`` and ``getmany``).

The callback API hands each partition's records to ``on_message``/``on_batch`` inside the Fetch
answer's callback and never holds them. A puller takes records when it likes instead, so the
fetcher puts each partition's decoded record set here (``put``), in arrival order, and goes on
fetching until the buffer holds ``max_buffered_bytes``; then no Fetch is sent (``full``) until
taking records brings it below again (``on_room``). So a slow consumer holds at most the limit
plus two answers per leader: the one being put, and the next one, sent before it was decoded.

A record counts as delivered when it is taken: the partition's position (what ``commit()``
and auto-commit send) is past it from then on, never when it is merely buffered, so a crash
loses nothing that was not handed out. ``take_one`` does not write ``state.position`` per
record (two attribute writes and two reads were a third of what an ``async for`` record cost the client):
it moves the set's index, and ``delivered(state)`` (read by ``commit()`` and ``position()``
through ``ConsumerContext.delivered``, as they read the callback API's ``DeliveryCursor``)
says where the partition stands; the index is written through to ``state.position`` whenever
the set stops being handed out record by record: at its end, before a ``take``, a pause
(``set_aside``), or ``close``. Once a record set has been handed out whole, the position moves to where
its fetch ended (past control records and compacted gaps), through ``on_settled``. A record set is dropped unread when its partition was seeked, reset or revoked
since it was fetched (its generation moved). A paused partition's sets are taken out
(``set_aside``, kept on its ``PartitionState``, not counted so the other partitions go on) and
queued again on resume (``put_back``).

It is Cython because ``take_one`` runs once per record handed to ``async for`` (a Python
method there cost as much as the rest of the record's way); ``kafkaev.aio.pull`` calls it.
"""


cimport cython
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE

from collections import deque

# What a decoded Message adds beyond its record's bytes in the record set (the object, its
# key and value objects' headers): an allowance, so a set of small records is not counted as
# less memory than it takes.
MESSAGE_OBJECT_ALLOWANCE = 160


@cython.final
cdef class BufferedRecords:
    """One partition's records from one Fetch answer, handed out from ``index`` on."""

    def __init__(self, state, generation, list messages, next_offset, next_epoch, error, Py_ssize_t size,
                 Py_ssize_t index=0):
        self.state = state
        self.generation = generation
        self.messages = messages
        self.next_offset = next_offset
        self.next_epoch = next_epoch
        self.error = error
        self.size = size
        self.index = index

    def __repr__(self):
        return (f"BufferedRecords(state={self.state!r}, generation={self.generation!r}, "
                f"records={len(self.messages)}, index={self.index}, next_offset={self.next_offset!r})")


@cython.final
cdef class RecordBuffer:
    """The record sets fetched and not yet handed out, oldest first, and their size."""

    def __init__(self, subscription, Py_ssize_t limit, on_settled, on_room):
        self.limit = limit
        self.size = 0
        self._sets = deque()
        self._per_partition = {}
        self._subscription = subscription
        self._on_settled = on_settled
        self._on_room = on_room
        self._waiters = []
        self._at_boundary = False
        self.closed = False
        self._current = None
        self._unsynced = False

    @property
    def full(self):
        """No more Fetches until records are taken."""
        return self.size >= self.limit

    def ready(self):
        """Records can be taken now (stale record sets on the way are dropped)."""
        return self._head() is not None

    def put(self, BufferedRecords records not None):
        """A partition's records, in fetch order. A set without records (only control records,
        aborted or compacted-away offsets) moves the position at once when nothing of its
        partition is queued before it."""
        state = records.state
        if not records.messages and not self._per_partition.get(state):
            self._on_settled(records)
            return
        records.size = records.size + MESSAGE_OBJECT_ALLOWANCE * len(records.messages)
        self._append(records)
        self._wake()

    def put_back(self, list sets):
        """Record sets ``set_aside()`` took out, queued again as they were (partly taken ones
        from their index on), after what is queued now."""
        cdef BufferedRecords records
        for records in sets:
            self._append(records)
        if sets:
            self._wake()

    cdef void _append(self, BufferedRecords records) except *:
        state = records.state
        self._sets.append(records)
        self._per_partition[state] = self._per_partition.get(state, 0) + 1
        self.size += records.size

    cdef void _wake(self) except *:
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            for cb in waiters:
                cb()

    def when_records(self, cb):
        """``cb()`` once, at the next ``put()`` (or ``close()``)."""
        self._waiters.append(cb)

    def forget_waiter(self, cb):
        """A waiter that gave up (cancelled, timed out)."""
        try:
            self._waiters.remove(cb)
        except ValueError:
            pass

    # --- taking -----------------------------------------------------------------------------------
    cdef BufferedRecords _head(self):
        """The oldest record set still valid, dropping stale ones on the way."""
        cdef BufferedRecords head
        sets = self._sets
        while sets:
            head = sets[0]
            state = head.state
            if (head.index < PyList_GET_SIZE(head.messages) and head.generation == state.generation
                    and not state.paused and self._subscription.get(state.tp) is state):
                return head
            self._pop()
            if head.index >= PyList_GET_SIZE(head.messages) and head.generation == state.generation:
                self._on_settled(head)
            elif state.paused and head.generation == state.generation:
                self.drop(state)  # all of it: fetched again from the position on resume
                state.rewind_fetch()
        return None

    cdef void _sync(self) except *:
        """Write through the position of what ``take_one`` handed out from the current set."""
        cdef BufferedRecords head = self._current
        if head is None or not self._unsynced:
            return
        self._unsynced = False
        state = head.state
        if head.generation != state.generation:
            return  # seeked, reset or revoked since: its new position stands
        msg = <object>PyList_GET_ITEM(head.messages, head.index - 1)
        state.position = msg.offset + 1
        state.position_epoch = msg.leader_epoch

    def delivered(self, state):
        """``(position, leader epoch)`` of ``state`` counting the records ``take_one`` handed
        out from the current set and not yet written through; None when there are none."""
        cdef BufferedRecords head = self._current
        if head is None or not self._unsynced or head.state is not state or head.generation != state.generation:
            return None
        msg = <object>PyList_GET_ITEM(head.messages, head.index - 1)
        return msg.offset + 1, msg.leader_epoch

    cdef void _pop(self) except *:
        self._sync()
        self._current = None
        cdef BufferedRecords head = self._sets.popleft()
        state = head.state
        left = self._per_partition[state] - 1
        if left:
            self._per_partition[state] = left
        else:
            del self._per_partition[state]
        was_full = self.size >= self.limit
        self.size -= head.size
        if was_full and self.size < self.limit:
            self._on_room()

    cpdef object take_one(self):
        """The next record, counted as delivered; None when nothing valid is buffered, and
        once at the end of each record set, so that a puller that never waits still lets the
        loop run (the next Fetch, heartbeats) between record sets."""
        cdef BufferedRecords head = self._current
        cdef Py_ssize_t i
        if head is not None:
            state = head.state
            if head.generation == state.generation and not state.paused:  # a revoke moves it too
                i = head.index
                msg = <object>PyList_GET_ITEM(head.messages, i)
                head.index = i = i + 1
                self._unsynced = True  # written through when the set stops being taken one by one
                if i == PyList_GET_SIZE(head.messages):
                    self._pop()  # writes the last record's position and epoch through
                    self._at_boundary = True
                    self._on_settled(head)
                return msg
            self._sync()  # paused: drop() rewinds the fetch to the position, which must be exact
            self._current = None
        if self._at_boundary:
            self._at_boundary = False
            return None
        self._current = self._head()  # the set records are taken from, record by record, until it ends
        return None if self._current is None else self.take_one()

    cpdef dict take(self, Py_ssize_t max_records):
        """Up to ``max_records`` records, oldest record sets first, counted as delivered."""
        cdef dict out = {}
        cdef Py_ssize_t remaining = max_records, start, end, count
        cdef BufferedRecords head
        cdef list chunk, taken
        self._at_boundary = False
        self._sync()
        self._current = None
        while remaining > 0:
            head = self._head()
            if head is None:
                break
            start = head.index
            count = PyList_GET_SIZE(head.messages)
            end = min(count, start + remaining)
            chunk = head.messages[start:end] if start or end < count else head.messages
            state = head.state
            taken = out.get(state.tp)
            if taken is None:
                out[state.tp] = chunk
            else:
                taken.extend(chunk)
            remaining -= end - start
            head.index = end
            last = <object>PyList_GET_ITEM(chunk, PyList_GET_SIZE(chunk) - 1)
            state.position = last.offset + 1
            state.position_epoch = last.leader_epoch
            if end == count:
                self._pop()
                self._on_settled(head)
        return out

    def drop(self, state):
        """Forget every record set of ``state`` (given up): not handed out, not counted."""
        self.set_aside(state)

    def set_aside(self, state):
        """Take every record set of ``state`` out, in order, and return them: no longer handed
        out nor counted (a paused partition's, until ``put_back``). What ``take_one`` handed
        out of the first is written through first."""
        cdef BufferedRecords r
        if not self._per_partition.get(state):
            return []
        self._sync()
        self._current = None
        kept = []
        taken = []
        cdef Py_ssize_t size = 0
        for r in self._sets:
            if r.state is state:
                taken.append(r)
                size += r.size
            else:
                kept.append(r)
        was_full = self.size >= self.limit
        self._sets.clear()  # in place: _head() walks this deque
        self._sets.extend(kept)
        del self._per_partition[state]
        self.size -= size
        if was_full and self.size < self.limit:
            self._on_room()
        return taken

    def close(self):
        """The consumer closed: nothing more will come. Everything is dropped and the waiters
        are called, to find it closed."""
        self.closed = True
        self._sync()
        self._current = None
        self._sets.clear()
        self._per_partition.clear()
        self.size = 0
        waiters, self._waiters = self._waiters, []
        for cb in waiters:
            cb()
