"""KIP-848 and KIP-392 on the three-node cluster (``kafka3``: node n in rack ``rack-n``, the
RackAwareReplicaSelector on): a consumer with ``client_rack`` reads from the replica in its rack
and back from the leader when that replica dies; a consumer-protocol group goes on when its
coordinator's broker is killed."""

from __future__ import annotations

import uuid

import pytest
from conftest import rack_of
from consumer_helpers import Received, connect, crash, fill, run_until, set_group_session, settled, sleep
from test_group_consumer_protocol import Member

from kafkaev.cluster.pool import Role
from kafkaev.types import TopicPartition


def fetches_by_node(client: object) -> dict[int, int]:
    """Fetch requests each broker was sent by ``client`` (its FETCH connections' counters)."""
    pool = client._consumer.ctx.pool  # type: ignore[attr-defined]
    counts: dict[int, int] = {}
    for node_id in (1, 2, 3):
        conn = pool.ready(node_id, Role.FETCH)
        if conn is not None:
            counts[node_id] = conn.requests_sent
    return counts


@pytest.mark.slow
def test_a_consumer_reads_from_the_replica_in_its_rack_and_falls_back_to_the_leader(kafka3, uv):
    loop = uv
    topic = kafka3.create_topic(kafka3.unique_topic_name("rack"), partitions=1)
    leader = kafka3.leader_of(topic, 0)
    follower = next(n for n in (1, 2, 3) if n != leader)
    fill(kafka3.bootstrap, topic, 1, 200)
    received = Received()
    client = connect(loop, kafka3.bootstrap, on_batch=received.on_batch, on_error=received.on_error,
                     client_rack=rack_of(follower), fetch_max_wait_ms=100)
    restarted = False
    try:
        client.assign([(topic, 0, 0)])
        client.start()
        run_until(loop, lambda: received.count >= 200, 60, "the first records")
        served = fetches_by_node(client)
        # The leader named the follower once (an answer without records); the follower served the rest.
        assert served.get(follower, 0) > served.get(leader, 0), served
        assert client._consumer.fetcher.read_replicas.node_for(TopicPartition(topic, 0), leader, loop.time(),
                                                               {1, 2, 3}) == follower

        # The follower dies: the partition goes back to its leader, and nothing is lost.
        kafka3.kill(follower)
        fill(kafka3.live_bootstrap, topic, 1, 200)
        run_until(loop, lambda: received.count >= 400, 90, "the records after the rack's replica died")
        assert received.offsets[(topic, 0)] == list(range(400))
        assert fetches_by_node(client).get(leader, 0) > served.get(leader, 0)
        client.close()
        sleep(loop, 0.5)
        kafka3.restart(follower)
        restarted = True
    finally:
        if not restarted:
            kafka3.restart(follower)


@pytest.mark.slow
def test_consumer_protocol_group_survives_its_coordinator_dying(kafka3, uv):
    loop = uv
    topic = kafka3.create_topic(kafka3.unique_topic_name("kip848-coord"), partitions=6)
    group = f"kip848-coord-{uuid.uuid4().hex[:8]}"
    set_group_session(kafka3, group, 20000)
    fill(kafka3.bootstrap, topic, 6, 300)
    everything = {TopicPartition(topic, p) for p in range(6)}
    members = [Member(loop, kafka3.bootstrap, topic, group) for _ in range(2)]
    killed = None
    try:
        run_until(loop, lambda: settled([m.snapshot() for m in members], everything), 60, "two members")
        run_until(loop, lambda: sum(m.received.count for m in members) >= 1800, 60, "the first records")
        killed = kafka3.admin().describe_consumer_groups([group])[group].result(timeout=10).coordinator.id
        kafka3.kill(killed)
        fill(kafka3.live_bootstrap, topic, 6, 300)

        def every_record() -> bool:
            seen = {(k, o) for m in members for k, offs in m.received.offsets.items() for o in offs}
            return len(seen) == 3600

        run_until(loop, every_record, 90, "every record after the coordinator died")
        # Within the session: nobody was fenced, the assignment stayed whole.
        assert all(not m.lost for m in members)
        assert settled([m.snapshot() for m in members], everything)
    finally:
        for m in members:
            crash(loop, m.client)
        if killed is not None:
            kafka3.restart(killed)


@pytest.mark.slow
def test_rack_aware_range_assignment_on_the_cluster(kafka3, uv):
    """KIP-881: three classic members, one per rack, under range: each one's partitions have their
    (only) replica in its rack wherever the placement allows it (plain range would ignore racks)."""
    loop = uv
    topic = kafka3.create_topic(kafka3.unique_topic_name("kip881"), partitions=6, replication_factor=1)
    home = {p: kafka3.partition_state(topic, p).replicas[0] for p in range(6)}
    assert len(set(home.values())) == 3, home  # one replica per partition, somewhere on every node
    group = f"kip881-{uuid.uuid4().hex[:8]}"
    owned: dict[int, set[TopicPartition]] = {n: set() for n in (1, 2, 3)}
    clients = []
    try:
        for node in (1, 2, 3):
            received = Received()
            client = connect(loop, kafka3.bootstrap, on_batch=received.on_batch, client_rack=rack_of(node))
            client.subscribe([topic], group_id=group, assignors=("range",), session_timeout_ms=6000,
                             heartbeat_interval_ms=500, on_assign=owned[node].update,
                             on_revoke=owned[node].difference_update)
            clients.append(client)
        everything = {TopicPartition(topic, p) for p in range(6)}
        run_until(loop, lambda: settled(list(owned.values()), everything), 60, "three members in three racks")
        sleep(loop, 1.0)
        # Each member has its share (2) and as many of them in its rack as the placement allows.
        for node, partitions in owned.items():
            local_there = sum(1 for n in home.values() if n == node)
            local_owned = sum(1 for tp in partitions if home[tp.partition] == node)
            assert len(partitions) == 2 and local_owned == min(2, local_there), (node, partitions, home)
    finally:
        for client in clients:
            crash(loop, client)
