"""Metadata cache and ConnectionPool against a FakeCluster (tests/fake_broker.py): real Connections
to scripted nodes on loopback sockets, no JVM broker needed.

The real broker path is covered by the producer integration tests; these pin down the
policy: bootstrap fallback, refresh coalescing, bounded topic waits, KIP-951 updates,
pool backoff and exactly-once callbacks.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from types import SimpleNamespace as NS

import pytest
from fake_broker import FakeCluster
from test_backoff import Highest

from kafkaev.cluster.metadata import BrokerInfo, Metadata, _Round, topic_from_response
from kafkaev.cluster.pool import ConnectionPool, Role
from kafkaev.config import ClientConfig
from kafkaev.errors import (
    AUTHENTICATION,
    DESTROY,
    SSL,
    TRANSPORT,
    UNKNOWN_TOPIC_WAIT_TIMEOUT,
    KafkaError,
)
from kafkaev.protocol.codec import ApiKey


def part(i, leader, epoch=0):
    return NS(partition_index=i, leader_id=leader, leader_epoch=epoch, replica_nodes=[leader], isr_nodes=[leader],
              error_code=0)


@pytest.fixture
def loop(new_loop):
    return new_loop("asyncio")  # guarded (conftest.py); these tests do not depend on the loop kind


@dataclass
class Env:
    loop: asyncio.AbstractEventLoop
    cluster: FakeCluster
    md: Metadata
    pool: ConnectionPool
    cfg: ClientConfig

    def metadata_asked(self) -> list[tuple[list[str] | None, bool]]:
        """(topics, allow_auto_topic_creation) of every Metadata request the nodes received."""
        return [(None if r.body.topics is None else [t.name for t in r.body.topics], r.body.allow_auto_topic_creation)
                for r in self.cluster.requests_of(ApiKey.METADATA)]


@pytest.fixture
def env(loop, fake_cluster):
    """Nodes 1 and 2; the bootstrap list names node 2 first, node 1 second."""
    cluster = fake_cluster(1, 2)
    cfg = ClientConfig(brokers=f"{cluster.nodes[2].address},{cluster.nodes[1].address}", metadata_min_refresh_ms=0,
                       metadata_max_age_ms=0)
    # Jitter drawn at the top of its window: a reconnect waits the whole backoff.
    pool = ConnectionPool(cfg, loop, rng=Highest())
    md = Metadata(cfg, loop, pool)
    yield Env(loop, cluster, md, pool, cfg)
    md.close()
    pool.close()


def run_until(loop, pred, timeout=5.0):
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
    env.cluster.nodes[2].refuse_connections()
    got = []
    env.md.bootstrap(lambda md, err: got.append((md, err)))
    run_until(env.loop, lambda: got)
    md, err = got[0]
    one, two = env.cluster.nodes[1], env.cluster.nodes[2]
    assert err is None and md.brokers == {1: BrokerInfo(1, one.host, one.port, None),
                                          2: BrokerInfo(2, two.host, two.port, None)}
    assert [(c.node_id, c.refused) for c in env.cluster.connections] == [(2, True), (1, False)]
    assert [r.node_id for r in env.cluster.requests_of(ApiKey.METADATA)] == [1]
    assert env.pool.address(1) == (one.host, one.port)


def test_bootstrap_failure_names_every_address(env):
    for node in env.cluster.nodes.values():
        node.refuse_connections()
    got = []
    env.md.bootstrap(lambda md, err: got.append((md, err)))
    run_until(env.loop, lambda: got)
    md, err = got[0]
    assert md is None and err.code == TRANSPORT
    assert env.cluster.nodes[1].address in str(err) and env.cluster.nodes[2].address in str(err)
    assert "no broker reachable at" in str(err)


def test_a_round_keeps_the_code_of_its_cause(env):
    # A bad password or certificate is what the user must fix: it is kept over a later refusal
    # from another address, and the round's error has its code, not TRANSPORT.
    round_ = _Round(env.md, [])
    round_.tried = ["a:1", "b:2"]
    round_._failed(KafkaError(AUTHENTICATION, "a:1: SASL PLAIN for 'u' failed"))
    round_._failed(KafkaError(TRANSPORT, "b:2: connection refused"))
    err = round_._failure()
    assert err.code == AUTHENTICATION and "no broker reachable at a:1, b:2" in str(err) and "'u'" in str(err)
    later = _Round(env.md, [])
    later._failed(KafkaError(TRANSPORT, "a:1: connection refused"))
    later._failed(KafkaError(SSL, "b:2: certificate verify failed"))
    assert later._failure().code == SSL


def test_wait_for_topic_with_no_broker_reports_the_connect_failure_once(env):
    # No broker ever answered: the waiter learns why (the addresses tried and the cause's code),
    # not that the topic did not appear.
    for node in env.cluster.nodes.values():
        node.refuse_connections()
    got = []
    env.md.wait_for_topic("t", lambda info, err: got.append((info, err)), timeout_ms=150)
    run_until(env.loop, lambda: got)
    env.loop.run_until_complete(asyncio.sleep(0.1))
    assert len(got) == 1
    info, err = got[0]
    assert info is None and err.code == TRANSPORT
    assert "'t'" in str(err) and "no broker reachable at" in str(err)
    assert env.cluster.nodes[1].address in str(err) and env.cluster.nodes[2].address in str(err)


def test_wait_for_topic_a_broker_answered_during_times_out_as_a_topic_wait(env):
    # The cluster answered (the topic is just missing), and then went away: still a topic timeout.
    env.md.bootstrap(lambda md, err: None)
    run_until(env.loop, lambda: env.md.bootstrapped)
    got = []
    env.md.wait_for_topic("never", lambda info, err: got.append((info, err)), timeout_ms=300)
    env.loop.run_until_complete(asyncio.sleep(0.1))
    for node in env.cluster.nodes.values():
        node.refuse_connections()
    env.pool.disconnect(1, Role.ADMIN)
    env.pool.disconnect(2, Role.ADMIN)
    run_until(env.loop, lambda: got)
    assert got[0][1].code == UNKNOWN_TOPIC_WAIT_TIMEOUT


def test_concurrent_refreshes_coalesce(env):
    env.cluster.create_topic("a", 3)
    got = []
    env.md.bootstrap(lambda md, err: got.append(err))
    run_until(env.loop, lambda: got)
    env.cluster.requests.clear()
    env.md.add_topics(["a"], auto_create=True)
    for _ in range(10):
        env.md.refresh(lambda md, err: got.append(err))
    run_until(env.loop, lambda: len(got) == 11)
    # the first call starts a round; the nine others share the single follow-up round
    assert len(env.metadata_asked()) == 2
    assert env.metadata_asked()[-1] == (["a"], True)
    assert env.md.current.topics["a"].num_partitions == 3


def test_consumer_topics_never_auto_created(env):
    env.md.add_topics(["p"], auto_create=True)
    env.md.add_topics(["c"], auto_create=False)
    got = []
    env.md.refresh(lambda md, err: got.append(err))
    run_until(env.loop, lambda: got)
    assert sorted(env.metadata_asked()) == [(["c"], False), (["p"], True)]


def test_wait_for_topic_resolves_when_created(env):
    got = []
    env.md.wait_for_topic("late", lambda info, err: got.append((info, err)), timeout_ms=2000)
    env.loop.call_later(0.1, lambda: env.cluster.create_topic("late", 2))
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
    env.cluster.create_topic("a", 2, leaders=[1, 1], leader_epoch=5)
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
    node = env.cluster.nodes[1]
    env.pool.set_brokers({1: (node.host, node.port)})
    node.refuse_connections()
    got = []
    env.pool.get(1, Role.PRODUCE, lambda c, e: got.append(e))
    env.pool.get(1, Role.PRODUCE, lambda c, e: got.append(e))
    run_until(env.loop, lambda: len(got) == 2)
    assert [e.code for e in got] == [TRANSPORT, TRANSPORT]
    assert len(node.attempts()) == 1  # both waited on one attempt
    node.accept_connections()
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
def test_periodic_refresh_every_metadata_max_age_ms(loop, fake_cluster, max_age_ms):
    cluster = fake_cluster(1)
    cfg = ClientConfig(brokers=cluster.bootstrap, metadata_min_refresh_ms=0, metadata_max_age_ms=max_age_ms)
    pool = ConnectionPool(cfg, loop)
    md = Metadata(cfg, loop, pool)
    try:
        got = []
        md.bootstrap(lambda m, err: got.append(err))
        run_until(loop, lambda: got)
        cluster.requests.clear()
        loop.run_until_complete(asyncio.sleep(0.4))
        asked = cluster.requests_of(ApiKey.METADATA)
        if max_age_ms:
            assert len(asked) >= 3  # 40 ms apart: about 10 in 400 ms (read as seconds: none)
        else:
            assert asked == []  # 0 disables the periodic refresh
    finally:
        md.close()
        pool.close()


def test_after_a_round_no_broker_answered_the_next_asked_for_waits_out_the_backoff(env):
    """Every lost connection asks for a refresh: after a failed round those asks start the
    next one only once the failure's backoff (retry_backoff_ms, with jitter above its floor)
    is over, not at once on every loop turn."""
    for node in env.cluster.nodes.values():
        node.refuse_connections()
    connects = env.cluster.connections
    got = []
    env.md.refresh(lambda md, err: got.append(err))
    env.md.request_refresh()  # asked while the round is in flight
    run_until(env.loop, lambda: got)
    assert got[0].code == TRANSPORT and len(connects) == 2
    for _ in range(5):
        env.md.request_refresh()
    floor_s = env.cfg.retry_backoff.floor_ms / 1000
    env.loop.run_until_complete(asyncio.sleep(floor_s / 2))
    assert len(connects) == 2, "no round before the backoff's floor"
    run_until(env.loop, lambda: len(connects) == 4)
    # One round for every ask: nothing more once it has failed too (it starts a backoff of its own,
    # twice as long at most, and nobody asked since).
    ceiling_s = env.cfg.retry_backoff.ceiling_ms(1) / 1000
    env.loop.run_until_complete(asyncio.sleep(ceiling_s + 0.05))
    assert len(connects) == 4, "one round once the backoff was over, for every ask"
