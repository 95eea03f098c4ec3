"""The generated codecs against a real Apache Kafka broker: every request kind at the
oldest version the broker still accepts and at the newest one both sides know, over a
plain blocking socket (no connection layer in between)."""

from __future__ import annotations

import socket
import time
import uuid

import pytest

from kafkaev import errors
from kafkaev.protocol import codec as P

# Each broker version accepts its own range of request versions: all of them run in the matrix.
pytestmark = pytest.mark.compat

K = P.ApiKey
WHICH = ("oldest", "newest")
# AddPartitionsToTxn v4+ is the broker-to-broker verification form (KIP-890): clients stop at 3.
CLIENT_MAX = {K.ADD_PARTITIONS_TO_TXN: 3}
# Kafka 4.x still advertises Produce v0-2 (old librdkafka needs to see them, KAFKA-18659)
# but rejects them (KIP-896): v3 is the oldest it accepts, and the first to carry RecordBatch v2.
# (The 4.4 schemas the codecs come from start at those versions already: Produce v3, Fetch v4,
# ListOffsets v1, OffsetCommit v2, OffsetFetch v1, OffsetForLeaderEpoch v2.)
ACCEPTED_MIN = {K.PRODUCE: 3}
# From these versions on, requests and answers name topics by id only (KIP-516, KIP-848, KIP-1319).
PRODUCE_FIRST_BY_ID = 13
OFFSET_COMMIT_FIRST_BY_ID = 10
OFFSET_FETCH_FIRST_BY_ID = 10
TXN_OFFSET_COMMIT_FIRST_BY_ID = 6


class Wire:
    """One blocking connection speaking whole frames through the generated codecs."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.correlation_id = 0
        self.broker: dict[int, tuple[int, int]] = {}
        resp = self.call(K.API_VERSIONS, 3, P.ApiVersionsRequest(
            client_software_name="kafkaev-tests", client_software_version="0"))
        assert resp.error_code == 0
        self.broker = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}

    def version(self, key: int, which: str) -> int:
        ours_lo, ours_hi = P.SUPPORTED_VERSIONS[key]
        ours_lo = max(ours_lo, ACCEPTED_MIN.get(key, ours_lo))
        ours_hi = min(ours_hi, CLIENT_MAX.get(key, ours_hi))
        lo, hi = self.broker[key]
        assert max(lo, ours_lo) <= min(hi, ours_hi), f"no common version of {P.API_NAMES[key]}"
        return max(lo, ours_lo) if which == "oldest" else min(hi, ours_hi)

    def call(self, key: int, version: int, body):
        self.correlation_id += 1
        self.sock.sendall(P.encode_request_frame(key, version, self.correlation_id, "kafkaev-tests", body))
        size = int.from_bytes(self._read(4), "big")
        corr, resp = P.decode_response_frame(key, version, self._read(size))
        assert corr == self.correlation_id
        return resp

    def _read(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            assert chunk, "broker closed the connection"
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def wire(kafka):
    w = Wire(kafka.bootstrap)
    yield w
    w.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def batch(*values: bytes, **build) -> bytes:
    b = P.RecordBatchBuilder()
    for value in values:
        b.append(int(time.time() * 1000), b"k", value)
    return b.build(**build)


def create_topic(wire: Wire, name: str, partitions: int = 1) -> None:
    resp = wire.call(K.CREATE_TOPICS, wire.version(K.CREATE_TOPICS, "newest"), P.CreateTopicsRequest(
        topics=[P.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)], timeout_ms=30000))
    assert resp.topics[0].error_code == 0, resp


def metadata_of(wire: Wire, name: str, which: str = "newest"):
    version = wire.version(K.METADATA, which)
    deadline = time.monotonic() + 30
    while True:
        resp = wire.call(K.METADATA, version, P.MetadataRequest(
            topics=[P.MetadataRequestTopic(name=name)], allow_auto_topic_creation=False))
        topic = resp.topics[0]
        if topic.error_code == 0 and all(p.leader_id >= 0 for p in topic.partitions):
            return resp, topic
        assert time.monotonic() < deadline, topic
        time.sleep(0.2)


def topic_id_of(wire: Wire, name: str):
    return metadata_of(wire, name, "newest")[1].topic_id


def named(wire: Wire, name: str, by_id: bool) -> dict:
    """The fields naming a topic in a request: its id from the versions that take ids only."""
    return {"name": "", "topic_id": topic_id_of(wire, name)} if by_id else {"name": name}


def txn_offsets_topic(wire: Wire, name: str, version: int, partitions: list):
    return P.TxnOffsetCommitRequestTopic(**named(wire, name, version >= TXN_OFFSET_COMMIT_FIRST_BY_ID),
                                         partitions=partitions)


def produce(wire: Wire, version: int, name: str, records: bytes, transactional_id=None):
    topic = named(wire, name, version >= PRODUCE_FIRST_BY_ID)
    request = P.ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=30000, topic_data=[
        P.TopicProduceData(**topic, partition_data=[P.PartitionProduceData(index=0, records=records)])])
    deadline = time.monotonic() + 30
    while True:
        resp = wire.call(K.PRODUCE, version, request)
        part = resp.responses[0].partition_responses[0]
        # A just-created partition's leader may not serve yet, although metadata names it.
        if part.error_code not in (errors.NOT_LEADER_OR_FOLLOWER, errors.UNKNOWN_TOPIC_OR_PARTITION):
            break
        assert time.monotonic() < deadline, resp
        time.sleep(0.2)
    answered = resp.responses[0]
    assert (answered.name, answered.topic_id, part.index, part.error_code) == (
        topic["name"], topic.get("topic_id", P.ZERO_UUID), 0, 0), resp
    return part


# The coordinator's partition of __consumer_offsets/__transaction_state may still be
# loading right after the topic is created: these answers mean "retry".
COORDINATOR_WARMING = (errors.COORDINATOR_LOAD_IN_PROGRESS, errors.COORDINATOR_NOT_AVAILABLE,
                       errors.NOT_COORDINATOR, errors.CONCURRENT_TRANSACTIONS)


def call_coordinator(wire: Wire, key: int, version: int, body, error_of=lambda resp: resp.error_code):
    deadline = time.monotonic() + 120
    while True:
        resp = wire.call(key, version, body)
        if error_of(resp) not in COORDINATOR_WARMING:
            return resp
        assert time.monotonic() < deadline, resp
        time.sleep(0.3)


def find_coordinator(wire: Wire, which: str, key: str, key_type: int) -> None:
    version = wire.version(K.FIND_COORDINATOR, which)
    if key_type != 0:
        version = max(version, 1)  # v0 has no key_type: it only finds group coordinators
    deadline = time.monotonic() + 60
    while True:
        req = P.FindCoordinatorRequest(key=key, key_type=key_type, coordinator_keys=[key])
        resp = wire.call(K.FIND_COORDINATOR, version, req)
        if version >= 4:
            (coord,) = resp.coordinators
            code, node, port = coord.error_code, coord.node_id, coord.port
        else:
            code, node, port = resp.error_code, resp.node_id, resp.port
        if code == 0:
            assert node >= 0 and port > 0
            return
        assert code == errors.COORDINATOR_NOT_AVAILABLE and time.monotonic() < deadline, resp
        time.sleep(0.3)


@pytest.mark.parametrize("which", WHICH)
def test_api_versions(kafka, which):
    w = Wire(kafka.bootstrap)
    try:
        version = w.version(K.API_VERSIONS, which)
        resp = w.call(K.API_VERSIONS, version, P.ApiVersionsRequest(
            client_software_name="kafkaev-tests", client_software_version="1.0"))
        assert resp.error_code == 0
        keys = {k.api_key for k in resp.api_keys}
        assert {K.PRODUCE, K.FETCH, K.METADATA, K.API_VERSIONS} <= keys
        if version >= 3:
            assert resp.finalized_features_epoch >= 0  # a tagged field of v3+
    finally:
        w.close()


@pytest.mark.parametrize("which", WHICH)
def test_topic_lifecycle_produce_fetch_offsets(wire, which):
    name = unique(f"msg-{which}")
    create_topic(wire, name)
    meta, topic = metadata_of(wire, name, which)
    assert meta.brokers and topic.name == name and len(topic.partitions) == 1

    records = batch(b"first", b"second", b"third")
    part = produce(wire, wire.version(K.PRODUCE, which), name, records)
    assert part.base_offset == 0
    part = produce(wire, wire.version(K.PRODUCE, which), name, batch(b"fourth"))
    assert part.base_offset == 3

    fetch_version = wire.version(K.FETCH, which)
    _, newest_topic = metadata_of(wire, name, "newest")
    resp = wire.call(K.FETCH, fetch_version, P.FetchRequest(
        replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
        topics=[P.FetchTopic(topic=name, topic_id=newest_topic.topic_id, partitions=[
            P.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]))
    assert resp.error_code == 0
    fpart = resp.responses[0].partitions[0]
    assert fpart.error_code == 0 and fpart.high_watermark == 4
    data = bytes(fpart.records)
    fetched = P.read_records(name, 0, data)
    assert [(m.offset, m.key, m.value) for m in fetched.messages] == [
        (0, b"k", b"first"), (1, b"k", b"second"), (2, b"k", b"third"), (3, b"k", b"fourth")]
    # The broker stamps the leader epoch (and so a new CRC) into each batch: compare the rest.
    assert data[:12] == records[:12] and data[21:len(records)] == records[21:]
    assert b"fourth" in data[len(records):]

    resp = wire.call(K.LIST_OFFSETS, wire.version(K.LIST_OFFSETS, which), P.ListOffsetsRequest(
        replica_id=-1, topics=[P.ListOffsetsTopic(name=name, partitions=[
            P.ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
    lpart = resp.topics[0].partitions[0]
    assert (lpart.error_code, lpart.offset) == (0, 4)

    epoch_version = wire.version(K.OFFSET_FOR_LEADER_EPOCH, which)
    resp = wire.call(K.OFFSET_FOR_LEADER_EPOCH, epoch_version,
                     P.OffsetForLeaderEpochRequest(replica_id=-1, topics=[P.OffsetForLeaderTopic(
                         topic=name, partitions=[P.OffsetForLeaderPartition(partition=0, leader_epoch=0)])]))
    epart = resp.topics[0].partitions[0]
    assert (epart.error_code, epart.leader_epoch, epart.end_offset) == (0, 0, 4)

    resp = wire.call(K.DELETE_RECORDS, wire.version(K.DELETE_RECORDS, which), P.DeleteRecordsRequest(
        topics=[P.DeleteRecordsTopic(name=name, partitions=[P.DeleteRecordsPartition(partition_index=0, offset=1)])],
        timeout_ms=30000))
    dpart = resp.topics[0].partitions[0]
    assert (dpart.error_code, dpart.low_watermark) == (0, 1)

    resp = wire.call(K.CREATE_PARTITIONS, wire.version(K.CREATE_PARTITIONS, which), P.CreatePartitionsRequest(
        topics=[P.CreatePartitionsTopic(name=name, count=2, assignments=None)], timeout_ms=30000))
    assert resp.results[0].error_code == 0, resp

    resp = wire.call(K.DESCRIBE_CONFIGS, wire.version(K.DESCRIBE_CONFIGS, which), P.DescribeConfigsRequest(
        resources=[P.DescribeConfigsResource(resource_type=2, resource_name=name,
                                             configuration_keys=["cleanup.policy"])]))
    result = resp.results[0]
    assert result.error_code == 0
    assert [(c.name, c.value) for c in result.configs] == [("cleanup.policy", "delete")]

    version = wire.version(K.DELETE_TOPICS, which)
    resp = wire.call(K.DELETE_TOPICS, version, P.DeleteTopicsRequest(
        topic_names=[name], topics=[P.DeleteTopicState(name=name)], timeout_ms=30000))
    assert [(r.name, r.error_code) for r in resp.responses] == [(name, 0)]


@pytest.mark.parametrize("which", WHICH)
def test_describe_cluster_and_sasl_handshake_on_plaintext(wire, which):
    resp = wire.call(K.DESCRIBE_CLUSTER, wire.version(K.DESCRIBE_CLUSTER, which), P.DescribeClusterRequest())
    assert resp.error_code == 0 and resp.cluster_id and resp.brokers
    resp = wire.call(K.SASL_HANDSHAKE, wire.version(K.SASL_HANDSHAKE, which),
                     P.SaslHandshakeRequest(mechanism="PLAIN"))
    # A PLAINTEXT listener has no SASL: the broker says so, with the list it does have.
    assert resp.error_code != 0 and isinstance(resp.mechanisms, list)


@pytest.mark.parametrize("which", WHICH)
def test_sasl_plain_authenticate(kafka, which):
    sasl_bootstrap = getattr(kafka, "sasl_bootstrap", None)
    if not sasl_bootstrap:
        pytest.skip("cluster without a SASL_PLAINTEXT listener")
    host, port = sasl_bootstrap.rsplit(":", 1)
    w = Wire.__new__(Wire)
    w.sock = socket.create_connection((host, int(port)), timeout=30)
    w.correlation_id = 0
    try:
        # Before authentication only ApiVersions/SaslHandshake are allowed: use fixed versions.
        w.broker = {K.SASL_HANDSHAKE: (0, 1), K.SASL_AUTHENTICATE: (0, 2)}
        creds = kafka.sasl_plain
        resp = w.call(K.SASL_HANDSHAKE, 1, P.SaslHandshakeRequest(mechanism="PLAIN"))
        assert resp.error_code == 0 and "PLAIN" in resp.mechanisms
        token = b"\x00" + creds.username.encode() + b"\x00" + creds.password.encode()
        version = w.version(K.SASL_AUTHENTICATE, which)
        resp = w.call(K.SASL_AUTHENTICATE, version, P.SaslAuthenticateRequest(auth_bytes=token))
        assert resp.error_code == 0, resp
        if version >= 1:
            assert resp.session_lifetime_ms >= 0
    finally:
        w.close()


@pytest.mark.parametrize("which", WHICH)
def test_classic_group_lifecycle(wire, which):
    topic = unique("grp-topic")
    create_topic(wire, topic)
    metadata_of(wire, topic)  # OffsetCommit answers UNKNOWN_TOPIC_OR_PARTITION until the broker serves it
    group = unique(f"grp-{which}")
    find_coordinator(wire, which, group, 0)
    subscription = P.encode_consumer_protocol_subscription(P.ConsumerProtocolSubscription(topics=[topic]), 0)

    join_version = wire.version(K.JOIN_GROUP, which)
    join = P.JoinGroupRequest(group_id=group, session_timeout_ms=30000, rebalance_timeout_ms=30000,
                              member_id="", protocol_type="consumer",
                              protocols=[P.JoinGroupRequestProtocol(name="range", metadata=subscription)])
    resp = call_coordinator(wire, K.JOIN_GROUP, join_version, join)
    if resp.error_code == errors.MEMBER_ID_REQUIRED:  # KIP-394, v4+
        join.member_id = resp.member_id
        resp = call_coordinator(wire, K.JOIN_GROUP, join_version, join)
    assert resp.error_code == 0, resp
    member_id, generation = resp.member_id, resp.generation_id
    assert resp.leader == member_id and [m.member_id for m in resp.members] == [member_id]
    assert P.decode_consumer_protocol_subscription(resp.members[0].metadata).topics == [topic]

    assignment = P.encode_consumer_protocol_assignment(P.ConsumerProtocolAssignment(
        assigned_partitions=[P.ConsumerProtocolAssignmentTopicPartition(topic=topic, partitions=[0])]), 0)
    resp = wire.call(K.SYNC_GROUP, wire.version(K.SYNC_GROUP, which), P.SyncGroupRequest(
        group_id=group, generation_id=generation, member_id=member_id, protocol_type="consumer",
        protocol_name="range", assignments=[P.SyncGroupRequestAssignment(member_id=member_id, assignment=assignment)]))
    assert resp.error_code == 0
    mine = P.decode_consumer_protocol_assignment(resp.assignment)
    assert [(t.topic, t.partitions) for t in mine.assigned_partitions] == [(topic, [0])]

    resp = wire.call(K.HEARTBEAT, wire.version(K.HEARTBEAT, which), P.HeartbeatRequest(
        group_id=group, generation_id=generation, member_id=member_id))
    assert resp.error_code == 0

    commit_version = wire.version(K.OFFSET_COMMIT, which)
    resp = wire.call(K.OFFSET_COMMIT, commit_version, P.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member_id,
        topics=[P.OffsetCommitRequestTopic(**named(wire, topic, commit_version >= OFFSET_COMMIT_FIRST_BY_ID),
                                           partitions=[P.OffsetCommitRequestPartition(
                                               partition_index=0, committed_offset=42, committed_metadata="m")])]))
    assert resp.topics[0].partitions[0].error_code == 0, resp

    fetch_version = wire.version(K.OFFSET_FETCH, which)
    if fetch_version >= 8:
        resp = wire.call(K.OFFSET_FETCH, fetch_version, P.OffsetFetchRequest(groups=[P.OffsetFetchRequestGroup(
            group_id=group, member_id=member_id if fetch_version >= 9 else None, member_epoch=-1,
            topics=[P.OffsetFetchRequestTopics(**named(wire, topic, fetch_version >= OFFSET_FETCH_FIRST_BY_ID),
                                               partition_indexes=[0])])]))
        [answered] = resp.groups[0].topics
        if fetch_version >= OFFSET_FETCH_FIRST_BY_ID:
            assert answered.topic_id == topic_id_of(wire, topic)
        part = answered.partitions[0]
    else:
        resp = wire.call(K.OFFSET_FETCH, fetch_version, P.OffsetFetchRequest(
            group_id=group, topics=[P.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])]))
        part = resp.topics[0].partitions[0]
    assert (part.error_code, part.committed_offset, part.metadata) == (0, 42, "m")

    resp = wire.call(K.DESCRIBE_GROUPS, wire.version(K.DESCRIBE_GROUPS, which),
                     P.DescribeGroupsRequest(groups=[group]))
    described = resp.groups[0]
    assert (described.error_code, described.group_state, described.protocol_data) == (0, "Stable", "range")
    assert [m.member_id for m in described.members] == [member_id]

    resp = wire.call(K.LIST_GROUPS, wire.version(K.LIST_GROUPS, which), P.ListGroupsRequest())
    assert resp.error_code == 0 and group in [g.group_id for g in resp.groups]

    leave_version = wire.version(K.LEAVE_GROUP, which)
    resp = wire.call(K.LEAVE_GROUP, leave_version, P.LeaveGroupRequest(
        group_id=group, member_id=member_id, members=[P.MemberIdentity(member_id=member_id)]))
    assert resp.error_code == 0
    if leave_version >= 3:
        assert [(m.member_id, m.error_code) for m in resp.members] == [(member_id, 0)]


@pytest.mark.requires_kafka("4.0", "the consumer group protocol (KIP-848)")
@pytest.mark.parametrize("which", WHICH)
def test_consumer_group_heartbeat_kip848(wire, which):
    topic = unique("cgh-topic")
    create_topic(wire, topic, partitions=2)
    group = unique(f"cgh-{which}")
    find_coordinator(wire, which, group, 0)
    version = wire.version(K.CONSUMER_GROUP_HEARTBEAT, which)
    member_id = uuid.uuid4().hex[:22]
    resp = wire.call(K.CONSUMER_GROUP_HEARTBEAT, version, P.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id, member_epoch=0, rebalance_timeout_ms=30000,
        subscribed_topic_names=[topic], server_assignor="uniform", topic_partitions=[]))
    assert resp.error_code == 0, resp
    assert resp.member_epoch >= 1 and resp.heartbeat_interval_ms > 0 and resp.member_id
    deadline = time.monotonic() + 30
    while resp.assignment is None or not resp.assignment.topic_partitions:
        assert time.monotonic() < deadline, resp
        time.sleep(0.2)
        resp = wire.call(K.CONSUMER_GROUP_HEARTBEAT, version, P.ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=resp.member_id, member_epoch=resp.member_epoch))
        assert resp.error_code == 0, resp
    assert sorted(resp.assignment.topic_partitions[0].partitions) == [0, 1]
    resp = wire.call(K.CONSUMER_GROUP_HEARTBEAT, version, P.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=resp.member_id, member_epoch=-1))  # -1: leave the group
    assert resp.error_code == 0 and resp.member_epoch == -1


@pytest.mark.parametrize("which", WHICH)
def test_idempotent_and_transactional_producer_apis(wire, which):
    topic = unique("txn-topic")
    create_topic(wire, topic)
    metadata_of(wire, topic)
    txn_id = unique(f"txn-{which}")
    group = unique("txn-group")
    # Finding a transaction coordinator creates __transaction_state; idempotent producer ids
    # come from the same coordinator.
    find_coordinator(wire, which, txn_id, 1)
    init_version = wire.version(K.INIT_PRODUCER_ID, which)
    resp = call_coordinator(wire, K.INIT_PRODUCER_ID, init_version,
                            P.InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=-1))
    assert resp.error_code == 0 and resp.producer_id >= 0 and resp.producer_epoch >= 0

    resp = call_coordinator(wire, K.INIT_PRODUCER_ID, init_version,
                            P.InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60000))
    assert resp.error_code == 0, resp
    pid, epoch = resp.producer_id, resp.producer_epoch

    add_version = wire.version(K.ADD_PARTITIONS_TO_TXN, which)
    resp = call_coordinator(wire, K.ADD_PARTITIONS_TO_TXN, add_version, P.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[P.AddPartitionsToTxnTopic(name=topic, partitions=[0])]),
        lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)
    results = resp.results_by_topic_v3_and_below
    assert [(r.name, [(p.partition_index, p.partition_error_code) for p in r.results_by_partition])
            for r in results] == [(topic, [(0, 0)])]

    records = batch(b"in-txn", producer_id=pid, producer_epoch=epoch, base_sequence=0, transactional=True)
    produce(wire, wire.version(K.PRODUCE, which), topic, records, transactional_id=txn_id)

    resp = wire.call(K.ADD_OFFSETS_TO_TXN, wire.version(K.ADD_OFFSETS_TO_TXN, which), P.AddOffsetsToTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, group_id=group))
    assert resp.error_code == 0
    find_coordinator(wire, which, group, 0)
    resp = call_coordinator(wire, K.TXN_OFFSET_COMMIT, wire.version(K.TXN_OFFSET_COMMIT, which), P.TxnOffsetCommitRequest(
        transactional_id=txn_id, group_id=group, producer_id=pid, producer_epoch=epoch,
        generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[txn_offsets_topic(wire, topic, wire.version(K.TXN_OFFSET_COMMIT, which), [
            P.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]),
        lambda r: r.topics[0].partitions[0].error_code)
    assert resp.topics[0].partitions[0].error_code == 0, resp

    resp = wire.call(K.END_TXN, wire.version(K.END_TXN, which), P.EndTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=True))
    assert resp.error_code == 0, resp

    # The commit marker follows the record: the last stable offset moves past both.
    deadline = time.monotonic() + 30
    while True:
        resp = wire.call(K.LIST_OFFSETS, wire.version(K.LIST_OFFSETS, "newest"), P.ListOffsetsRequest(
            replica_id=-1, isolation_level=1, topics=[P.ListOffsetsTopic(name=topic, partitions=[
                P.ListOffsetsPartition(partition_index=0, timestamp=-1)])]))
        if resp.topics[0].partitions[0].offset == 2:
            break
        assert time.monotonic() < deadline, resp
        time.sleep(0.2)
