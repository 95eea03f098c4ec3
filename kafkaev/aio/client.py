"""``kafkaev.aio.Client``: ``kafkaev.Client`` awaited.

It holds a ``kafkaev.Client`` built on the running loop and adds no second producer, consumer
or connection: a record's Future is settled by the batch's delivery loop (the C code that calls
the callback API's callbacks), records are pulled from the fetcher's ``RecordBuffer`` instead of
being pushed to ``on_message``, and every other method is its callback method awaited
(``bridge.call``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, overload

from kafkaev.client import Client as CallbackClient
from kafkaev.cluster.metadata import ClusterMetadata
from kafkaev.config import ClientConfig
from kafkaev.errors import KafkaError
from kafkaev.producer import BufferFullError
from kafkaev.protocol.codec import Message
from kafkaev.stats.snapshot import ClientStats
from kafkaev.types import ConsumerGroupMetadata, OffsetAndMetadata, RecordMetadata, TopicPartition

from .bridge import call, resolve
from .iteration import getmany, next_record, wait_for_records
from .pull import MessageIterator
from .room import RoomQueue
from .send import ProducingClient

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from kafkaev.types import (
        AssignedPartition,
        Brokers,
        ClientOptions,
        Headers,
        PartitionLike,
        RecordBytes,
        SubscribeOptions,
    )

# How long `async with`'s exit (close()) lets the buffered records be delivered; leaving the
# group and closing the sockets are each bounded by request_timeout_ms on top.
DEFAULT_CLOSE_TIMEOUT_MS = 30000
# getmany()'s defaults: wait up to a second for the first record, return up to this many.
DEFAULT_GETMANY_TIMEOUT_MS = 1000
DEFAULT_GETMANY_MAX_RECORDS = 10000
# The options the records' push delivery takes, which async iteration replaces.
_PUSH_OPTIONS = ("on_message", "on_batch")

# The delivery loop settles exactly this type in C (any other "callback" would be called).
_Future = asyncio.Future


def _record_future_factory(loop: asyncio.AbstractEventLoop) -> Callable[[], asyncio.Future[Any]]:
    """How a record's Future is made: ``loop.create_future`` (the cheaper call, on asyncio's
    loop and uvloop) when it makes exact ``asyncio.Future``s, else the type itself."""
    if type(loop.create_future()) is _Future:
        return loop.create_future
    return partial(_Future, loop=loop)


class Client(ProducingClient):
    """An asyncio Kafka client: ``Client(brokers="host:port,...", **options)`` with the options
    of ``kafkaev.Client`` (``ClientConfig``), built inside a running loop (asyncio's or
    uvloop's), or given ``loop=``. ``async with`` closes it."""

    def __init__(self, brokers: Brokers | None = None, **options: Unpack[ClientOptions]) -> None:
        for name in _PUSH_OPTIONS:
            if options.get(name) is not None:
                raise ValueError(f"kafkaev.aio.Client: records are read with 'async for' or getmany(); "
                                 f"'{name}' is not taken (kafkaev.Client takes it)")
        loop = options.get("loop")
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise RuntimeError("kafkaev.aio.Client: no running event loop; create it inside a coroutine "
                                   "or pass loop=") from None
        options["loop"] = loop
        self._client = CallbackClient(brokers, **options)
        self.loop: asyncio.AbstractEventLoop = loop
        self._buffer = self._client._consumer.use_buffer()
        self._produce = self._client._producer.produce  # the per-record C call
        self._room = RoomQueue(loop, self._client.on_buffer_room, self._client._producer._acc.has_room)
        # produce() and produce_nowait() are ProducingClient's, in C (kafkaev.aio.send).
        self._init_producing(self._produce, _record_future_factory(loop), self._room.waiters)

    @property
    def config(self) -> ClientConfig:
        return self._client.config

    @property
    def metadata(self) -> ClusterMetadata:
        """The latest cluster metadata (brokers, topics, partitions, leaders)."""
        return self._client.metadata

    @property
    def closed(self) -> bool:
        return self._client.closed

    async def connect(self) -> ClusterMetadata:
        """Bootstrap: the cluster's metadata once it answered; raises KafkaError naming every
        broker tried. (Producing and consuming connect by themselves.)"""
        fut: asyncio.Future[ClusterMetadata] = self.loop.create_future()

        def done(md: ClusterMetadata | None, err: KafkaError | None) -> None:
            if fut.done():
                return
            if err is not None:
                fut.set_exception(err)
            else:
                fut.set_result(md if md is not None else self._client.metadata)

        self._client.connect(done)
        return await fut

    # --- producer: produce() and produce_nowait() are ProducingClient's (C) ------------------------
    if TYPE_CHECKING:  # declared here too, so that a type checker's messages name Client
        def produce(self, topic: str, key: RecordBytes, value: RecordBytes, *, partition: int | None = None,
                    headers: Headers | None = None, timestamp_ms: int | None = None) -> Awaitable[RecordMetadata]: ...

        def produce_nowait(self, topic: str, key: RecordBytes, value: RecordBytes, *, partition: int | None = None,
                           headers: Headers | None = None, timestamp_ms: int | None = None,
                           ) -> asyncio.Future[RecordMetadata]: ...

    async def _produce_after_room(self, topic: str, key: RecordBytes, value: RecordBytes,
                                  fut: asyncio.Future[RecordMetadata], partition: int | None,
                                  headers: Headers | None, timestamp_ms: int | None) -> RecordMetadata:
        """produce()'s slow path: wait for room (in turn), queue the record, await its Future."""
        await self._produce_when_room(topic, key, value, fut, partition, headers, timestamp_ms)
        return await fut

    async def _produce_when_room(self, topic: str, key: RecordBytes, value: RecordBytes,
                                 fut: asyncio.Future[RecordMetadata], partition: int | None,
                                 headers: Headers | None, timestamp_ms: int | None) -> None:
        """Wait for this record's turn in the RoomQueue, produce it, pass the turn on. A record
        that could never fit is refused at once (MESSAGE_TOO_LARGE), never waited for."""
        again = False
        while True:
            await self._room.wait_turn(again=again)
            try:
                self._produce(topic, key, value, fut, partition=partition, headers=headers, timestamp_ms=timestamp_ms)
            except BufferFullError:
                again = True
                continue
            except BaseException:
                self._room.pass_turn()  # a bad argument: the record is refused, the next one goes
                raise
            self._room.pass_turn()
            return

    async def wait_for_buffer_room(self) -> None:
        """Return once ``buffer_memory`` has room for a batch and ``buffer_records`` for a record
        (at once if they have)."""
        room: asyncio.Future[None] = self.loop.create_future()
        self._client.on_buffer_room(lambda: resolve(room))
        await room

    async def produce_many(self, messages: Iterable[Any]) -> list[tuple[int, KafkaError]] | None:
        """Queue several records (as ``kafkaev.Client.produce_many``) and wait for all: None
        when every one was acknowledged, else ``[(index, KafkaError), ...]`` of the failed ones."""
        fut: asyncio.Future[list[tuple[int, KafkaError]] | None] = self.loop.create_future()

        def done(errors: list[tuple[int, KafkaError]] | None) -> None:
            if not fut.done():
                fut.set_result(errors)

        self._client.produce_many(messages, done)
        return await fut

    async def flush(self) -> None:
        """Send every buffered batch now; return once nothing is buffered or in flight."""
        await call(self.loop, self._client.flush)

    @property
    def pending(self) -> int:
        """Producer batches not yet answered plus records waiting for topic metadata."""
        return self._client.pending

    # --- consumer: assignment --------------------------------------------------------------------
    def assign(self, partitions: Iterable[AssignedPartition]) -> None:
        """Read exactly these partitions, replacing any earlier assignment:
        ``[(topic, partition[, offset])]`` or TopicPartitions (offset: OFFSET_BEGINNING,
        OFFSET_END or an offset; without one, where auto_offset_reset says). Fetching starts at
        once; read with ``async for`` or ``getmany()``."""
        self._client.assign(partitions)
        self._client.start()

    def assignment(self) -> list[TopicPartition]:
        """The partitions this client reads now: assigned by hand or by the group."""
        return self._client.assignment()

    async def subscribe(self, topics: Sequence[str], **options: Unpack[SubscribeOptions]) -> None:
        """Join ``group_id`` (options as ``kafkaev.Client.subscribe``) and return once the group
        gave this member its first assignment. A second call changes the topics and returns at
        once (the group rebalances)."""
        if self._client._consumer.group is not None:
            self._client.subscribe(topics, **options)
            return
        joined: asyncio.Future[None] = self.loop.create_future()
        user_on_assign = options.get("on_assign")

        def on_assign(partitions: list[TopicPartition]) -> None:
            resolve(joined)
            if user_on_assign is not None:
                user_on_assign(partitions)

        options["on_assign"] = on_assign
        self._client.subscribe(topics, **options)
        await joined

    async def unsubscribe(self) -> None:
        """Leave the group: commit first (with auto_commit), revoke the partitions, LeaveGroup."""
        await call(self.loop, self._client.unsubscribe)

    # --- consumer: reading -----------------------------------------------------------------------
    def __aiter__(self) -> MessageIterator:
        """``async for msg in client``: each record in offset order per partition, counted as
        delivered (for commit() and auto-commit) when it is handed out; ends when the client
        closes. Cancelling the loop leaves the consumer consistent: what was handed out stays
        delivered, the rest is handed out next time."""
        return MessageIterator(self.loop, self._buffer, next_record)

    async def getmany(self, timeout_ms: int = DEFAULT_GETMANY_TIMEOUT_MS,
                      max_records: int = DEFAULT_GETMANY_MAX_RECORDS) -> dict[TopicPartition, list[Message]]:
        """Up to ``max_records`` fetched records by partition (in offset order in each), waiting
        at most ``timeout_ms`` for the first; ``{}`` when none arrived. They count as delivered."""
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise ValueError(f"getmany: 'timeout_ms' must be an int >= 0, got {timeout_ms!r}")
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
            raise ValueError(f"getmany: 'max_records' must be an int >= 1, got {max_records!r}")
        return await getmany(self.loop, self._buffer, timeout_ms, max_records)

    async def wait_for_records(self, timeout_ms: int | None = None) -> bool:
        """Return once fetched records are waiting (True), or after ``timeout_ms`` (False)."""
        await wait_for_records(self.loop, self._buffer, None if timeout_ms is None else timeout_ms / 1000.0)
        return self._buffer.ready()

    # --- consumer: positions ---------------------------------------------------------------------
    def position(self, topic: str, partition: int) -> int:
        """The next offset to be handed out from an assigned partition (NO_OFFSET, -1, while it
        is being looked up)."""
        return self._client.position(topic, partition)

    async def seek(self, topic: str, partition: int, offset: int) -> int:
        """Move an assigned partition to ``offset`` (or OFFSET_BEGINNING / OFFSET_END); returns
        the position once known. Records fetched before are not handed out."""
        result: int = await call(self.loop, self._client.seek, topic, partition, offset)
        return result

    async def seek_to_time(self, topic: str, partition: int, timestamp_ms: int) -> int:
        """Move to the first record with a timestamp >= ``timestamp_ms``; returns its offset."""
        result: int = await call(self.loop, self._client.seek_to_time, topic, partition, timestamp_ms)
        return result

    def pause(self, partitions: Iterable[PartitionLike]) -> None:
        """Stop fetching and handing out these partitions; what was fetched and not handed out
        waits (outside ``max_buffered_bytes``) and is handed out after resume, not fetched again."""
        self._client.pause(partitions)

    def resume(self, partitions: Iterable[PartitionLike]) -> None:
        """Fetch paused partitions again, from where they stopped."""
        self._client.resume(partitions)

    def paused(self) -> list[TopicPartition]:
        """The assigned partitions that are paused."""
        return self._client.paused()

    async def offsets_for(self, topic: str) -> dict[int, tuple[int, int]]:
        """``{partition: (earliest, latest)}`` for every partition of ``topic``."""
        result: dict[int, tuple[int, int]] = await call(self.loop, self._client.offsets_for, topic)
        return result

    async def lag(self) -> dict[tuple[str, int], tuple[int, int, int]]:
        """``{(topic, partition): (position, high_watermark, lag)}`` for the assigned partitions."""
        result: dict[tuple[str, int], tuple[int, int, int]] = await call(self.loop, self._client.lag)
        return result

    # --- transactions (the callback client's, awaited) ----------------------------------------------
    async def init_transactions(self) -> None:
        """Register ``transactional_id`` with its coordinator, fencing older producers with the
        same id and completing what they left open; raises KafkaError."""
        await call(self.loop, self._client.init_transactions)

    def begin_transaction(self) -> None:
        """Open a transaction (raises KafkaError at once when not ready or already in one)."""
        self._client.begin_transaction()

    async def send_offsets_to_transaction(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
                                          | Mapping[tuple[str, int], int | OffsetAndMetadata],
                                          group_metadata: ConsumerGroupMetadata) -> None:
        """Put the group's ``offsets`` (the next offsets to read) into the open transaction
        (KIP-447: ``group_metadata`` is ``group_metadata()``'s); raises KafkaError."""
        await call(self.loop, self._client.send_offsets_to_transaction, offsets, group_metadata)

    async def commit_transaction(self) -> None:
        """Send what is buffered, wait for every acknowledgement, then commit the transaction;
        raises KafkaError (``err.txn_requires_abort``: abort it; ``err.fatal``: stop)."""
        await call(self.loop, self._client.commit_transaction)

    async def abort_transaction(self) -> None:
        """Abort the open transaction: records not yet sent fail once each; raises KafkaError."""
        await call(self.loop, self._client.abort_transaction)

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This group member's identity for ``send_offsets_to_transaction`` (KIP-447)."""
        return self._client.group_metadata()

    def stats(self) -> ClientStats:
        """A snapshot of the client's statistics (``kafkaev.stats``)."""
        return self._client.stats()

    # --- consumer: the group's offsets -----------------------------------------------------------
    async def commit(self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]
                     | Mapping[tuple[str, int], int | OffsetAndMetadata] | None = None) -> None:
        """Commit every record handed out so far (by ``async for`` or ``getmany``), or the
        ``{(topic, partition): offset}`` given (the next offset to read); raises KafkaError."""
        await call(self.loop, self._client.commit, offsets=offsets)

    @overload
    async def committed(self, partitions: Iterable[PartitionLike], *,
                        metadata: Literal[False] = False) -> dict[TopicPartition, int]: ...

    @overload
    async def committed(self, partitions: Iterable[PartitionLike], *,
                        metadata: Literal[True]) -> dict[TopicPartition, OffsetAndMetadata]: ...

    async def committed(self, partitions: Iterable[PartitionLike], *, metadata: bool = False,
                        ) -> dict[TopicPartition, int] | dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets, -1 where nothing is committed; with
        ``metadata=True`` ``OffsetAndMetadata`` values."""
        result: Any = await call(self.loop, self._client.committed, partitions, metadata=metadata)
        return result  # type: ignore[no-any-return]

    # --- lifetime --------------------------------------------------------------------------------
    async def close(self, timeout_ms: int = DEFAULT_CLOSE_TIMEOUT_MS) -> None:
        """Deliver what is buffered (at most ``timeout_ms``; what is left then fails with
        DESTROY), commit with auto_commit, leave the group, close the sockets (each bounded by
        request_timeout_ms). Records fetched and not handed out are not committed."""
        await call(self.loop, self._client.close, timeout_ms=timeout_ms)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: object) -> None:
        if exc is None:
            await self.close()
            return
        try:  # the body's exception is the one that propagates
            await self.close()
        except Exception as close_err:  # noqa: BLE001
            self._client._report(close_err)
