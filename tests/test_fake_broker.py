"""The FakeCluster harness itself (tests/fake_broker.py), driven by a real Connection: each default
answer, each scripted action, the per-node scripts and the node controls do what the tests that
rely on them assume."""

from __future__ import annotations

import pytest
from conn_support import call, connect, record_batch, run
from fake_broker import Delay, ErrorAnswer, FakeCluster, HangUp, RawBytes, Silence, produced_batches

from kafkaev import errors
from kafkaev.protocol import codec
from kafkaev.protocol.codec import ApiKey
from kafkaev.protocol.connection import Connection, OffsetLookup
from kafkaev.types import OFFSET_BEGINNING, OFFSET_END


@pytest.fixture
def loop(new_loop):
    return new_loop("asyncio")


async def connected(cluster: FakeCluster, node_id: int = 1, **options) -> Connection:
    conn = Connection(**options)
    assert await connect(conn, cluster.nodes[node_id].address) is None
    return conn


def test_metadata_names_the_scripted_cluster(loop, fake_cluster):
    cluster = fake_cluster(1, 2)
    topic = cluster.create_topic("t", 3, leader_epoch=4)
    cluster.move_leader("t", 0, 2)

    async def main():
        conn = await connected(cluster)
        resp, err = await call(conn.metadata, ["t", "missing"])
        assert err is None
        assert {(b.node_id, b.port) for b in resp.brokers} == {(n, cluster.nodes[n].port) for n in (1, 2)}
        t, missing = resp.topics
        assert t.topic_id == topic.topic_id
        assert [(p.leader_id, p.leader_epoch) for p in t.partitions] == [(2, 5), (2, 4), (1, 4)]
        assert missing.error_code == errors.UNKNOWN_TOPIC_OR_PARTITION
        conn.disconnect()

    run(loop, main())


def test_produce_fetch_list_offsets_find_coordinator_and_init_producer_id(loop, fake_cluster):
    cluster = fake_cluster(1)
    cluster.create_topic("t", 2, topic_id=None)  # named in Produce and Fetch, as before v13

    async def main():
        conn = await connected(cluster)
        offsets = []
        for value in (b"a", b"b", b"c"):
            resp, err = await call(conn.produce, "t", 1, record_batch(value))
            assert err is None
            offsets.append(resp.responses[0].partition_responses[0].base_offset)
        assert offsets == [0, 1, 2] and cluster.log("t", 1).values() == [b"a", b"b", b"c"]
        assert [b.values for r in cluster.requests_of(ApiKey.PRODUCE) for b in produced_batches(r, cluster)] == \
            [[b"a"], [b"b"], [b"c"]]
        resp, err = await call(conn.fetch, "t", 1, 1)
        records = codec.read_records("t", 1, resp.responses[0].partitions[0].records, 1)
        assert [m.value for m in records.messages] == [b"b", b"c"]
        resp, err = await call(conn.list_offsets, [OffsetLookup("t", 1, OFFSET_END), OffsetLookup("t", 0, OFFSET_BEGINNING)])
        assert [p.offset for p in resp.topics[0].partitions] == [3, 0]
        resp, err = await call(conn.find_coordinator, "group")
        assert err is None and resp.coordinators[0].port == cluster.nodes[1].port
        resp, err = await call(conn.init_producer_id)
        assert (resp.producer_id, resp.producer_epoch) == (1000, 0)
        resp, err = await call(conn.init_producer_id, producer_id=1000, producer_epoch=0)
        assert (resp.producer_id, resp.producer_epoch) == (1000, 1)
        conn.disconnect()

    run(loop, main())


def test_scripts_per_api_and_node_newest_first_for_so_many_times(loop, fake_cluster):
    cluster = fake_cluster(1, 2)
    cluster.create_topic("t", 1, leaders=[1])
    cluster.script(ApiKey.PRODUCE, ErrorAnswer(errors.NOT_ENOUGH_REPLICAS), times=1)
    cluster.script(ApiKey.PRODUCE, ErrorAnswer(errors.INVALID_RECORD), node=2)
    cluster.script(ApiKey.PRODUCE, lambda req: None)  # passes every request on

    async def main():
        one, two = await connected(cluster, 1), await connected(cluster, 2)
        codes = []
        for conn in (one, one, two):
            resp, err = await call(conn.produce, "t", 0, record_batch(b"x"))
            codes.append(resp.responses[0].partition_responses[0].error_code)
        assert codes == [errors.NOT_ENOUGH_REPLICAS, errors.NONE, errors.INVALID_RECORD]
        assert cluster.log("t", 0).values() == [b"x"]  # a refused append writes nothing
        one.disconnect()
        two.disconnect()

    run(loop, main())


def test_delay_silence_raw_bytes_and_hang_up(loop, fake_cluster):
    cluster = fake_cluster(1)
    cluster.create_topic("t", 1)

    async def main():
        conn = await connected(cluster, request_timeout_ms=300)
        cluster.script(ApiKey.METADATA, Delay(0.05), times=1)
        resp, err = await call(conn.metadata, ["t"])
        [asked] = cluster.requests_of(ApiKey.METADATA)
        assert err is None and asked.answered_at - asked.received_at >= 0.05
        cluster.script(ApiKey.METADATA, RawBytes(b"\x00\x00\x00\x04\x7f\xff\xff\xff"), times=1)
        _resp, err = await call(conn.metadata, ["t"])
        assert err.code == errors.PROTOCOL  # a correlation id nobody sent
        conn = await connected(cluster, request_timeout_ms=300)
        cluster.script(ApiKey.METADATA, Silence(), times=1)
        _resp, err = await call(conn.metadata, ["t"])
        assert err.code == errors.TIMED_OUT
        conn = await connected(cluster)
        cluster.script(ApiKey.PRODUCE, HangUp(after_applying=True), times=1)
        _resp, err = await call(conn.produce, "t", 0, record_batch(b"kept"))
        assert err.code == errors.TRANSPORT and cluster.log("t", 0).values() == [b"kept"]
        conn.disconnect()

    run(loop, main())


def test_refusing_and_dropping_connections(loop, fake_cluster):
    cluster = fake_cluster(1)
    node = cluster.nodes[1]

    async def main():
        conn = await connected(cluster)
        node.refuse_connections()
        refused = Connection(client_id="second")
        err = await connect(refused, node.address)
        assert err is not None and err.code == errors.TRANSPORT
        assert [(a.client_id, a.refused) for a in node.attempts()] == [("kafkaev", False), ("second", True)]
        node.drop_connections()
        _resp, err = await call(conn.metadata, None)
        assert err is not None and not conn.connected
        node.accept_connections()
        again = Connection()
        assert await connect(again, node.address) is None
        again.disconnect()

    run(loop, main())
