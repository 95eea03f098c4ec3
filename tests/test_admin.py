"""kafkaev.Admin against the real broker: topics, groups, lag, and its error contract."""

from __future__ import annotations

import time
import uuid

import pytest
from admin_helpers import commit, eventually, fill
from confluent_kafka import Consumer

from kafkaev.admin import Admin, NewTopic
from kafkaev.admin.core import CLIENT_CONNECTION_OPTIONS
from kafkaev.client import Client
from kafkaev.errors import GROUP_ID_NOT_FOUND, TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_OR_PARTITION, KafkaError
from kafkaev.types import TopicPartition

pytestmark = pytest.mark.compat

GROUP_JOIN_TIMEOUT_S = 30.0


def test_create_describe_list_delete_topic(admin):
    name = f"admin-{uuid.uuid4().hex[:10]}"
    created = admin.run(admin.create_topics, [NewTopic(name, 3, 1, {"retention.ms": "60000"})])
    assert created == {name: None}
    info = eventually(lambda: admin.run(admin.describe_topics, [name])[name],
                      lambda t: t.error_code != UNKNOWN_TOPIC_OR_PARTITION)
    assert info.error_code == 0 and info.num_partitions == 3
    assert [p.partition for p in info.partitions] == [0, 1, 2]
    assert all(p.leader >= 0 and list(p.replicas) == [p.leader] for p in info.partitions)
    assert name in admin.run(admin.list_topics)
    assert admin.run(admin.delete_topics, [name]) == {name: None}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = admin.run(admin.describe_topics, [name])[name]
        if info.error_code == UNKNOWN_TOPIC_OR_PARTITION:
            break
        time.sleep(0.2)
    assert info.error_code == UNKNOWN_TOPIC_OR_PARTITION


def test_per_topic_failures_do_not_hide_the_others(admin, topic):
    fresh = f"admin-{uuid.uuid4().hex[:10]}"
    result = admin.run(admin.create_topics, [NewTopic(topic, 1, 1), NewTopic(fresh, 1, 1)])
    assert isinstance(result[topic], KafkaError) and result[topic].code == TOPIC_ALREADY_EXISTS
    assert result[fresh] is None
    missing = f"admin-missing-{uuid.uuid4().hex[:8]}"
    deleted = admin.run(admin.delete_topics, [fresh, missing])
    assert deleted[fresh] is None
    assert deleted[missing].code == UNKNOWN_TOPIC_OR_PARTITION


def test_internal_topics_only_when_asked(kafka, admin, topic):
    commit(kafka.bootstrap, f"g-{uuid.uuid4().hex[:8]}", [(topic, 0, 0)])  # makes __consumer_offsets exist
    assert "__consumer_offsets" not in admin.run(admin.list_topics)
    assert "__consumer_offsets" in admin.run(admin.list_topics, internal=True)


def test_group_lag_end_offsets_list_and_describe(kafka, admin, make_topic):
    topic = make_topic(partitions=2)
    fill(kafka.bootstrap, topic, 0, 10)
    fill(kafka.bootstrap, topic, 1, 3)
    group = f"admin-group-{uuid.uuid4().hex[:8]}"
    commit(kafka.bootstrap, group, [(topic, 0, 4), (topic, 1, 3)])

    ends = admin.run(admin.end_offsets, [TopicPartition(topic, 0), TopicPartition(topic, 1)])
    assert ends == {TopicPartition(topic, 0): 10, TopicPartition(topic, 1): 3}
    lag = admin.run(admin.group_lag, group)
    assert [(r.partition, r.committed, r.end_offset, r.lag) for r in lag] == [(0, 4, 10, 6), (1, 3, 3, 0)]
    assert group in {g.group_id for g in admin.run(admin.list_groups)}
    [description] = admin.run(admin.describe_groups, [group]).values()
    assert description.group_id == group and description.error is None
    assert description.state == "Empty" and description.members == []
    assert admin.run(admin.find_coordinator, group) == description.coordinator


def test_describing_a_group_that_never_existed_says_so(admin):
    group = f"admin-never-{uuid.uuid4().hex[:8]}"
    [description] = admin.run(admin.describe_groups, [group]).values()
    # DescribeGroups v6 (Kafka 4.0+) answers GROUP_ID_NOT_FOUND; older brokers answer "Dead".
    assert description.error is not None and description.error.code == GROUP_ID_NOT_FOUND
    assert group in str(description.error)


def test_describe_shows_members_and_their_assignment(kafka, admin, make_topic):
    topic = make_topic(partitions=2)
    group = f"admin-live-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group, "client.id": "admin-test",
                         "session.timeout.ms": 10000})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + GROUP_JOIN_TIMEOUT_S
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment(), "the confluent consumer never joined"
        [description] = admin.run(admin.describe_groups, [group]).values()
        assert description.state == "Stable" and description.protocol_type == "consumer"
        [member] = description.members
        assert member.client_id == "admin-test"
        assert sorted(member.assignment) == [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    finally:
        consumer.close()


def test_missing_partition_in_end_offsets_is_an_error(admin, topic):
    with pytest.raises(KafkaError) as failure:
        admin.run(admin.end_offsets, [TopicPartition(topic, 7)])
    assert failure.value.code == UNKNOWN_TOPIC_OR_PARTITION


def test_admin_shares_a_clients_loop_and_brokers(kafka, topic):
    client = Client(kafka.bootstrap, client_id="shared")
    admin = Admin(client)
    try:
        assert admin.loop is client.loop and admin.config.client_id == "shared"
        assert topic in admin.run(admin.list_topics)
    finally:
        admin.close()


def test_admin_from_a_client_takes_its_connection_settings_and_an_option_given_wins():
    """A hung broker is given up on after the client's connect timeout, not the default's."""
    settings = {"client_id": "tuned", "request_timeout_ms": 1500, "connect_timeout_ms": 700,
                "reconnect_backoff_ms": 30, "reconnect_backoff_max_ms": 300, "retry_backoff_ms": 40,
                "retry_backoff_max_ms": 400, "metadata_max_age_ms": 9000, "metadata_min_refresh_ms": 20,
                "debug": "admin"}
    assert set(settings) | {"tls", "sasl"} == set(CLIENT_CONNECTION_OPTIONS)
    client = Client("127.0.0.1:1", **settings)
    admins = [Admin(client), Admin(client, connect_timeout_ms=5000)]
    try:
        for name, value in settings.items():
            assert getattr(admins[0].config, name) == value, name
        assert admins[0].config.reconnect_backoff == client.config.reconnect_backoff
        assert admins[1].config.connect_timeout_ms == 5000
        assert admins[1].config.request_timeout_ms == settings["request_timeout_ms"]
    finally:
        for admin in admins:
            admin.close()


def test_unreachable_broker_fails_once_with_the_brokers_tried():
    admin = Admin("127.0.0.1:1", connect_timeout_ms=2000, request_timeout_ms=2000)
    calls = []
    try:
        admin.loop.call_soon(admin.list_topics, lambda result, err: calls.append((result, err)))
        admin.loop.run_until_complete(_sleep_until(admin.loop, lambda: calls, 20))
        admin.loop.run_until_complete(_sleep(admin.loop, 0.3))  # a second call would land here
    finally:
        admin.close()
        admin.loop.close()
    [(result, err)] = calls
    assert result is None and isinstance(err, KafkaError) and "127.0.0.1:1" in str(err)


def test_bad_arguments_raise_at_once_naming_the_argument(admin):
    with pytest.raises(TypeError, match="'names'"):
        admin.describe_topics("orders", lambda r, e: None)
    with pytest.raises(ValueError, match="'names'"):
        admin.delete_topics([], lambda r, e: None)
    with pytest.raises(TypeError, match="'cb'"):
        admin.list_topics(None)
    with pytest.raises(TypeError, match="unknown option 'linger'"):
        Admin("127.0.0.1:9092", linger=5)


def test_a_raising_user_callback_reaches_on_error(kafka):
    seen: list[BaseException] = []
    admin = Admin(kafka.bootstrap, on_error=seen.append)
    try:
        future = admin.loop.create_future()

        def cb(result, err):
            future.set_result(None)
            raise RuntimeError("user bug")

        admin.loop.call_soon(admin.list_topics, cb)
        admin.loop.run_until_complete(future)
        admin.loop.run_until_complete(_sleep(admin.loop, 0.05))
    finally:
        admin.close()
        admin.loop.close()
    assert [type(e) for e in seen] == [RuntimeError]


async def _sleep(loop, seconds):
    import asyncio

    await asyncio.sleep(seconds)


async def _sleep_until(loop, condition, timeout_s):
    import asyncio

    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def test_an_answer_this_client_cannot_read_fails_the_call_once():
    """A value newer than the client (an ACL operation it has no name for) must still reach the
    callback: as a PROTOCOL error, once, not as an exception that leaves it uncalled."""
    from kafkaev.admin.acls import AclOperation
    from kafkaev.admin.core import answered
    from kafkaev.errors import PROTOCOL
    from kafkaev.protocol import codec

    calls: list[tuple[object, KafkaError | None]] = []
    on_response = answered(codec.DescribeAclsResponse, lambda r, e: calls.append((r, e)),
                           lambda resp: [AclOperation(a.operation) for r in resp.resources for a in r.acls])
    newer = codec.DescribeAclsResponse(error_code=0, resources=[codec.DescribeAclsResource(
        resource_type=2, resource_name="t", pattern_type=3, acls=[codec.AclDescription(
            principal="User:x", host="*", operation=99, permission_type=3)])])
    on_response(newer, None)
    [(result, err)] = calls
    assert result is None and err is not None and err.code == PROTOCOL and "99" in str(err)
