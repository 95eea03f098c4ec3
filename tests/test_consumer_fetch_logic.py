"""Fetcher policy against a FakeCluster (tests/fake_broker.py, real Connections on loopback sockets): the next Fetch is out before a large response's records
are handed over (after a small one's), a partition's records are decoded only when its turn comes, a set of control
records only moves the position, and a corrupt batch stops its own partition alone, after the
batches before it, once and reported. Real-broker tests: test_consumer_fetch.py.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from fake_broker import ErrorAnswer, FakeCluster

import kafkaev
from kafkaev.cluster.metadata import Metadata
from kafkaev.cluster.pool import ConnectionPool, Role
from kafkaev.config import ClientConfig
from kafkaev.consumer import Consumer
from kafkaev.consumer.fetcher import DELIVER_FIRST_BYTES
from kafkaev.errors import OFFSET_OUT_OF_RANGE, PROTOCOL, REQUEST_TIMED_OUT, KafkaError
from kafkaev.protocol.codec import ApiKey, RecordBatchBuilder, crc32c
from kafkaev.types import TopicPartition

TOPIC = "t"
NODE = 1
PORT = 9001
TS = 1_700_000_000_000
ATTR_CONTROL_TRANSACTIONAL = 0x30
ATTRIBUTES_AT = 21  # RecordBatch v2: Attributes (Int16), where the CRC-32C coverage starts
CRC_AT = 17
LAST_OFFSET_DELTA_AT = 23


def batch(base_offset: int, count: int, *, tag: bytes = b"v", leader_epoch: int = -1) -> bytes:
    builder = RecordBatchBuilder(0)
    for i in range(count):
        builder.append(TS + i, None, b"%s%d" % (tag, base_offset + i), None)
    return builder.build(base_offset=base_offset, partition_leader_epoch=leader_epoch)


def control_batch(base_offset: int) -> bytes:
    """A COMMIT marker: a transactional control batch (its CRC recomputed after the flags)."""
    builder = RecordBatchBuilder(0)
    builder.append(TS, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0), None)
    raw = bytearray(builder.build(base_offset=base_offset, producer_id=7, producer_epoch=0, base_sequence=-1,
                                  transactional=True))
    (attributes,) = struct.unpack_from(">h", raw, ATTRIBUTES_AT)
    struct.pack_into(">h", raw, ATTRIBUTES_AT, attributes | ATTR_CONTROL_TRANSACTIONAL)
    struct.pack_into(">I", raw, CRC_AT, crc32c(bytes(raw[ATTRIBUTES_AT:])))
    return bytes(raw)


def corrupt(raw: bytes) -> bytes:
    damaged = bytearray(raw)
    damaged[-1] ^= 0xFF  # inside the last record's value: only the CRC can tell
    return bytes(damaged)


def next_offset_of(raw: bytes) -> int:
    base, last_delta = struct.unpack_from(">q", raw)[0], struct.unpack_from(">i", raw, LAST_OFFSET_DELTA_AT)[0]
    return base + last_delta + 1


@pytest.fixture
def loop(new_loop):
    return new_loop("asyncio")  # guarded (conftest.py); these tests do not depend on the loop kind


@pytest.fixture
def cluster(fake_cluster) -> FakeCluster:
    """One node leading every partition of TOPIC."""
    return fake_cluster(NODE)


def with_logs(cluster: FakeCluster, logs: dict[int, list[bytes]]) -> FakeCluster:
    """TOPIC with one partition per entry of ``logs``, holding those encoded batches. A Fetch gets
    every batch at or past the requested offset; one with nothing to return is held (a long poll
    that outlasts the test)."""
    cluster.create_topic(TOPIC, len(logs))
    for partition, batches in logs.items():
        cluster.log(TOPIC, partition).replace(batches)
    return cluster


def fetch_offsets(cluster: FakeCluster) -> list[dict[int, int]]:
    """Each Fetch request's {partition: fetch offset}."""
    return [{p.partition: p.fetch_offset for t in r.body.topics for p in t.partitions}
            for r in cluster.requests_of(ApiKey.FETCH)]


def last_fetched_epochs(cluster: FakeCluster) -> list[dict[int, int]]:
    """Each Fetch request's {partition: LastFetchedEpoch}."""
    return [{p.partition: p.last_fetched_epoch for t in r.body.topics for p in t.partitions}
            for r in cluster.requests_of(ApiKey.FETCH)]


def consumer_for(loop: asyncio.AbstractEventLoop, cluster: FakeCluster, **handlers: Any) -> tuple[Consumer, list]:
    config = ClientConfig(brokers=cluster.bootstrap, **handlers)
    errors: list[BaseException] = []
    pool = ConnectionPool(config, loop)
    metadata = Metadata(config, loop, pool)
    return Consumer(config, loop, metadata, pool, errors.append), errors


def consumer_pausing_at(
    loop: asyncio.AbstractEventLoop, cluster: FakeCluster, offset: int,
) -> tuple[Consumer, list, list[int]]:
    """A consumer of TOPIC[0] from 0 whose ``on_message`` pauses the partition at ``offset``;
    with its errors and the offsets delivered."""
    delivered: list[int] = []

    def on_message(msg: Any) -> None:
        delivered.append(msg.offset)
        if msg.offset == offset:
            consumer.pause([(TOPIC, 0)])

    consumer, errors = consumer_for(loop, cluster, on_message=on_message)
    consumer.assign([(TOPIC, 0, 0)])
    return consumer, errors, delivered


def run_until(loop: asyncio.AbstractEventLoop, predicate: Any, timeout: float = 10.0) -> None:
    async def wait() -> None:
        while not predicate():
            await asyncio.sleep(0.002)
    loop.run_until_complete(asyncio.wait_for(wait(), timeout))


def test_next_fetch_is_out_before_the_records_are_handed_over(loop, cluster):
    """A response of DELIVER_FIRST_BYTES or more: the broker reads the log while it is handed over."""
    big = b"v" * (DELIVER_FIRST_BYTES // 4)
    with_logs(cluster, {0: [batch(0, 3, tag=big), batch(3, 2, tag=big)], 1: [batch(0, 4, tag=big)]})
    seen: list[tuple[int, list[int], int]] = []  # (partition, offsets, requests sent so far on the FETCH socket)

    def on_batch(messages: list[Any]) -> None:
        fetch_conn = consumer.ctx.pool.ready(NODE, Role.FETCH)
        seen.append((messages[0].partition, [m.offset for m in messages], fetch_conn.requests_sent))

    consumer, errors = consumer_for(loop, cluster, on_batch=on_batch)
    consumer.assign([(TOPIC, 0, 0), (TOPIC, 1, 0)])
    consumer.start()
    run_until(loop, lambda: len(seen) == 2 and cluster.held_fetches == 1)
    assert sorted((p, offsets) for p, offsets, _ in seen) == [(0, [0, 1, 2, 3, 4]), (1, [0, 1, 2, 3])]
    # Both partitions' next offsets were sent before either partition's records were delivered:
    # by then the FETCH connection had sent everything its node ever received (its handshake and
    # both Fetches).
    [fetch_socket] = {r.connection for r in cluster.requests_of(ApiKey.FETCH)}
    on_fetch_socket = [r for r in cluster.requests if r.connection == fetch_socket]
    assert [r.api_key for r in on_fetch_socket] == [ApiKey.API_VERSIONS, ApiKey.FETCH, ApiKey.FETCH]
    assert all(sent == len(on_fetch_socket) for _, _, sent in seen)
    assert fetch_offsets(cluster) == [{0: 0, 1: 0}, {0: 5, 1: 4}]
    assert errors == []
    consumer.close()


def test_a_small_response_is_handed_over_before_the_next_fetch(loop, cluster):
    """Under DELIVER_FIRST_BYTES the records go first: their latency does not include building
    and writing the next Fetch; it goes out right after, from where they end."""
    with_logs(cluster, {0: [batch(0, 3)], 1: [batch(0, 2)]})
    assert sum(len(b.raw) for b in cluster.log(TOPIC, 0).batches + cluster.log(TOPIC, 1).batches) < DELIVER_FIRST_BYTES
    seen: list[tuple[int, int]] = []  # (partition, Fetch requests sent so far on the FETCH socket)

    def on_message(msg: Any) -> None:
        seen.append((msg.partition, consumer.ctx.pool.ready(NODE, Role.FETCH).requests_sent))

    consumer, errors = consumer_for(loop, cluster, on_message=on_message)
    consumer.assign([(TOPIC, 0, 0), (TOPIC, 1, 0)])
    consumer.start()
    run_until(loop, lambda: len(seen) == 5 and cluster.held_fetches == 1)
    # The handshake and the first Fetch only, for every record: the second came after them.
    assert seen == [(0, 2)] * 3 + [(1, 2)] * 2
    assert fetch_offsets(cluster) == [{0: 0, 1: 0}, {0: 3, 1: 2}]
    assert errors == []
    consumer.close()


def test_the_rest_of_a_set_paused_mid_way_waits_ahead_of_the_fetch_already_out(loop, cluster):
    """``on_message`` pauses its partition at offset 2 of a large answer, whose next Fetch is
    already out; records appended meanwhile answer that Fetch while paused. On resume the rest
    of the set comes first, then the held answer, and neither is fetched again."""
    big = b"v" * (DELIVER_FIRST_BYTES // 4)
    with_logs(cluster, {0: [batch(0, 5, tag=big), batch(5, 5, tag=big)]})
    consumer, errors, delivered = consumer_pausing_at(loop, cluster, 2)
    consumer.start()
    run_until(loop, lambda: delivered == [0, 1, 2] and cluster.held_fetches == 1)
    assert consumer.position(TOPIC, 0) == 3
    cluster.log(TOPIC, 0).append_raw(batch(10, 3))  # answers the Fetch from 10, held while paused
    run_until(loop, lambda: cluster.held_fetches == 0)
    loop.run_until_complete(asyncio.sleep(0.05))
    assert delivered == [0, 1, 2]
    consumer.resume([(TOPIC, 0)])
    run_until(loop, lambda: len(delivered) == 13 and cluster.held_fetches == 1)
    assert delivered == list(range(13))
    assert [f[0] for f in fetch_offsets(cluster)] == [0, 10, 13]
    assert errors == []
    consumer.close()


def test_records_not_handed_over_when_the_loop_is_stopped_wait_for_its_next_turn(loop, cluster):
    """``kafkaev.stop()`` from ``on_message`` at offset 2 of a large answer, with the next
    Fetch already out and another partition's set not handed over yet: the next ``run()``
    hands over the rest of both, then what that Fetch brings, and nothing is fetched again."""
    big = b"v" * (DELIVER_FIRST_BYTES // 4)
    with_logs(cluster, {0: [batch(0, 5, tag=big), batch(5, 5, tag=big)], 1: [batch(0, 2, tag=big)]})
    delivered: list[tuple[int, int]] = []

    def on_message(msg: Any) -> None:
        delivered.append((msg.partition, msg.offset))
        if (msg.partition, msg.offset) == (0, 2):
            kafkaev.stop(loop)

    consumer, errors = consumer_for(loop, cluster, on_message=on_message)
    consumer.assign([(TOPIC, 0, 0), (TOPIC, 1, 0)])
    consumer.start()
    kafkaev.run(loop=loop)
    assert delivered == [(0, 0), (0, 1), (0, 2)], "no record after the stop"
    assert (consumer.position(TOPIC, 0), consumer.position(TOPIC, 1)) == (3, 0)
    cluster.log(TOPIC, 0).append_raw(batch(10, 3))  # answers the Fetch from 10 once the loop turns
    run_until(loop, lambda: len(delivered) == 15 and cluster.held_fetches == 1)
    assert [o for p, o in delivered if p == 0] == list(range(13))
    assert [o for p, o in delivered if p == 1] == [0, 1]
    first, *later = fetch_offsets(cluster)
    assert first == {0: 0, 1: 0}
    assert later and all(f.get(0, 10) >= 10 and f.get(1, 2) >= 2 for f in later), f"fetched again: {later}"
    assert errors == []
    consumer.close()


def test_a_poll_driven_consumer_hands_over_what_a_pause_held_in_its_next_round(loop, cluster):
    with_logs(cluster, {0: [batch(0, 5), batch(5, 5)]})
    rounds: list[KafkaError | None] = []
    consumer, errors, delivered = consumer_pausing_at(loop, cluster, 2)
    consumer.poll(rounds.append)
    run_until(loop, lambda: len(rounds) == 1)
    assert delivered == [0, 1, 2] and consumer.position(TOPIC, 0) == 3
    consumer.resume([(TOPIC, 0)])
    loop.run_until_complete(asyncio.sleep(0.05))
    assert delivered == [0, 1, 2], "records are handed over inside a poll round only"
    consumer.poll(rounds.append)
    run_until(loop, lambda: len(rounds) == 2)
    assert delivered == list(range(10)) and consumer.position(TOPIC, 0) == 10
    consumer.poll(rounds.append)  # fetches from where the held records ended
    run_until(loop, lambda: cluster.held_fetches == 1)
    assert [f[0] for f in fetch_offsets(cluster)] == [0, 10]
    assert rounds[:2] == [None, None] and errors == []
    consumer.close()


def test_a_partition_paused_and_resumed_by_one_callback_goes_on_with_its_set(loop, cluster):
    """Nothing is dropped nor fetched again; resume() may send the next Fetch from inside the
    callback, and it stays valid."""
    with_logs(cluster, {0: [batch(0, 5), batch(5, 5)]})
    delivered: list[int] = []

    def on_message(msg: Any) -> None:
        delivered.append(msg.offset)
        if msg.offset == 2:
            consumer.pause([(TOPIC, 0)])
            consumer.resume([(TOPIC, 0)])

    consumer, errors = consumer_for(loop, cluster, on_message=on_message)
    consumer.assign([(TOPIC, 0, 0)])
    consumer.start()
    run_until(loop, lambda: len(delivered) == 10 and cluster.held_fetches == 1)
    assert delivered == list(range(10))
    assert [f[0] for f in fetch_offsets(cluster)] == [0, 10]
    assert errors == []
    consumer.close()


def test_a_corrupt_batch_stops_its_partition_alone_after_the_good_ones_and_is_reported_once(loop, cluster):
    with_logs(cluster, {0: [batch(0, 3), corrupt(batch(3, 3)), batch(6, 2)], 1: [batch(0, 2)]})
    delivered: list[tuple[int, int]] = []
    consumer, errors = consumer_for(loop, cluster, on_message=lambda m: delivered.append((m.partition, m.offset)))
    consumer.assign([(TOPIC, 0, 0), (TOPIC, 1, 0)])
    consumer.start()
    run_until(loop, lambda: errors and len(delivered) >= 5)
    # Let every Fetch already sent past the corrupt set be answered and dropped.
    run_until(loop, lambda: cluster.held_fetches == 1)
    # The batch before the corrupt one is delivered, as the Java consumer does; nothing after.
    assert sorted(delivered) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    [err] = errors
    assert isinstance(err, KafkaError) and err.code == PROTOCOL
    assert "t[0] at offset 3" in str(err) and "CRC" in str(err)
    assert (consumer.position(TOPIC, 0), consumer.position(TOPIC, 1)) == (-1, 2)  # -1: failed
    failed = consumer.ctx.subscription.get(TopicPartition(TOPIC, 0))
    assert (failed.position, failed.fetch_offset) == (3, 3)  # stopped at the corrupt batch
    # A small answer is delivered before the next Fetch: partition 0 had failed by then, so it
    # is not in it, nor fetched again until seek/reassignment.
    assert [f.get(0) for f in fetch_offsets(cluster)] == [0, None]
    consumer.close()


def test_a_set_of_control_records_only_moves_the_position(loop, cluster):
    with_logs(cluster, {0: [batch(0, 2), control_batch(2), batch(3, 1)]})
    batches: list[list[int]] = []
    consumer, errors = consumer_for(loop, cluster, on_batch=lambda ms: batches.append([m.offset for m in ms]))
    consumer.assign([(TOPIC, 0, 2)])  # the marker, then one record
    consumer.start()
    run_until(loop, lambda: batches)
    assert batches == [[3]] and consumer.position(TOPIC, 0) == 4
    consumer.close()
    cluster.log(TOPIC, 0).replace([control_batch(0)])
    consumer, errors = consumer_for(loop, cluster, on_batch=lambda ms: batches.append([m.offset for m in ms]))
    consumer.assign([(TOPIC, 0, 0)])
    consumer.start()
    run_until(loop, lambda: consumer.position(TOPIC, 0) == 1)
    assert batches == [[3]] and errors == []  # nothing delivered, the position stepped over the marker
    consumer.close()


def test_fetches_carry_the_last_fetched_epoch_and_a_diverging_log_is_rewound(loop, cluster):
    """KIP-320: each Fetch names the leader epoch of the last batch fetched; a leader whose
    log was truncated below that answers diverging_epoch, and the consumer resumes at its end."""
    with_logs(cluster, {0: [batch(0, 3, leader_epoch=1), batch(3, 3, leader_epoch=2)]})
    delivered: list[tuple[int, bytes]] = []
    consumer, errors = consumer_for(loop, cluster, on_message=lambda m: delivered.append((m.offset, m.value)))
    consumer.assign([(TOPIC, 0, 0)])
    consumer.start()
    run_until(loop, lambda: len(delivered) == 6 and cluster.held_fetches == 1)
    assert [f[0] for f in fetch_offsets(cluster)] == [0, 6]
    assert [e[0] for e in last_fetched_epochs(cluster)] == [-1, 2]
    # An unclean leader change: epoch 2 never happened on the new leader, whose epoch 1 ends at 3.
    log = cluster.log(TOPIC, 0)
    log.diverge_on_next_fetch(epoch=1, end_offset=3)
    log.replace([batch(0, 3, leader_epoch=1), batch(3, 1, tag=b"new", leader_epoch=3)])  # answers the held Fetch
    run_until(loop, lambda: len(delivered) == 7)
    assert delivered[-1] == (3, b"new3")
    [err] = errors
    assert err.code == OFFSET_OUT_OF_RANGE and "truncated below position 6" in str(err)
    run_until(loop, lambda: cluster.held_fetches == 1)
    epochs = last_fetched_epochs(cluster)
    assert [f[0] for f in fetch_offsets(cluster)][-2:] == [3, 4] and epochs[-2][0] == 1
    assert epochs[-1][0] == 3
    consumer.close()


def test_a_refused_reset_is_retried_after_a_growing_backoff_with_its_partitions_together(loop, cluster):
    """ListOffsets refused twice: both partitions wait out one backoff and go again in one
    request (the resolver's own timer brings them back: nothing else kicks while no partition
    can fetch), each wait at least the floor; then they fetch from the answer."""
    with_logs(cluster, {0: [batch(0, 2)], 1: [batch(0, 3)]})
    cluster.script(ApiKey.LIST_OFFSETS, ErrorAnswer(REQUEST_TIMED_OUT), times=2)
    delivered: list[tuple[int, int]] = []
    consumer, errors = consumer_for(loop, cluster, on_message=lambda m: delivered.append((m.partition, m.offset)),
                                    retry_backoff_ms=20, retry_backoff_max_ms=40)
    consumer.assign([(TOPIC, 0), (TOPIC, 1)])
    consumer.start()
    run_until(loop, lambda: len(delivered) == 5)
    assert sorted(delivered) == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]
    asked = cluster.requests_of(ApiKey.LIST_OFFSETS)
    assert [sorted(p.partition_index for t in r.body.topics for p in t.partitions) for r in asked] == [[0, 1]] * 3
    assert [p.timestamp for r in asked for t in r.body.topics for p in t.partitions] == [-2] * 6  # earliest
    # Times the node received them: each retry comes at least a backoff after the refusal, which
    # the node sent after receiving the request (a lower bound).
    times = [r.received_at for r in asked]
    floor_s = consumer.config.retry_backoff.floor_ms / 1000
    assert all(b - a >= floor_s - 0.002 for a, b in zip(times, times[1:], strict=False))
    assert [e.code for e in errors] == [REQUEST_TIMED_OUT] * 4  # each partition's failure, reported
    failures = [consumer.ctx.subscription.get(TopicPartition(TOPIC, p)).position_failures for p in (0, 1)]
    assert failures == [0, 0], "a settled position starts its backoff over"
    consumer.close()
