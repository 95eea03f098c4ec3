"""``kafkaev.Client``: one object for producing and consuming, in the spirit of EV::Kafka.

The client owns the shared parts (options, metadata cache, connection pool) and hands the
work to its two halves: ``kafkaev.producer.Producer`` and ``kafkaev.consumer.Consumer``.
Everything runs on one event loop and reports through callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .cluster.metadata import ClusterMetadata, Metadata
from .cluster.pool import ConnectionPool, Role
from .config import ClientConfig
from .consumer import Consumer
from .error_sink import report_error
from .errors import KafkaError
from .producer import Producer
from .runner import default_loop
from .types import TopicPartition


class Client:
    """A Kafka client: ``Client(brokers="host:port,...", **options)``; see ``ClientConfig``
    for every option. Bad options raise at once, naming the option. Without ``brokers``:
    ``$KAFKAEV_BROKERS``, else the running ``kafkaev broker start``, else 127.0.0.1:9092
    (``kafkaev.local_broker``)."""

    def __init__(self, brokers: Any = None, **options: Any) -> None:
        self.config = config = ClientConfig.from_kwargs(brokers=brokers, **options)
        self.loop = loop = config.loop if config.loop is not None else default_loop()
        self._pool = ConnectionPool(config, loop, on_connection_error=self._on_connection_error, on_error=self._report)
        self._metadata = Metadata(config, loop, self._pool, on_error=self._report)
        self._producer = Producer(config, loop, self._metadata, self._pool, self._report)
        self._consumer = Consumer(config, loop, self._metadata, self._pool, self._report)
        self._closing = False
        self.closed = False
        # The per-record path: the producer's bound method directly, one Python frame less.
        self.produce = self._producer.produce  # type: ignore[method-assign]

    # --- lifetime ------------------------------------------------------------------------------
    def connect(self, cb: Callable[[ClusterMetadata | None, KafkaError | None], object] | None = None) -> None:
        """Bootstrap: ``cb(metadata, None)`` once the cluster answered, or ``cb(None, err)``
        naming every broker tried. ``on_connect()`` is called on success too."""
        if cb is not None and not callable(cb):
            raise TypeError(f"connect: 'cb' must be callable or None, got {type(cb).__name__}")

        def done(md: ClusterMetadata | None, err: KafkaError | None) -> None:
            if err is None and self.config.on_connect is not None:
                try:
                    self.config.on_connect()
                except Exception as exc:  # noqa: BLE001
                    self._report(exc)
            if cb is not None:
                cb(md, err)
            elif err is not None:
                self._report(err)

        self._metadata.bootstrap(done)

    @property
    def metadata(self) -> ClusterMetadata:
        """The latest cluster metadata (brokers, topics, partitions, leaders)."""
        return self._metadata.current

    def close(self, cb: Callable[[KafkaError | None], object] | None = None, *, timeout_ms: int | None = None) -> None:
        """Flush (every buffered record is sent and answered, bounded by delivery_timeout_ms,
        or by ``timeout_ms`` when given), leave the group, then close every connection once it
        has sent what it still held (acks=0 records are reported when written to the socket's
        buffer; each socket gets request_timeout_ms); ``cb(None)`` at the end, or the first
        error met. Records still unsent by then get ``KafkaError(DESTROY)``."""
        if cb is not None and not callable(cb):
            raise TypeError(f"close: 'cb' must be callable or None, got {type(cb).__name__}")
        if timeout_ms is not None and (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int)
                                       or timeout_ms < 0):
            raise ValueError(f"close: 'timeout_ms' must be an int >= 0 or None, got {timeout_ms!r}")
        if self._closing:
            if cb is not None:
                self.loop.call_soon(cb, None)
            return
        self._closing = True

        def consumer_closed(err: KafkaError | None) -> None:
            self._metadata.close()
            self._pool.close(lambda sockets_err: sockets_closed(err or sockets_err))

        def sockets_closed(err: KafkaError | None) -> None:
            self.closed = True
            if cb is not None:
                try:
                    cb(err)
                except Exception as exc:  # noqa: BLE001
                    self._report(exc)

        flushed = False

        def after_flush(_err: KafkaError | None = None) -> None:
            nonlocal flushed
            if flushed:
                return
            flushed = True
            if timer is not None:
                timer.cancel()
            self._producer.abandon()  # anything still unsent gets DESTROY now
            self._consumer.close(consumer_closed)

        timer = None if timeout_ms is None else self.loop.call_later(timeout_ms / 1000.0, after_flush)
        self._producer.flush(after_flush)

    # --- producer ------------------------------------------------------------------------------
    def produce(self, topic: str, key: Any, value: Any, cb: Callable[[Any, KafkaError | None], object] | None = None,
                *, partition: int | None = None, headers: Any = None, timestamp_ms: int | None = None) -> None:
        """Queue one record; ``cb(RecordMetadata, None)`` once acknowledged or ``cb(None, err)``
        once it failed. key/value: bytes-like, str (UTF-8) or None. Raises BufferFullError when
        buffer_memory is full. (Replaced per instance by the producer's own method.)"""
        self._producer.produce(topic, key, value, cb, partition=partition, headers=headers,
                               timestamp_ms=timestamp_ms)

    def produce_many(self, messages: Iterable[Any], cb: Callable[[list[Any] | None], object] | None = None) -> None:
        """Queue several records; ``cb(None)`` once all are acknowledged, else
        ``cb([(index, KafkaError), ...])``."""
        self._producer.produce_many(messages, cb)

    def flush(self, cb: Callable[[KafkaError | None], object] | None = None) -> None:
        """Send every buffered batch now; ``cb(None)`` once nothing is buffered or in flight."""
        if cb is not None and not callable(cb):
            raise TypeError(f"flush: 'cb' must be callable or None, got {type(cb).__name__}")
        self._producer.flush(cb)

    @property
    def pending(self) -> int:
        """Producer batches not yet answered plus records waiting for topic metadata."""
        return self._producer.pending

    # --- consumer (delegated to kafkaev.consumer.Consumer) -------------------------------------
    def assign(self, partitions: Iterable[Any]) -> None:
        self._consumer.assign(partitions)

    def assignment(self) -> list[TopicPartition]:
        return self._consumer.assignment()

    def position(self, topic: str, partition: int) -> int:
        return self._consumer.position(topic, partition)

    def seek(self, topic: str, partition: int, offset: int, cb: Any = None) -> None:
        self._consumer.seek(topic, partition, offset, cb)

    def seek_to_time(self, topic: str, partition: int, timestamp_ms: int, cb: Any = None) -> None:
        self._consumer.seek_to_time(topic, partition, timestamp_ms, cb)

    def pause(self, partitions: Iterable[Any]) -> None:
        self._consumer.pause(partitions)

    def resume(self, partitions: Iterable[Any]) -> None:
        self._consumer.resume(partitions)

    def paused(self) -> list[TopicPartition]:
        return self._consumer.paused()

    def poll(self, cb: Callable[[KafkaError | None], object] | None = None) -> None:
        self._consumer.poll(cb)

    def start(self) -> None:
        self._consumer.start()

    def stop(self) -> None:
        self._consumer.stop()

    def offsets_for(self, topic: str, cb: Callable[[Any, KafkaError | None], object]) -> None:
        self._consumer.offsets_for(topic, cb)

    def lag(self, cb: Callable[[Any, KafkaError | None], object]) -> None:
        self._consumer.lag(cb)

    def subscribe(self, topics: Sequence[str], **options: Any) -> None:
        self._consumer.subscribe(topics, **options)

    def commit(self, cb: Callable[[KafkaError | None], object] | None = None, offsets: Any = None) -> None:
        self._consumer.commit(cb, offsets)

    def committed(self, partitions: Iterable[Any], cb: Callable[[Any, KafkaError | None], object], *,
                  metadata: bool = False) -> None:
        self._consumer.committed(partitions, cb, metadata=metadata)

    def unsubscribe(self, cb: Callable[[KafkaError | None], object] | None = None) -> None:
        self._consumer.unsubscribe(cb)

    # --- shared plumbing -----------------------------------------------------------------------
    def _on_connection_error(self, node_id: int, role: Role, err: KafkaError) -> None:
        # a broker went away: leaders may have moved
        self._metadata.request_refresh()

    def _report(self, exc: BaseException) -> None:
        """Errors with no callback of their own (and exceptions raised by user callbacks)."""
        report_error(self.loop, self.config.on_error, "kafkaev", exc)
