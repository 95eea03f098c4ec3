"""Reading the client's parts into a ``ClientStats`` snapshot.

Nothing here runs on a hot path: the counters are kept by their owners (the connections,
the producer's ``PartitionState``, the consumer's ``PartitionState``, the group member) and
read only when a snapshot is asked for. Rates need the previous snapshot's counts, so the
collector remembers them, per partition, between calls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import TYPE_CHECKING

from ..consumer import LAG_UNKNOWN
from ..types import NO_OFFSET
from .broker_totals import ConnectionCounters
from .snapshot import (
    BrokerStats,
    ClientStats,
    ConsumerPartitionStats,
    GroupStats,
    ProducerPartitionStats,
    ProducerStats,
)

if TYPE_CHECKING:
    from ..client import Client

NO_PRODUCER_ID = -1
US_PER_MS = 1000.0


def percentile_ms(buckets: list[int], fraction: float) -> float:
    """The upper bound, in ms, of the histogram bucket holding the ``fraction`` percentile
    (bucket i counts round trips under 2**i µs); 0.0 for an empty histogram."""
    total = sum(buckets)
    if total == 0:
        return 0.0
    rank = fraction * total
    seen = 0
    for i, count in enumerate(buckets):
        seen += count
        if seen >= rank:
            return (1 << i) / US_PER_MS
    return (1 << (len(buckets) - 1)) / US_PER_MS


# An exporter's thread waits at most this long for the loop to take its snapshot.
THREAD_SNAPSHOT_TIMEOUT_S = 10.0


def snapshot_on_loop(collector: StatsCollector, loop: asyncio.AbstractEventLoop,
                     timeout_s: float = THREAD_SNAPSHOT_TIMEOUT_S) -> ClientStats:
    """``collector.snapshot()`` taken on ``loop``'s thread: the client's state is touched only
    from loop callbacks, and an exporter's HTTP server or export timer runs on a thread of its
    own. From the loop itself, or while the loop is not running, it is taken at once."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop or not loop.is_running():
        return collector.snapshot()
    future: concurrent.futures.Future[ClientStats] = concurrent.futures.Future()

    def take() -> None:
        try:
            future.set_result(collector.snapshot())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, raised there
            future.set_exception(exc)

    loop.call_soon_threadsafe(take)
    return future.result(timeout_s)


def _rate(now_count: int, before: int | None, interval_s: float) -> float:
    if before is None or interval_s <= 0:
        return 0.0
    return (now_count - before) / interval_s


class StatsCollector:
    """One per client: builds snapshots, keeping the counts the next one's rates start from."""

    __slots__ = ("_client", "_last_at", "_produced", "_consumed", "_fetched")

    def __init__(self, client: Client) -> None:
        self._client = client
        self._last_at: float | None = None  # loop time of the previous snapshot
        self._produced: dict[tuple[str, int], int] = {}
        self._consumed: dict[tuple[str, int], int] = {}
        self._fetched: dict[tuple[str, int], int] = {}

    def snapshot(self) -> ClientStats:
        client = self._client
        now = client.loop.time()
        interval_s = 0.0 if self._last_at is None else now - self._last_at
        self._last_at = now
        return ClientStats(
            client_id=client.config.client_id,
            timestamp=time.time(),
            interval_s=interval_s,
            brokers=self._brokers(),
            producer=self._producer(interval_s),
            consumer=self._consumer(interval_s),
            group=self._group(),
        )

    def _brokers(self) -> tuple[BrokerStats, ...]:
        pool = self._client._pool
        live: dict[int, list] = {}
        for pooled in pool.connections():
            node_id, conn = pooled.node_id, pooled.conn
            live.setdefault(node_id, []).append(conn)
        result = []
        for node_id in sorted(set(live) | set(pool.totals.node_ids)):
            counters: ConnectionCounters = pool.totals.of(node_id)
            conns = live.get(node_id, [])
            in_flight = 0
            open_count = 0
            for conn in conns:
                counters.add(conn)
                in_flight += conn.pending
                open_count += conn.connected
            host, port = pool.address(node_id) or ("", 0)
            result.append(BrokerStats(
                node_id=node_id, host=host, port=port, connections=open_count, connects=counters.connects,
                reconnects=counters.reconnects, requests_sent=counters.requests_sent,
                responses_received=counters.responses_received, in_flight=in_flight,
                bytes_sent=counters.bytes_sent, bytes_received=counters.bytes_received,
                throttle_time_ms=counters.throttle_time_ms, throttled_responses=counters.throttled_responses,
                reauthentications=counters.reauthentications,
                rtt_count=sum(counters.rtt), rtt_p50_ms=percentile_ms(counters.rtt, 0.50),
                rtt_p99_ms=percentile_ms(counters.rtt, 0.99), rtt_buckets=tuple(counters.rtt),
            ))
        return tuple(result)

    def _producer(self, interval_s: float) -> ProducerStats:
        producer = self._client._producer
        sender = producer._sender
        acc = producer._acc
        parts = []
        produced: dict[tuple[str, int], int] = {}
        for tstate in acc.topics.values():
            for part in tstate.parts:
                queued_records = queued_bytes = 0
                open_builder = part.batch.builder if part.batch is not None else None
                if open_builder is not None:
                    queued_records += open_builder.record_count
                    queued_bytes += open_builder.estimated_size
                for batch in part.queue:
                    queued_records += batch.record_count
                    queued_bytes += batch.reserved
                delivered = part.records_delivered
                batches = part.batches_delivered
                key = (part.topic, part.partition)
                produced[key] = delivered
                if not (delivered or queued_records or part.queue.in_flight_count):
                    continue  # a partition never written to
                parts.append(ProducerPartitionStats(
                    topic=part.topic, partition=part.partition, queued_records=queued_records,
                    queued_bytes=queued_bytes, in_flight_batches=part.queue.in_flight_count,
                    records_delivered=delivered, bytes_delivered=part.bytes_delivered, batches_delivered=batches,
                    avg_batch_bytes=part.bytes_delivered / batches if batches else 0.0,
                    avg_records_per_batch=delivered / batches if batches else 0.0,
                    records_per_s=_rate(delivered, self._produced.get(key), interval_s),
                ))
        self._produced = produced
        budget = acc.budget
        identity = sender.identity
        txn = None if producer.txn is None else producer.txn.txn.state
        return ProducerStats(
            buffer_limit=budget.limit, buffer_used=budget.reserved + budget.held,
            buffer_records_limit=self._client.config.buffer_records, buffer_records_used=budget.records,
            batches_in_flight=sender.in_flight, records_waiting_for_metadata=producer._waiting_count,
            idempotent=identity is not None,
            producer_id=NO_PRODUCER_ID if identity is None else identity.producer_id,
            producer_epoch=NO_PRODUCER_ID if identity is None else identity.producer_epoch,
            transaction_state=None if txn is None else txn.value,
            partitions=tuple(parts),
        )

    def _consumer(self, interval_s: float) -> tuple[ConsumerPartitionStats, ...]:
        result = []
        consumed: dict[tuple[str, int], int] = {}
        fetched: dict[tuple[str, int], int] = {}
        ctx = self._client._consumer.ctx
        for state in ctx.subscription:
            key = (state.topic, state.partition)
            consumed[key] = state.records_delivered
            fetched[key] = state.fetches
            position, high = ctx.delivered(state)[0], state.high_watermark
            lag = high - position if position >= 0 and high >= 0 else LAG_UNKNOWN
            result.append(ConsumerPartitionStats(
                topic=state.topic, partition=state.partition,
                position=position if position >= 0 else NO_OFFSET, high_watermark=high, lag=max(lag, LAG_UNKNOWN),
                records_delivered=state.records_delivered, fetches=state.fetches, bytes_fetched=state.bytes_fetched,
                records_per_s=_rate(state.records_delivered, self._consumed.get(key), interval_s),
                fetches_per_s=_rate(state.fetches, self._fetched.get(key), interval_s),
                paused=state.paused, held_bytes=state.held_bytes(),
            ))
        self._consumed, self._fetched = consumed, fetched
        result.sort(key=lambda p: (p.topic, p.partition))
        return tuple(result)

    def _group(self) -> GroupStats | None:
        member = self._client._consumer.group
        if member is None:
            return None
        clock = member.rebalance_clock
        return GroupStats(
            group_id=member.group_id, state=member.state.value, generation=member.generation_id,
            member_id=member.member_id, assigned_partitions=len(member.owned), rebalances=clock.rebalances,
            last_rebalance_ms=clock.last_rebalance_ms, rebalance_ms_total=clock.rebalance_ms_total,
        )
