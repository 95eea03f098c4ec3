"""Client.stats() and stats_cb on the real broker: per-partition counts equal the records
really produced and consumed, broker round trips and bytes are counted, the group's
rebalances are seen; and the snapshot's parts that need no broker."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from consumer_helpers import Received, close, connect, run_until

import kafkaev
from kafkaev.stats import ClientStats
from kafkaev.stats.collect import percentile_ms

PARTITIONS = 3
RECORDS = 30000  # at load: many batches per partition, several in flight
SESSION_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_MS = 500
LINGER_LONG_MS = 60_000  # a batch that stays open for the whole test
OPEN_RECORDS = 3


def _produce_all(loop: asyncio.AbstractEventLoop, client: kafkaev.Client, topic: str) -> Counter[int]:
    acked: Counter[int] = Counter()
    failed: list[BaseException] = []

    def delivered(md: Any, err: Any) -> None:
        if err is not None:
            failed.append(err)
        else:
            acked[md.partition] += 1

    for i in range(RECORDS):
        client.produce(topic, b"%d" % i, b"v" * 100, delivered)
        if i % 2000 == 0:
            loop.run_until_complete(asyncio.sleep(0))
    run_until(loop, lambda: sum(acked.values()) + len(failed) == RECORDS, 60, "every delivery")
    assert not failed, failed[:3]
    return acked


def test_stats_counts_match_what_was_produced_and_consumed(uv: asyncio.AbstractEventLoop, kafka: Any,
                                                          make_topic: Any) -> None:
    topic = make_topic(partitions=PARTITIONS)
    producer = connect(uv, kafka.bootstrap, linger_ms=5, batch_size=16384)
    acked = _produce_all(uv, producer, topic)
    stats = producer.stats()
    by_partition = {p.partition: p for p in stats.producer.partitions if p.topic == topic}
    assert {p: s.records_delivered for p, s in by_partition.items()} == dict(acked)
    for part in by_partition.values():
        assert part.queued_records == 0 and part.in_flight_batches == 0
        assert part.batches_delivered > 1  # at load: many batches
        assert part.avg_records_per_batch == part.records_delivered / part.batches_delivered
        assert 0 < part.avg_batch_bytes <= 16384 + 1024
    assert stats.producer.buffer_used == 0 and stats.producer.buffer_limit == producer.config.buffer_memory
    assert stats.producer.buffer_records_used == 0
    assert stats.producer.buffer_records_limit == producer.config.buffer_records
    assert not stats.producer.idempotent and stats.producer.producer_id == -1
    (broker,) = stats.brokers
    assert broker.requests_sent >= broker.responses_received > sum(p.batches_delivered for p in by_partition.values()) / 100
    assert broker.bytes_sent > RECORDS * 100 and broker.bytes_received > 0
    assert broker.rtt_count == broker.responses_received
    assert 0 < broker.rtt_p50_ms <= broker.rtt_p99_ms
    assert broker.connects >= 2 and broker.reconnects == 0 and broker.in_flight == 0
    close(uv, producer)

    received = Received()
    group = f"stats-{topic}"
    snapshots: list[ClientStats] = []
    consumer = connect(uv, kafka.bootstrap, on_message=received.on_message, on_error=received.on_error,
                       stats_interval_ms=100, stats_cb=snapshots.append)
    consumer.subscribe([topic], group_id=group, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    run_until(uv, lambda: received.count >= RECORDS, 60, "every record consumed")
    run_until(uv, lambda: all(p.lag == 0 for p in consumer.stats().consumer) and len(snapshots) >= 2, 10,
              "lag 0 in the stats and two periodic snapshots")
    stats = consumer.stats()
    consumed = {p.partition: p for p in stats.consumer if p.topic == topic}
    assert {p: s.records_delivered for p, s in consumed.items()} == {
        p: len(offsets) for (t, p), offsets in received.offsets.items() if t == topic}
    assert {p: s.records_delivered for p, s in consumed.items()} == dict(acked)
    for part in consumed.values():
        assert part.position == part.high_watermark == acked[part.partition]
        assert part.fetches >= 1 and part.bytes_fetched > 0
    assert stats.group is not None
    assert stats.group.group_id == group and stats.group.state == "stable"
    assert stats.group.generation >= 1 and stats.group.rebalances >= 1
    assert stats.group.assigned_partitions == PARTITIONS
    assert 0 < stats.group.last_rebalance_ms <= stats.group.rebalance_ms_total
    assert all(isinstance(s, ClientStats) for s in snapshots)
    assert all(s.interval_s > 0 for s in snapshots[1:])
    assert not received.errors, received.errors[:3]
    close(uv, consumer)
    ticks = len(snapshots)
    uv.run_until_complete(asyncio.sleep(0.3))
    assert len(snapshots) == ticks, "stats_cb went on after close()"


def test_stats_count_the_records_of_a_batch_still_open(uv: asyncio.AbstractEventLoop, kafka: Any,
                                                        make_topic: Any) -> None:
    """A lingering batch is part of the snapshot: its records and its size so far."""
    topic = make_topic(partitions=PARTITIONS)
    producer = connect(uv, kafka.bootstrap, linger_ms=LINGER_LONG_MS)
    acked: list[Any] = []
    for _ in range(OPEN_RECORDS):
        producer.produce(topic, None, b"v" * 100, lambda md, err: acked.append(err), partition=0)
    run_until(uv, lambda: producer.stats().producer.records_waiting_for_metadata == 0, 10, "the topic's metadata")
    (part,) = [p for p in producer.stats().producer.partitions if p.topic == topic]
    assert part.queued_records == OPEN_RECORDS and part.in_flight_batches == 0
    assert OPEN_RECORDS * 100 < part.queued_bytes < OPEN_RECORDS * 200  # the records plus a header
    close(uv, producer)  # sends the open batch
    assert acked == [None] * OPEN_RECORDS


def test_stats_cb_exception_is_reported_and_the_timer_goes_on(uv: asyncio.AbstractEventLoop) -> None:
    errors: list[BaseException] = []
    calls: list[ClientStats] = []

    def cb(stats: ClientStats) -> None:
        calls.append(stats)
        raise RuntimeError("user bug")

    client = kafkaev.Client("127.0.0.1:1", loop=uv, stats_interval_ms=20, stats_cb=cb, on_error=errors.append)
    run_until(uv, lambda: len(calls) >= 3, 5, "three snapshots")
    assert len(errors) == len(calls) and all(isinstance(e, RuntimeError) for e in errors)
    client._stats_timer.cancel()  # type: ignore[union-attr]


@pytest.mark.parametrize(("options", "named"), [
    ({"stats_cb": print}, "stats_interval_ms"),
    ({"stats_interval_ms": 100}, "stats_interval_ms"),
    ({"stats_interval_ms": -1, "stats_cb": print}, "stats_interval_ms"),
    ({"stats_interval_ms": 100, "stats_cb": 3}, "stats_cb"),
])
def test_stats_options_are_checked(options: dict[str, Any], named: str) -> None:
    with pytest.raises((TypeError, ValueError), match=named):
        kafkaev.Client("127.0.0.1:1", **options)


def test_percentiles_read_the_histogram_bucket_bounds() -> None:
    buckets = [0] * 32
    assert percentile_ms(buckets, 0.5) == 0.0
    buckets[10] = 98  # under 1024 µs
    buckets[12] = 2  # under 4096 µs
    assert percentile_ms(buckets, 0.5) == 1.024
    assert percentile_ms(buckets, 0.98) == 1.024
    assert percentile_ms(buckets, 0.99) == 4.096
