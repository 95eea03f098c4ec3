"""Admin's group calls for classic and consumer-protocol (KIP-848) groups against the real broker,
compared with confluent-kafka's AdminClient."""

from __future__ import annotations

import uuid

import pytest
from admin_helpers import commit, joined_consumer, peer_error_code, result
from confluent_kafka import ConsumerGroupType

from kafkaev.admin import ConsumerGroupDescription
from kafkaev.errors import GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP
from kafkaev.types import TopicPartition

pytestmark = pytest.mark.compat

PEER_GROUP_TYPES = {ConsumerGroupType.CONSUMER: "consumer", ConsumerGroupType.CLASSIC: "classic"}


def _peer_description(peer, group: str):
    [future] = peer.describe_consumer_groups([group]).values()
    return result(future)


def _compare(ours: ConsumerGroupDescription, theirs) -> None:
    assert ours.group_type == PEER_GROUP_TYPES[theirs.type]
    assert ours.state.upper() == theirs.state.name.replace("_", "")
    assert ours.coordinator == theirs.coordinator.id
    assert ours.assignor == theirs.partition_assignor
    assert sorted(m.member_id for m in ours.members) == sorted(m.member_id for m in theirs.members)
    for member in theirs.members:
        [mine] = [m for m in ours.members if m.member_id == member.member_id]
        assert mine.client_id == member.client_id and mine.client_host == member.host
        assert sorted(mine.assignment) == sorted(
            TopicPartition(tp.topic, tp.partition) for tp in member.assignment.topic_partitions)


@pytest.mark.parametrize("protocol", [
    pytest.param("consumer", marks=pytest.mark.requires_kafka("4.0", "the consumer group protocol (KIP-848)")),
    "classic"])
def test_describe_consumer_groups_of_either_protocol_agrees_with_the_peer(kafka, admin, peer, make_topic, protocol):
    topic = make_topic(partitions=3)
    group = f"admin-{protocol}-{uuid.uuid4().hex[:8]}"
    consumer = joined_consumer(kafka.bootstrap, group, topic, protocol=protocol)
    try:
        ours = admin.run(admin.describe_consumer_groups, [group])[group]
        assert ours.error is None and ours.group_type == protocol and ours.state == "Stable"
        [member] = ours.members
        assert member.client_id == "admin-test"
        assert sorted(member.assignment) == [TopicPartition(topic, p) for p in range(3)]
        if protocol == "consumer":  # what only ConsumerGroupDescribe tells
            assert ours.group_epoch >= 1 and ours.assignment_epoch >= 1 and member.member_epoch >= 1
            assert member.subscribed_topics == (topic,)
            assert sorted(member.target_assignment) == sorted(member.assignment)
        else:
            assert ours.assignor in ("range", "roundrobin", "cooperative-sticky")
        _compare(ours, _peer_description(peer, group))

        listed = {g.group_id: g for g in admin.run(admin.list_groups, types=[protocol])}
        assert listed[group].group_type == protocol and listed[group].state == "Stable"
        assert not any(g.group_id == group for g in admin.run(admin.list_groups, types=[
            "classic" if protocol == "consumer" else "consumer"]))
        peer_listed = {g.group_id: g for g in result(peer.list_consumer_groups()).valid}
        assert PEER_GROUP_TYPES[peer_listed[group].type] == protocol

        # A group with members is not deleted, by either client.
        refused = admin.run(admin.delete_groups, [group])[group]
        assert refused is not None and refused.code == NON_EMPTY_GROUP
        [peer_future] = peer.delete_consumer_groups([group]).values()
        assert peer_error_code(peer_future) == NON_EMPTY_GROUP
    finally:
        consumer.close()


def test_delete_groups_and_an_unknown_group(kafka, admin, peer, topic):
    gone, also_gone = f"admin-del-{uuid.uuid4().hex[:8]}", f"admin-del-{uuid.uuid4().hex[:8]}"
    never = f"admin-never-{uuid.uuid4().hex[:8]}"
    commit(kafka.bootstrap, gone, [(topic, 0, 0)])
    commit(kafka.bootstrap, also_gone, [(topic, 0, 0)])
    described = admin.run(admin.describe_consumer_groups, [gone, never])
    assert described[gone].state == "Empty" and described[gone].group_type == "classic"
    assert described[never].error is not None and described[never].error.code == GROUP_ID_NOT_FOUND

    deleted = admin.run(admin.delete_groups, [gone, never])
    assert deleted[gone] is None and deleted[never] is not None and deleted[never].code == GROUP_ID_NOT_FOUND
    [peer_future] = peer.delete_consumer_groups([never]).values()
    assert peer_error_code(peer_future) == GROUP_ID_NOT_FOUND
    [peer_future] = peer.delete_consumer_groups([also_gone]).values()
    assert peer_error_code(peer_future) == 0
    after = admin.run(admin.describe_consumer_groups, [gone, also_gone])
    assert all(d.error is not None and d.error.code == GROUP_ID_NOT_FOUND for d in after.values())


def test_bad_arguments_name_the_argument(admin):
    with pytest.raises(TypeError, match="'group_ids'"):
        admin.describe_consumer_groups("g", lambda r, e: None)
    with pytest.raises(ValueError, match="'group_ids'"):
        admin.delete_groups([""], lambda r, e: None)
    with pytest.raises(ValueError, match="'types'"):
        admin.list_groups(lambda r, e: None, types=[""])
