"""Producer policy against a scripted broker: batching, routing, retries, idempotent sequencing.

The scripted broker keeps a log per partition and applies the idempotent-producer rules the
real broker applies (duplicate window, out-of-order refusal, epochs), so faults a real broker
will not produce on demand (a NOT_LEADER answer mid-pipeline, a lost producer id) can be
injected and the outcome checked record by record. Real-broker tests: test_producer_broker.py.
"""

from __future__ import annotations

import asyncio
import pickle
import random
import struct
from types import SimpleNamespace as NS

import pytest
from exactly_once import Calls, assert_no_second_calls, tracking
from test_backoff import Lowest

from kafkaev.cluster.metadata import Metadata
from kafkaev.cluster.pool import ConnectionPool, Role
from kafkaev.config import ClientConfig
from kafkaev.errors import (
    DESTROY,
    DUPLICATE_SEQUENCE_NUMBER,
    INVALID_PRODUCER_EPOCH,
    MSG_TIMED_OUT,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    STATE,
    TRANSPORT,
    UNKNOWN_PRODUCER_ID,
    UNKNOWN_TOPIC_WAIT_TIMEOUT,
    KafkaError,
)
from kafkaev.producer import BufferFullError, Producer, ProducerLifecycle
from kafkaev.producer.idempotence import next_sequence, restamp_batch

HEADER = struct.Struct(">qiiBIhiqqqhii")  # RecordBatch v2 header, 61 bytes


class FakeBuilder:
    """Stands in for codec.RecordBatchBuilder: same append/count/build/finish contract."""

    def __init__(self, compression, capacity):
        self.capacity = capacity
        self.records = []
        self.size = HEADER.size

    @property
    def record_count(self):
        return len(self.records)

    def append(self, ts, key, value, headers):
        for name, item in (("key", key), ("value", value)):
            if item is not None and not isinstance(item, (bytes, str)):
                raise TypeError(f"append: '{name}' must be bytes-like, str or None")
        n = 20 + len(key or b"") + len(value or b"")
        if self.records and self.size + n > self.capacity:
            return -1
        self.size += n
        self.records.append((ts, key, value, headers))
        return len(self.records) - 1

    def build(self, base_offset=0, partition_leader_epoch=-1, producer_id=-1, producer_epoch=-1, base_sequence=-1):
        body = pickle.dumps(self.records)
        head = HEADER.pack(0, 49 + len(body), 0, 2, 0, 0, len(self.records) - 1, 0, 0,
                           producer_id, producer_epoch, base_sequence, len(self.records))
        return head + body

    def finish(self, **stamp):
        data = self.build(**stamp)
        self.records = []
        self.size = HEADER.size
        return data


def parse(data):
    f = HEADER.unpack_from(data)
    return NS(pid=f[9], epoch=f[10], seq=f[11], count=f[12], records=pickle.loads(data[HEADER.size:]))


class FakeBroker:
    """Partition logs with the broker's idempotence checks; `faults` scripts answers."""

    def __init__(self, loop, partitions=4, nodes=(1,)):
        self.loop = loop
        self.nodes = list(nodes)
        self.leaders = {p: self.nodes[p % len(self.nodes)] for p in range(partitions)}
        self.epoch = {p: 0 for p in range(partitions)}
        self.logs = {p: [] for p in range(partitions)}
        self.state = {}  # (pid, partition) -> (epoch, last_seq)
        self.faults = []  # callables (node, partition, batch) -> error code or None; popped when they fire
        self.requests = []
        self.pid = 1000
        self.pid_epoch = 0
        self.init_calls = []
        self.connects = []
        self.down = set()
        self.answer_delay_s = 0.0  # > 0: answers come this much later, so requests overlap
        self.answered = []  # (connection, partitions, sent at, answered at) per acked Produce
        self.lose_answer = set()  # nodes whose next Produce is written, then its connection drops

    def factory(self, config, loop):
        return FakeConn(self)

    def metadata_response(self, topics):
        brokers = [NS(node_id=n, host="127.0.0.1", port=9000 + n, rack=None) for n in self.nodes]
        ts = [NS(name=t, topic_id=None, is_internal=False, error_code=0,
                 partitions=[NS(partition_index=p, leader_id=ld, leader_epoch=self.epoch[p], replica_nodes=[ld],
                                isr_nodes=[ld], error_code=0) for p, ld in self.leaders.items()])
              for t in topics if t == "t"]
        missing = [NS(name=t, topic_id=None, is_internal=False, error_code=3, partitions=[]) for t in topics if t != "t"]
        return NS(error_code=0, brokers=brokers, cluster_id="c", controller_id=1, topics=ts + missing)

    def append(self, node, partition, data):
        b = parse(data)
        for fault in list(self.faults):
            code = fault(node, partition, b)
            if code is not None:
                self.faults.remove(fault)
                return code, -1
        if self.leaders[partition] != node:
            return NOT_LEADER_OR_FOLLOWER, -1
        if b.pid >= 0:
            known = self.state.get((b.pid, partition))
            if known is None:
                if b.seq != 0:
                    return UNKNOWN_PRODUCER_ID, -1
            else:
                epoch, last = known
                if b.epoch < epoch:
                    return INVALID_PRODUCER_EPOCH, -1
                if b.epoch > epoch:
                    if b.seq != 0:
                        return OUT_OF_ORDER_SEQUENCE_NUMBER, -1
                elif any(entry[0] == (b.pid, b.epoch, b.seq) for entry in self.logs[partition]):
                    return DUPLICATE_SEQUENCE_NUMBER, -1
                elif b.seq != next_sequence(last, 1):
                    return OUT_OF_ORDER_SEQUENCE_NUMBER, -1
            self.state[(b.pid, partition)] = (b.epoch, next_sequence(b.seq, b.count - 1))
        base = len(self.logs[partition])
        for r in b.records:
            self.logs[partition].append(((b.pid, b.epoch, b.seq), r))
        return NONE, base

    def values(self, partition):
        return [r[2] for _, r in self.logs[partition]]


class FakeConn:
    def __init__(self, broker):
        self.broker = broker
        self.connected = False
        self.writable = True
        self.node_id = -1
        self.on_error = self.on_disconnect = self.on_writable = None

    def connect(self, host, port, timeout, cb):
        node = port - 9000
        self.broker.connects.append(node)
        loop = self.broker.loop
        if node in self.broker.down:
            loop.call_soon(cb, self, KafkaError(TRANSPORT, "refused"))
            return
        self.connected = True
        loop.call_soon(cb, self, None)

    def disconnect(self):
        self.connected = False

    def metadata(self, topics, cb, *, allow_auto_topic_creation=True):
        self.broker.loop.call_soon(cb, self.broker.metadata_response(topics), None)

    def init_producer_id(self, cb, *, producer_id=-1, producer_epoch=-1):
        b = self.broker
        b.init_calls.append((producer_id, producer_epoch))
        if producer_id >= 0:
            b.pid_epoch = producer_epoch + 1
        b.loop.call_soon(cb, NS(error_code=0, producer_id=b.pid, producer_epoch=b.pid_epoch), None)

    def produce_batch(self, payload, cb, *, acks=-1, timeout_ms=30000):
        b = self.broker
        node = self.node_id
        b.requests.append((node, [(t, p, parse(d)) for t, p, d, *_ in payload]))
        if acks == 0:
            for _t, p, d, *_ in payload:
                b.append(node, p, d)
            b.loop.call_soon(cb, None, None)
            return
        answers = []
        for _t, p, d, *_ in payload:
            code, base = b.append(node, p, d)
            cl = NS(leader_id=b.leaders[p], leader_epoch=b.epoch[p]) if code == NOT_LEADER_OR_FOLLOWER else None
            answers.append(NS(index=p, error_code=code, base_offset=base, log_append_time_ms=-1,
                              error_message=None, current_leader=cl))
        if node in b.lose_answer:
            b.lose_answer.discard(node)
            b.loop.call_soon(cb, None, KafkaError(DESTROY, "connection lost before the answer"))
            return
        resp = NS(responses=[NS(name="t", partition_responses=answers)], node_endpoints=[])
        sent_at = b.loop.time()

        def answer():
            b.answered.append((self, [entry[1] for entry in payload], sent_at, b.loop.time()))
            cb(resp, None)

        b.loop.call_later(b.answer_delay_s, answer) if b.answer_delay_s else b.loop.call_soon(answer)


def make(loop, broker, pool_rng=random, **options):
    options.setdefault("linger_ms", 1)
    options.setdefault("metadata_min_refresh_ms", 0)
    cfg = ClientConfig(brokers="127.0.0.1:9001", **options)
    errors = []

    def report(exc):
        # As Client does without on_error: an exception a callback raised goes to the loop's handler,
        # so the loop guard fails the test instead of the exception waiting in a list nobody reads.
        errors.append(exc)
        if not isinstance(exc, KafkaError):
            loop.call_exception_handler({"message": "producer: exception in a callback", "exception": exc})

    pool = ConnectionPool(cfg, loop, connection_factory=broker.factory, rng=pool_rng)
    md = Metadata(cfg, loop, pool, connection_factory=broker.factory)
    producer = Producer(cfg, loop, md, pool, report, builder_factory=FakeBuilder)
    return NS(cfg=cfg, pool=pool, md=md, producer=producer, errors=errors)


def learn_topic(loop, env):
    env.md.add_topics(["t"])
    env.md.refresh()
    run_until(loop, lambda: env.md.topic("t") is not None)


def run_until(loop, pred, timeout=5.0):
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


def test_a_record_called_back_twice_fails_the_check(loop):
    """What collect() is for: a record whose callback fires twice fails the check made outside the
    callback. The test fires record 0's callback a second time itself, as a producer that completed
    the record twice would (an assert inside the callback would have gone to the producer's error sink)."""
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker)
    with tracking() as tracked:  # checked here instead of failing this test when it ends
        results, cb_for = collect()
    cb = cb_for(0)
    env.producer.produce("t", None, b"x", cb, partition=0)
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


def test_offsets_partitions_and_one_request_per_leader(loop):
    from kafkaev.protocol.codec import murmur2

    broker = FakeBroker(loop, partitions=4, nodes=(1, 2))
    env = make(loop, broker, linger_ms=20)
    results, cb_for = collect()
    for i in range(40):
        env.producer.produce("t", f"k{i}", f"v{i}", cb_for(i))
    run_until(loop, lambda: len(results) == 40)
    results.assert_each_once(range(40))
    for i in range(40):
        meta, err = results[i]
        assert err is None
        assert meta.partition == murmur2(f"k{i}".encode()) % 4
        assert broker.values(meta.partition)[meta.offset] == f"v{i}".encode()
    # everything lingered into one batch per partition, one request per leader
    assert sorted(node for node, _ in broker.requests) == [1, 2]
    assert all(len(batches) == 2 for _, batches in broker.requests)


def test_partitions_spread_over_produce_connections_and_each_stays_on_one_while_in_flight(loop):
    broker = FakeBroker(loop, partitions=6)
    broker.answer_delay_s = 0.005
    env = make(loop, broker, produce_connections=3, linger_ms=0, idempotent=True)
    results, cb_for = collect()

    async def produce_over_time():
        for i in range(600):
            env.producer.produce("t", None, b"%d" % i, cb_for(i), partition=i % 6)
            if i % 20 == 19:
                await asyncio.sleep(0.001)

    loop.run_until_complete(produce_over_time())
    run_until(loop, lambda: len(results) == 600)
    results.assert_each_once(range(600))
    assert not [r for r in results.values() if r[1] is not None]
    for p in range(6):
        assert broker.values(p) == [b"%d" % i for i in range(p, 600, 6)]  # in order, once each
    assert len({conn for conn, *_ in broker.answered}) == 3
    # Requests of one partition that were in flight together went on the same connection.
    for p in range(6):
        mine = sorted((sent, done, conn) for conn, parts, sent, done in broker.answered if p in parts)
        for (_sent_a, done_a, conn_a), (sent_b, _done_b, conn_b) in zip(mine, mine[1:], strict=False):
            if sent_b < done_a:
                assert conn_a is conn_b, f"partition {p}: overlapping requests on two connections"
    assert broker.init_calls == [(-1, -1)]


def test_a_partition_keeps_its_produce_connection_between_bursts(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, produce_connections=3, linger_ms=0)
    results, cb_for = collect()

    async def bursts():
        for i in range(40):
            env.producer.produce("t", None, b"%d" % i, cb_for(i), partition=0)
            await asyncio.sleep(0.002)  # answered before the next: nothing in flight in between

    loop.run_until_complete(bursts())
    run_until(loop, lambda: len(results) == 40)
    results.assert_each_once(range(40))
    assert len({conn for conn, *_ in broker.answered}) == 1  # the other lanes are never opened
    assert broker.values(0) == [b"%d" % i for i in range(40)]


def test_produce_connections_is_checked():
    with pytest.raises(ValueError, match="'produce_connections' must be"):
        ClientConfig(brokers="127.0.0.1:9001", produce_connections=0)
    with pytest.raises(ValueError, match="'produce_connections' must be"):
        ClientConfig(brokers="127.0.0.1:9001", produce_connections=99)


def test_idempotent_retry_keeps_order_and_sequences(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, idempotent=True, batch_size=200, linger_ms=0)
    fired = []
    # the second batch sent is refused once: the later in-flight ones then see a gap
    broker.faults.append(lambda node, p, b: NOT_LEADER_OR_FOLLOWER if b.seq > 0 else None)
    results, cb_for = collect()
    for i in range(60):
        env.producer.produce("t", None, b"%03d" % i, cb_for(i), partition=0)
    run_until(loop, lambda: len(results) == 60)
    results.assert_each_once(range(60))
    assert all(err is None for _, err in results.values()), results
    assert broker.values(0) == [b"%03d" % i for i in range(60)]
    assert [m.offset for m, _ in (results[i] for i in range(60))] == list(range(60))
    seqs = {}
    for _node, batches in broker.requests:
        for _t, _p, b in batches:
            seqs.setdefault(b.records[0][2], set()).add(b.seq)
    assert all(len(s) == 1 for s in seqs.values()), "a retried batch must keep its sequence"
    assert not env.errors and not fired


def test_duplicate_sequence_is_success(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, idempotent=True)
    broker.faults.append(lambda node, p, b: DUPLICATE_SEQUENCE_NUMBER)
    results, cb_for = collect()
    env.producer.produce("t", None, b"x", cb_for(0), partition=0)
    run_until(loop, lambda: results)
    results.assert_each_once([0])
    assert results[0][1] is None


def test_unknown_producer_id_bumps_epoch_and_resequences(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, idempotent=True, linger_ms=0)
    results, cb_for = collect()
    env.producer.produce("t", None, b"a", cb_for(0), partition=0)
    run_until(loop, lambda: len(results) == 1)
    broker.state.clear()  # the broker forgets the producer (retention removed its records)
    env.producer.produce("t", None, b"b", cb_for(1), partition=0)
    run_until(loop, lambda: len(results) == 2)
    results.assert_each_once(range(2))
    assert results[1][1] is None
    assert broker.init_calls == [(-1, -1), (1000, 0)]  # KIP-360: same id, next epoch
    last = broker.requests[-1][1][0][2]
    assert (last.epoch, last.seq) == (1, 0)
    assert broker.values(0) == [b"a", b"b"]


def test_epoch_bump_resends_a_batch_of_unknown_outcome_under_its_old_sequence(loop):
    # Partition 0 (node 1) has its producer state lost and needs a new epoch while partition 1
    # (node 2) has a batch the broker wrote but whose answer was lost. Re-stamped under the new
    # epoch it would be written twice; under its old sequence the broker drops it as a duplicate.
    broker = FakeBroker(loop, partitions=2, nodes=(1, 2))
    env = make(loop, broker, idempotent=True, linger_ms=1, retry_backoff_ms=1)
    results, cb_for = collect()
    for i in range(2):  # both connections up, so the next two batches go out together
        env.producer.produce("t", None, b"warm-%d" % i, cb_for(i), partition=i)
    run_until(loop, lambda: len(results) == 2)
    broker.faults.append(lambda node, p, b: UNKNOWN_PRODUCER_ID if p == 0 else None)
    broker.lose_answer.add(2)
    for i in range(2, 6):
        env.producer.produce("t", None, b"first-%d" % i, cb_for(i), partition=i % 2)
    run_until(loop, lambda: len(results) == 6)
    for i in range(6, 12):  # under the new epoch, after the resent batch
        env.producer.produce("t", None, b"then-%d" % i, cb_for(i), partition=i % 2)
    run_until(loop, lambda: len(results) == 12)
    results.assert_each_once(range(12))
    assert all(err is None for _, err in results.values()), results
    assert broker.init_calls == [(-1, -1), (1000, 0)]
    assert broker.values(1) == [b"warm-1", b"first-3", b"first-5", b"then-7", b"then-9", b"then-11"]
    assert broker.values(0) == [b"warm-0", b"first-2", b"first-4", b"then-6", b"then-8", b"then-10"]
    stamps_1 = [(b.epoch, b.seq) for _node, batches in broker.requests for _t, p, b in batches if p == 1]
    assert stamps_1 == [(0, 0), (0, 1), (0, 1), (1, 0)]  # sent, resent as it was, then the new epoch


def test_sequence_wraps():
    assert next_sequence(2**31 - 1, 1) == 0
    assert next_sequence(2**31 - 3, 5) == 2
    data = FakeBuilder(0, 1000)
    data.append(0, None, b"x", None)
    raw = data.build(producer_id=5, producer_epoch=1, base_sequence=7)
    again = parse(restamp_batch(raw, 6, 2, 0))
    assert (again.pid, again.epoch, again.seq, again.count) == (6, 2, 0, 1)


def test_unreachable_leader_fails_within_delivery_timeout(loop):
    broker = FakeBroker(loop, partitions=2, nodes=(1, 2))
    env = make(loop, broker, delivery_timeout_ms=300, reconnect_backoff_ms=10, reconnect_backoff_max_ms=50)
    got = []
    env.md.refresh(lambda md, err: got.append(err))
    run_until(loop, lambda: got)
    broker.down.add(2)
    results, cb_for = collect()
    start = loop.time()
    for i in range(10):
        env.producer.produce("t", None, b"v", cb_for(i), partition=i % 2)
    run_until(loop, lambda: len(results) == 10)
    results.assert_each_once(range(10))
    elapsed = loop.time() - start
    failed = [err for _m, err in results.values() if err is not None]
    assert len(failed) == 5 and all(e.code == MSG_TIMED_OUT for e in failed)
    assert elapsed < 0.3 + 0.25
    assert env.producer.pending == 0 and env.producer._acc.budget.reserved == 0


def test_a_refused_leader_is_asked_again_when_the_pools_backoff_ends(loop):
    """The pool is the one place a connect backs off: after a refused connect the sender asks
    again as soon as the pool's backoff (here drawn at its floor) is over, not after a
    reconnect_backoff_ms wait of its own on top."""
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, pool_rng=Lowest(), reconnect_backoff_ms=200, reconnect_backoff_max_ms=200)
    learn_topic(loop, env)
    attempts: list[float] = []
    pool_connect = env.pool._connect

    def connect(slot):
        if slot.role is Role.PRODUCE:
            attempts.append(loop.time())
        pool_connect(slot)

    env.pool._connect = connect
    broker.down.add(1)
    results, cb_for = collect()
    env.producer.produce("t", None, b"v", cb_for(0), partition=0)
    run_until(loop, lambda: len(attempts) >= 4)
    broker.down.clear()
    run_until(loop, lambda: results)
    assert results[0][1] is None
    floor_s = env.cfg.reconnect_backoff.floor_ms / 1000
    gaps = [b - a for a, b in zip(attempts, attempts[1:4], strict=False)]
    assert all(floor_s - 0.002 <= gap < floor_s + 0.06 for gap in gaps), f"connects {gaps} s apart, floor {floor_s}"


def test_buffer_full_raises_and_memory_is_bounded(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, buffer_memory=4096, batch_size=1024, linger_ms=1000)
    learn_topic(loop, env)
    with pytest.raises(BufferFullError) as info:
        for _ in range(1000):
            env.producer.produce("t", None, b"x" * 100, partition=0)
    assert info.value.code == -184 and env.producer._acc.budget.reserved <= 4096


def test_records_admitted_while_their_topic_was_unknown_are_not_failed_for_memory(loop):
    # Waiting records count their own bytes; once the topic is known each opens batches that
    # reserve a full batch_size. Admitted records must still all be delivered.
    broker = FakeBroker(loop, partitions=4)
    env = make(loop, broker, buffer_memory=8192, batch_size=4096, linger_ms=1)
    results, cb_for = collect()
    admitted = 0
    with pytest.raises(BufferFullError):
        for i in range(1000):
            env.producer.produce("t", None, b"x" * 100, cb_for(i), partition=i % 4)
            admitted += 1
    assert admitted > 8192 // 4096  # more records than fit in that many full-size batches
    run_until(loop, lambda: len(results) == admitted)
    results.assert_each_once(range(admitted))
    assert all(err is None for _meta, err in results.values())
    assert env.producer._acc.budget.reserved == 0 and env.producer._acc.budget.held == 0


def test_unknown_topic_times_out_clearly(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, metadata_wait_ms=200)
    results, cb_for = collect()
    env.producer.produce("missing", b"k", b"v", cb_for(0))
    run_until(loop, lambda: results)
    results.assert_each_once([0])
    meta, err = results[0]
    assert meta is None and err.code == UNKNOWN_TOPIC_WAIT_TIMEOUT and "'missing'" in str(err)


def test_acks_zero_completes_at_write_with_offset_minus_one(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, acks=0)
    results, cb_for = collect()
    for i in range(5):
        env.producer.produce("t", None, b"v", cb_for(i), partition=0)
    run_until(loop, lambda: len(results) == 5)
    results.assert_each_once(range(5))
    assert {(m.offset, err) for m, err in results.values()} == {(-1, None)}


def test_abandon_fails_unsent_with_destroy(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, linger_ms=10000)
    learn_topic(loop, env)
    results, cb_for = collect()
    env.producer.produce("t", None, b"v", cb_for(0), partition=0)
    env.producer.produce("other", None, b"v", cb_for(1))
    env.producer.abandon()
    results.assert_each_once([0, 1])
    assert {i: err.code for i, (_m, err) in results.items()} == {0: DESTROY, 1: DESTROY}


def test_a_closed_producer_refuses_records_and_reports_each_unsent_one_once(loop):
    broker = FakeBroker(loop, partitions=1)
    env = make(loop, broker, linger_ms=10000)
    learn_topic(loop, env)
    results, cb_for = collect()
    refused_in_callback = []

    def produce_again(meta, err):  # a callback producing while the producer closes
        cb_for(0)(meta, err)
        try:
            env.producer.produce("t", None, b"again", cb_for(9), partition=0)
        except KafkaError as exc:
            refused_in_callback.append(exc.code)

    env.producer.produce("t", None, b"v", produce_again, partition=0)
    env.producer.produce("other", None, b"v", cb_for(1))  # waits for its topic
    env.producer.abandon()
    env.producer.abandon()  # a second close changes nothing
    assert env.producer.lifecycle is ProducerLifecycle.CLOSED and env.producer.closed
    for topic, index in (("t", 2), ("other", 3)):
        with pytest.raises(KafkaError) as info:
            env.producer.produce(topic, None, b"late", cb_for(index))
        assert info.value.code == STATE
    results.assert_each_once([0, 1])
    assert refused_in_callback == [STATE]
    budget = env.producer._acc.budget
    assert (budget.reserved, budget.held, env.producer.pending) == (0, 0, 0)


def test_flush_and_produce_many(loop):
    broker = FakeBroker(loop, partitions=3)
    env = make(loop, broker, linger_ms=10000)
    done = []
    env.producer.produce_many([("t", b"a", b"1"), {"topic": "t", "value": b"2", "partition": 1}], done.append)
    flushed = []
    env.producer.flush(flushed.append)
    run_until(loop, lambda: flushed and done)
    assert done == [None] and flushed == [None]
    assert sum(len(v) for v in broker.logs.values()) == 2


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
def test_bad_input_raises_at_once(loop, kwargs, exc, name):
    broker = FakeBroker(loop, partitions=2)
    env = make(loop, broker)
    learn_topic(loop, env)
    args = {"key": b"k", "value": b"v"}
    args.update(kwargs)
    key, value = args.pop("key"), args.pop("value")
    with pytest.raises(exc, match=name):
        env.producer.produce("t", key, value, **args)
    assert env.producer._acc.incomplete == 0 or "partition" not in kwargs
