"""The producing half of ``kafkaev.Client``.

``Producer.produce`` is the per-record hot path: type checks, partition choice and one
``RecordBatchBuilder.append`` C call; everything else (opening batches, buffer memory,
waiting for unknown topics) is on slower paths reached only when needed.

Files: ``partitioner`` (partition choice), ``accumulator`` (batches, linger, memory),
``sender`` (Produce requests, answers, retries), ``idempotence`` (producer id, sequences).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from ..config import ClientConfig
from ..errors import DESTROY, MESSAGE_TOO_LARGE, STATE, UNKNOWN_TOPIC_OR_PARTITION, KafkaError
from ..metadata import ClusterMetadata, Metadata, TopicInfo
from ..pool import ConnectionPool
from .accumulator import RECORD_OVERHEAD, Accumulator, BufferFullError, TopicState
from .partitioner import custom_partition, murmur2
from .sender import Sender

__all__ = ["BufferFullError", "Producer"]

DeliveryCallback = Callable[[Any, KafkaError | None], object]
_BYTES_LIKE = (bytearray, memoryview)
_time_ns = time.time_ns


def _coerce(value: object, name: str) -> bytes | None:
    """key/value: bytes-like, str (UTF-8) or None; anything else is the caller's bug."""
    if value is None or type(value) is bytes:
        return value  # type: ignore[return-value]
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, *_BYTES_LIKE)):
        return bytes(value)
    raise TypeError(f"produce: '{name}' must be bytes, bytearray, memoryview, str or None, got {type(value).__name__}")


def _coerce_headers(headers: object) -> list[tuple[str, bytes | None]]:
    """A list of (str, bytes|str|None) pairs, or a dict; repeated keys are allowed in the list form."""
    items: Iterable[Any]
    if isinstance(headers, Mapping):
        items = headers.items()
    elif isinstance(headers, (list, tuple)):
        items = headers
    else:
        raise TypeError(f"produce: 'headers' must be a list of (str, bytes) pairs or a dict, got {type(headers).__name__}")
    out: list[tuple[str, bytes | None]] = []
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[0], str):
            raise TypeError(f"produce: 'headers' entries must be (str, bytes|str|None) pairs, got {item!r}")
        hv = item[1]
        if hv is not None and type(hv) is not bytes:
            if isinstance(hv, str):
                hv = hv.encode()
            elif isinstance(hv, _BYTES_LIKE):
                hv = bytes(hv)
            else:
                raise TypeError(f"produce: value of header {item[0]!r} must be bytes, str or None, got {type(hv).__name__}")
        out.append((item[0], hv))
    return out


class _Waiting:
    """Records for one topic whose metadata is not known yet."""

    __slots__ = ("records", "size")

    def __init__(self) -> None:
        self.records: list[tuple[Any, ...]] = []
        self.size = 0


class Producer:
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
        self._config = config
        self._loop = loop
        self._md = metadata
        self._report = report
        self._acc = Accumulator(config, loop, self._on_ready, builder_factory)
        self._sender = Sender(config, loop, self._acc, metadata, pool, report, self._on_batch_done)
        self._topics = self._acc.topics  # the hot path's dict: topic name -> TopicState
        self._partitioner = config.partitioner
        self._max_request_size = config.max_request_size
        self._waiting: dict[str, _Waiting] = {}
        self._waiting_count = 0
        self._waiting_bytes = 0
        self._flush_waiters: list[Callable[[KafkaError | None], object]] = []
        self.closed = False
        metadata.add_listener(self._on_metadata)

    # --- the hot path --------------------------------------------------------------------------
    def produce(
        self,
        topic: str,
        key: Any,
        value: Any,
        cb: DeliveryCallback | None = None,
        *,
        partition: int | None = None,
        headers: Any = None,
        timestamp_ms: int | None = None,
    ) -> None:
        # key/value types are checked by the builder's C append (and murmur2), which name the
        # argument in their TypeError; only rarer arguments are checked here.
        if headers is not None:
            headers = _coerce_headers(headers)
        if timestamp_ms is not None:
            if type(timestamp_ms) is not int or timestamp_ms < 0:
                raise TypeError(f"produce: 'timestamp_ms' must be an int >= 0 or None, got {timestamp_ms!r}")
        elif cb is not None:
            timestamp_ms = _time_ns() // 1_000_000  # the callback reports it (CreateTime)
        if cb is not None and not callable(cb):
            raise TypeError(f"produce: 'cb' must be callable or None, got {type(cb).__name__}")
        tstate = self._topics.get(topic)
        if tstate is None:  # unknown topic, or the producer is closed (abandon() empties the dict)
            self._produce_slow(topic, key, value, cb, partition, headers, timestamp_ms)
            return
        if partition is None:
            if self._partitioner is not None:
                partition = custom_partition(self._partitioner, topic, key, tstate.num_partitions)
            elif key is None:
                partition = tstate.sticky.current
                if partition < 0:
                    partition = tstate.sticky.choose(tstate.num_partitions, tstate.available)
                part = tstate.parts[partition]
                batch = part.batch
                if batch is not None:
                    index = batch.builder.append(timestamp_ms, key, value, headers)
                    if index >= 0:
                        if cb is not None:
                            batch.cbs.append((index, cb, timestamp_ms))
                        return
                    # KIP-480: the sticky partition's batch is full; move on to another partition
                    self._acc.close_batch(batch)
                    self._sender.wake()
                    part = tstate.parts[tstate.sticky.choose(tstate.num_partitions, tstate.available)]
                    batch = part.batch
                    if batch is not None:
                        self._acc.close_batch(batch)  # a batch left over from keyed/explicit records
                self._append_new(part, key, value, headers, timestamp_ms, cb)
                return
            else:
                partition = murmur2(key) % tstate.num_partitions
        elif type(partition) is not int or not 0 <= partition < tstate.num_partitions:
            raise ValueError(
                f"produce: 'partition' {partition!r} is out of range for topic {topic!r} "
                f"({tstate.num_partitions} partitions)"
            )
        part = tstate.parts[partition]
        batch = part.batch
        if batch is not None:
            index = batch.builder.append(timestamp_ms, key, value, headers)
            if index >= 0:
                if cb is not None:
                    batch.cbs.append((index, cb, timestamp_ms))
                return
            self._acc.close_batch(batch)
            self._sender.wake()
        self._append_new(part, key, value, headers, timestamp_ms, cb)

    def _append_new(self, part: Any, key: Any, value: Any, headers: Any, timestamp_ms: int | None,
                    cb: DeliveryCallback | None) -> None:
        key = _coerce(key, "key")
        value = _coerce(value, "value")
        size = RECORD_OVERHEAD + (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
        if headers:
            size += sum(len(k) + (len(v) if v is not None else 0) + 8 for k, v in headers)
        if size > self._max_request_size:
            raise KafkaError(
                MESSAGE_TOO_LARGE,
                f"produce: record of {size} bytes (key + value + headers) is larger than "
                f"max_request_size ({self._max_request_size})",
            )
        batch = self._acc.new_batch(part, size)
        index = batch.builder.append(timestamp_ms, key, value, headers)
        if index < 0:  # cannot happen with capacity >= size; never lose the record silently
            raise KafkaError(MESSAGE_TOO_LARGE, f"produce: record of {size} bytes did not fit an empty batch")
        if cb is not None:
            batch.cbs.append((index, cb, timestamp_ms))

    # --- topics not known yet ------------------------------------------------------------------
    def _produce_slow(self, topic: Any, key: Any, value: Any, cb: DeliveryCallback | None, partition: Any,
                      headers: Any, timestamp_ms: int | None) -> None:
        if self.closed:
            raise KafkaError(STATE, "produce: the client is closed")
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"produce: 'topic' must be a non-empty str, got {topic!r}")
        if partition is not None and (type(partition) is not int or partition < 0):
            raise ValueError(f"produce: 'partition' must be an int >= 0 or None, got {partition!r}")
        key = _coerce(key, "key")
        value = _coerce(value, "value")
        if timestamp_ms is None:
            timestamp_ms = time.time_ns() // 1_000_000  # stamped now, not when the topic appears
        info = self._md.topic(topic)
        if info is not None:
            self._md.add_topics((topic,), auto_create=True)  # keep its leaders refreshed
            self._add_topic(info)
            self.produce(topic, key, value, cb, partition=partition, headers=headers, timestamp_ms=timestamp_ms)
            return
        config = self._config
        if self._waiting_count >= config.metadata_wait_max_records:
            raise BufferFullError(
                f"{self._waiting_count} records already wait for the metadata of unknown topics "
                f"(metadata_wait_max_records={config.metadata_wait_max_records})"
            )
        size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
        if size > self._max_request_size:
            raise KafkaError(MESSAGE_TOO_LARGE, f"produce: record of {size} bytes is larger than max_request_size "
                             f"({self._max_request_size})")
        if self._acc.buffered + self._waiting_bytes + size > self._acc.buffer_memory:
            raise BufferFullError(f"buffer_memory ({self._acc.buffer_memory} bytes) is full")
        waiting = self._waiting.get(topic)
        if waiting is None:
            waiting = self._waiting[topic] = _Waiting()
            timeout_ms = min(config.metadata_wait_ms, config.delivery_timeout_ms)
            self._md.wait_for_topic(topic, partial(self._on_topic, topic), timeout_ms=timeout_ms, auto_create=True)
        waiting.records.append((key, value, cb, partition, headers, timestamp_ms))
        waiting.size += size
        self._waiting_count += 1
        self._waiting_bytes += size

    def _on_topic(self, topic: str, info: TopicInfo | None, err: KafkaError | None) -> None:
        waiting = self._waiting.pop(topic, None)
        if waiting is None:
            return
        self._waiting_count -= len(waiting.records)
        self._waiting_bytes -= waiting.size
        if info is not None and not self.closed:
            self._add_topic(info)
        else:
            err = err or KafkaError(DESTROY, "the client was closed before the topic's metadata arrived")
        for key, value, cb, partition, headers, ts in waiting.records:
            if err is None:
                try:
                    self.produce(topic, key, value, cb, partition=partition, headers=headers, timestamp_ms=ts)
                    continue
                except ValueError as exc:  # partition out of range, now that the count is known
                    record_err: KafkaError = KafkaError(UNKNOWN_TOPIC_OR_PARTITION, str(exc))
                except KafkaError as exc:  # buffer full meanwhile, record too large
                    record_err = exc
            else:
                record_err = err
            if cb is not None:
                try:
                    cb(None, record_err)
                except Exception as exc:  # noqa: BLE001
                    self._report(exc)
        if self._flush_waiters:
            self._acc.close_all()  # these records were produced before the pending flush()
        self._sender.wake()
        self._check_flushed()

    def _add_topic(self, info: TopicInfo) -> TopicState:
        tstate = self._topics.get(info.name)
        if tstate is None:
            tstate = self._topics[info.name] = TopicState(info.name)
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
        self._sender.wake()

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
        self.closed = True
        err = KafkaError(DESTROY, "the client was closed before the record was delivered")
        self._acc.close_all()
        self._acc.stop()
        for tstate in list(self._topics.values()):
            for part in tstate.parts:
                while part.queue:
                    self._sender.fail_records(part.queue.popleft(), err)
        self._acc.ready.clear()
        self._topics.clear()  # produce() now takes the slow path, which raises STATE
        for topic in list(self._waiting):
            self._on_topic(topic, None, err)
        self._sender.close()


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
