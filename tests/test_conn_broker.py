"""kafkaev.Connection against the real Apache Kafka broker, under asyncio and uvloop (the ``loop``
fixture runs each test on both)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from conn_support import Recorder, call, connect, record_batch, run

from kafkaev import errors
from kafkaev.errors import KafkaError
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection, FetchPosition, OffsetToCommit, ProducePartition
from kafkaev.testing.cluster import LocalCluster
from kafkaev.types import TopicPartition

TOPIC_RESOURCE = 2  # DescribeConfigs resource type of a topic

API_METADATA = 3
API_FETCH = 1
PIPELINED_REQUESTS = 100_000
PIPELINED_WAIT_S = 300  # for the last answer of a pipelined burst on a loaded machine



async def wait_until_fetchable(conn: Connection, topic: str, partition: int = 0) -> None:
    """A new topic's partition may answer NOT_LEADER for a moment after creation: wait it out."""
    deadline = time.monotonic() + 20
    while True:
        response, err = await call(conn.fetch, topic, partition, 0, max_wait_ms=0)
        assert err is None
        if response.responses[0].partitions[0].error_code == errors.NONE:
            return
        assert time.monotonic() < deadline, response
        await asyncio.sleep(0.1)


@pytest.mark.compat
def test_handshake_negotiates_versions(kafka, loop):
    async def main():
        conn = Connection(loop)
        assert conn.state == "disconnected" and not conn.connected
        assert await connect(conn, kafka.bootstrap) is None
        assert conn.state == "ready" and conn.connected
        broker = conn.api_versions
        ours = codec.SUPPORTED_VERSIONS
        assert broker[API_METADATA][1] >= 12
        assert conn.version_for(API_METADATA) == min(broker[API_METADATA][1], ours[API_METADATA][1])
        assert conn.version_for(API_FETCH) == min(broker[API_FETCH][1], ours[API_FETCH][1])
        with pytest.raises(KafkaError) as info:
            conn.version_for(99)  # no such API anywhere
        assert info.value.code == errors.UNSUPPORTED_VERSION
        response, err = await call(conn.metadata, None)
        assert err is None
        assert [b.node_id for b in response.brokers] == [1]
        conn.disconnect()
        assert conn.state == "closed"
        conn.disconnect()  # idempotent

    run(loop, main())


def test_pipelined_metadata_complete_once_in_order(kafka, topic, loop):
    async def main():
        # The last of these requests waits behind all the others: on a loaded machine that is
        # longer than the default request timeout, which is not what this test is about.
        conn = Connection(loop, request_timeout_ms=PIPELINED_WAIT_S * 1000)
        assert await connect(conn, kafka.bootstrap) is None
        rec = Recorder(PIPELINED_REQUESTS, loop)
        for i in range(PIPELINED_REQUESTS):
            conn.metadata([topic], rec.cb(i), allow_auto_topic_creation=False)
        assert conn.pending == PIPELINED_REQUESTS
        await asyncio.wait_for(rec.all_done, PIPELINED_WAIT_S)
        await asyncio.sleep(0.05)
        rec.assert_each_once()
        assert [i for i, _, _ in rec.results] == list(range(PIPELINED_REQUESTS))
        failed = [(i, err) for i, _, err in rec.results if err is not None]
        assert not failed, f"{len(failed)} failed, the first: {failed[:3]}"
        assert {r.topics[0].name for _, r, _ in rec.results} == {topic}
        assert conn.pending == 0
        conn.disconnect()

    run(loop, main())


@pytest.mark.compat
def test_produce_fetch_and_acks0(kafka, make_topic, loop):
    topic = make_topic(partitions=2)

    async def main():
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        await wait_until_fetchable(conn, topic, 0)
        await wait_until_fetchable(conn, topic, 1)
        response, err = await call(conn.produce, topic, 0, record_batch(b"a", b"b"), acks=-1)
        assert err is None
        part = response.responses[0].partition_responses[0]
        assert (part.error_code, part.base_offset) == (errors.NONE, 0)

        # acks=0: no response is awaited, so the Metadata after it must still match its own response.
        unacked, err = await call(conn.produce, topic, 0, record_batch(b"c"), acks=0)
        assert (unacked, err) == (None, None)
        meta, err = await call(conn.metadata, [topic])
        assert err is None and meta.topics[0].name == topic

        batches = [ProducePartition(topic, 0, record_batch(b"d")), ProducePartition(topic, 1, record_batch(b"e"))]
        response, err = await call(conn.produce_batch, batches, acks=1)
        assert err is None
        parts = response.responses[0].partition_responses
        assert sorted((p.index, p.error_code, p.base_offset) for p in parts) == [(0, 0, 3), (1, 0, 0)]
        with pytest.raises(ValueError, match="twice"):
            conn.produce_batch([ProducePartition(topic, 1, record_batch(b"x")), ProducePartition(topic, 1, record_batch(b"y"))],
                               lambda r, e: None)

        values: list[bytes] = []
        offset = 0
        deadline = time.monotonic() + 20
        while len(values) < 4 and time.monotonic() < deadline:
            response, err = await call(conn.fetch, topic, 0, offset, max_wait_ms=200)
            assert err is None
            data = response.responses[0].partitions[0]
            assert data.error_code == errors.NONE
            fetched = codec.read_records(topic, 0, data.records, offset)
            values += [bytes(m.value) for m in fetched.messages]
            offset = fetched.next_offset
        assert values == [b"a", b"b", b"c", b"d"]
        response, err = await call(conn.fetch_multi, [FetchPosition(topic, 1, 0, max_bytes=1 << 20)], max_wait_ms=100)
        assert err is None
        data = response.responses[0].partitions[0]
        assert [bytes(m.value) for m in codec.read_records(topic, 1, data.records, 0).messages] == [b"e"]
        conn.disconnect()

    run(loop, main())


def test_answers_to_requests_naming_topics_by_id_are_named_again(kafka, make_topic, loop):
    topics = [make_topic(partitions=1) for _ in range(3)]

    async def main():
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        for topic in topics:
            await wait_until_fetchable(conn, topic)
        meta, err = await call(conn.metadata, topics)
        assert err is None
        decoded = {t.name: t.topic_id for t in meta.topics}
        # the same ids as equal but distinct objects: matched by value, not only by identity
        copied = {name: uuid.UUID(str(topic_id)) for name, topic_id in decoded.items()}
        for ids in (decoded, copied):
            batches = [ProducePartition(name, 0, record_batch(b"v"), topic_id=ids[name]) for name in topics]
            response, err = await call(conn.produce_batch, batches, acks=1)
            assert err is None and sorted(t.name for t in response.responses) == sorted(topics)
            positions = [FetchPosition(name, 0, 0, max_bytes=1 << 20, topic_id=ids[name]) for name in topics]
            response, err = await call(conn.fetch_multi, positions, max_wait_ms=100)
            assert err is None and sorted(t.topic for t in response.responses) == sorted(topics)
        conn.disconnect()

    run(loop, main())


def test_large_batches_go_out_uncopied_and_intact(kafka, make_topic, loop):
    """Batches past the WriteBuffer's reference threshold are written as their own chunks
    (writev), interleaved with small requests: the broker must see every frame intact."""
    topic = make_topic(partitions=2)
    values = [bytes([i]) * 40_000 for i in range(6)]

    async def main():
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        await wait_until_fetchable(conn, topic, 0)
        await wait_until_fetchable(conn, topic, 1)
        rec = Recorder(6, loop)
        conn.produce_batch([ProducePartition(topic, 0, record_batch(*values[:2])),
                            ProducePartition(topic, 1, record_batch(values[2]))],
                           rec.cb(0), acks=1)
        conn.metadata([topic], rec.cb(1))
        conn.produce(topic, 0, record_batch(values[3]), rec.cb(2), acks=1)
        conn.produce(topic, 1, record_batch(*values[4:]), rec.cb(3), acks=1)
        conn.metadata([topic], rec.cb(4))
        conn.produce(topic, 0, record_batch(b"small"), rec.cb(5), acks=1)
        await asyncio.wait_for(rec.all_done, 30)
        rec.assert_each_once()
        assert all(err is None for _, _, err in rec.results)
        for partition, expected in ((0, [*values[:2], values[3], b"small"]), (1, [values[2], *values[4:]])):
            got: list[bytes] = []
            offset = 0
            while len(got) < len(expected):
                response, err = await call(conn.fetch, topic, partition, offset, max_wait_ms=200)
                assert err is None
                fetched = codec.read_records(topic, partition, response.responses[0].partitions[0].records, offset)
                got += [bytes(m.value) for m in fetched.messages]
                offset = fetched.next_offset
            assert got == expected
        conn.disconnect()

    run(loop, main())


def test_generic_request_and_version_checks(kafka, topic, loop):
    async def main():
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        body = codec.MetadataRequest(topics=[codec.MetadataRequestTopic(name=topic)],
                                      allow_auto_topic_creation=False)
        response, err = await call(conn.request, API_METADATA, body, version=9)
        assert err is None and response.topics[0].name == topic
        response, err = await call(conn.request, API_METADATA, body, version=99)
        assert response is None and err.code == errors.UNSUPPORTED_VERSION
        with pytest.raises(TypeError, match="MetadataRequest"):
            conn.request(API_METADATA, codec.ApiVersionsRequest(), lambda r, e: None)
        # The failed encode left nothing behind: the next request still works.
        response, err = await call(conn.api_versions_request)
        assert err is None and response.error_code == 0
        conn.disconnect()

    run(loop, main())


def test_requests_when_not_ready_fail_fast_with_state(loop):
    async def main():
        conn = Connection(loop)
        issued_in_call: list[object] = []
        conn.metadata(None, lambda r, e: issued_in_call.append(e))
        assert issued_in_call == []  # never called back from inside the call
        await asyncio.sleep(0)
        assert len(issued_in_call) == 1 and issued_in_call[0].code == errors.STATE
        assert conn.pending == 0

    run(loop, main())


def test_bad_arguments_raise_naming_the_argument(loop):
    conn = Connection(loop)

    def cb(r, e):
        return None

    with pytest.raises(TypeError, match="topic"):
        conn.produce(b"t", 0, b"", cb)
    with pytest.raises(ValueError, match="partition"):
        conn.produce("t", -1, b"", cb)
    with pytest.raises(TypeError, match="records"):
        conn.produce("t", 0, "not bytes", cb)
    with pytest.raises(ValueError, match="acks"):
        conn.produce("t", 0, b"", cb, acks=2)
    with pytest.raises(TypeError, match="cb"):
        conn.metadata(None, None)
    with pytest.raises(TypeError, match="topics"):
        conn.metadata("topic", cb)
    with pytest.raises(ValueError, match="port"):
        conn.connect("127.0.0.1", 0)
    with pytest.raises(ValueError, match="request_timeout_ms"):
        Connection(loop, request_timeout_ms=0)
    with pytest.raises(TypeError, match="tls"):
        Connection(loop, tls="yes")


def test_raising_callback_goes_to_on_error_and_others_still_run(kafka, loop):
    async def main():
        conn = Connection(loop)
        seen: list[BaseException] = []
        conn.on_error = seen.append
        assert await connect(conn, kafka.bootstrap) is None
        rec = Recorder(2, loop)

        def boom(r, e):
            raise RuntimeError("user bug")

        conn.metadata(None, rec.cb(0))
        conn.metadata(None, boom)
        conn.metadata(None, rec.cb(1))
        await asyncio.wait_for(rec.all_done, 10)
        rec.assert_each_once()
        assert [type(e) for e in seen] == [RuntimeError]
        assert conn.connected
        response, err = await call(conn.metadata, None)
        assert err is None
        conn.disconnect()

    run(loop, main())


def test_disconnect_fails_pending_with_destroy_once(kafka, topic, loop):
    async def main():
        conn = Connection(loop)
        disconnects: list[object] = []
        conn.on_disconnect = disconnects.append
        assert await connect(conn, kafka.bootstrap) is None
        await wait_until_fetchable(conn, topic)
        rec = Recorder(50, loop)
        for i in range(50):
            conn.fetch(topic, 0, 0, rec.cb(i), max_wait_ms=5000, min_bytes=1 << 20)
        await asyncio.sleep(0.2)
        conn.disconnect()
        await asyncio.wait_for(rec.all_done, 5)
        rec.assert_each_once()
        assert {e.code for _, _, e in rec.results} == {errors.DESTROY}
        assert disconnects == [None]
        conn.disconnect()
        await asyncio.sleep(0.1)
        rec.assert_each_once()

    run(loop, main())


def test_connect_refused_tries_every_address_and_reports_transport(loop):
    async def main():
        conn = Connection(loop)
        errors_seen: list[KafkaError] = []
        conn.on_error = errors_seen.append
        # "localhost" may resolve to both ::1 and 127.0.0.1 (KIP-302: try each); nothing listens on port 1.
        err = await connect(conn, "localhost:1", timeout=5)
        assert err is not None and err.code == errors.TRANSPORT
        assert "localhost:1" in str(err)
        assert errors_seen == [err]
        assert conn.state == "disconnected"

    run(loop, main())


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory):
    """A broker of this module's own, for the tests that pause and restart one: the session's shared
    cluster is never restarted under the rest of the suite (a restart is what these tests check, and
    the shared cluster's state, its SASL users included, must not depend on how one went)."""
    cluster = LocalCluster(nodes=1, security=False, directory=tmp_path_factory.mktemp("kafka-restarted"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_request_timeout_on_paused_broker(own_broker, loop):
    kafka = own_broker

    async def main():
        conn = Connection(loop, request_timeout_ms=1500)
        disconnects: list[object] = []
        conn.on_disconnect = disconnects.append
        assert await connect(conn, kafka.bootstrap) is None
        rec = Recorder(2, loop)
        kafka.pause(1)
        try:
            started = time.monotonic()
            conn.metadata(None, rec.cb(0))
            await asyncio.sleep(0.5)
            conn.metadata(None, rec.cb(1))
            await asyncio.wait_for(rec.all_done, 10)
            elapsed = time.monotonic() - started
        finally:
            kafka.resume(1)
        rec.assert_each_once()
        by_index = {i: e for i, _, e in rec.results}
        assert by_index[0].code == errors.TIMED_OUT
        # The connection closed on the timeout: the later request cannot be matched any more.
        assert by_index[1].code == errors.TRANSPORT
        assert 1.4 <= elapsed < 5
        assert conn.state == "disconnected"
        assert len(disconnects) == 1 and disconnects[0].code == errors.TRANSPORT
        # The broker is back: a new connection works.
        fresh = Connection(loop)
        assert await connect(fresh, kafka.bootstrap) is None
        fresh.disconnect()

    run(loop, main())


def test_broker_restart_fails_pending_once_and_auto_reconnects(own_broker, loop):
    kafka = own_broker
    topic = kafka.create_topic(kafka.unique_topic_name("restart"), partitions=1)

    async def main():
        conn = Connection(loop, auto_reconnect=True, reconnect_backoff_ms=50, reconnect_backoff_max_ms=500)
        connects: list[float] = []
        disconnects: list[object] = []
        conn.on_connect = lambda: connects.append(time.monotonic())
        conn.on_disconnect = disconnects.append
        conn.on_error = lambda err: None
        assert await connect(conn, kafka.bootstrap) is None
        assert len(connects) == 1
        await wait_until_fetchable(conn, topic)
        pending = 200
        rec = Recorder(pending, loop)
        for i in range(pending):
            # Long polls that stay in flight until the broker goes away.
            conn.fetch(topic, 0, 0, rec.cb(i), max_wait_ms=30000, min_bytes=1 << 30)
        await asyncio.sleep(0.3)
        assert conn.pending == pending
        restart = loop.run_in_executor(None, kafka.restart, 1)
        await asyncio.wait_for(rec.all_done, 60)
        rec.assert_each_once()
        assert {e.code for _, _, e in rec.results} == {errors.TRANSPORT}
        assert len(disconnects) == 1
        # While the broker is away requests fail fast instead of queueing.
        _, err = await call(conn.metadata, None)
        assert err is not None and err.code == errors.STATE
        await restart
        deadline = time.monotonic() + 60
        while len(connects) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert len(connects) == 2 and conn.connected
        response, err = await call(conn.metadata, [topic])
        assert err is None and response.topics[0].name == topic
        await asyncio.sleep(0.2)
        rec.assert_each_once()
        conn.disconnect()

    run(loop, main())


def test_request_records_check_their_fields_once_when_made():
    with pytest.raises(ValueError, match="FetchPosition.partition"):
        FetchPosition("t", -1, 0, max_bytes=1)
    with pytest.raises(TypeError, match="ProducePartition.topic_id"):
        ProducePartition("t", 0, b"", topic_id="not a uuid")
    with pytest.raises(TypeError, match="OffsetToCommit.metadata"):
        OffsetToCommit("t", 0, 5, metadata=b"bytes")


RETRIABLE_TXN_CODES = frozenset({errors.COORDINATOR_NOT_AVAILABLE, errors.COORDINATOR_LOAD_IN_PROGRESS,
                                 errors.NOT_COORDINATOR, errors.CONCURRENT_TRANSACTIONS})
TXN_SETUP_TIMEOUT_S = 30


def test_transaction_and_admin_helpers_against_the_broker(kafka, make_topic, loop):
    """The helpers kept for transactions and admin, which nothing in the client calls yet: one
    empty transaction with an offset commit, records deleted and a topic's config described."""
    topic = make_topic(partitions=1)
    txn_id = f"txn-{uuid.uuid4()}"

    async def until_ok(method, *args, **kwargs):
        deadline = time.monotonic() + TXN_SETUP_TIMEOUT_S
        while True:
            response, err = await call(method, *args, **kwargs)
            assert err is None
            # FindCoordinator v4+ answers per key, in coordinators.
            answer = response.coordinators[0] if getattr(response, "coordinators", None) else response
            if answer.error_code not in RETRIABLE_TXN_CODES or time.monotonic() > deadline:
                return answer
            await asyncio.sleep(0.2)

    async def main():
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        found = await until_ok(conn.find_coordinator, txn_id, key_type=1)
        assert found.error_code == errors.NONE  # a single broker: the coordinator is this one
        ids = await until_ok(conn.init_producer_id, transactional_id=txn_id)
        assert ids.error_code == errors.NONE
        pid, epoch = ids.producer_id, ids.producer_epoch

        added, err = await call(conn.add_partitions_to_txn, txn_id, pid, epoch, [TopicPartition(topic, 0)])
        assert err is None
        [result] = added.results_by_topic_v3_and_below
        assert [p.partition_error_code for p in result.results_by_partition] == [errors.NONE]
        offsets = await until_ok(conn.add_offsets_to_txn, txn_id, pid, epoch, "txn-group")
        assert offsets.error_code == errors.NONE
        # Asking for the group's coordinator creates __consumer_offsets, which the commit needs.
        group_coordinator = await until_ok(conn.find_coordinator, "txn-group")
        assert group_coordinator.error_code == errors.NONE
        deadline = time.monotonic() + TXN_SETUP_TIMEOUT_S
        while True:
            committed, err = await call(conn.txn_offset_commit, txn_id, "txn-group", pid, epoch,
                                        [OffsetToCommit(topic, 0, 0)])
            assert err is None
            codes = [p.error_code for t in committed.topics for p in t.partitions]
            if not RETRIABLE_TXN_CODES.intersection(codes) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.2)
        assert codes == [errors.NONE]
        ended = await until_ok(conn.end_txn, txn_id, pid, epoch, True)
        assert ended.error_code == errors.NONE

        produced, err = await call(conn.produce, topic, 0, record_batch(b"a", b"b"), acks=-1)
        assert err is None and produced.responses[0].partition_responses[0].error_code == errors.NONE
        deleted, err = await call(conn.delete_records, {TopicPartition(topic, 0): 1})
        assert err is None
        [part] = deleted.topics[0].partitions
        assert (part.error_code, part.low_watermark) == (errors.NONE, 1)
        described, err = await call(conn.describe_configs, [codec.DescribeConfigsResource(
            resource_type=TOPIC_RESOURCE, resource_name=topic, configuration_keys=["cleanup.policy"])])
        assert err is None
        [config] = described.results
        assert config.error_code == errors.NONE and [c.name for c in config.configs] == ["cleanup.policy"]
        conn.disconnect()

    run(loop, main())
