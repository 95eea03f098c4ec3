"""Fetched records held until they are pulled (``kafkaev.aio``'s ``async for`` and ``getmany``).

The callback API hands each partition's records to ``on_message``/``on_batch`` inside the Fetch
answer's callback and never holds them. A puller takes records when it likes instead, so the
fetcher puts each partition's decoded record set here (``put``), in arrival order, and goes on
fetching until the buffer holds ``max_buffered_bytes``; then no Fetch is sent (``full``) until
taking records brings it below again (``on_room``). So a slow consumer holds at most the limit
plus two answers per leader: the one being put, and the next one, sent before it was decoded.

A record counts as delivered when it is taken: the partition's ``position`` (what ``commit()``
and auto-commit send) moves past it then, never when it is merely buffered, so a crash loses
nothing that was not handed out. Once a record set has been handed out whole, the position
moves to where its fetch ended (past control records and compacted gaps), through
``on_settled``. A record set is dropped unread when its partition was seeked, reset or revoked
since it was fetched (its generation moved) or is paused (the fetcher then fetches again from
the position on resume).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kafkaev.errors import KafkaError
from kafkaev.protocol.codec import Message
from kafkaev.types import TopicPartition

from .subscription import PartitionState, SubscriptionState

# What a decoded Message adds beyond its record's bytes in the record set (the object, its
# key and value objects' headers): an allowance, so a set of small records is not counted as
# less memory than it takes.
MESSAGE_OBJECT_ALLOWANCE = 160


@dataclass(slots=True, eq=False)
class BufferedRecords:
    """One partition's records from one Fetch answer, handed out from ``index`` on."""

    state: PartitionState
    generation: int  # the partition's generation when fetched: stale once it moves
    messages: list[Message]
    next_offset: int  # the position once every record was handed out
    next_epoch: int  # the leader epoch that position belongs to (NO_LEADER_EPOCH: keep the last record's)
    error: KafkaError | None  # a corrupt entry right after these records: the partition stops there
    size: int  # what it counts against max_buffered_bytes
    index: int = 0


class RecordBuffer:
    """The record sets fetched and not yet handed out, oldest first, and their size."""

    __slots__ = ("limit", "size", "_sets", "_per_partition", "_subscription", "_on_settled", "_on_room",
                 "_waiters", "_at_boundary", "closed", "_current")

    def __init__(self, subscription: SubscriptionState, limit: int,
                 on_settled: Callable[[BufferedRecords], None], on_room: Callable[[], None]) -> None:
        self.limit = limit
        self.size = 0
        self._sets: deque[BufferedRecords] = deque()
        self._per_partition: dict[PartitionState, int] = {}  # record sets queued per partition
        self._subscription = subscription
        self._on_settled = on_settled  # a record set was handed out whole: move its position to the end
        self._on_room = on_room  # the buffer went from full to below the limit: fetch again
        self._waiters: list[Callable[[], object]] = []  # called once at the next put()
        self._at_boundary = False  # the last take_one() ended a record set
        self.closed = False  # close(): the consumer is gone
        self._current: BufferedRecords | None = None  # the head set take_one() is handing out

    @property
    def full(self) -> bool:
        """No more Fetches until records are taken."""
        return self.size >= self.limit

    def ready(self) -> bool:
        """Records can be taken now (stale record sets on the way are dropped)."""
        return self._head() is not None

    def put(self, records: BufferedRecords) -> None:
        """A partition's records, in fetch order. A set without records (only control records,
        aborted or compacted-away offsets) moves the position at once when nothing of its
        partition is queued before it."""
        state = records.state
        if not records.messages and not self._per_partition.get(state):
            self._on_settled(records)
            return
        records.size = records.size + MESSAGE_OBJECT_ALLOWANCE * len(records.messages)
        self._sets.append(records)
        self._per_partition[state] = self._per_partition.get(state, 0) + 1
        self.size += records.size
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            for cb in waiters:
                cb()

    def when_records(self, cb: Callable[[], object]) -> None:
        """``cb()`` once, at the next ``put()`` (or ``close()``)."""
        self._waiters.append(cb)

    def forget_waiter(self, cb: Callable[[], object]) -> None:
        """A waiter that gave up (cancelled, timed out)."""
        try:
            self._waiters.remove(cb)
        except ValueError:
            pass

    # --- taking -----------------------------------------------------------------------------------
    def _head(self) -> BufferedRecords | None:
        """The oldest record set still valid, dropping stale ones on the way."""
        sets = self._sets
        while sets:
            head = sets[0]
            state = head.state
            if (head.index < len(head.messages) and head.generation == state.generation and not state.paused
                    and self._subscription.get(state.tp) is state):
                return head
            self._pop()
            if head.index >= len(head.messages) and head.generation == state.generation:
                self._on_settled(head)
            elif state.paused and head.generation == state.generation:
                self.drop(state)  # all of it: fetched again from the position on resume
                state.rewind_fetch()
        return None

    def _pop(self) -> None:
        self._current = None
        head = self._sets.popleft()
        state = head.state
        left = self._per_partition[state] - 1
        if left:
            self._per_partition[state] = left
        else:
            del self._per_partition[state]
        was_full = self.full
        self.size -= head.size
        if was_full and not self.full:
            self._on_room()

    def take_one(self) -> Message | None:
        """The next record, counted as delivered; None when nothing valid is buffered, and
        once at the end of each record set, so that a puller that never waits still lets the
        loop run (the next Fetch, heartbeats) between record sets."""
        head = self._current
        if head is not None:
            state = head.state
            if head.generation == state.generation and not state.paused:  # a revoke moves it too
                i = head.index
                msg = head.messages[i]
                head.index = i = i + 1
                state.position = msg.offset + 1
                state.position_epoch = msg.leader_epoch
                if i == len(head.messages):
                    self._current = None
                    self._at_boundary = True
                    self._pop()
                    self._on_settled(head)
                return msg
            self._current = None
        if self._at_boundary:
            self._at_boundary = False
            return None
        self._current = self._head()  # the set records are taken from, record by record, until it ends
        return None if self._current is None else self.take_one()

    def take(self, max_records: int) -> dict[TopicPartition, list[Message]]:
        """Up to ``max_records`` records, oldest record sets first, counted as delivered."""
        out: dict[TopicPartition, list[Message]] = {}
        remaining = max_records
        self._at_boundary = False
        self._current = None
        while remaining > 0:
            head = self._head()
            if head is None:
                break
            start = head.index
            end = min(len(head.messages), start + remaining)
            chunk = head.messages[start:end] if start or end < len(head.messages) else head.messages
            taken = out.get(head.state.tp)
            if taken is None:
                out[head.state.tp] = chunk
            else:
                taken.extend(chunk)
            remaining -= end - start
            head.index = end
            last = chunk[-1]
            head.state.position = last.offset + 1
            head.state.position_epoch = last.leader_epoch
            if end == len(head.messages):
                self._pop()
                self._on_settled(head)
        return out

    def drop(self, state: PartitionState) -> None:
        """Forget every record set of ``state`` (paused or given up): not handed out, not counted."""
        if not self._per_partition.get(state):
            return
        self._current = None
        kept = [r for r in self._sets if r.state is not state]
        dropped = sum(r.size for r in self._sets if r.state is state)
        was_full = self.full
        self._sets.clear()  # in place: _head() walks this deque
        self._sets.extend(kept)
        del self._per_partition[state]
        self.size -= dropped
        if was_full and not self.full:
            self._on_room()

    def close(self) -> None:
        """The consumer closed: nothing more will come. Everything is dropped and the waiters
        are called, to find it closed."""
        self.closed = True
        self._current = None
        self._sets.clear()
        self._per_partition.clear()
        self.size = 0
        waiters, self._waiters = self._waiters, []
        for cb in waiters:
            cb()
