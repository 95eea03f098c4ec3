"""Version negotiation against the real broker: kafkaev speaks the newest version both sides
have, stops where the cluster client caps an API, and names topics by id in Produce v13+."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from conn_support import call, connect, record_batch, run
from producer_helpers import Delivery, close, wait_for

import kafkaev
from kafkaev import errors
from kafkaev.protocol import codec, connection
from kafkaev.protocol.connection import Connection

PRODUCE = codec.ApiKey.PRODUCE
FETCH = codec.ApiKey.FETCH
# The newest Produce and Fetch versions of the 4.4.0 schemas, which a 4.4 broker offers.
NEWEST_PRODUCE = 13
NEWEST_FETCH = 18
PRODUCE_LAST_VERSION_WITH_NAMES = 12

# Negotiation is what every broker version of the matrix must get right.
pytestmark = pytest.mark.compat



def client_max(api_key: int) -> int:
    codec_max = codec.SUPPORTED_VERSIONS[api_key][1]
    return min(codec_max, connection.CLIENT_VERSION_CAPS.get(api_key, codec_max))


def test_every_api_negotiates_the_newest_version_both_sides_speak(kafka, loop):
    async def main() -> None:
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        negotiated = 0
        for api_key, (broker_min, broker_max) in conn.api_versions.items():
            if api_key not in codec.SUPPORTED_VERSIONS:
                continue
            codec_min = codec.SUPPORTED_VERSIONS[api_key][0]
            best = min(broker_max, client_max(api_key))
            if best < max(broker_min, codec_min):
                with pytest.raises(kafkaev.KafkaError):
                    conn.version_for(api_key)
                continue
            assert conn.version_for(api_key) == best, codec.API_NAMES[api_key]
            negotiated += 1
        assert negotiated >= len(codec.SUPPORTED_VERSIONS) // 2
        conn.disconnect()

    run(loop, main())


def test_capped_apis_stop_below_the_codecs_newest_version():
    # Each cap stands for a version whose semantics the cluster client does not implement yet.
    for api_key, cap in connection.CLIENT_VERSION_CAPS.items():
        lo, hi = codec.SUPPORTED_VERSIONS[api_key]
        assert lo <= cap < hi, codec.API_NAMES[api_key]


@pytest.mark.requires_kafka("4.4", f"Produce v{NEWEST_PRODUCE} and Fetch v{NEWEST_FETCH}")
def test_newest_produce_and_fetch_are_used_on_kafka_4_4(kafka, loop):
    async def main() -> None:
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        assert conn.version_for(PRODUCE) == NEWEST_PRODUCE
        assert conn.version_for(FETCH) == NEWEST_FETCH
        conn.disconnect()

    run(loop, main())


async def _topic_id(conn: Connection, topic: str) -> uuid.UUID:
    deadline = time.monotonic() + 20
    while True:
        meta, err = await call(conn.metadata, [topic])
        assert err is None
        [entry] = meta.topics
        if entry.error_code == errors.NONE and entry.topic_id.int != 0 and entry.partitions:
            return entry.topic_id
        assert time.monotonic() < deadline, entry
        await asyncio.sleep(0.1)


def test_produce_names_the_topic_by_id_when_given_one(kafka, topic, loop):
    async def main() -> None:
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        topic_id = await _topic_id(conn, topic)
        by_id = conn.version_for(PRODUCE) > PRODUCE_LAST_VERSION_WITH_NAMES

        response, err = await call(conn.produce, topic, 0, record_batch(b"by-id"), topic_id=topic_id)
        assert err is None
        [answer] = response.responses
        if by_id:  # v13: answered by the id the request gave, named again by the connection
            assert (answer.name, answer.topic_id) == (topic, topic_id)
        else:
            assert answer.name == topic
        assert answer.partition_responses[0].error_code == errors.NONE

        # Without an id the request stays at v12, which names the topic.
        response, err = await call(conn.produce, topic, 0, record_batch(b"by-name"))
        assert err is None
        [answer] = response.responses
        assert answer.name == topic and answer.partition_responses[0].error_code == errors.NONE

        fetched, err = await call(conn.fetch, topic, 0, 0, max_wait_ms=0)
        assert err is None
        records = codec.read_records(topic, 0, fetched.responses[0].partitions[0].records).messages
        assert [m.value for m in records] == [b"by-id", b"by-name"]
        conn.disconnect()

    run(loop, main())


def test_produce_to_an_unknown_topic_id_fails_with_unknown_topic_id(kafka, topic, loop):
    async def main() -> None:
        conn = Connection(loop)
        assert await connect(conn, kafka.bootstrap) is None
        if conn.version_for(PRODUCE) <= PRODUCE_LAST_VERSION_WITH_NAMES:
            pytest.skip(f"topic ids in Produce need v13 (Kafka 4.1+); the broker offers v{conn.version_for(PRODUCE)}")
        response, err = await call(conn.produce, topic, 0, record_batch(b"x"), topic_id=uuid.uuid4())
        assert err is None
        [answer] = response.responses
        assert answer.partition_responses[0].error_code == errors.UNKNOWN_TOPIC_ID
        conn.disconnect()

    run(loop, main())


class _ProduceAnswers(Connection):
    """A Connection that keeps every Produce response it hands on."""

    answers: list[Any] = []

    def produce_batch(self, batches: Any, cb: Any, **kwargs: Any) -> None:
        def keep(resp: Any, err: Any) -> None:
            if resp is not None:
                _ProduceAnswers.answers.append(resp)
            cb(resp, err)

        super().produce_batch(batches, keep, **kwargs)


def test_client_produces_by_topic_id_and_maps_answers_back(kafka, make_topic, loop, monkeypatch):
    topic = make_topic(partitions=3)
    _ProduceAnswers.answers = []
    monkeypatch.setattr(connection, "Connection", _ProduceAnswers)
    client = kafkaev.Client(kafka.bootstrap, loop=loop, linger_ms=1, idempotent=True)
    count = 300
    delivery = Delivery(count)
    for i in range(count):
        client.produce(topic, f"k{i}", b"v%d" % i, delivery.cb(i))
    run(loop, wait_for(lambda: delivery.complete, 30, "acks"))
    delivery.assert_each_once()
    assert not delivery.errors
    assert {m.partition for m in delivery.metas.values()} == {0, 1, 2}
    close(client, loop)

    probe = Connection(loop)
    assert run(loop, connect(probe, kafka.bootstrap)) is None
    by_id = probe.version_for(PRODUCE) > PRODUCE_LAST_VERSION_WITH_NAMES
    probe.disconnect()
    topics = [t for resp in _ProduceAnswers.answers for t in resp.responses]
    assert topics
    if by_id:  # answered by id, named again by the connection from the ids it sent
        assert all(t.name == topic and t.topic_id.int != 0 for t in topics)
    else:
        assert all(t.name == topic for t in topics)
