"""Per-partition record batches, the linger timer and the buffer-memory bound.

A record is appended to the open batch of its partition (one C call into the
``RecordBatchBuilder``). A batch closes when the next record no longer fits, when it has
lingered ``linger_ms``, or on flush/close; a closed batch joins its partition's queue and
the partition becomes *ready* for the sender.

* One timer for all lingering batches: open batches are kept in creation order, so the
  timer only ever looks at the oldest.
* ``buffer_memory`` is reserved per batch (its capacity) when the batch opens and given back
  when the batch completes; a full buffer raises ``BufferFullError`` from ``produce``.
* Callbacks are stored per batch as ``(index, cb, timestamp)`` only for records that have one,
  and RecordMetadata is built only when the batch completes.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable
from typing import Any

from ..config import ClientConfig
from ..errors import QUEUE_FULL, KafkaError
from .partitioner import StickyPartition

NO_SEQUENCE = -1
NO_LEADER = -1
# Bytes a record adds to a batch beyond key, value and headers (length, attributes, deltas,
# varint prefixes): the upper bound used for the oversize check and memory reservation.
RECORD_OVERHEAD = 32
# RecordBatch v2 header: base offset .. record count.
BATCH_HEADER_SIZE = 61


def default_builder_factory(compression_type: int, capacity: int) -> Any:
    """A RecordBatchBuilder from the codec module for one batch of at most ``capacity`` bytes."""
    from .._proto import RecordBatchBuilder

    return RecordBatchBuilder(compression_type, capacity)


class BufferFullError(KafkaError):
    """``buffer_memory`` is exhausted (or too many records wait for unknown topics).

    Raised by ``produce`` like confluent-kafka's ``BufferError``: let the loop run so that
    batches are sent and acknowledged, then produce again.
    """

    def __init__(self, message: str) -> None:
        super().__init__(QUEUE_FULL, message)

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.message,))


class ProducerBatch:
    """One RecordBatch for one partition, from its first record until it completes."""

    __slots__ = (
        "id", "part", "builder", "cbs", "created", "deadline", "reserved", "data", "record_count",
        "base_seq", "producer_epoch", "attempts", "last_error", "outcome_unknown",
    )

    def __init__(self, batch_id: int, part: PartitionState, builder: Any, created: float, deadline: float,
                 reserved: int) -> None:
        self.id = batch_id  # creation order; within a partition also the sequence order
        self.part = part
        self.builder = builder
        # (index in batch, cb, CreateTime); the time is set whenever a cb is (produce() stamps it)
        self.cbs: list[tuple[int, Callable[..., Any], int | None]] = []
        self.created = created
        self.deadline = deadline  # loop time after which the records fail with MSG_TIMED_OUT
        self.reserved = reserved  # bytes of buffer_memory held
        self.data: bytes | None = None  # the encoded batch, built once at first send, resent as is
        self.record_count = 0
        self.base_seq = NO_SEQUENCE
        self.producer_epoch = -1
        self.attempts = 0
        self.last_error: KafkaError | None = None
        # The last attempt ended without an answer (connection lost, request timed out):
        # the broker may have written it.
        self.outcome_unknown = False


class PartitionState:
    """Producer state of one topic-partition: its open batch, queued batches and sequencing."""

    __slots__ = (
        "topic", "partition", "tstate", "batch", "queue", "in_flight", "leader", "leader_epoch",
        "next_seq", "retry_at", "retrying",
    )

    def __init__(self, tstate: TopicState, partition: int) -> None:
        self.topic = tstate.name
        self.partition = partition
        self.tstate = tstate
        self.batch: ProducerBatch | None = None  # open batch, still taking records
        self.queue: deque[ProducerBatch] = deque()  # closed batches in sequence order, not in flight
        self.in_flight: deque[ProducerBatch] = deque()  # sent, awaiting an answer, in send order
        self.leader = NO_LEADER
        self.leader_epoch = -1
        self.next_seq = 0
        self.retry_at = 0.0  # loop time before which the queue is not sent (retry backoff)
        # Idempotence: a batch failed retriably; send nothing new until every batch in flight
        # is answered, then resend the queue in sequence order.
        self.retrying = False

    def __repr__(self) -> str:
        return f"<PartitionState {self.topic}[{self.partition}] leader={self.leader}>"


class TopicState:
    """Producer state of one topic: its partitions and the sticky partition for keyless records."""

    __slots__ = ("name", "parts", "num_partitions", "sticky", "available")

    def __init__(self, name: str) -> None:
        self.name = name
        self.parts: list[PartitionState] = []
        self.num_partitions = 0
        self.sticky = StickyPartition()
        self.available: list[int] = []  # partitions with a leader

    def update(self, leaders: list[tuple[int, int]]) -> None:
        """Apply (leader, leader_epoch) per partition from metadata; partitions only grow."""
        for p in range(len(self.parts), len(leaders)):
            self.parts.append(PartitionState(self, p))
        for part, (leader, epoch) in zip(self.parts, leaders, strict=False):
            part.leader = leader
            part.leader_epoch = epoch
        self.num_partitions = len(self.parts)
        self.available = [p.partition for p in self.parts if p.leader >= 0]


class Accumulator:
    """Open batches, the linger timer, ready partitions and buffer memory."""

    def __init__(self, config: ClientConfig, loop: asyncio.AbstractEventLoop, on_ready: Callable[[], None],
                 builder_factory: Callable[[int, int], Any] | None = None) -> None:
        self._config = config
        self._new_builder = builder_factory if builder_factory is not None else default_builder_factory
        self._loop = loop
        self._on_ready = on_ready  # the sender's "something is ready" hook
        self._linger_s = config.linger_ms / 1000.0
        self._delivery_timeout_s = config.delivery_timeout_ms / 1000.0
        self._ids = itertools.count(1)
        self.topics: dict[str, TopicState] = {}
        self.ready: dict[PartitionState, None] = {}  # ordered set of partitions with queued batches
        self.open: deque[ProducerBatch] = deque()  # open batches in creation order (linger)
        # Partitions whose open batch has lingered but which cannot send yet (max_in_flight
        # requests out, or closed batches still queued): the batch stays open and keeps taking
        # records until the sender can take it, as the Java client appends to a batch until it
        # is drained. Closing it at once would queue one tiny batch per linger period, and at
        # linger_ms=0 the backlog of one-request-per-batch falls ever further behind.
        self.held: dict[PartitionState, None] = {}
        self._max_in_flight = config.max_in_flight
        self._linger_timer: asyncio.TimerHandle | None = None
        self.buffer_memory = config.buffer_memory
        self.buffered = 0  # bytes reserved by batches not yet completed
        self.incomplete = 0  # batches not yet completed (open, queued or in flight)

    # --- batches -------------------------------------------------------------------------------
    def new_batch(self, part: PartitionState, record_size: int) -> ProducerBatch:
        """Open a batch for ``part`` able to take a record of ``record_size`` bytes."""
        config = self._config
        capacity = max(config.batch_size, record_size + BATCH_HEADER_SIZE)
        if self.buffered + capacity > self.buffer_memory:
            raise BufferFullError(
                f"buffer_memory ({self.buffer_memory} bytes) is full: {self.buffered} bytes are waiting "
                "to be sent or acknowledged; let the event loop run, then produce again"
            )
        now = self._loop.time()
        builder = self._new_builder(config.compression_type, capacity)
        batch = ProducerBatch(next(self._ids), part, builder, now, now + self._delivery_timeout_s, capacity)
        self.buffered += capacity
        self.incomplete += 1
        part.batch = batch
        self.open.append(batch)
        if self._linger_timer is None:
            self._linger_timer = self._loop.call_at(now + self._linger_s, self._linger_expired)
        return batch

    def close_batch(self, batch: ProducerBatch) -> None:
        """Stop appending to ``batch`` and queue it for the sender."""
        part = batch.part
        if part.batch is not batch:
            return
        part.batch = None
        part.tstate.sticky.release(part.partition)
        batch.record_count = batch.builder.record_count
        if batch.record_count == 0:
            self.release(batch)
            return
        part.queue.append(batch)
        self.ready[part] = None

    def release(self, batch: ProducerBatch) -> None:
        """The batch completed (acknowledged or failed): give back its memory."""
        self.buffered -= batch.reserved
        batch.reserved = 0
        self.incomplete -= 1

    def _linger_expired(self) -> None:
        self._linger_timer = None
        open_batches = self.open
        deadline = self._loop.time() - self._linger_s
        closed = False
        while open_batches:
            batch = open_batches[0]
            if batch.part.batch is not batch:
                open_batches.popleft()  # closed meanwhile (full)
                continue
            if batch.created > deadline:
                break
            open_batches.popleft()
            part = batch.part
            if part.queue or len(part.in_flight) >= self._max_in_flight:
                self.held[part] = None
                continue
            self.close_batch(batch)
            closed = True
        if open_batches:
            self._linger_timer = self._loop.call_at(open_batches[0].created + self._linger_s, self._linger_expired)
        if closed:
            self._on_ready()

    def close_held(self) -> None:
        """Close the lingered batches of partitions that can send again (the sender asks
        before each round)."""
        lingered = self._loop.time() - self._linger_s
        for part in list(self.held):
            if part.queue or len(part.in_flight) >= self._max_in_flight:
                continue
            del self.held[part]
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

    def requeue(self, batch: ProducerBatch) -> None:
        """Put a batch that must be retried back into its partition's queue, in sequence order."""
        part = batch.part
        queue = part.queue
        i = 0
        for i, queued in enumerate(queue):  # noqa: B007 - the index is the insertion point
            if queued.id > batch.id:
                break
        else:
            i = len(queue)
        queue.insert(i, batch)
        self.ready[part] = None

    def stop(self) -> None:
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
