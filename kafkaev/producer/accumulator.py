"""Per-partition record batches, the linger timer and the buffer-memory bound.

A record is appended to the open batch of its partition (one C call into the
``RecordBatchBuilder``). A batch closes when the next record no longer fits, when it has
lingered ``linger_ms``, or on flush/close; a closed batch joins its partition's queue and
the partition becomes *ready* for the sender.

* One timer for all lingering batches: open batches are kept in creation order, so the
  timer only ever looks at the oldest.
* A lingered batch goes out only when it can be sent at once: while its partition has as
  many requests out as it may, or the connection it sends on has ``CONNECTION_PIPELINE_DEPTH``
  (the sender says which it is and counts those, ``count_requests_with``), it stays open and
  keeps taking records. At ``linger_ms`` > 0 a batch still within its first step also waits
  while its leader has that many requests of such batches out over all of its produce
  connections. No batch waits so longer than ``HOLD_MAX_S``.
* At ``linger_ms=0`` a batch that holds a first step's records while neither its partition
  nor its connection has anything out is sent from inside ``produce()`` (``Batches.grow``), not at
  the end of the loop's turn: a turn that produces a lot (1,000 tasks woken by one answer)
  keeps the idle broker busy with its first records meanwhile.
* ``buffer_memory`` is a ``MemoryBudget``: a batch opens with ``BATCH_FIRST_STEP`` bytes (or
  its first record's size; ``BATCH_MIN_FIRST_STEP`` once open batches hold half of it) and
  reserves more, doubling up to ``batch_size``, only as records fill it (``Batches.grow``); built,
  it holds its encoded size, and it gives that back when it completes. So a large
  ``batch_size`` costs a quiet partition nothing, and thousands of partitions neither reserve
  a full batch each nor run out of first steps. A batch that cannot grow is full. The same
  budget counts records, from ``produce`` until their batch completes, against
  ``buffer_records``. A full buffer, in bytes or in records, raises ``BufferFullError`` from
  ``produce``. ``when_room(cb)`` calls ``cb()`` once a new batch and a record fit again
  (``Client.on_buffer_room``, the awaited produce of ``kafkaev.aio``).
* Each partition's ``PartitionQueue`` holds its closed batches and those in flight, and keeps
  the partition in the ``ReadySet`` exactly while it has a batch to send.
* A batch's builder stays with it until the batch completes, then is emptied and kept for
  the next batch (a few at most; not one sized for a record above ``batch_size``). Uncompressed, the builder's buffer is
  the batch (``RecordBatchBuilder.finish``): up to 128 KiB handed over, the builder
  allocating a new one at its next record; above, lent as a view and taken back once the
  batch is done with it, so a large buffer is reused rather than allocated again.
* The state a record touches on its way in (``TopicState``, ``PartitionState``,
  ``ProducerBatch`` with its ``Deliveries``), the queues, the ready set and the budget are
  defined in C, in ``kafkaev.producer.core``, each keeping its own invariants, and so is each
  batch's bookkeeping from open to completion (``Batches``: ids, reservations, the open
  batches, the spare builders, the count not yet completed). This module decides when batches
  close and go out: the linger, the held partitions, the first step sent at once at
  ``linger_ms=0``, waiting for room, splitting.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from ..config import BATCH_FIRST_STEP, BATCH_MIN_FIRST_STEP, ClientConfig
from ..errors import BufferFullError, KafkaError
from ..protocol.codec import RecordBatchBuilder, read_records
from .core import (
    SPARE_BUILDERS_MAX,
    Batches,
    MemoryBudget,
    PartitionState,
    ProducerBatch,
    ReadySet,
    TopicState,
)
from .held import ALL_LANES, ConnectionKey, HeldPartitions

__all__ = ["BATCH_FIRST_STEP", "BATCH_MIN_FIRST_STEP", "SPARE_BUILDERS_MAX", "Accumulator", "Batches", "BufferFullError",
           "MemoryBudget", "PartitionState", "ProducerBatch", "ReadySet", "TopicState"]
# At linger_ms=0 a lingered batch goes out once its partition has fewer requests than this in
# flight: one being answered while the next is on the wire keeps the connection busy. More
# small requests only queue in the broker, which answers a connection's requests one at a
# time, and every record waits behind them (at 10,000 msg/s, 5 outstanding instead of 2
# doubled the acknowledgement's median). Full batches still pipeline up to max_in_flight.
LOW_LATENCY_PIPELINE_DEPTH = 2
# At any linger, a lingered batch also waits while the connection its partition sends on has
# this many requests out, however many partitions share it. The broker answers a connection's
# requests one at a time, so a third request would only queue there, and the batches it would
# carry keep taking records meanwhile instead. Over 1,000 partitions, where each partition's own
# limit let a connection pile up ~100 requests of a record or two per batch, this doubled the
# records per batch and the throughput, and lowered peak memory (DESIGN.md, "Non-obvious").
# A batch closed because it is full is not held back: those still pipeline up to max_in_flight.
# At linger_ms > 0 a lingered batch still within its first step (BATCH_FIRST_STEP) also waits
# while its leader has this many requests of such small batches out, on all of its produce
# connections together: spread over three lanes, 1,000 partitions' batches otherwise went in
# up to six requests at a time, each a third as large, and their batches half as large
# (DESIGN.md, "Non-obvious"). Requests of larger batches are not counted there, so a
# partition beside a busy one on another lane does not wait for it, and a batch that grew past
# its first step is worth a request of its own.
CONNECTION_PIPELINE_DEPTH = 2
# Accumulator._small_batch at linger_ms=0: no batch counts as small there.
NO_SMALL_BATCH = -1
# A lingered batch waits for its partition or connections at most this long (seconds): a
# partition whose lane or leader stays busy with other partitions' full batches, which are
# never held, must still send. Over 1,000 partitions a hold lasts about one request's answer.
HOLD_MAX_S = 0.1


def _turn() -> None:
    """Nothing: a callback queued only so that the loop does not block before its next turn."""


class ProduceConnections(Protocol):
    """What the accumulator asks the sender, which owns the connections and the lanes."""

    def connection_of(self, part: PartitionState) -> ConnectionKey:
        """The connection ``part``'s next batch goes on."""

    def requests_out(self, connection: ConnectionKey) -> int:
        """How many requests ``connection`` has out (0 when it is not connected)."""


class _NoConnections:
    """Until a sender says otherwise (``Accumulator.count_requests_with``): no connection is busy."""

    def connection_of(self, part: PartitionState) -> ConnectionKey:
        return (part.leader, 0)

    def requests_out(self, connection: ConnectionKey) -> int:
        return 0


class Accumulator:
    """Open batches, the linger timer, the topics' state, and the ready set and memory budget
    they share."""

    def __init__(self, config: ClientConfig, loop: asyncio.AbstractEventLoop, on_ready: Callable[[], None],
                 builder_factory: Callable[[int, int], Any] | None = None, *,
                 report: Callable[[BaseException], object] | None = None) -> None:
        self._config = config
        self._loop = loop
        # The sender's "send what is ready now" hook: called from the linger timer, and at
        # linger_ms=0 from produce() when a batch holds a first step (_send_first_step).
        self._on_ready = on_ready
        self._linger_s = config.linger_ms / 1000.0
        self.topics: dict[str, TopicState] = {}  # add_topic(); produce() looks names up here
        self.ready = ReadySet()  # partitions with queued batches, kept by their PartitionQueue
        # Every batch from open to completion, and the memory budget they share.
        self.batches = Batches(
            MemoryBudget(config.buffer_memory, config.buffer_records),
            batch_size=config.batch_size,
            first_step=min(config.batch_size, BATCH_FIRST_STEP),
            min_first_step=min(config.batch_size, BATCH_MIN_FIRST_STEP),
            # past half the budget in open batches, new ones open with the least step
            crowded_at=config.buffer_memory // 2,
            compression=config.compression_type,
            delivery_timeout_s=config.delivery_timeout_ms / 1000.0,
            clock=loop.time,
            # RecordBatchBuilder(compression_type, capacity): the class itself, called from C (a
            # batch of a record or two is the common case over many partitions, and each frame
            # counts); only RecordBatchBuilders are recycled (reset() empties one, keeping its memory)
            new_builder=builder_factory if builder_factory is not None else RecordBatchBuilder,
            recycles=builder_factory is None,
            on_first_open=self._first_opened,
            on_first_step=self._send_first_step if config.linger_ms == 0 else None,
            on_release=self.room_freed,
        )
        # Partitions whose open batch has lingered but which cannot send yet (_waits_on: as many
        # requests out as the partition or its connection may have, or closed batches still
        # queued): the batch stays open and keeps taking records until the sender can take it,
        # as the Java client appends to a batch until it is drained. Closing it at once would
        # queue one tiny batch per linger period, and at linger_ms=0 the backlog of
        # one-request-per-batch falls ever further behind.
        self.held = HeldPartitions()
        # A lingered batch holding no more than this also waits on its leader's small requests.
        # Only when linger_ms > 0: at linger_ms=0 a user asked for no wait, and a closed loop of
        # records (each produced from an ack) went 13% slower with its small batches held so.
        self._small_batch = min(config.batch_size, BATCH_FIRST_STEP) if config.linger_ms else NO_SMALL_BATCH
        # How many requests a partition may have in flight before its lingered batch waits.
        self._lingered_in_flight = (min(config.max_in_flight, LOW_LATENCY_PIPELINE_DEPTH) if config.linger_ms == 0
                                    else config.max_in_flight)
        # Which connection a partition sends on, and how many requests it has out: the sender's to say.
        self._connections: ProduceConnections = _NoConnections()
        self._linger_timer: asyncio.Handle | None = None  # a TimerHandle unless linger_ms=0
        # Called once when the budget has room for a batch again (when_room), then forgotten.
        self._room_waiters: list[Callable[[], object]] = []
        self._room_check: asyncio.Handle | None = None  # the scheduled _wake_room_waiters
        self._report = report  # where a room waiter's exception goes (None: raised)

    @property
    def budget(self) -> MemoryBudget:
        """buffer_memory and buffer_records (the batches' own)."""
        return self.batches.budget

    @property
    def open(self) -> deque[ProducerBatch]:
        """The open batches in creation order (with those closed since, when full), for the linger."""
        return self.batches.open

    @property
    def incomplete(self) -> int:
        """Batches not yet completed (open, queued or in flight)."""
        return self.batches.incomplete

    # --- topics --------------------------------------------------------------------------------
    def add_topic(self, name: str) -> TopicState:
        """The state of topic ``name``, created empty the first time."""
        tstate = self.topics.get(name)
        if tstate is None:
            tstate = self.topics[name] = TopicState(name, self.ready)
        return tstate

    def count_requests_with(self, connections: ProduceConnections) -> None:
        """``connections`` (the sender) says which connection a partition sends on and how many
        requests that connection has out."""
        self._connections = connections

    def _waits_on(self, part: PartitionState, busy: dict[ConnectionKey, bool]) -> ConnectionKey | None:
        """The connection whose answers ``part``'s lingered batch waits for (it stays open and
        keeps taking records), or None when it may go now; while the batch is still within its
        first step, also its leader's requests of small batches on all of its connections
        (``ALL_LANES``). ``busy`` keeps each connection's answer for the rest of a pass over
        many partitions: nothing is sent during one, so its requests out stay as they were."""
        connection = self._connections.connection_of(part)
        if self._partition_waits(part) or self._busy(connection, busy):
            return connection
        batch = part.batch
        if batch is not None and self.coalesces(batch):
            leader = (connection[0], ALL_LANES)
            if self._busy(leader, busy):
                return leader
        return None

    def _busy(self, connection: ConnectionKey, busy: dict[ConnectionKey, bool]) -> bool:
        is_busy = busy.get(connection)
        if is_busy is None:
            is_busy = busy[connection] = self._connections.requests_out(connection) >= CONNECTION_PIPELINE_DEPTH
        return is_busy

    def coalesces(self, batch: ProducerBatch) -> bool:
        """Is ``batch`` small enough to wait for its leader's other requests of small batches
        (``linger_ms`` > 0, and within its first step)? The sender counts those requests."""
        return batch.reserved <= self._small_batch

    def _partition_waits(self, part: PartitionState) -> bool:
        """Has ``part`` itself closed batches queued, or as many requests in flight as its
        lingered batch may wait behind?"""
        queue = part.queue
        return bool(queue) or queue.in_flight_count >= self._lingered_in_flight

    def connections_moved(self) -> None:
        """A leader moved, or a partition took another lane: the held partitions are filed again
        under the connections they send on now, at the next ``close_held``."""
        self.held.mark_stale()

    def _idle(self, part: PartitionState) -> bool:
        """Have neither ``part`` nor the connection it sends on anything queued or out?"""
        queue = part.queue
        connections = self._connections
        return (not queue and not queue.in_flight_count
                and not connections.requests_out(connections.connection_of(part)))

    # --- batches -------------------------------------------------------------------------------
    def new_batch(self, part: PartitionState, record_size: int, readmitted: bool = False) -> ProducerBatch:
        """Open a batch for ``part`` able to take a record of ``record_size`` bytes (``Batches.open_batch``)."""
        return self.batches.open_batch(part, record_size, readmitted)

    def _first_opened(self, now: float) -> None:
        """A batch opened while none was: the linger starts from it."""
        if self._linger_timer is None:
            self._arm_linger(now + self._linger_s)

    def _send_first_step(self, batch: ProducerBatch) -> bool:
        """At linger_ms=0, asked when ``batch`` holds a first step's records: True when it was
        closed and sent instead of growing.

        linger_ms=0 asks for no wait, and nothing is out for the broker to work on: a first
        step's records go now, not with the rest of this turn's at its end. One answer wakes
        1,000 awaiting tasks, whose records take milliseconds to come; the broker takes the first
        ones meanwhile. Only when idle: a request encoded beside others in flight is written at
        the turn's end anyway, one more for nothing."""
        if not self._idle(batch.part):
            return False
        self.close_batch(batch)
        self._on_ready()
        return True

    def refusal(self, record_size: int, needed: int) -> KafkaError:
        """What a record refused for memory raises (``Batches.refusal``)."""
        return self.batches.refusal(record_size, needed)

    def close_batch(self, batch: ProducerBatch) -> None:
        """Stop appending to ``batch`` and queue it for the sender."""
        self.batches.close(batch)

    def recycle(self, builder: Any) -> None:
        """Keep a completed batch's builder for a later batch (``Batches.recycle``)."""
        self.batches.recycle(builder)

    def release(self, batch: ProducerBatch) -> None:
        """The batch completed (acknowledged or failed): give back its memory, and its builder
        for a later batch."""
        self.batches.release(batch)

    # --- waiting for room ------------------------------------------------------------------------
    def has_room(self) -> bool:
        """Would a new batch (a whole first step) fit in buffer_memory, and a record in
        buffer_records, now? A new batch gets less only while open batches hold half the
        budget: woken for less, a waiter could be refused again at once, and spin."""
        budget = self.budget
        return budget.can_reserve(self.batches.first_step) and not budget.records_full()

    def when_room(self, cb: Callable[[], object]) -> None:
        """``cb()`` once, from the loop, as soon as a new batch fits (at the next turn if one
        fits now)."""
        self._room_waiters.append(cb)
        self.batches.room_waited = True
        if self.has_room():
            self.room_freed()

    def room_freed(self) -> None:
        """Bytes went back to the budget: wake the room waiters at the next turn of the loop,
        outside the delivery loop that freed them."""
        if self._room_waiters and self._room_check is None:
            self._room_check = self._loop.call_soon(self._wake_room_waiters)

    def _wake_room_waiters(self) -> None:
        self._room_check = None
        if not self.has_room():
            return  # taken again meanwhile; the next release wakes them
        waiters, self._room_waiters = self._room_waiters, []
        self.batches.room_waited = False
        for cb in waiters:
            try:
                cb()
            except Exception as exc:  # noqa: BLE001 - a user's bug is reported, the others still run
                if self._report is None:
                    raise
                self._report(exc)

    def _arm_linger(self, when: float) -> None:
        """Run ``_linger_expired`` at ``when``, and let the loop turn once first. uvloop (libuv)
        reads its clock when a timer starts, not again before it polls: the poll then waits the
        whole delay counted from the timer's start, after the rest of the turn's callbacks (1,000
        woken producers: ~5 ms), and the linger ran that much late. With a callback queued the
        poll does not block, the next turn reads the clock, and the timer fires when due."""
        if not self._linger_s:
            # linger_ms=0: the batch closes at the turn's end, with no timer to start, fire and free
            self._linger_timer = self._loop.call_soon(self._linger_expired)
            return
        self._linger_timer = self._loop.call_at(when, self._linger_expired)
        self._loop.call_soon(_turn)

    def _linger_expired(self) -> None:
        self._linger_timer = None
        if self._close_lingered():
            self._on_ready()

    def close_unlingered(self) -> None:
        """At ``linger_ms=0``, close now the batches that would close at this turn's end. The
        sender calls it after an answer's callbacks, before its own round: a record produced by
        an ack's callback goes in that round, not one turn of the loop later."""
        if self._linger_s or self._linger_timer is None:
            return
        self._linger_timer.cancel()
        self._linger_timer = None
        self._close_lingered()

    def _close_lingered(self) -> bool:
        """Close the open batches whose linger is over (or hold them while their partition or
        connection has enough out); True if one closed."""
        open_batches = self.open
        now = self._loop.time()
        deadline = now - self._linger_s
        closed = False
        busy: dict[ConnectionKey, bool] = {}
        while open_batches:
            batch = open_batches[0]
            if batch.part.batch is not batch:
                open_batches.popleft()  # closed meanwhile (full)
                continue
            if batch.created > deadline:
                break
            open_batches.popleft()
            part = batch.part
            connection = self._waits_on(part, busy)
            if connection is not None:
                self.held.hold(part, connection, now)
                continue
            self.close_batch(batch)
            closed = True
        if open_batches:
            self._arm_linger(open_batches[0].created + self._linger_s)
        return closed

    def close_held(self) -> None:
        """Close the lingered batches of partitions that can send again, or that waited
        ``HOLD_MAX_S`` (the sender asks before each round). A connection with as many requests
        out as it may holds its partitions: it is asked once, and only those that waited
        longest are looked at."""
        held = self.held
        now = self._loop.time()
        lingered = now - self._linger_s
        overdue = now - HOLD_MAX_S
        if held.take_stale():
            busy: dict[ConnectionKey, bool] = {}
            for part in list(held):
                connection = self._waits_on(part, busy)
                if connection is None or held.since(part) <= overdue:
                    self._release_held(part, lingered)
                else:
                    held.hold(part, connection, now)
            return
        connections = self._connections
        for connection, parts in held.by_connection():
            if connections.requests_out(connection) >= CONNECTION_PIPELINE_DEPTH:
                for part in parts:  # in the order held: stop at the first still within its wait
                    if held.since(part) > overdue:
                        break
                    self._release_held(part, lingered)
                continue
            for part in parts:
                if not self._partition_waits(part) or held.since(part) <= overdue:
                    self._release_held(part, lingered)

    def _release_held(self, part: PartitionState, lingered: float) -> None:
        self.held.release(part)
        batch = part.batch
        # a held batch that filled up was closed meanwhile; its successor lingers on its own
        if batch is not None and batch.created <= lingered:
            self.close_batch(batch)

    def close_all(self) -> None:
        """Close every open batch now (flush, close)."""
        while self.open:
            self.close_batch(self.open.popleft())
        for part in self.held:
            if part.batch is not None:
                self.close_batch(part.batch)
        self.held.clear()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None

    def split(self, batch: ProducerBatch) -> None:
        """Replace ``batch``, refused as larger than the topic allows, by two batches holding the
        first and the second half of its records, queued in its place with their callbacks."""
        part = batch.part
        config = self._config
        data = batch.data
        assert data is not None  # refused by the broker, so it was built
        records = read_records(part.topic, part.partition, bytes(data)).messages  # splitting is rare
        counted = batch.counted
        half = len(records) // 2
        halves = ((records[:half], batch.deliveries), (records[half:], batch.deliveries.split(half)))
        for side, (chunk, deliveries) in enumerate(halves):
            # The records fitted one builder of this size before: uncompressed, each half fits too.
            builder = self.batches.new_builder(max(config.batch_size, len(data)))
            for m in chunk:
                builder.append(m.timestamp, m.key, m.value, m.headers or None)
            replacement = ProducerBatch(batch.id, part, builder, batch.created, batch.deadline,
                                        batch.order + (side,))
            if side == 0:
                self.budget.transfer(batch, replacement)  # what the built batch holds passes to the first half
            elif counted:
                self.budget.reserve(replacement, 0, readmitted=True)  # no bytes of its own; its records count
            replacement.deliveries = deliveries
            replacement.record_count = builder.record_count
            self.requeue(replacement)  # in the original's place: after what precedes it, before the rest
        self.batches.split_in_two()

    def requeue(self, batch: ProducerBatch) -> None:
        """Put a batch that must be retried back into its partition's queue, in sequence order."""
        batch.part.queue.requeue(batch)

    def stop(self) -> None:
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
