"""Admin's offset calls (list_offsets, a group's committed offsets listed, altered, deleted and reset)
against the real broker, compared with confluent-kafka's AdminClient."""

from __future__ import annotations

import uuid

import pytest
from admin_helpers import FIRST_TIMESTAMP, STEP_MS, commit, fill, joined_consumer, result
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import OffsetSpec as COffsetSpec

from kafkaev.admin import OffsetReset, OffsetSpec, PartitionReset
from kafkaev.errors import GROUP_SUBSCRIBED_TO_TOPIC, NON_EMPTY_GROUP, STATE, UNKNOWN_MEMBER_ID, KafkaError
from kafkaev.types import NO_OFFSET, TopicPartition

pytestmark = pytest.mark.compat



def _peer_committed(peer, group: str) -> dict[TopicPartition, int]:
    [future] = peer.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)]).values()
    return {TopicPartition(tp.topic, tp.partition): tp.offset for tp in result(future).topic_partitions}


@pytest.fixture
def filled(kafka, make_topic):
    """A two-partition topic with 10 and 4 records."""
    topic = make_topic(partitions=2)
    fill(kafka.bootstrap, topic, 0, 10)
    fill(kafka.bootstrap, topic, 1, 4)
    return topic


def test_list_offsets_by_spec_agrees_with_the_peer(admin, peer, filled):
    p0, p1 = TopicPartition(filled, 0), TopicPartition(filled, 1)
    specs = {"earliest": (OffsetSpec.earliest(), COffsetSpec.earliest()),
             "latest": (OffsetSpec.latest(), COffsetSpec.latest()),
             "max": (OffsetSpec.max_timestamp(), COffsetSpec.max_timestamp()),
             "at 3": (OffsetSpec.for_timestamp(FIRST_TIMESTAMP + 3 * STEP_MS),
                      COffsetSpec.for_timestamp(FIRST_TIMESTAMP + 3 * STEP_MS))}
    seen = {}
    for name, (ours, theirs) in specs.items():
        mine = admin.run(admin.list_offsets, {p0: ours, p1: ours})
        peer_futures = peer.list_offsets({CTopicPartition(filled, 0): theirs, CTopicPartition(filled, 1): theirs})
        peers = {tp.partition: result(f) for tp, f in peer_futures.items()}
        for tp, listed in mine.items():
            assert listed.error is None
            assert (listed.offset, listed.timestamp) == (peers[tp.partition].offset, peers[tp.partition].timestamp)
        seen[name] = {tp.partition: listed.offset for tp, listed in mine.items()}
    assert seen == {"earliest": {0: 0, 1: 0}, "latest": {0: 10, 1: 4}, "max": {0: 9, 1: 3}, "at 3": {0: 3, 1: 3}}
    late = admin.run(admin.list_offsets, {p1: OffsetSpec.for_timestamp(FIRST_TIMESTAMP + 99 * STEP_MS)})
    assert late[p1].offset == NO_OFFSET


def test_list_alter_delete_group_offsets_agree_with_the_peer(kafka, admin, peer, filled):
    group = f"admin-offsets-{uuid.uuid4().hex[:8]}"
    p0, p1 = TopicPartition(filled, 0), TopicPartition(filled, 1)
    commit(kafka.bootstrap, group, [(filled, 0, 5)])
    listed = admin.run(admin.list_group_offsets, group)
    assert {tp: c.offset for tp, c in listed.items()} == {p0: 5} == _peer_committed(peer, group)
    asked = admin.run(admin.list_group_offsets, group, partitions=[p0, p1])
    assert asked[p0].offset == 5 and asked[p1].offset == NO_OFFSET

    assert admin.run(admin.alter_group_offsets, group, {p0: 2, p1: 3}) == {p0: None, p1: None}
    assert _peer_committed(peer, group) == {p0: 2, p1: 3}
    [peer_future] = peer.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [CTopicPartition(filled, 1, 1)])]).values()
    result(peer_future)
    assert {tp: c.offset for tp, c in admin.run(admin.list_group_offsets, group).items()} == {p0: 2, p1: 1}

    assert admin.run(admin.delete_group_offsets, group, [p1]) == {p1: None}
    assert _peer_committed(peer, group) == {p0: 2}
    assert [(r.partition, r.committed, r.end_offset, r.lag) for r in admin.run(admin.group_lag, group)] == [
        (0, 2, 10, 8)]


def test_an_active_group_keeps_its_offsets(kafka, admin, filled):
    group = f"admin-active-{uuid.uuid4().hex[:8]}"
    consumer = joined_consumer(kafka.bootstrap, group, filled)
    try:
        p0 = TopicPartition(filled, 0)
        altered = admin.run(admin.alter_group_offsets, group, {p0: 1})
        assert altered[p0] is not None and altered[p0].code == UNKNOWN_MEMBER_ID
        deleted = admin.run(admin.delete_group_offsets, group, [p0])
        assert deleted[p0] is not None and deleted[p0].code == GROUP_SUBSCRIBED_TO_TOPIC
        with pytest.raises(KafkaError) as refused:
            admin.run(admin.reset_group_offsets, group, OffsetReset.to_earliest(), topics=[filled])
        assert refused.value.code == NON_EMPTY_GROUP and "Stable" in str(refused.value)
        # A dry run only reads: it works out the plan even while the group is active.
        plan = admin.run(admin.reset_group_offsets, group, OffsetReset.to_latest(), topics=[filled], dry_run=True)
        assert [(r.partition, r.target) for r in plan] == [(0, 10), (1, 4)]
    finally:
        consumer.close()


def test_reset_to_each_spec_with_and_without_dry_run(kafka, admin, peer, filled):
    group = f"admin-reset-{uuid.uuid4().hex[:8]}"
    p0, p1 = TopicPartition(filled, 0), TopicPartition(filled, 1)
    commit(kafka.bootstrap, group, [(filled, 0, 5), (filled, 1, 2)])

    def reset(spec: OffsetReset, **scope) -> list[tuple[int, int, int]]:
        plan = admin.run(admin.reset_group_offsets, group, spec, **scope)
        assert all(isinstance(r, PartitionReset) and r.error is None for r in plan)
        return [(r.partition, r.current, r.target) for r in plan]

    assert reset(OffsetReset.to_earliest(), dry_run=True) == [(0, 5, 0), (1, 2, 0)]
    assert _peer_committed(peer, group) == {p0: 5, p1: 2}  # a dry run commits nothing
    assert reset(OffsetReset.to_latest()) == [(0, 5, 10), (1, 2, 4)]
    assert _peer_committed(peer, group) == {p0: 10, p1: 4}
    assert reset(OffsetReset.to_earliest(), partitions=[p1]) == [(1, 4, 0)]
    assert _peer_committed(peer, group) == {p0: 10, p1: 0}
    assert reset(OffsetReset.shift_by(-3)) == [(0, 10, 7), (1, 0, 0)]  # clamped at the earliest
    assert reset(OffsetReset.shift_by(100), topics=[filled]) == [(0, 7, 10), (1, 0, 4)]  # and at the latest
    assert reset(OffsetReset.to_offset(6)) == [(0, 10, 6), (1, 4, 4)]
    assert reset(OffsetReset.to_timestamp(FIRST_TIMESTAMP + 2 * STEP_MS)) == [(0, 6, 2), (1, 4, 2)]
    # Later than every record: the end, as kafka-consumer-groups.sh does.
    assert reset(OffsetReset.to_timestamp(FIRST_TIMESTAMP + 50 * STEP_MS)) == [(0, 2, 10), (1, 2, 4)]
    assert _peer_committed(peer, group) == {p0: 10, p1: 4}


def test_shift_without_a_commit_is_that_partitions_error(kafka, admin, filled):
    group = f"admin-shift-{uuid.uuid4().hex[:8]}"
    commit(kafka.bootstrap, group, [(filled, 0, 5)])
    plan = admin.run(admin.reset_group_offsets, group, OffsetReset.shift_by(1), topics=[filled])
    assert [(r.partition, r.current, r.target) for r in plan] == [(0, 5, 6), (1, NO_OFFSET, NO_OFFSET)]
    assert plan[0].error is None and plan[1].error is not None and plan[1].error.code == STATE
    committed = admin.run(admin.list_group_offsets, group)
    assert {tp.partition: c.offset for tp, c in committed.items()} == {0: 6}


def test_bad_arguments_name_the_argument(admin):
    with pytest.raises(TypeError, match="'reset'"):
        admin.reset_group_offsets("g", "earliest", lambda r, e: None)
    with pytest.raises(ValueError, match="'topics'"):
        admin.reset_group_offsets("g", OffsetReset.to_earliest(), lambda r, e: None, topics=[])
    with pytest.raises(ValueError, match="OffsetReset.value"):
        OffsetReset.to_offset(-1)
    with pytest.raises(TypeError, match=r"'specs\[t\[0\]\]'"):
        admin.list_offsets({TopicPartition("t", 0): -1}, lambda r, e: None)
    with pytest.raises(ValueError, match=r"'offsets\[t\[0\]\]'"):
        admin.alter_group_offsets("g", {TopicPartition("t", 0): -2}, lambda r, e: None)
    with pytest.raises(ValueError, match="'group_id'"):
        admin.list_group_offsets("", lambda r, e: None)
