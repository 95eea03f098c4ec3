"""``kafkaev.Client``: one object for producing and consuming, in the spirit of EV::Kafka.

The client owns the shared parts (options, metadata cache, connection pool) and hands the
work to its two halves: ``kafkaev.producer.Producer`` and ``kafkaev.consumer.Consumer``.
Everything runs on one event loop and reports through callbacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from .cluster.metadata import ClusterMetadata, Metadata
from .cluster.pool import ConnectionPool, Role
from .config import ClientConfig
from .consumer import Consumer
from .error_sink import report_error
from .errors import STATE, KafkaError
from .log import enable_debug
from .producer import Producer
from .producer.transaction_manager import TransactionManager
from .runner import default_loop
from .stats.collect import StatsCollector
from .stats.snapshot import ClientStats
from .stats.timer import StatsTimer
from .types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    # typing.Unpack is 3.11+; the annotations are never evaluated at run time (postponed above),
    # so typing_extensions is needed by type checkers only, which bundle it.
    from typing_extensions import Unpack

    from .types import (
        AssignedPartition,
        Brokers,
        ClientOptions,
        CommittedCallback,
        CommittedMetadataCallback,
        DeliveryCallback,
        DoneCallback,
        Headers,
        LagCallback,
        ManyCallback,
        OffsetsForCallback,
        PartitionLike,
        PositionCallback,
        RecordBytes,
        SubscribeOptions,
    )

    # produce_many's messages: (topic, key, value[, headers]) or a dict with topic, key, value
    # and optional partition, headers, timestamp_ms.
    ManyMessage = (tuple[str, RecordBytes, RecordBytes] | tuple[str, RecordBytes, RecordBytes, Headers | None]
                   | Mapping[str, object])


class Client:
    """A Kafka client: ``Client(brokers="host:port,...", **options)``; see ``ClientConfig``
    for every option. Bad options raise at once, naming the option. Without ``brokers``:
    ``$KAFKAEV_BROKERS``, else the running ``kafkaev broker start``, else 127.0.0.1:9092
    (``kafkaev.local_broker``)."""

    def __init__(self, brokers: Brokers | None = None, **options: Unpack[ClientOptions]) -> None:
        self.config = config = ClientConfig.from_kwargs(brokers=brokers, **options)
        enable_debug(config.debug_areas)
        self.loop = loop = config.loop if config.loop is not None else default_loop()
        self._pool = ConnectionPool(config, loop, on_connection_error=self._on_connection_error, on_error=self._report)
        self._metadata = Metadata(config, loop, self._pool, on_error=self._report)
        self._producer = Producer(config, loop, self._metadata, self._pool, self._report)
        self._consumer = Consumer(config, loop, self._metadata, self._pool, self._report)
        self._closing = False
        self.closed = False
        self._stats = StatsCollector(self)
        self._stats_timer = (None if config.stats_cb is None else
                             StatsTimer(loop, self._stats, config.stats_cb, config.stats_interval_ms, self._report))
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

    def close(self, cb: DoneCallback | None = None, *, timeout_ms: int | None = None) -> None:
        """Flush (every buffered record is sent and answered, bounded by delivery_timeout_ms,
        or by ``timeout_ms`` when given), leave the group, then close every connection once it
        has sent what it still held (acks=0 records are reported when written to the socket's
        buffer; each socket gets request_timeout_ms); ``cb(None)`` at the end, or the first
        error met. Records still unsent by then get ``KafkaError(DESTROY)``. A transaction still
        open is aborted first."""
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
        if self._stats_timer is not None:
            self._stats_timer.cancel()

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
        txn = self._producer.txn
        if txn is not None:
            # A transaction still open is aborted (as the Java client does), not left to time
            # out: read_committed readers would wait for it until transaction_timeout_ms.
            txn.before_close(lambda: self._producer.flush(after_flush))
        else:
            self._producer.flush(after_flush)

    def stats(self) -> ClientStats:
        """A snapshot of the client's statistics: per broker, per partition produced to and
        consumed, the group, the producer's buffer and identity (``kafkaev.stats``). Rates are
        over the time since the previous snapshot (this call's or ``stats_cb``'s)."""
        return self._stats.snapshot()

    # --- producer ------------------------------------------------------------------------------
    def produce(self, topic: str, key: RecordBytes, value: RecordBytes, cb: DeliveryCallback | None = None,
                *, partition: int | None = None, headers: Headers | None = None,
                timestamp_ms: int | None = None) -> None:
        """Queue one record; ``cb(RecordMetadata, None)`` once acknowledged or ``cb(None, err)``
        once it failed. key/value: bytes-like, str (UTF-8) or None. headers: (name, value)
        pairs (a name may repeat) or a dict. Raises BufferFullError when buffer_memory or
        buffer_records is full.
        A ``partition`` the topic does not have is ``UnknownPartitionError`` (UNKNOWN_PARTITION):
        raised here when the topic's metadata is loaded, else given to ``cb`` once it is.
        (Replaced per instance by the producer's own method.)"""
        self._producer.produce(topic, key, value, cb, partition=partition, headers=headers,
                               timestamp_ms=timestamp_ms)

    def produce_many(self, messages: Iterable[ManyMessage], cb: ManyCallback | None = None) -> None:
        """Queue several records; ``cb(None)`` once all are acknowledged, else
        ``cb([(index, KafkaError), ...])``."""
        self._producer.produce_many(messages, cb)

    def flush(self, cb: DoneCallback | None = None) -> None:
        """Send every buffered batch now; ``cb(None)`` once nothing is buffered or in flight."""
        if cb is not None and not callable(cb):
            raise TypeError(f"flush: 'cb' must be callable or None, got {type(cb).__name__}")
        self._producer.flush(cb)

    def on_buffer_room(self, cb: Callable[[], object]) -> None:
        """``cb()`` once, from the loop, when ``buffer_memory`` has room for a batch and
        ``buffer_records`` for a record again (at the next turn of the loop if they have now). A tight loop of ``produce()`` calls that met
        ``BufferFullError`` returns and registers itself here to go on where it stopped; the
        loop meanwhile sends and acknowledges what is buffered."""
        self._producer.on_buffer_room(cb)

    @property
    def pending(self) -> int:
        """Producer batches not yet answered plus records waiting for topic metadata."""
        return self._producer.pending

    # --- transactions (a client with transactional_id) -----------------------------------------
    def init_transactions(self, cb: DoneCallback) -> None:
        """Register ``transactional_id`` with its transaction coordinator: producers with the
        same id are fenced, and a transaction they left open is completed (aborted) first.
        ``cb(None)`` once the client may ``begin_transaction()``, else ``cb(err)``
        (``err.fatal``: this client cannot go on). Once per client."""
        self._transactions("init_transactions").init_transactions(cb)

    def begin_transaction(self) -> None:
        """Open a transaction: records produced from now on, and offsets sent with
        ``send_offsets_to_transaction``, become visible to read_committed readers only when it
        commits. Raises KafkaError(STATE) at once, naming the state, when one is already open
        or the client is not ready."""
        self._transactions("begin_transaction").begin_transaction()

    def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
                                    | Mapping[tuple[str, int], int | OffsetAndMetadata],
                                    group_metadata: ConsumerGroupMetadata, cb: DoneCallback | None = None) -> None:
        """Commit a consumer group's offsets ``{(topic, partition): offset}`` (the next record to
        read) as part of the open transaction; ``group_metadata`` is the consumer's
        ``group_metadata()``, so the group coordinator refuses a member whose generation is
        over (KIP-447). ``cb(None)`` once the coordinator took them, else ``cb(err)``
        (the transaction must then be aborted)."""
        self._transactions("send_offsets_to_transaction").send_offsets_to_transaction(
            offsets, group_metadata, cb)

    def commit_transaction(self, cb: DoneCallback) -> None:
        """Send every buffered record, wait for each acknowledgement, then commit the
        transaction (EndTxn); ``cb(None)`` once committed, else ``cb(err)``:
        ``err.txn_requires_abort`` (a record or the offsets failed: call
        ``abort_transaction``) or ``err.fatal``."""
        self._transactions("commit_transaction").commit_transaction(cb)

    def abort_transaction(self, cb: DoneCallback) -> None:
        """Abort the open transaction: records not yet sent fail with PURGE_QUEUE (each callback
        once), those in flight are awaited, then EndTxn(abort); ``cb(None)`` once aborted."""
        self._transactions("abort_transaction").abort_transaction(cb)

    def _transactions(self, what: str) -> TransactionManager:
        txn = self._producer.txn
        if txn is None:
            raise KafkaError(STATE, f"{what}: the client has no transactional_id")
        return txn

    # --- consumer (delegated to kafkaev.consumer.Consumer) -------------------------------------
    def assign(self, partitions: Iterable[AssignedPartition]) -> None:
        """Read exactly these partitions, replacing any earlier assignment:
        ``[(topic, partition[, offset])]`` or TopicPartitions. ``offset`` may be
        OFFSET_BEGINNING or OFFSET_END; without one a partition starts where
        auto_offset_reset says. Needs ``on_message`` or ``on_batch``; raises while subscribed
        to a group."""
        self._consumer.assign(partitions)

    def assignment(self) -> list[TopicPartition]:
        """The partitions this client reads now: assigned by hand or by the group."""
        return self._consumer.assignment()

    def position(self, topic: str, partition: int) -> int:
        """The next offset to be delivered from an assigned partition, NO_OFFSET (-1) while it
        is being looked up. Raises ValueError for a partition not assigned."""
        return self._consumer.position(topic, partition)

    def seek(self, topic: str, partition: int, offset: int, cb: PositionCallback | None = None) -> None:
        """Move an assigned partition to ``offset`` (or OFFSET_BEGINNING / OFFSET_END);
        ``cb(offset, None)`` once the position is known, ``cb(None, err)`` if it could not be."""
        self._consumer.seek(topic, partition, offset, cb)

    def seek_to_time(self, topic: str, partition: int, timestamp_ms: int, cb: PositionCallback | None = None) -> None:
        """Move an assigned partition to its first record with a timestamp >= ``timestamp_ms``
        (the end if there is none); ``cb(offset, None)`` once found, ``cb(None, err)`` if not."""
        self._consumer.seek_to_time(topic, partition, timestamp_ms, cb)

    def pause(self, partitions: Iterable[PartitionLike]) -> None:
        """Stop fetching these assigned partitions and handing their records over; their
        positions are kept. Record sets the broker had already sent for them are held (from
        inside a callback: the rest of the answer being delivered too, and from ``on_message``
        the rest of its own partition's set) and handed over on resume, not fetched again."""
        self._consumer.pause(partitions)

    def resume(self, partitions: Iterable[PartitionLike]) -> None:
        """Deliver paused partitions again from where they stopped: what they held first, at
        the loop's next turn, then from a new Fetch."""
        self._consumer.resume(partitions)

    def paused(self) -> list[TopicPartition]:
        """The assigned partitions that are paused."""
        return self._consumer.paused()

    def poll(self, cb: DoneCallback | None = None) -> None:
        """One fetch round: one Fetch to each leader of the assigned partitions, the records
        delivered to ``on_message``/``on_batch``; ``cb(None)`` once every leader answered (or
        ``cb(err)``). Records held for a partition (fetched while it was paused, or not handed
        over after a ``kafkaev.stop()``) are handed over in the round instead of being fetched
        again. For continuous fetching use ``start()``."""
        self._consumer.poll(cb)

    def start(self) -> None:
        """Fetch continuously, delivering records to ``on_message``/``on_batch`` as they arrive,
        until ``stop()``. (``subscribe()`` starts fetching by itself.)"""
        self._consumer.start()

    def stop(self) -> None:
        """Stop continuous fetching; positions, the assignment and the group are kept
        (``start()`` goes on from there). Not ``kafkaev.stop()``, which stops the loop."""
        self._consumer.stop()

    def offsets_for(self, topic: str, cb: OffsetsForCallback) -> None:
        """``cb({partition: (earliest, latest)}, None)`` for every partition of ``topic``
        (latest: the offset the next record will get), or ``cb(None, err)``."""
        self._consumer.offsets_for(topic, cb)

    def lag(self, cb: LagCallback) -> None:
        """``cb({(topic, partition): (position, high_watermark, lag)}, None)`` for the assigned
        partitions, the end offsets asked of the leaders now, or ``cb(None, err)``. position
        NO_OFFSET and lag LAG_UNKNOWN (both -1) while a position is still being looked up."""
        self._consumer.lag(cb)

    def subscribe(self, topics: Sequence[str] | None = None, **options: Unpack[SubscribeOptions]) -> None:
        """Join ``group_id`` and read the partitions the group assigns from ``topics`` (or, with
        ``pattern=``, from every topic whose whole name matches that regular expression); a
        second call changes the subscription (the group rebalances). Each option overrides the
        client option of the same name; ``group_protocol="consumer"`` joins with KIP-848's
        protocol (the broker assigns, ``remote_assignor`` picks its assignor);
        ``on_assign``/``on_revoke``/``on_lost`` get the partitions gained, given up, or lost
        without a commit. Needs ``on_message`` or ``on_batch``."""
        self._consumer.subscribe(topics, **options)

    def commit(self, cb: DoneCallback | None = None,
               offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
               | Mapping[tuple[str, int], int | OffsetAndMetadata] | None = None) -> None:
        """Commit the group's current positions, or the dict ``{(topic, partition): offset}``
        given (the offset of the next record to read; an ``OffsetAndMetadata`` stores a string
        with it); ``cb(None)`` once the coordinator accepted them, else ``cb(err)``. Raises
        KafkaError(STATE) when not subscribed.

        Without offsets, the positions count every record handed to a callback so far: called
        from ``on_message``, up to and including the record being delivered (its offset + 1),
        as Java's commitSync() inside a poll loop; from ``on_batch``, the whole batch."""
        # Any mapping will do: the consumer takes a dict, and names the type of anything else.
        explicit: Any = dict(offsets) if isinstance(offsets, Mapping) else offsets
        self._consumer.commit(cb, explicit)

    @overload
    def committed(self, partitions: Iterable[PartitionLike], cb: CommittedCallback, *,
                  metadata: Literal[False] = False) -> None: ...

    @overload
    def committed(self, partitions: Iterable[PartitionLike], cb: CommittedMetadataCallback, *,
                  metadata: Literal[True]) -> None: ...

    def committed(self, partitions: Iterable[PartitionLike], cb: CommittedCallback | CommittedMetadataCallback, *,
                  metadata: bool = False) -> None:
        """The group's committed offsets: ``cb({TopicPartition: offset}, None)``, -1 where
        nothing is committed; with ``metadata=True`` the values are ``OffsetAndMetadata``
        (offset, the committed string, the leader epoch). ``cb(None, err)`` on failure."""
        self._consumer.committed(partitions, cb, metadata=metadata)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This group member's ``ConsumerGroupMetadata`` (group id, generation, member id,
        instance id) for ``send_offsets_to_transaction``. Raises KafkaError(STATE) when not
        subscribed to a group."""
        return self._consumer.group_metadata()

    def unsubscribe(self, cb: DoneCallback | None = None) -> None:
        """Leave the group: commit first (with auto_commit), revoke the partitions, send
        LeaveGroup; ``cb(None)`` once done, else ``cb(err)``."""
        self._consumer.unsubscribe(cb)

    # --- shared plumbing -----------------------------------------------------------------------
    def _on_connection_error(self, node_id: int, role: Role, err: KafkaError) -> None:
        # a broker went away: leaders may have moved
        self._metadata.request_refresh()

    def _report(self, exc: BaseException) -> None:
        """Errors with no callback of their own (and exceptions raised by user callbacks)."""
        report_error(self.loop, self.config.on_error, "kafkaev", exc)
