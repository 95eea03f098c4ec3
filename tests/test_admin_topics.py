"""Admin.create_partitions and delete_records against the real broker, compared with confluent-kafka."""

from __future__ import annotations

import pytest
from admin_helpers import eventually, fill, peer_error_code, result
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import NewPartitions as CNewPartitions
from confluent_kafka.admin import OffsetSpec as COffsetSpec

from kafkaev.admin import HIGH_WATERMARK, DeletedRecords, NewPartitions, OffsetSpec
from kafkaev.errors import INVALID_PARTITIONS, UNKNOWN_TOPIC_OR_PARTITION
from kafkaev.types import TopicPartition

pytestmark = pytest.mark.compat


def test_create_partitions_grows_a_topic_as_the_peer_sees_it(admin, peer, make_topic):
    topic = make_topic(partitions=1)
    assert admin.run(admin.create_partitions, [NewPartitions(topic, 3)], validate_only=True) == {topic: None}
    assert admin.run(admin.describe_topics, [topic])[topic].num_partitions == 1  # validated, not applied
    assert admin.run(admin.create_partitions, [NewPartitions(topic, 3)]) == {topic: None}
    assert eventually(lambda: admin.run(admin.describe_topics, [topic])[topic].num_partitions,
                      lambda n: n == 3) == 3
    assert len(peer.list_topics(topic, timeout=30).topics[topic].partitions) == 3

    shrink = admin.run(admin.create_partitions, [NewPartitions(topic, 2)])
    assert shrink[topic] is not None and shrink[topic].code == INVALID_PARTITIONS
    [peer_future] = peer.create_partitions([CNewPartitions(topic, 2)]).values()
    assert peer_error_code(peer_future) == INVALID_PARTITIONS


def test_delete_records_moves_the_low_watermark_the_peer_reads(kafka, admin, peer, make_topic):
    topic = make_topic(partitions=2)
    fill(kafka.bootstrap, topic, 0, 10)
    fill(kafka.bootstrap, topic, 1, 5)
    p0, p1, missing = TopicPartition(topic, 0), TopicPartition(topic, 1), TopicPartition(topic, 9)
    deleted = admin.run(admin.delete_records, {p0: 4, p1: HIGH_WATERMARK, missing: 1})
    assert deleted[p0] == DeletedRecords(4) and deleted[p1] == DeletedRecords(5)
    assert deleted[missing].error is not None and deleted[missing].error.code == UNKNOWN_TOPIC_OR_PARTITION

    peer_earliest = {tp.partition: result(f).offset for tp, f in peer.list_offsets(
        {CTopicPartition(topic, 0): COffsetSpec.earliest(), CTopicPartition(topic, 1): COffsetSpec.earliest()}).items()}
    ours = admin.run(admin.list_offsets, {p0: OffsetSpec.earliest(), p1: OffsetSpec.earliest()})
    assert peer_earliest == {0: 4, 1: 5} == {tp.partition: o.offset for tp, o in ours.items()}

    # And the other way round: the peer deletes, kafkaev sees it.
    [peer_future] = peer.delete_records([CTopicPartition(topic, 0, 7)]).values()
    assert result(peer_future).low_watermark == 7
    assert admin.run(admin.list_offsets, {p0: OffsetSpec.earliest()})[p0].offset == 7


def test_bad_arguments_name_the_argument(admin):
    with pytest.raises(TypeError, match="'new_partitions'"):
        admin.create_partitions([("t", 3)], lambda r, e: None)
    with pytest.raises(ValueError, match="'total_count'"):
        NewPartitions("t", 0)
    with pytest.raises(ValueError, match="names a topic twice"):
        admin.create_partitions([NewPartitions("t", 2), NewPartitions("t", 3)], lambda r, e: None)
    with pytest.raises(ValueError, match=r"'before_offsets\[t\[0\]\]'"):
        admin.delete_records({TopicPartition("t", 0): -5}, lambda r, e: None)
    with pytest.raises(TypeError, match="'before_offsets'"):
        admin.delete_records([TopicPartition("t", 0)], lambda r, e: None)
