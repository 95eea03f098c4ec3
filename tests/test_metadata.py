"""Metadata cache and ConnectionPool against a scripted connection (no broker needed).

The real broker path is covered by the producer integration tests; these pin down the
policy: bootstrap fallback, refresh coalescing, bounded topic waits, KIP-951 updates,
pool backoff and exactly-once callbacks.
"""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace as NS

import pytest
from test_backoff import Highest

from kafkaev.cluster.metadata import BrokerInfo, Metadata, topic_from_response
from kafkaev.cluster.pool import ConnectionPool, Role
from kafkaev.config import ClientConfig
from kafkaev.errors import (
    DESTROY,
    TRANSPORT,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNKNOWN_TOPIC_WAIT_TIMEOUT,
    KafkaError,
)


def part(i, leader, epoch=0):
    return NS(partition_index=i, leader_id=leader, leader_epoch=epoch, replica_nodes=[leader], isr_nodes=[leader],
              error_code=0)


def topic(name, nparts, leader=1, error=0, epoch=0):
    return NS(name=name, topic_id=uuid.uuid4(), is_internal=False, error_code=error,
              partitions=[part(i, leader, epoch) for i in range(nparts)])


class FakeCluster:
    """Answers Metadata like a broker would; addresses in `down` refuse connections."""

    def __init__(self):
        self.down: set[tuple[str, int]] = set()
        self.topics: dict[str, NS] = {}
        self.requests: list[tuple[object, bool]] = []
        self.connects: list[tuple[str, int]] = []
        self.brokers = [NS(node_id=1, host="127.0.0.1", port=9001, rack=None)]

    def factory(self, config, loop):
        return FakeConn(self, loop)


class FakeConn:
    def __init__(self, cluster, loop):
        self.cluster, self.loop = cluster, loop
        self.connected = False
        self.node_id = -1
        self.on_error = self.on_disconnect = None

    def connect(self, host, port, timeout, cb):
        self.cluster.connects.append((host, port))
        if (host, port) in self.cluster.down:
            self.loop.call_soon(cb, self, KafkaError(TRANSPORT, "refused"))
        else:
            self.connected = True
            self.loop.call_soon(cb, self, None)

    def disconnect(self):
        self.connected = False

    def metadata(self, topics, cb, *, allow_auto_topic_creation=True):
        self.cluster.requests.append((topics, allow_auto_topic_creation))
        found = [self.cluster.topics.get(t) or topic(t, 0, error=UNKNOWN_TOPIC_OR_PARTITION) for t in topics]
        resp = NS(error_code=0, brokers=self.cluster.brokers, cluster_id="c", controller_id=1, topics=found)
        self.loop.call_soon(cb, resp, None)


@pytest.fixture
def env(new_loop):
    loop = new_loop("asyncio")
    cluster = FakeCluster()
    cfg = ClientConfig(brokers="127.0.0.1:9000,127.0.0.1:9001", metadata_min_refresh_ms=0, metadata_max_age_ms=0)
    # Jitter drawn at the top of its window: a reconnect waits the whole backoff.
    pool = ConnectionPool(cfg, loop, connection_factory=cluster.factory, rng=Highest())
    md = Metadata(cfg, loop, pool, connection_factory=cluster.factory)
    yield NS(loop=loop, cluster=cluster, md=md, pool=pool, cfg=cfg)
    md.close()
    pool.close()


def run_until(loop, pred, timeout=2.0):
    async def wait():
        while not pred():
            await asyncio.sleep(0.005)
    loop.run_until_complete(asyncio.wait_for(wait(), timeout))


def test_topic_from_response_fills_gaps_and_orders():
    t = NS(name="t", topic_id=uuid.UUID(int=0), is_internal=False, error_code=0,
           partitions=[part(2, 3), part(0, 1)])
    info = topic_from_response(t)
    assert info.topic_id is None
    assert [p.partition for p in info.partitions] == [0, 1, 2]
    assert info.partitions[1].leader == -1 and info.partitions[2].leader == 3


def test_bootstrap_tries_each_address(env):
    env.cluster.down.add(("127.0.0.1", 9000))
    got = []
    env.md.bootstrap(lambda md, err: got.append((md, err)))
    run_until(env.loop, lambda: got)
    md, err = got[0]
    assert err is None and md.brokers == {1: BrokerInfo(1, "127.0.0.1", 9001, None)}
    assert env.cluster.connects == [("127.0.0.1", 9000), ("127.0.0.1", 9001)]
    assert env.pool.address(1) == ("127.0.0.1", 9001)


def test_bootstrap_failure_names_every_address(env):
    env.cluster.down |= {("127.0.0.1", 9000), ("127.0.0.1", 9001)}
    got = []
    env.md.bootstrap(lambda md, err: got.append((md, err)))
    run_until(env.loop, lambda: got)
    md, err = got[0]
    assert md is None and err.code == TRANSPORT
    assert "127.0.0.1:9000" in str(err) and "127.0.0.1:9001" in str(err)


def test_concurrent_refreshes_coalesce(env):
    env.cluster.topics["a"] = topic("a", 3)
    got = []
    env.md.bootstrap(lambda md, err: got.append(err))
    run_until(env.loop, lambda: got)
    env.cluster.requests.clear()
    env.md.add_topics(["a"], auto_create=True)
    for _ in range(10):
        env.md.refresh(lambda md, err: got.append(err))
    run_until(env.loop, lambda: len(got) == 11)
    # the first call starts a round; the nine others share the single follow-up round
    assert len(env.cluster.requests) == 2
    assert env.cluster.requests[-1] == (["a"], True)
    assert env.md.current.topics["a"].num_partitions == 3


def test_consumer_topics_never_auto_created(env):
    env.md.add_topics(["p"], auto_create=True)
    env.md.add_topics(["c"], auto_create=False)
    got = []
    env.md.refresh(lambda md, err: got.append(err))
    run_until(env.loop, lambda: got)
    assert sorted(env.cluster.requests) == [(["c"], False), (["p"], True)]


def test_wait_for_topic_resolves_when_created(env):
    got = []
    env.md.wait_for_topic("late", lambda info, err: got.append((info, err)), timeout_ms=2000)
    env.loop.call_later(0.1, lambda: env.cluster.topics.__setitem__("late", topic("late", 2)))
    run_until(env.loop, lambda: got)
    info, err = got[0]
    assert err is None and info.num_partitions == 2


def test_wait_for_topic_times_out_once(env):
    got = []
    env.md.wait_for_topic("never", lambda info, err: got.append((info, err)), timeout_ms=150)
    run_until(env.loop, lambda: got)
    env.loop.run_until_complete(asyncio.sleep(0.1))
    assert len(got) == 1
    info, err = got[0]
    assert info is None and err.code == UNKNOWN_TOPIC_WAIT_TIMEOUT and "'never'" in str(err)


def test_update_leader_only_newer_epoch(env):
    env.cluster.topics["a"] = topic("a", 2, leader=1, epoch=5)
    env.cluster.brokers.append(NS(node_id=2, host="127.0.0.1", port=9002, rack=None))
    got = []
    env.md.add_topics(["a"])
    env.md.refresh(lambda md, err: got.append(err))
    run_until(env.loop, lambda: got)
    assert not env.md.update_leader("a", 0, 2, 5)
    assert env.md.update_leader("a", 0, 2, 6)
    assert env.md.current.leader_of("a", 0) == 2
    # a lagging broker's older view does not undo it
    got.clear()
    env.md.refresh(lambda md, err: got.append(err))
    run_until(env.loop, lambda: got)
    assert env.md.current.leader_of("a", 0) == 2 and env.md.current.leader_of("a", 1) == 1


def test_close_fails_waiters_with_destroy(env):
    got = []
    env.md.wait_for_topic("x", lambda info, err: got.append(err), timeout_ms=10000)
    env.md.close()
    assert [e.code for e in got] == [DESTROY]


def test_pool_backoff_and_single_callback(env):
    env.pool.set_brokers({1: ("127.0.0.1", 9000)})
    env.cluster.down.add(("127.0.0.1", 9000))
    got = []
    env.pool.get(1, Role.PRODUCE, lambda c, e: got.append(e))
    env.pool.get(1, Role.PRODUCE, lambda c, e: got.append(e))
    run_until(env.loop, lambda: len(got) == 2)
    assert [e.code for e in got] == [TRANSPORT, TRANSPORT]
    assert len(env.cluster.connects) == 1  # both waited on one attempt
    env.cluster.down.clear()
    t0 = env.loop.time()
    conns = []
    env.pool.get(1, Role.PRODUCE, lambda c, e: conns.append((c, e, env.loop.time())))
    run_until(env.loop, lambda: conns)
    c, e, t1 = conns[0]
    assert e is None and c.connected and t1 - t0 >= 0.09  # reconnect waited for the backoff
    # ready connections are handed over synchronously; roles get separate sockets
    same = []
    env.pool.get(1, Role.PRODUCE, lambda c2, e2: same.append(c2))
    assert same == [c] and env.pool.ready(1, Role.PRODUCE) is c
    assert env.pool.ready(1, Role.FETCH) is None


@pytest.mark.parametrize("max_age_ms", [40, 0])
def test_periodic_refresh_every_metadata_max_age_ms(max_age_ms):
    loop = asyncio.new_event_loop()
    cluster = FakeCluster()
    cfg = ClientConfig(brokers="127.0.0.1:9001", metadata_min_refresh_ms=0, metadata_max_age_ms=max_age_ms)
    pool = ConnectionPool(cfg, loop, connection_factory=cluster.factory)
    md = Metadata(cfg, loop, pool, connection_factory=cluster.factory)
    try:
        got = []
        md.bootstrap(lambda m, err: got.append(err))
        run_until(loop, lambda: got)
        cluster.requests.clear()
        loop.run_until_complete(asyncio.sleep(0.2))
        if max_age_ms:
            assert len(cluster.requests) >= 3  # 40 ms apart in 200 ms (read as seconds: none)
        else:
            assert cluster.requests == []  # 0 disables the periodic refresh
    finally:
        md.close()
        pool.close()
        loop.close()


def test_after_a_round_no_broker_answered_the_next_asked_for_waits_out_the_backoff(env):
    """Every lost connection asks for a refresh: after a failed round those asks start the
    next one only once the failure's backoff (retry_backoff_ms, with jitter above its floor)
    is over, not at once on every loop turn."""
    env.cluster.down |= {("127.0.0.1", 9000), ("127.0.0.1", 9001)}
    got = []
    env.md.refresh(lambda md, err: got.append(err))
    env.md.request_refresh()  # asked while the round is in flight
    run_until(env.loop, lambda: got)
    assert got[0].code == TRANSPORT and len(env.cluster.connects) == 2
    for _ in range(5):
        env.md.request_refresh()
    floor_s = env.cfg.retry_backoff.floor_ms / 1000
    env.loop.run_until_complete(asyncio.sleep(floor_s / 2))
    assert len(env.cluster.connects) == 2, "no round before the backoff's floor"
    ceiling_s = env.cfg.retry_backoff.ceiling_ms(0) / 1000
    env.loop.run_until_complete(asyncio.sleep(ceiling_s + 0.05))
    assert len(env.cluster.connects) == 4, "one round once the backoff was over, for every ask"
