"""Producer policy against a FakeCluster (tests/fake_broker.py): batching, routing, retries,
idempotent sequencing, through real Connections and real record batches on loopback sockets.

The fake cluster keeps a log per partition and applies the idempotent-producer rules the real
broker applies (duplicate window, out-of-order refusal, epochs), so faults a real broker will
not produce on demand (a NOT_LEADER answer mid-pipeline, a lost producer id, an answer lost
with its connection) can be injected and the outcome checked record by record, on the requests
that went over the wire. Real-broker tests: test_producer_broker.py.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import pytest
from exactly_once import Calls, assert_no_second_calls, tracking
from fake_broker import Delay, FakeCluster, HangUp, ProducedBatch, ReceivedRequest, produced_batches
from test_backoff import Lowest

from kafkaev.backoff import RetryTimer
from kafkaev.cluster.metadata import Metadata
from kafkaev.cluster.pool import ConnectionPool, Role
from kafkaev.config import ClientConfig
from kafkaev.errors import (
    DESTROY,
    DUPLICATE_SEQUENCE_NUMBER,
    MESSAGE_TOO_LARGE,
    MSG_TIMED_OUT,
    NOT_LEADER_OR_FOLLOWER,
    QUEUE_FULL,
    STATE,
    UNKNOWN_PRODUCER_ID,
    UNKNOWN_TOPIC_WAIT_TIMEOUT,
    KafkaError,
)
from kafkaev.producer import HELD_RECORD_FOOTPRINT, BufferFullError, Producer, ProducerLifecycle
from kafkaev.producer.accumulator import BATCH_FIRST_STEP
from kafkaev.producer.held import ALL_LANES
from kafkaev.producer.idempotence import next_sequence
from kafkaev.protocol.codec import (
    RECORD_OVERHEAD_MAX,
    ApiKey,
    EncodedBatch,
    RecordBatchBuilder,
    decode_record_batches,
)

TOPIC = "t"


@dataclass
class Env:
    cfg: ClientConfig
    pool: ConnectionPool
    md: Metadata
    producer: Producer
    errors: list[BaseException]


def make(loop, cluster: FakeCluster, pool_rng=random, **options) -> Env:
    options.setdefault("linger_ms", 1)
    options.setdefault("metadata_min_refresh_ms", 0)
    cfg = ClientConfig(brokers=cluster.bootstrap, **options)
    errors: list[BaseException] = []

    def report(exc):
        # As Client does without on_error: an exception a callback raised goes to the loop's handler,
        # so the loop guard fails the test instead of the exception waiting in a list nobody reads.
        errors.append(exc)
        if not isinstance(exc, KafkaError):
            loop.call_exception_handler({"message": "producer: exception in a callback", "exception": exc})

    pool = ConnectionPool(cfg, loop, rng=pool_rng)
    md = Metadata(cfg, loop, pool)
    producer = Producer(cfg, loop, md, pool, report)
    return Env(cfg, pool, md, producer, errors)


def cluster_with_topic(fake_cluster, partitions: int, nodes: tuple[int, ...] = (1,)) -> FakeCluster:
    """TOPIC with its partitions led by ``nodes`` in turn."""
    cluster = fake_cluster(*nodes)
    cluster.create_topic(TOPIC, partitions)
    return cluster


def values(cluster: FakeCluster, partition: int) -> list[bytes | None]:
    return cluster.log(TOPIC, partition).values()


@dataclass
class ProduceSeen:
    """One Produce request as its node received and answered it."""

    request: ReceivedRequest
    batches: list[ProducedBatch]

    @property
    def partitions(self) -> list[int]:
        return [b.partition for b in self.batches]


def produces(cluster: FakeCluster) -> list[ProduceSeen]:
    return [ProduceSeen(r, produced_batches(r, cluster)) for r in cluster.requests_of(ApiKey.PRODUCE)]


def init_producer_id_calls(cluster: FakeCluster) -> list[tuple[int, int]]:
    """(producer id, producer epoch) each InitProducerId asked with."""
    return [(r.body.producer_id, r.body.producer_epoch) for r in cluster.requests_of(ApiKey.INIT_PRODUCER_ID)]


def learn_topic(loop, env):
    env.md.add_topics([TOPIC])
    env.md.refresh()
    run_until(loop, lambda: env.md.topic(TOPIC) is not None)


def run_until(loop, pred, timeout=10.0):
    async def wait():
        while not pred():
            await asyncio.sleep(0.002)
    loop.run_until_complete(asyncio.wait_for(wait(), timeout))


@pytest.fixture
def loop(new_loop):
    return new_loop("asyncio")  # guarded (conftest.py); these tests do not depend on the loop kind


def collect():
    """Delivery callbacks by record index: ``results[i]`` is (meta, err) of record i's first call.
    They only record (the producer would catch an assert raised inside one); a test checks its
    records with ``results.assert_each_once(...)``, and a second call fails the test when it ends."""
    results = Calls("delivery callback")
    return results, results.cb


def test_a_record_called_back_twice_fails_the_check(loop, fake_cluster):
    """What collect() is for: a record whose callback fires twice fails the check made outside the
    callback. The test fires record 0's callback a second time itself, as a producer that completed
    the record twice would (an assert inside the callback would have gone to the producer's error sink)."""
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster)
    with tracking() as tracked:  # checked here instead of failing this test when it ends
        results, cb_for = collect()
    cb = cb_for(0)
    env.producer.produce(TOPIC, None, b"x", cb, partition=0)
    run_until(loop, lambda: results)
    results.assert_each_once([0])
    meta, err = results[0]
    assert err is None and meta.offset == 0
    cb(None, KafkaError(DESTROY, "again"))
    with pytest.raises(AssertionError, match=r"delivery callback called more than once for 0:"):
        results.assert_each_once([0])
    with pytest.raises(AssertionError, match=r"more than once for 0"):
        assert_no_second_calls(tracked)
    assert results[0] == (meta, None) and not env.errors


def test_offsets_partitions_and_one_request_per_leader(loop, fake_cluster):
    from kafkaev.protocol.codec import murmur2

    cluster = cluster_with_topic(fake_cluster, 4, nodes=(1, 2))
    env = make(loop, cluster, linger_ms=20, produce_connections=1)  # one connection per leader carries all
    results, cb_for = collect()
    for i in range(40):
        env.producer.produce(TOPIC, f"k{i}", f"v{i}", cb_for(i))
    run_until(loop, lambda: len(results) == 40)
    results.assert_each_once(range(40))
    for i in range(40):
        meta, err = results[i]
        assert err is None
        assert meta.partition == murmur2(f"k{i}".encode()) % 4
        assert values(cluster, meta.partition)[meta.offset] == f"v{i}".encode()
    # everything lingered into one batch per partition, one request per leader
    assert sorted(seen.request.node_id for seen in produces(cluster)) == [1, 2]
    assert all(len(seen.batches) == 2 for seen in produces(cluster))


@pytest.mark.parametrize("linger_ms", [0, 1])
def test_at_linger_zero_a_first_step_of_records_goes_before_the_turn_ends(loop, fake_cluster, linger_ms):
    # One turn produces 1,000 records, as 1,000 tasks woken by one answer do. At linger_ms=0 a
    # first step of them is sent at once, while the rest are still coming; with any linger
    # they all wait for it and go as one batch.
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, linger_ms=linger_ms, batch_size=1 << 20)
    results, cb_for = collect()
    env.producer.produce(TOPIC, None, b"first", cb_for(0), partition=0)
    run_until(loop, lambda: results)  # connected: nothing else waits
    count = 1000
    value = b"v" * 100
    for i in range(1, count + 1):
        env.producer.produce(TOPIC, None, value, cb_for(i), partition=0)
    run_until(loop, lambda: len(results) == count + 1)
    results.assert_each_once(range(count + 1))
    assert [results[i][0].offset for i in range(count + 1)] == list(range(count + 1))
    assert values(cluster, 0) == [b"first", *[value] * count]
    burst = [len(batch.values) for seen in produces(cluster)[1:] for batch in seen.batches]
    assert sum(burst) == count
    if linger_ms == 0:
        assert len(burst) > 1 and burst[0] * (len(value) + 10) <= BATCH_FIRST_STEP, burst
    else:
        assert burst == [count]


def test_partitions_spread_over_produce_connections_and_each_stays_on_one_while_in_flight(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 6)
    cluster.script(ApiKey.PRODUCE, Delay(0.005))  # answers come later, so requests overlap
    env = make(loop, cluster, produce_connections=3, linger_ms=0, idempotent=True)
    results, cb_for = collect()

    async def produce_over_time():
        for i in range(600):
            env.producer.produce(TOPIC, None, b"%d" % i, cb_for(i), partition=i % 6)
            if i % 20 == 19:
                await asyncio.sleep(0.001)

    loop.run_until_complete(produce_over_time())
    run_until(loop, lambda: len(results) == 600)
    results.assert_each_once(range(600))
    assert not [r for r in results.values() if r[1] is not None]
    for p in range(6):
        assert values(cluster, p) == [b"%d" % i for i in range(p, 600, 6)]  # in order, once each
    seen = produces(cluster)
    assert len({s.request.connection for s in seen}) == 3
    # Requests of one partition that were in flight together went on the same connection: the
    # node answers one socket's requests one at a time, so one that arrived before the previous
    # one of its partition was answered can only have come on another socket.
    for p in range(6):
        mine = sorted((s.request.received_at, s.request.answered_at, s.request.connection)
                      for s in seen if p in s.partitions)
        for (_sent_a, done_a, conn_a), (sent_b, _done_b, conn_b) in zip(mine, mine[1:], strict=False):
            if sent_b < done_a:
                assert conn_a == conn_b, f"partition {p}: overlapping requests on two connections"
    assert init_producer_id_calls(cluster) == [(-1, -1)]


def test_a_partition_keeps_its_produce_connection_between_bursts(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, produce_connections=3, linger_ms=0)
    results, cb_for = collect()

    async def bursts():
        for i in range(40):
            env.producer.produce(TOPIC, None, b"%d" % i, cb_for(i), partition=0)
            await asyncio.sleep(0.002)  # answered before the next: nothing in flight in between

    loop.run_until_complete(bursts())
    run_until(loop, lambda: len(results) == 40)
    results.assert_each_once(range(40))
    assert len({s.request.connection for s in produces(cluster)}) == 1
    # the other lanes are never opened: the node saw the bootstrap socket and that one
    assert len(cluster.connections) == 2
    assert values(cluster, 0) == [b"%d" % i for i in range(40)]


def test_the_leaders_count_of_small_requests_leaves_out_a_request_of_a_large_batch(loop, fake_cluster):
    # What a small lingered batch waits for (Accumulator.coalesces): requests out to its leader
    # that carry only batches within their first step, whatever lane they went on
    cluster = cluster_with_topic(fake_cluster, 2)
    cluster.script(ApiKey.PRODUCE, Delay(0.2))  # both requests stay out while they are counted
    env = make(loop, cluster, produce_connections=3, linger_ms=1)
    learn_topic(loop, env)
    results, cb_for = collect()
    env.producer.produce(TOPIC, None, b"L" * (BATCH_FIRST_STEP + 1), cb_for(0), partition=0)
    env.producer.produce(TOPIC, None, b"s", cb_for(1), partition=1)
    sender = env.producer._sender
    run_until(loop, lambda: len(cluster.requests_of(ApiKey.PRODUCE)) == 2)
    assert len({r.connection for r in cluster.requests_of(ApiKey.PRODUCE)}) == 2  # a lane each
    assert (sender.requests_out((1, 0)), sender.requests_out((1, 1))) == (1, 1)
    assert sender.requests_out((1, ALL_LANES)) == 1  # the small batch's request only
    run_until(loop, lambda: len(results) == 2)
    results.assert_each_once(range(2))
    assert sender.requests_out((1, ALL_LANES)) == 0


@pytest.mark.parametrize("partitions", [1, 3, 5])
def test_at_the_defaults_a_lane_opens_per_partition_up_to_three(loop, fake_cluster, partitions):
    cluster = cluster_with_topic(fake_cluster, partitions)
    env = make(loop, cluster, linger_ms=0)  # produce_connections at its default
    results, cb_for = collect()
    for i in range(10 * partitions):
        env.producer.produce(TOPIC, None, b"%d" % i, cb_for(i), partition=i % partitions)
    run_until(loop, lambda: len(results) == 10 * partitions)
    results.assert_each_once(range(10 * partitions))
    assert len({s.request.connection for s in produces(cluster)}) == min(partitions, 3)
    for p in range(partitions):
        assert values(cluster, p) == [b"%d" % i for i in range(p, 10 * partitions, partitions)]


def test_produce_connections_is_checked():
    with pytest.raises(ValueError, match="'produce_connections' must be"):
        ClientConfig(brokers="127.0.0.1:9001", produce_connections=0)
    with pytest.raises(ValueError, match="'produce_connections' must be"):
        ClientConfig(brokers="127.0.0.1:9001", produce_connections=99)


def test_idempotent_retry_keeps_order_and_sequences(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, idempotent=True, batch_size=200, linger_ms=0)
    fired = []
    # the second batch sent is refused once: the later in-flight ones then see a gap
    cluster.fail_next_append(NOT_LEADER_OR_FOLLOWER, lambda node, b: b.base_sequence > 0)
    results, cb_for = collect()
    for i in range(60):
        env.producer.produce(TOPIC, None, b"%03d" % i, cb_for(i), partition=0)
    run_until(loop, lambda: len(results) == 60)
    results.assert_each_once(range(60))
    assert all(err is None for _, err in results.values()), results
    assert values(cluster, 0) == [b"%03d" % i for i in range(60)]
    assert [m.offset for m, _ in (results[i] for i in range(60))] == list(range(60))
    seqs: dict[bytes | None, set[int]] = {}
    for seen in produces(cluster):
        for b in seen.batches:
            seqs.setdefault(b.values[0], set()).add(b.base_sequence)
    assert len(produces(cluster)) > len(seqs), "a batch was refused and sent again"
    assert all(len(s) == 1 for s in seqs.values()), "a retried batch must keep its sequence"
    assert not env.errors and not fired


def test_duplicate_sequence_is_success(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, idempotent=True)
    cluster.fail_next_append(DUPLICATE_SEQUENCE_NUMBER)
    results, cb_for = collect()
    env.producer.produce(TOPIC, None, b"x", cb_for(0), partition=0)
    run_until(loop, lambda: results)
    results.assert_each_once([0])
    assert results[0][1] is None


def test_unknown_producer_id_bumps_epoch_and_resequences(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, idempotent=True, linger_ms=0)
    results, cb_for = collect()
    env.producer.produce(TOPIC, None, b"a", cb_for(0), partition=0)
    run_until(loop, lambda: len(results) == 1)
    cluster.forget_producers()  # retention removed its records
    env.producer.produce(TOPIC, None, b"b", cb_for(1), partition=0)
    run_until(loop, lambda: len(results) == 2)
    results.assert_each_once(range(2))
    assert results[1][1] is None
    assert init_producer_id_calls(cluster) == [(-1, -1), (1000, 0)]  # KIP-360: same id, next epoch
    last = produces(cluster)[-1].batches[0]
    assert (last.producer_epoch, last.base_sequence) == (1, 0)
    assert values(cluster, 0) == [b"a", b"b"]


def test_epoch_bump_resends_a_batch_of_unknown_outcome_under_its_old_sequence(loop, fake_cluster):
    # Partition 0 (node 1) has its producer state lost and needs a new epoch while partition 1
    # (node 2) has a batch the broker wrote but whose answer was lost. Re-stamped under the new
    # epoch it would be written twice; under its old sequence the broker drops it as a duplicate.
    cluster = cluster_with_topic(fake_cluster, 2, nodes=(1, 2))
    env = make(loop, cluster, idempotent=True, linger_ms=1, retry_backoff_ms=1)
    results, cb_for = collect()
    for i in range(2):  # both connections up, so the next two batches go out together
        env.producer.produce(TOPIC, None, b"warm-%d" % i, cb_for(i), partition=i)
    run_until(loop, lambda: len(results) == 2)
    cluster.fail_next_append(UNKNOWN_PRODUCER_ID, lambda node, b: b.partition == 0)
    # node 2 writes its next Produce, then its connection drops before the answer
    cluster.script(ApiKey.PRODUCE, HangUp(after_applying=True), node=2, times=1)
    for i in range(2, 6):
        env.producer.produce(TOPIC, None, b"first-%d" % i, cb_for(i), partition=i % 2)
    run_until(loop, lambda: len(results) == 6)
    for i in range(6, 12):  # under the new epoch, after the resent batch
        env.producer.produce(TOPIC, None, b"then-%d" % i, cb_for(i), partition=i % 2)
    run_until(loop, lambda: len(results) == 12)
    results.assert_each_once(range(12))
    assert all(err is None for _, err in results.values()), results
    assert init_producer_id_calls(cluster) == [(-1, -1), (1000, 0)]
    assert values(cluster, 1) == [b"warm-1", b"first-3", b"first-5", b"then-7", b"then-9", b"then-11"]
    assert values(cluster, 0) == [b"warm-0", b"first-2", b"first-4", b"then-6", b"then-8", b"then-10"]
    stamps_1 = [(b.producer_epoch, b.base_sequence) for seen in produces(cluster) for b in seen.batches
                if b.partition == 1]
    assert stamps_1 == [(0, 0), (0, 1), (0, 1), (1, 0)]  # sent, resent as it was, then the new epoch


def test_sequence_wraps():
    assert next_sequence(2**31 - 1, 1) == 0
    assert next_sequence(2**31 - 3, 5) == 2
    builder = RecordBatchBuilder(0)
    builder.append(0, None, b"x", None)
    raw = builder.build(producer_id=5, producer_epoch=1, base_sequence=7)
    [again] = decode_record_batches(bytes(EncodedBatch(raw).restamped(6, 2, 0)))  # its CRC checked
    assert (again.producer_id, again.producer_epoch, again.base_sequence, again.records_count) == (6, 2, 0, 1)


def test_unreachable_leader_fails_within_delivery_timeout(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 2, nodes=(1, 2))
    env = make(loop, cluster, delivery_timeout_ms=300, reconnect_backoff_ms=10, reconnect_backoff_max_ms=50)
    got = []
    env.md.refresh(lambda md, err: got.append(err))
    run_until(loop, lambda: got)
    cluster.nodes[2].refuse_connections()
    results, cb_for = collect()
    start = loop.time()
    for i in range(10):
        env.producer.produce(TOPIC, None, b"v", cb_for(i), partition=i % 2)
    run_until(loop, lambda: len(results) == 10)
    results.assert_each_once(range(10))
    elapsed = loop.time() - start
    failed = [err for _m, err in results.values() if err is not None]
    assert len(failed) == 5 and all(e.code == MSG_TIMED_OUT for e in failed)
    assert all(meta.partition == 0 for meta, err in results.values() if err is None)
    # At the delivery timeout, not at some later one (request_timeout_ms is 30 s); the slack is
    # for this shared machine.
    assert elapsed < 0.3 + 1.5
    assert any(a.refused for a in cluster.nodes[2].attempts()), "the leader was dialled"
    assert env.producer.pending == 0 and env.producer._acc.budget.reserved == 0


@pytest.mark.parametrize("lanes", [1, 2])
def test_a_record_timed_out_on_an_unreachable_leader_says_why(loop, fake_cluster, lanes):
    """The topic is known but its leader refuses every connect: the record still ends with
    MSG_TIMED_OUT (it did time out), once, and the message names the leader and the failed
    connect instead of leaving the user to guess."""
    # Node 1 answers metadata; node 2 leads partitions 1 and 3 (one per lane with two lanes).
    cluster = cluster_with_topic(fake_cluster, 4, nodes=(1, 2))
    node = cluster.nodes[2]
    env = make(loop, cluster, delivery_timeout_ms=300, reconnect_backoff_ms=10, reconnect_backoff_max_ms=50,
               produce_connections=lanes)
    got = []
    env.md.refresh(lambda md, err: got.append(err))
    run_until(loop, lambda: got)
    node.refuse_connections()
    results, cb_for = collect()
    for i, partition in enumerate((1, 3)):
        env.producer.produce(TOPIC, None, b"v", cb_for(i), partition=partition)
    run_until(loop, lambda: len(results) == 2)
    results.assert_each_once([0, 1])
    for meta, err in results.values():
        assert meta is None and err is not None and err.code == MSG_TIMED_OUT
        assert f"the leader {node.address} (node 2) could not be reached: TRANSPORT" in str(err), err
    assert env.producer.pending == 0


def test_a_connect_that_succeeds_clears_the_leaders_failure(loop, fake_cluster):
    """A failed connect is the cause only until a connect succeeds: a record that later times out
    for another reason does not blame the connect that has since worked."""
    cluster = cluster_with_topic(fake_cluster, 1)
    node = cluster.nodes[1]
    env = make(loop, cluster, delivery_timeout_ms=5000, reconnect_backoff_ms=10, reconnect_backoff_max_ms=50)
    got = []
    env.md.refresh(lambda md, err: got.append(err))
    run_until(loop, lambda: got)
    node.refuse_connections()
    results, cb_for = collect()
    env.producer.produce(TOPIC, None, b"v", cb_for(0), partition=0)
    run_until(loop, lambda: sum(a.refused for a in node.attempts()) >= 1)
    node.accept_connections()
    run_until(loop, lambda: results)
    results.assert_each_once([0])
    assert results[0][1] is None
    assert env.pool.connect_error(1, Role.PRODUCE) is None


def test_a_refused_leader_is_asked_again_when_the_pools_backoff_ends(loop, fake_cluster):
    """The pool is the one place a connect backs off: after a refused connect the sender asks
    again as soon as the pool's backoff (here drawn at its floor) is over, not after a
    reconnect_backoff_ms wait of its own on top."""
    cluster = cluster_with_topic(fake_cluster, 1)
    node = cluster.nodes[1]
    env = make(loop, cluster, pool_rng=Lowest(), reconnect_backoff_ms=500, reconnect_backoff_max_ms=500)
    learn_topic(loop, env)
    node.refuse_connections()
    results, cb_for = collect()
    env.producer.produce(TOPIC, None, b"v", cb_for(0), partition=0)
    # Only the sender dials while refused: nothing here asks for metadata after a failed connect
    # (the pool reports to no one), so every refused attempt is the PRODUCE connection's.
    run_until(loop, lambda: sum(a.refused for a in node.attempts()) >= 4)
    node.accept_connections()
    run_until(loop, lambda: results)
    assert results[0][1] is None
    attempts = [a.opened_at for a in node.attempts() if a.refused]
    floor_s = env.cfg.reconnect_backoff.floor_ms / 1000
    gaps = [b - a for a, b in zip(attempts, attempts[1:4], strict=False)]
    # A wait of the sender's own on top would add reconnect_backoff_ms (0.5 s) to each gap; the
    # upper bound leaves this shared machine 0.3 s of slack below that.
    assert all(floor_s - 0.002 <= gap < floor_s + 0.3 for gap in gaps), f"connects {gaps} s apart, floor {floor_s}"


class CountingRetryTimer:
    """Wraps the sender's RetryTimer, counting the times it is asked to fire."""

    def __init__(self, timer):
        self.timer = timer
        self.arms = 0

    def arm_at(self, when):
        self.arms += 1
        self.timer.arm_at(when)

    def cancel(self):
        self.timer.cancel()


def test_partitions_backing_off_together_ask_the_retry_timer_once_a_round(loop, fake_cluster):
    """Every partition of a topic just created can be refused at once (its leaders not elected
    yet): the sender's rounds pass them over until their backoff ends, and ask the retry timer
    once a round for the earliest end, not once per partition, which over a thousand partitions
    took a sixth of the producer's time. Each record still arrives once."""
    partitions = 40
    cluster = cluster_with_topic(fake_cluster, partitions)
    env = make(loop, cluster, linger_ms=0, retry_backoff_ms=50, retry_backoff_max_ms=50)
    learn_topic(loop, env)
    sender = env.producer._sender
    rounds = 0
    send_ready = sender.send_ready

    def counted_round():
        nonlocal rounds
        rounds += 1
        send_ready()

    sender.send_ready = counted_round
    timer = sender._retry_timer = CountingRetryTimer(RetryTimer(loop, counted_round))
    for p in range(partitions):
        cluster.fail_next_append(NOT_LEADER_OR_FOLLOWER, lambda node, b, p=p: b.partition == p)
    results, cb_for = collect()
    for p in range(partitions):
        env.producer.produce(TOPIC, None, b"%d" % p, cb_for(p), partition=p)
    run_until(loop, lambda: len(results) == partitions)
    results.assert_each_once(range(partitions))
    assert all(err is None for _, err in results.values()), results
    assert all(values(cluster, p) == [b"%d" % p] for p in range(partitions))
    assert 0 < timer.arms <= rounds, f"{timer.arms} timer asks in {rounds} rounds over {partitions} partitions"


def test_buffer_full_raises_and_memory_is_bounded(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, buffer_memory=4096, batch_size=1024, linger_ms=1000)
    learn_topic(loop, env)
    with pytest.raises(BufferFullError) as info:
        for _ in range(1000):
            env.producer.produce(TOPIC, None, b"x" * 100, partition=0)
    assert info.value.code == -184 and env.producer._acc.budget.reserved <= 4096


def test_records_admitted_while_their_topic_was_unknown_are_not_failed_for_memory(loop, fake_cluster):
    # Waiting records count their own bytes; once the topic is known each opens batches that
    # reserve a full batch_size. Admitted records must still all be delivered.
    cluster = cluster_with_topic(fake_cluster, 4)
    env = make(loop, cluster, buffer_memory=8192, batch_size=4096, linger_ms=1)
    results, cb_for = collect()
    admitted = 0
    with pytest.raises(BufferFullError):
        for i in range(1000):
            env.producer.produce(TOPIC, None, b"x" * 100, cb_for(i), partition=i % 4)
            admitted += 1
    assert admitted > 8192 // 4096  # more records than fit in that many full-size batches
    run_until(loop, lambda: len(results) == admitted)
    results.assert_each_once(range(admitted))
    assert all(err is None for _meta, err in results.values())
    assert env.producer._acc.budget.reserved == 0 and env.producer._acc.budget.held == 0


def test_a_record_held_for_its_topic_counts_what_holding_it_costs_and_leaves_as_it_is_batched(loop, fake_cluster):
    # A held record costs its HeldRecord and queue slot besides its bytes: about as much again
    # at 100 bytes. A burst before the first metadata must fill the budget by that, and each
    # record must be dropped from the queue as it goes into its batch, not after the last one.
    cluster = cluster_with_topic(fake_cluster, 1)
    value = b"x" * 100
    per_record = RECORD_OVERHEAD_MAX + len(value) + HELD_RECORD_FOOTPRINT
    env = make(loop, cluster, buffer_memory=per_record * 10 + per_record // 2, batch_size=1024, linger_ms=1)
    results, cb_for = collect()
    admitted = 0
    with pytest.raises(BufferFullError, match="wait for topic metadata"):
        for i in range(100):
            env.producer.produce(TOPIC, None, value, cb_for(i), partition=0)
            admitted += 1
    assert admitted == 10
    queue = env.producer._waiting[TOPIC].records
    queued_at_readmit: list[int] = []
    readmit = env.producer.readmit

    def readmit_counting(*args: object) -> None:
        queued_at_readmit.append(len(queue))
        readmit(*args)

    env.producer.readmit = readmit_counting
    run_until(loop, lambda: len(results) == admitted)
    results.assert_each_once(range(admitted))
    assert queued_at_readmit == list(range(admitted - 1, -1, -1))
    assert env.producer._acc.budget.held == 0


@pytest.mark.parametrize("keyed", [False, True], ids=["sticky", "keyed"])
def test_buffer_records_refuses_the_record_past_it_until_acks_make_room(loop, fake_cluster, keyed):
    cluster = cluster_with_topic(fake_cluster, 2)
    limit = 50
    env = make(loop, cluster, buffer_records=limit, linger_ms=10000)
    learn_topic(loop, env)
    budget = env.producer._acc.budget
    results, cb_for = collect()
    for i in range(limit):
        env.producer.produce(TOPIC, b"k%d" % i if keyed else None, b"v", cb_for(i))
    with pytest.raises(BufferFullError, match=rf"buffer_records \({limit}\)") as info:
        env.producer.produce(TOPIC, b"late" if keyed else None, b"v", cb_for(limit))
    assert info.value.code == QUEUE_FULL and budget.records == limit
    assert budget.reserved < budget.limit  # the bytes had room: the count refused it
    room: list[int] = []
    env.producer.on_buffer_room(lambda: room.append(budget.records))
    env.producer.flush()
    run_until(loop, lambda: len(results) == limit and room)
    results.assert_each_once(range(limit))
    assert all(err is None for _meta, err in results.values()) and len(room) == 1 and room[0] < limit
    assert budget.records == 0
    env.producer.produce(TOPIC, None, b"v", cb_for(limit))  # room again
    assert budget.records == 1


@pytest.mark.parametrize("topic_known", [True, False], ids=["topic-known", "waiting-for-metadata"])
def test_a_record_larger_than_all_of_buffer_memory_is_too_large_not_a_full_buffer(loop, fake_cluster, topic_known):
    # Waiting for room would wait forever: it is refused at once as too large, naming the option.
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, buffer_memory=16384, batch_size=16384)
    if topic_known:
        learn_topic(loop, env)
    results, cb_for = collect()
    with pytest.raises(KafkaError, match=r"buffer_memory, more than all of it \(16384\)") as info:
        env.producer.produce(TOPIC, None, b"x" * 16384, cb_for(0))
    assert info.value.code == MESSAGE_TOO_LARGE and not isinstance(info.value, BufferFullError)
    env.producer.produce(TOPIC, None, b"x" * 8000, cb_for(1))  # one that fits goes through
    run_until(loop, lambda: len(results) == 1)
    results.assert_each_once([1])


def test_records_held_for_their_topic_count_against_buffer_records_and_are_not_refused_later(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, buffer_records=10, linger_ms=1)
    results, cb_for = collect()
    for i in range(10):
        env.producer.produce(TOPIC, None, b"v", cb_for(i))  # the topic is not known yet: held
    with pytest.raises(BufferFullError, match="10 records in all"):
        env.producer.produce(TOPIC, None, b"v", cb_for(10))
    run_until(loop, lambda: len(results) == 10)  # readmitted at the limit, none refused
    results.assert_each_once(range(10))
    assert all(err is None for _meta, err in results.values())
    assert env.producer._acc.budget.records == 0


def test_unknown_topic_times_out_clearly(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, metadata_wait_ms=200)
    results, cb_for = collect()
    env.producer.produce("missing", b"k", b"v", cb_for(0))
    run_until(loop, lambda: results)
    results.assert_each_once([0])
    meta, err = results[0]
    assert meta is None and err.code == UNKNOWN_TOPIC_WAIT_TIMEOUT and "'missing'" in str(err)


def test_acks_zero_completes_at_write_with_offset_minus_one(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, acks=0)
    results, cb_for = collect()
    for i in range(5):
        env.producer.produce(TOPIC, None, b"v", cb_for(i), partition=0)
    run_until(loop, lambda: len(results) == 5)
    results.assert_each_once(range(5))
    assert {(m.offset, err) for m, err in results.values()} == {(-1, None)}
    run_until(loop, lambda: len(values(cluster, 0)) == 5)  # written, never answered
    assert all(seen.request.answered_at is None for seen in produces(cluster))
    assert {seen.request.body.acks for seen in produces(cluster)} == {0}


def test_abandon_fails_unsent_with_destroy(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, linger_ms=10000)
    learn_topic(loop, env)
    results, cb_for = collect()
    env.producer.produce(TOPIC, None, b"v", cb_for(0), partition=0)
    env.producer.produce("other", None, b"v", cb_for(1))
    env.producer.abandon()
    results.assert_each_once([0, 1])
    assert {i: err.code for i, (_m, err) in results.items()} == {0: DESTROY, 1: DESTROY}


def test_a_closed_producer_refuses_records_and_reports_each_unsent_one_once(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, linger_ms=10000)
    learn_topic(loop, env)
    results, cb_for = collect()
    refused_in_callback = []

    def produce_again(meta, err):  # a callback producing while the producer closes
        cb_for(0)(meta, err)
        try:
            env.producer.produce(TOPIC, None, b"again", cb_for(9), partition=0)
        except KafkaError as exc:
            refused_in_callback.append(exc.code)

    env.producer.produce(TOPIC, None, b"v", produce_again, partition=0)
    env.producer.produce("other", None, b"v", cb_for(1))  # waits for its topic
    env.producer.abandon()
    env.producer.abandon()  # a second close changes nothing
    assert env.producer.lifecycle is ProducerLifecycle.CLOSED and env.producer.closed
    for topic, index in ((TOPIC, 2), ("other", 3)):
        with pytest.raises(KafkaError) as info:
            env.producer.produce(topic, None, b"late", cb_for(index))
        assert info.value.code == STATE
    results.assert_each_once([0, 1])
    assert refused_in_callback == [STATE]
    budget = env.producer._acc.budget
    assert (budget.reserved, budget.held, env.producer.pending) == (0, 0, 0)


def test_flush_and_produce_many(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 3)
    env = make(loop, cluster, linger_ms=10000)
    done = []
    env.producer.produce_many([(TOPIC, b"a", b"1"), {"topic": TOPIC, "value": b"2", "partition": 1}], done.append)
    flushed = []
    env.producer.flush(flushed.append)
    run_until(loop, lambda: flushed and done)
    assert done == [None] and flushed == [None]
    assert sum(len(log.values()) for log in cluster.topics[TOPIC].partitions) == 2


@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        ({"key": 5}, TypeError, "'key'"),
        ({"value": object()}, TypeError, "'value'"),
        ({"headers": [("h", 5)]}, TypeError, "header"),
        ({"headers": "h"}, TypeError, "'headers'"),
        ({"timestamp_ms": -5}, TypeError, "'timestamp_ms'"),
        ({"partition": 7}, ValueError, "'partition'"),
        ({"value": b"x" * 2_000_000}, KafkaError, "max_request_size"),
        ({"cb": 3}, TypeError, "'cb'"),
    ],
)
def test_bad_input_raises_at_once(loop, fake_cluster, kwargs, exc, name):
    cluster = cluster_with_topic(fake_cluster, 2)
    env = make(loop, cluster)
    learn_topic(loop, env)
    args = {"key": b"k", "value": b"v"}
    args.update(kwargs)
    key, value = args.pop("key"), args.pop("value")
    with pytest.raises(exc, match=name):
        env.producer.produce(TOPIC, key, value, **args)
    assert env.producer._acc.incomplete == 0 or "partition" not in kwargs
