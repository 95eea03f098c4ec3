"""Admin.describe_cluster and elect_leaders against real brokers, compared with confluent-kafka's
AdminClient (and the harness's own ApiVersions probe for the feature levels)."""

from __future__ import annotations

import pytest
from admin_helpers import PEER_TIMEOUT_S, result
from confluent_kafka import ElectionType as CElectionType
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient

from kafkaev.admin import Admin, ElectionType
from kafkaev.errors import ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION
from kafkaev.types import TopicPartition

pytestmark = pytest.mark.compat

FAILOVER_TIMEOUT_S = 60.0


def test_describe_cluster_agrees_with_the_peer_and_the_probe(kafka, admin, peer):
    ours = admin.run(admin.describe_cluster)
    theirs = result(peer.describe_cluster())
    assert ours.cluster_id == theirs.cluster_id
    assert ours.controller_id == theirs.controller.id
    assert [(b.node_id, b.host, b.port, b.rack) for b in ours.brokers] == sorted(
        (n.id, n.host, n.port, n.rack) for n in theirs.nodes)
    assert not any(b.is_fenced for b in ours.brokers)
    # The finalized feature levels are the ones the cluster answers ApiVersions with.
    assert {name: r.max_level for name, r in ours.finalized_features.items() if r.max_level} == \
        kafka.finalized_features()
    assert "metadata.version" in ours.supported_features and ours.finalized_features_epoch >= 0


def test_preferred_election_where_none_is_needed_and_an_unknown_partition(admin, peer, make_topic):
    topic = make_topic(partitions=2)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition(topic, 7)]
    ours = admin.run(admin.elect_leaders, ElectionType.PREFERRED, partitions=tps)
    assert {tp.partition: e.code for tp, e in ours.items() if e is not None} == {
        0: ELECTION_NOT_NEEDED, 1: ELECTION_NOT_NEEDED, 7: UNKNOWN_TOPIC_OR_PARTITION}
    theirs = result(peer.elect_leaders(CElectionType.PREFERRED, [CTopicPartition(topic, p) for p in (0, 1, 7)]))
    assert {tp.partition: e.code() for tp, e in theirs.items()} == {tp.partition: e.code for tp, e in ours.items()}


def test_preferred_election_moves_leadership_back(kafka3, make_topic):
    topic = make_topic(partitions=1, replication_factor=3, cluster=kafka3)
    preferred = kafka3.partition_state(topic, 0).replicas[0]
    kafka3.restart(preferred)  # leadership moves away and, with auto rebalancing off, stays away
    kafka3.wait_in_sync(topic, 0, preferred, timeout=FAILOVER_TIMEOUT_S)
    assert kafka3.leader_of(topic, 0) != preferred
    admin = Admin(kafka3.bootstrap)
    try:
        tp = TopicPartition(topic, 0)
        assert admin.run(admin.elect_leaders, ElectionType.PREFERRED, partitions=[tp]) == {tp: None}
        kafka3.wait_for(lambda: kafka3.leader_of(topic, 0) == preferred, FAILOVER_TIMEOUT_S,
                        f"node {preferred} leading {topic}[0] again")
        # Now none is needed, as confluent-kafka also says.
        peer = AdminClient({"bootstrap.servers": kafka3.bootstrap})
        theirs = peer.elect_leaders(CElectionType.PREFERRED, [CTopicPartition(topic, 0)]).result(PEER_TIMEOUT_S)
        [err] = theirs.values()
        assert err.code() == ELECTION_NOT_NEEDED
        assert admin.run(admin.elect_leaders, ElectionType.PREFERRED, partitions=[tp])[tp].code == ELECTION_NOT_NEEDED
    finally:
        admin.close()
        admin.loop.close()


def test_bad_arguments_name_the_argument(admin):
    with pytest.raises(ValueError, match="'election_type'"):
        admin.elect_leaders(5, lambda r, e: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'partitions'"):
        admin.elect_leaders(ElectionType.PREFERRED, lambda r, e: None, partitions=[("t", 0)])
