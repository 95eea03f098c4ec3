"""The producer against the real broker, read back with confluent-kafka."""

from __future__ import annotations

import asyncio
import os
import random
import time
import tracemalloc

import pytest
from conn_support import call, connect
from producer_helpers import Delivery, close, flush, produce_all, read_back, wait_for

import kafkaev
import kafkaev.runner
from kafkaev.client import Client
from kafkaev.cluster.pool import Role
from kafkaev.config import COMPRESSION_CODECS
from kafkaev.errors import MESSAGE_TOO_LARGE, MSG_TIMED_OUT, TRANSPORT, UNKNOWN_TOPIC_WAIT_TIMEOUT
from kafkaev.producer import BufferFullError
from kafkaev.protocol.codec import decode_record_batches, murmur2
from kafkaev.protocol.connection import Connection

MILLION = int(os.environ.get("KAFKAEV_PRODUCER_RECORDS", "1000000"))


@pytest.mark.slow
def test_million_keyed_records_land_where_java_puts_them(kafka, make_topic, uv):
    topic = make_topic(partitions=12)
    rng = random.Random(7)
    records = [(rng.randbytes(rng.randint(1, 24)), b"%d" % i) for i in range(MILLION)]
    client = Client(kafka.bootstrap, loop=uv, linger_ms=5, batch_size=65536)
    delivery = Delivery(MILLION)
    uv.run_until_complete(produce_all(client, topic, records, delivery))
    flush(client, uv, timeout=120)
    delivery.assert_each_once()
    assert not delivery.errors
    for i in range(0, MILLION, 997):
        assert delivery.metas[i].partition == murmur2(records[i][0]) % 12
    close(client, uv)

    got = read_back(kafka.bootstrap, topic, MILLION, timeout=180)
    assert len(got) == MILLION
    last_index = [-1] * 12
    seen = set()
    for msg in got:
        i = int(msg.value())
        key = records[i][0]
        assert msg.key() == key
        assert msg.partition() == murmur2(key) % 12, "the Java client would have chosen another partition"
        assert i > last_index[msg.partition()], "per-partition order broken"
        last_index[msg.partition()] = i
        meta = delivery.metas[i]
        assert (meta.partition, meta.offset) == (msg.partition(), msg.offset())
        seen.add(i)
    assert len(seen) == MILLION


@pytest.mark.parametrize("idempotent", [
    pytest.param(False, id="plain"),
    # Every codec with sequence numbers: the broker checks both on each batch.
    pytest.param(True, id="idempotent", marks=pytest.mark.compat),
])
@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_codecs_headers_timestamps_survive(kafka, topic, loop, codec, idempotent):
    client = Client(kafka.bootstrap, loop=loop, compression=codec, linger_ms=2, idempotent=idempotent)
    n = 3000
    base_ts = int(time.time() * 1000) - 3_600_000  # recent: old stamps fall to retention at once
    delivery = Delivery(n)
    for i in range(n):
        headers = [("i", str(i)), ("dup", b"a"), ("dup", None)] if i % 3 == 0 else {"one": b"1"}
        client.produce(topic, None if i % 5 == 0 else f"k{i}", b"v" * (i % 200) + b"|%d" % i, delivery.cb(i),
                       headers=headers, timestamp_ms=base_ts + i)
    loop.run_until_complete(wait_for(lambda: delivery.complete, 30, "acks"))
    delivery.assert_each_once()
    assert not delivery.errors
    assert delivery.metas[7].timestamp == base_ts + 7
    close(client, loop)
    got = read_back(kafka.bootstrap, topic, n)
    assert len(got) == n
    for msg in got:
        i = int(msg.value().rsplit(b"|", 1)[1])
        assert msg.value() == b"v" * (i % 200) + b"|%d" % i
        assert msg.key() == (None if i % 5 == 0 else f"k{i}".encode())
        assert msg.timestamp() == (1, base_ts + i)  # (CreateTime, ms)
        expected = [("i", str(i).encode()), ("dup", b"a"), ("dup", None)] if i % 3 == 0 else [("one", b"1")]
        assert msg.headers() == expected
        assert msg.offset() == delivery.metas[i].offset
    # The broker stored the batches in the codec they were written in (it recompresses none).
    assert stored_codecs(kafka.bootstrap, topic, loop) == {COMPRESSION_CODECS[codec]}


def stored_codecs(bootstrap: str, topic: str, loop: asyncio.AbstractEventLoop) -> set[int]:
    """The compression codec of every batch in partition 0 of ``topic``, as the log has it."""

    async def main() -> set[int]:
        conn = Connection(loop)
        assert await connect(conn, bootstrap) is None
        codecs: set[int] = set()
        offset = 0
        while True:
            response, err = await call(conn.fetch, topic, 0, offset, max_wait_ms=0)
            assert err is None
            records = response.responses[0].partitions[0].records
            batches = decode_record_batches(records, allow_truncated=True) if records else []
            if not batches:
                conn.disconnect()
                return codecs
            codecs.update(b.compression for b in batches)
            offset = batches[-1].next_offset

    return loop.run_until_complete(main())


@pytest.mark.parametrize("acks", [0, -1])
def test_large_values_sent_by_reference_arrive_whole(kafka, make_topic, loop, acks):
    """Bytes values of 4 KiB or more go to the socket from the caller's own objects (the batch
    references them instead of copying them in). Mixed with small values and headers, and
    idempotent with acks=-1, every record arrives byte for byte, once, in order."""
    topic = make_topic(partitions=2)
    sizes = (10, 4096, 10_000, 300, 65_000, 4095, 20_000)
    n = 700
    values = [os.urandom(sizes[i % len(sizes)]) for i in range(n)]
    client = Client(kafka.bootstrap, loop=loop, acks=acks, idempotent=acks == -1, linger_ms=5, batch_size=1 << 20)
    delivery = Delivery(n)
    for i, value in enumerate(values):
        client.produce(topic, b"k%d" % (i % 2), value, delivery.cb(i), headers=[("i", b"%d" % i)])
    loop.run_until_complete(wait_for(lambda: delivery.complete, 60, "callbacks"))
    delivery.assert_each_once()
    assert not delivery.errors
    close(client, loop)
    got = read_back(kafka.bootstrap, topic, n)
    assert len(got) == n
    last = {}
    for msg in got:
        i = int(msg.headers()[0][1])
        assert msg.value() == values[i] and msg.key() == b"k%d" % (i % 2)
        assert i > last.get(msg.partition(), -1), "per-partition order broken"
        last[msg.partition()] = i
        if acks:
            assert (delivery.metas[i].partition, delivery.metas[i].offset) == (msg.partition(), msg.offset())


@pytest.mark.parametrize("acks", [0, 1, -1])
def test_acks_modes(kafka, make_topic, loop, acks):
    topic = make_topic(partitions=3)
    client = Client(kafka.bootstrap, loop=loop, acks=acks)
    n = 2000
    delivery = Delivery(n)
    loop.run_until_complete(produce_all(client, topic, [(f"k{i}", f"v{i}") for i in range(n)], delivery))
    loop.run_until_complete(wait_for(lambda: delivery.complete, 30, "callbacks"))
    delivery.assert_each_once()
    assert not delivery.errors
    offsets = {m.offset for m in delivery.metas.values()}
    if acks == 0:
        assert offsets == {-1}
    else:
        by_partition: dict[int, list[int]] = {}
        for i in range(n):
            by_partition.setdefault(delivery.metas[i].partition, []).append(delivery.metas[i].offset)
        for offs in by_partition.values():
            assert offs == list(range(len(offs)))  # each record's own offset, in order
    close(client, loop)
    assert len(read_back(kafka.bootstrap, topic, n)) == n


@pytest.mark.compat
def test_several_produce_connections_keep_each_partition_in_order_exactly_once(kafka, make_topic, uv):
    topic = make_topic(partitions=6)
    n = 60000
    records = [(f"k{i % 97}", b"%d" % i) for i in range(n)]
    client = Client(kafka.bootstrap, loop=uv, produce_connections=3, idempotent=True, linger_ms=1, batch_size=16384)
    delivery = Delivery(n)
    uv.run_until_complete(produce_all(client, topic, records, delivery))
    flush(client, uv, timeout=60)
    delivery.assert_each_once()
    assert not delivery.errors
    lanes = {ready.lane for (_node, role, _lane), ready in client._pool._slots.items() if role is Role.PRODUCE}
    assert lanes == {0, 1, 2}, "the partitions went out over three connections"
    close(client, uv)
    got = read_back(kafka.bootstrap, topic, n, timeout=60)
    assert sorted(int(m.value()) for m in got) == list(range(n))  # each once
    last = {}
    for msg in got:
        i = int(msg.value())
        assert i > last.get(msg.partition(), -1), "per-partition order broken"
        last[msg.partition()] = i
        assert (delivery.metas[i].partition, delivery.metas[i].offset) == (msg.partition(), msg.offset())


@pytest.mark.parametrize("value_size", [500, 5000], ids=["copied", "referenced"])
@pytest.mark.parametrize("idempotent", [False, True], ids=["plain", "idempotent"])
@pytest.mark.parametrize("codec", [None, "lz4"])
def test_batches_above_the_topics_max_message_bytes_are_split_not_lost(kafka, make_topic, loop, idempotent, codec,
                                                                        value_size):
    """The topic takes 20 kB batches; the producer builds 1 MiB ones: the broker refuses them
    with MESSAGE_TOO_LARGE and the producer halves them until they fit, in order, once each.
    Uncompressed 5000-byte values make the refused batch one that references them. Without
    idempotence, order across a retry needs one request in flight per partition (as in Java):
    a small batch sent behind a refused one is written first."""
    topic = make_topic(partitions=2, config={"max.message.bytes": "20000"})
    n = 3000 if value_size < 1000 else 600
    values = [os.urandom(value_size) for _ in range(n)]  # incompressible: lz4 cannot make them fit
    acks = -1 if idempotent else 1
    client = Client(kafka.bootstrap, loop=loop, acks=acks, idempotent=idempotent, linger_ms=50,
                    batch_size=1 << 20, compression=codec, max_in_flight=5 if idempotent else 1)
    delivery = Delivery(n)
    loop.run_until_complete(produce_all(client, topic, [(b"k%d" % (i % 2), values[i]) for i in range(n)], delivery))
    flush(client, loop, timeout=60)
    delivery.assert_each_once()
    assert not delivery.errors
    close(client, loop)
    got = read_back(kafka.bootstrap, topic, n, timeout=60)
    assert len(got) == n
    index = {v: i for i, v in enumerate(values)}
    last = {}
    for msg in got:
        i = index[msg.value()]
        assert i > last.get(msg.partition(), -1), "per-partition order broken"
        last[msg.partition()] = i
        assert (delivery.metas[i].partition, delivery.metas[i].offset) == (msg.partition(), msg.offset())


def test_a_single_record_above_the_topics_max_message_bytes_fails_once(kafka, make_topic, loop):
    topic = make_topic(partitions=1, config={"max.message.bytes": "2000"})
    client = Client(kafka.bootstrap, loop=loop, acks=1, linger_ms=0)
    delivery = Delivery(2)
    loop.run_until_complete(produce_all(client, topic, [(None, b"x" * 5000), (None, b"small")], delivery))
    loop.run_until_complete(wait_for(lambda: delivery.complete, 30, "callbacks"))
    delivery.assert_each_once()
    assert [e.code for e in delivery.errors.values()] == [MESSAGE_TOO_LARGE]
    assert delivery.metas[1].offset == 0
    close(client, loop)


def test_at_linger_0_a_record_produced_by_an_ack_callback_goes_in_that_answers_round(kafka, make_topic, loop):
    # A chain of round trips (produce the next record from the last one's callback) pays no
    # turn of the loop per record: the next record's Produce is out before the loop turns again.
    topic = make_topic(partitions=1)
    client = Client(kafka.bootstrap, loop=loop, acks=1, linger_ms=0)
    chain = 20
    delivery = Delivery(chain)
    in_flight_next_turn: list[int] = []

    def produce(index: int) -> None:
        def acked(meta, err):
            delivery.cb(index)(meta, err)
            if index + 1 < chain:
                # queued before the next record: runs before anything that record queues
                loop.call_soon(lambda: in_flight_next_turn.append(client.stats().producer.batches_in_flight))
                produce(index + 1)
        client.produce(topic, None, b"%d" % index, acked)

    produce(0)
    loop.run_until_complete(wait_for(lambda: delivery.complete, 30, "the chain's acks"))
    delivery.assert_each_once()
    assert [m.offset for _, m in sorted(delivery.metas.items())] == list(range(chain))
    assert in_flight_next_turn == [1] * (chain - 1)
    close(client, loop)


def test_log_append_time_comes_from_the_broker(kafka, make_topic, loop):
    topic = make_topic(config={"message.timestamp.type": "LogAppendTime"})
    client = Client(kafka.bootstrap, loop=loop)
    delivery = Delivery(10)
    before = int(time.time() * 1000)
    for i in range(10):
        client.produce(topic, None, b"x", delivery.cb(i), timestamp_ms=1000 + i)
    loop.run_until_complete(wait_for(lambda: delivery.complete, 30, "acks"))
    delivery.assert_each_once()
    stamps = {m.timestamp for m in delivery.metas.values()}
    assert len(stamps) == 1 and before - 1000 <= stamps.pop() <= int(time.time() * 1000) + 1000
    close(client, loop)


def test_unknown_topic_is_created_on_first_produce(kafka, loop):
    topic = kafka.unique_topic_name("auto-created")
    client = Client(kafka.bootstrap, loop=loop)
    delivery = Delivery(5)
    for i in range(5):
        client.produce(topic, b"k", b"%d" % i, delivery.cb(i))
    loop.run_until_complete(wait_for(lambda: delivery.complete, 30, "acks"))
    delivery.assert_each_once()
    assert not delivery.errors
    assert [delivery.metas[i].offset for i in range(5)] == [0, 1, 2, 3, 4]
    close(client, loop)


def test_topic_that_cannot_exist_fails_clearly(kafka, loop):
    client = Client(kafka.bootstrap, loop=loop, allow_auto_topic_creation=False, metadata_wait_ms=1500)
    delivery = Delivery(3)
    for i in range(3):
        client.produce("no-such-topic-" + kafka.unique_topic_name(), b"k", b"v", delivery.cb(i))
    loop.run_until_complete(wait_for(lambda: delivery.complete, 10, "errors"))
    delivery.assert_each_once()
    assert {e.code for e in delivery.errors.values()} == {UNKNOWN_TOPIC_WAIT_TIMEOUT}
    close(client, loop)


def test_unreachable_cluster_fails_every_record_in_time_with_bounded_memory(loop):
    timeout_ms = 1500
    client = Client("127.0.0.1:1", loop=loop, delivery_timeout_ms=timeout_ms, buffer_memory=256 * 1024,
                    batch_size=16384, reconnect_backoff_ms=50)
    delivery = Delivery(0)
    connected = []
    client.connect(lambda md, err: connected.append(err))
    tracemalloc.start()
    start = time.monotonic()
    full = 0
    produced = 0

    async def drive():
        nonlocal full, produced
        while time.monotonic() - start < 2.5:
            try:
                client.produce("t", b"k", b"v" * 100, delivery.cb(produced))
                produced += 1
            except BufferFullError:
                full += 1
                await asyncio.sleep(0.005)
            if produced % 1000 == 0:
                await asyncio.sleep(0)

    loop.run_until_complete(drive())
    delivery.expected = produced
    loop.run_until_complete(wait_for(lambda: delivery.complete, timeout_ms / 1000 + 2, "every callback"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert connected and connected[0].code == TRANSPORT
    assert full > 0, "an unreachable cluster must push back instead of buffering without bound"
    delivery.assert_each_once()
    assert not delivery.metas
    # no broker ever answered: the records say why (the connect failure), not that the topic is missing
    assert {e.code for e in delivery.errors.values()} <= {TRANSPORT, MSG_TIMED_OUT}
    assert all("no broker reachable at 127.0.0.1:1" in str(e) for e in delivery.errors.values()
               if e.code == TRANSPORT)
    assert peak < 64 * 1024 * 1024
    close(client, loop)


def test_oversized_record_rejected_at_once(kafka, topic, loop):
    client = Client(kafka.bootstrap, loop=loop)
    loop.run_until_complete(wait_for(lambda: True, 1, ""))
    with pytest.raises(kafkaev.errors.KafkaError, match="max_request_size"):
        client.produce(topic, None, b"x" * 1_100_000)
    close(client, loop)


def test_connect_run_produce_many_and_close(kafka, make_topic, new_loop):
    topic = make_topic(partitions=2)
    connected = []
    loop = new_loop.watch(kafkaev.runner.default_loop(), "uvloop")
    client = kafkaev.Client(kafka.bootstrap, on_connect=lambda: connected.append("on_connect"))
    assert client.loop is loop
    results = {}

    def start():
        def on_metadata(md, err):
            results["metadata"] = (md, err)
            client.produce_many([(topic, b"k1", b"v1"), {"topic": topic, "value": "v2", "partition": 1,
                                                        "headers": {"h": "x"}}], many_done)

        def many_done(errors):
            results["many"] = errors
            client.close(lambda err: (results.__setitem__("closed", err), kafkaev.stop()))

        client.connect(on_metadata)

    try:
        kafkaev.run(start)
    finally:
        loop.close()  # the default loop is made afresh by the next default_loop()
        asyncio.set_event_loop(None)
    md, err = results["metadata"]
    assert err is None and connected == ["on_connect"]
    assert md.brokers and all(b.host == "127.0.0.1" for b in md.brokers.values())
    assert results["many"] is None and results["closed"] is None
    assert client.closed
    with pytest.raises(kafkaev.KafkaError, match="closed"):
        client.produce(topic, None, b"late")
    got = read_back(kafka.bootstrap, topic, 2)
    assert sorted(m.value() for m in got) == [b"v1", b"v2"]
