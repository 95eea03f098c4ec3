"""The producing half of ``kafkaev.Client``.

``Producer.produce`` is the per-record hot path, one C call: type checks, partition choice,
the append into the partition's open batch and the callback's registration all run in
``kafkaev.producer.core.ProducerCore``. Everything else (opening batches, buffer memory, waiting
for unknown topics) is on slower paths in Python, reached only when needed.

Files: ``partitioner`` (partition choice), ``accumulator`` (batches, linger, memory),
``sender`` (Produce requests, answers, retries), ``idempotence`` (producer id, sequences),
``transaction`` (the transactional state machine), ``transaction_manager`` (its requests).
"""

from __future__ import annotations

import asyncio
import struct
import sys
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..cluster.metadata import ClusterMetadata, Metadata, TopicInfo
from ..cluster.pool import ConnectionPool
from ..config import ClientConfig
from ..errors import DESTROY, MESSAGE_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION, KafkaError
from ..protocol.codec import RECORD_OVERHEAD_MAX
from .accumulator import Accumulator, BufferFullError, TopicState
from .core import PartitionState, ProducerCore, ProducerLifecycle, coerce_bytes, settle
from .partitioner import custom_partition
from .sender import Sender
from .transaction_manager import TransactionManager

__all__ = ["BufferFullError", "Producer", "ProducerLifecycle"]

DeliveryCallback = Callable[[Any, KafkaError | None], object]


@dataclass(slots=True, frozen=True)
class HeldRecord:
    """A record produced while its topic's metadata was unknown, as produce() checked it."""

    key: bytes | None
    value: bytes | None
    cb: DeliveryCallback | None
    partition: int | None
    headers: list[tuple[str, bytes | None]] | None
    timestamp_ms: int  # CreateTime, stamped when produced


# What holding a record costs beyond its bytes: the HeldRecord, its place in the queue and its
# CreateTime's int. Counted in buffer_memory with them: at 100 bytes a record it is about as
# much again, and a burst produced before its topic's metadata held 1.75x the budget without it.
HELD_RECORD_FOOTPRINT = (sys.getsizeof(HeldRecord(None, None, None, None, None, 0)) + struct.calcsize("P")
                         + sys.getsizeof(1 << 40))


@dataclass(slots=True)
class _Waiting:
    """Records for one topic whose metadata is not known yet."""

    records: deque[HeldRecord] = field(default_factory=deque)
    size: int = 0  # bytes they hold in the memory budget


class Producer(ProducerCore):
    """``produce()`` (the per-record path) is inherited from ``kafkaev.producer.core.ProducerCore``;
    this class supplies the slower paths: topics not known yet, metadata, flush, close."""

    def __init__(
        self,
        config: ClientConfig,
        loop: asyncio.AbstractEventLoop,
        metadata: Metadata,
        pool: ConnectionPool,
        report: Callable[[BaseException], None],
        *,
        builder_factory: Callable[[int, int], Any] | None = None,
    ) -> None:
        acc = Accumulator(config, loop, self._on_ready, builder_factory, report=report)
        self._sender = Sender(config, loop, acc, metadata, pool, report, self._on_batch_done)
        partitioner = config.partitioner
        super().__init__(acc, self._sender.wake,
                         partial(custom_partition, partitioner) if partitioner is not None else None,
                         config.max_request_size, self._produce_slow)
        self._config = config
        self._loop = loop
        self._md = metadata
        self._report = report
        self._waiting: dict[str, _Waiting] = {}
        self._waiting_count = 0
        self._flush_waiters: list[Callable[[KafkaError | None], object]] = []
        self.txn: TransactionManager | None = None
        if config.transactional_id is not None:
            assert self._sender.identity is not None  # transactional implies idempotent
            self.txn = TransactionManager(config, loop, metadata, pool, self._sender.identity, self, report)
            self._sender.txn = self.txn
            self.set_admission(self.txn.admit)  # records only inside a transaction
        metadata.add_listener(self._on_metadata)

    def on_buffer_room(self, cb: Callable[[], object]) -> None:
        """``cb()`` once, from the loop, when buffer_memory has room for a batch and
        buffer_records for a record again (at the next turn if they have now): how a loop of
        produce() calls that met BufferFullError goes on."""
        if not callable(cb):
            raise TypeError(f"on_buffer_room: 'cb' must be callable, got {type(cb).__name__}")
        self._acc.when_room(cb)

    # --- topics not known yet ------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self.lifecycle is not ProducerLifecycle.OPEN

    def _produce_slow(self, topic: object, key: object, value: object, cb: DeliveryCallback | None,
                      partition: object, headers: list[tuple[str, bytes | None]] | None, timestamp_ms: int) -> None:
        """A record whose topic is not in the table (produce() already checked the producer is
        open); produce() already stamped its CreateTime, so it keeps the time it was produced,
        not when the topic appears."""
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"produce: 'topic' must be a non-empty str, got {topic!r}")
        if partition is not None and (type(partition) is not int or partition < 0):
            raise ValueError(f"produce: 'partition' must be an int >= 0 or None, got {partition!r}")
        if self.txn is not None:
            self.txn.admit(None)  # held for its topic, it still belongs to the open transaction
        key = coerce_bytes(key, "key")
        value = coerce_bytes(value, "value")
        info = self._md.topic(topic)
        if info is not None:
            self._md.add_topics((topic,), auto_create=True)  # keep its leaders refreshed
            self._add_topic(info)
            self.produce(topic, key, value, cb, partition=partition, headers=headers, timestamp_ms=timestamp_ms)
            return
        config = self._config
        size = RECORD_OVERHEAD_MAX + (len(key) if key else 0) + (len(value) if value else 0)
        if size > self._max_request_size:
            raise KafkaError(MESSAGE_TOO_LARGE, f"produce: record of {size} bytes is larger than max_request_size "
                             f"({self._max_request_size})")
        held = size + HELD_RECORD_FOOTPRINT  # what it holds, not only what it will take on the wire
        if not self._acc.budget.hold(held):
            raise self._acc.refusal(size, held)
        waiting = self._waiting.get(topic)
        if waiting is None:
            waiting = self._waiting[topic] = _Waiting()
            timeout_ms = min(config.metadata_wait_ms, config.delivery_timeout_ms)
            self._md.wait_for_topic(topic, partial(self._on_topic, topic), timeout_ms=timeout_ms, auto_create=True)
        waiting.records.append(HeldRecord(key, value, cb, partition, headers, timestamp_ms))
        waiting.size += held
        self._waiting_count += 1

    def _on_topic(self, topic: str, info: TopicInfo | None, err: KafkaError | None) -> None:
        waiting = self._waiting.pop(topic, None)
        if waiting is None:
            return
        self._waiting_count -= len(waiting.records)
        self._acc.budget.unhold(waiting.size, len(waiting.records))
        self._acc.room_freed()
        if info is not None and not self.closed:
            self._add_topic(info)
        else:
            err = err or KafkaError(DESTROY, "the client was closed before the topic's metadata arrived")
        records = waiting.records
        while records:
            # Each record leaves the queue as it goes into its batch: the held records and the
            # batches they fill never take their memory at once.
            record = records.popleft()
            if err is None:
                try:
                    # These records were admitted against buffer_memory when produced; failing one
                    # now because batches reserve their full capacity would break that promise.
                    # The overshoot is bounded: their bytes were within the limit, plus one
                    # batch's slack per partition.
                    self.readmit(topic, record.key, record.value, record.cb, record.partition, record.headers,
                                 record.timestamp_ms)
                    continue
                except KafkaError as exc:  # the partition out of range (UnknownPartitionError, as
                    record_err: KafkaError = exc  # produce() raises it), or the record too large
                except ValueError as exc:  # a partitioner's answer out of range
                    record_err = KafkaError(UNKNOWN_TOPIC_OR_PARTITION, str(exc))
            else:
                record_err = err
            if record.cb is not None:
                settle(record.cb, None, record_err, self._report)
        if self._flush_waiters:
            self._acc.close_all()  # these records were produced before the pending flush()
        self._sender.wake()
        self._check_flushed()

    def _add_topic(self, info: TopicInfo) -> TopicState:
        tstate = self._acc.add_topic(info.name)
        tstate.update([(p.leader, p.leader_epoch) for p in info.partitions])
        return tstate

    def _on_metadata(self, md: ClusterMetadata) -> None:
        woke = False
        for name, tstate in self._topics.items():
            info = md.topics.get(name)
            if info is not None and info.partitions:
                before = [p.leader for p in tstate.parts]
                tstate.update([(p.leader, p.leader_epoch) for p in info.partitions])
                if not woke and before != [p.leader for p in tstate.parts]:
                    woke = True
        if woke:
            self._acc.connections_moved()  # partitions waiting on a connection may send on another now
            self._sender.wake()

    # --- many, flush, close --------------------------------------------------------------------
    def produce_many(self, messages: Iterable[Any], cb: Callable[[list[Any] | None], object] | None = None) -> None:
        """Each message is (topic, key, value[, headers]) or a dict with topic/key/value and
        optional partition/headers/timestamp_ms. ``cb(None)`` once every record is acknowledged,
        or ``cb([(index, KafkaError), ...])`` listing the failed ones."""
        if cb is not None and not callable(cb):
            raise TypeError(f"produce_many: 'cb' must be callable or None, got {type(cb).__name__}")
        items: list[tuple[str, Any, Any, dict[str, Any]]] = []
        for i, m in enumerate(messages):
            if isinstance(m, Mapping):
                extra = {k: m[k] for k in ("partition", "headers", "timestamp_ms") if k in m}
                if "topic" not in m or "value" not in m:
                    raise ValueError(f"produce_many: message {i} needs 'topic' and 'value', got {m!r}")
                items.append((m["topic"], m.get("key"), m["value"], extra))
            elif isinstance(m, (tuple, list)) and len(m) in (3, 4):
                items.append((m[0], m[1], m[2], {"headers": m[3]} if len(m) == 4 else {}))
            else:
                raise TypeError(f"produce_many: message {i} must be (topic, key, value[, headers]) or a dict, got {m!r}")
        tracker = _ManyTracker(len(items), cb, self._report)
        for i, (topic, key, value, extra) in enumerate(items):
            done = partial(tracker.done, i)
            try:
                self.produce(topic, key, value, done, **extra)
            except KafkaError as exc:  # buffer full: reported through cb, not half-raised
                done(None, exc)
        tracker.armed()

    def flush(self, cb: Callable[[KafkaError | None], object] | None = None) -> None:
        """Send every batch now; ``cb(None)`` once nothing is buffered, waiting or in flight."""
        self._acc.close_all()
        self._sender.wake()
        if cb is not None:
            self._flush_waiters.append(cb)
        self._check_flushed()

    @property
    def pending(self) -> int:
        """Batches not yet completed plus records waiting for topic metadata."""
        return self._acc.incomplete + self._waiting_count

    def _on_ready(self) -> None:
        self._sender.send_now()  # the accumulator: its linger timer, and grow() at linger_ms=0

    def wake(self) -> None:
        """Something may be sent now (a partition was added to the transaction)."""
        self._sender.wake()

    # --- what the transaction manager asks -----------------------------------------------------
    def close_open_batches(self) -> None:
        """The transaction can no longer take records: close the open batches, so the next
        produce() opens one and meets the refusal."""
        self._acc.close_all()
        self._sender.wake()

    def close_batches_of(self, parts: list[PartitionState]) -> None:
        """Close the open batch of each of ``parts`` now, its linger cut short, and wake the sender."""
        for part in parts:
            if part.batch is not None:
                self._acc.close_batch(part.batch)
        self._sender.wake()

    def abort_unsent(self, err: KafkaError) -> None:
        """An abort: every record not sent yet (open, queued, waiting for its topic) fails with
        ``err``, once each; what is in flight is answered as usual."""
        self._acc.close_all()
        if self._sender.drop_queued(err) and self.txn is not None:
            self.txn.sequence_dropped()
        for topic in list(self._waiting):
            self._on_topic(topic, None, err)
        self._check_flushed()

    def reset_sequences(self) -> None:
        self._sender.reset_sequences()

    def _on_batch_done(self) -> None:
        if self._flush_waiters and self._acc.incomplete == 0 and self._waiting_count == 0:
            self._check_flushed()

    def _check_flushed(self) -> None:
        if not self._flush_waiters or self._acc.incomplete or self._waiting_count:
            return
        waiters, self._flush_waiters = self._flush_waiters, []
        for cb in waiters:
            try:
                cb(None)
            except Exception as exc:  # noqa: BLE001
                self._report(exc)

    def abandon(self) -> None:
        """Fail everything still buffered, waiting or queued with DESTROY (the client closes).
        In-flight batches are failed by their connections closing."""
        if not self._start_closing():  # produce() raises STATE from here on
            return
        err = KafkaError(DESTROY, "the client was closed before the record was delivered")
        self._acc.close_all()
        self._acc.stop()
        self._sender.drop_queued(err)
        if self.txn is not None:
            self.txn.close()
        for topic in list(self._waiting):
            self._on_topic(topic, None, err)
        self._sender.close()
        self._finish_closing()


class _ManyTracker:
    __slots__ = ("remaining", "errors", "cb", "report", "all_queued")

    def __init__(self, count: int, cb: Callable[[list[Any] | None], object] | None,
                 report: Callable[[BaseException], None]) -> None:
        self.remaining = count
        self.errors: list[tuple[int, KafkaError]] = []
        self.cb = cb
        self.report = report
        self.all_queued = False

    def done(self, index: int, meta: Any, err: KafkaError | None) -> None:
        if err is not None:
            self.errors.append((index, err))
        self.remaining -= 1
        if self.remaining == 0 and self.all_queued:
            self._finish()

    def armed(self) -> None:
        self.all_queued = True
        if self.remaining == 0:
            self._finish()

    def _finish(self) -> None:
        if self.cb is not None:
            try:
                self.cb(sorted(self.errors) if self.errors else None)
            except Exception as exc:  # noqa: BLE001
                self.report(exc)
