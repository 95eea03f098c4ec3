"""The consumer against the real broker: completeness and order across codecs, read_committed,
offset queries checked against confluent-kafka, delivery control (pause/resume/seek, raising
callbacks) and unknown topics."""

from __future__ import annotations

import os
import uuid

import confluent_kafka
import pytest
from consumer_helpers import Received, call, close, connect, fill, parse, run_until, sleep

from kafkaev.errors import UNKNOWN_TOPIC_OR_PARTITION, KafkaError
from kafkaev.types import OFFSET_BEGINNING, OFFSET_END

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
RECORDS_PER_CODEC = int(os.environ.get("KAFKAEV_CONSUMER_RECORDS", "1000000"))
PARTITIONS = 4


@pytest.fixture(scope="module")
def filled(kafka):
    """RECORDS_PER_CODEC records written by confluent-kafka with each codec, one topic per codec."""
    per_partition = RECORDS_PER_CODEC // PARTITIONS
    topics = []
    for codec in CODECS:
        name = kafka.create_topic(kafka.unique_topic_name(f"consume-{codec}"), partitions=PARTITIONS)
        fill(kafka.bootstrap, name, PARTITIONS, per_partition, codec=codec)
        topics.append(name)
    return topics, per_partition


def assert_complete_in_order(received: Received, topics: list[str], per_partition: int) -> None:
    assert not received.errors, received.errors
    for topic in topics:
        for p in range(PARTITIONS):
            offsets = received.offsets.get((topic, p), [])
            assert offsets == list(range(per_partition)), f"{topic}[{p}]: records missing, repeated or out of order"
            values = received.values[(topic, p)]
            assert [parse(v) for v in values[:: max(1, per_partition // 97)]] == [
                (p, s) for s in range(0, per_partition, max(1, per_partition // 97))
            ]
            assert parse(values[-1]) == (p, per_partition - 1)
    assert received.count == len(topics) * PARTITIONS * per_partition


@pytest.mark.compat
@pytest.mark.slow
def test_assign_delivers_every_codec_complete_and_in_order(kafka, filled, uv):
    topics, per_partition = filled
    received = Received()
    client = connect(uv, kafka.bootstrap, on_message=received.on_message, on_error=received.on_error)
    client.assign([(t, p, 0) for t in topics for p in range(PARTITIONS)])
    client.start()
    expected = len(topics) * PARTITIONS * per_partition
    run_until(uv, lambda: received.count >= expected or bool(received.errors), 240, "every record")
    sleep(uv, 0.3)  # nothing more may arrive
    assert_complete_in_order(received, topics, per_partition)
    close(uv, client)


@pytest.mark.slow
def test_subscribe_delivers_every_codec_complete_and_in_order(kafka, filled, uv):
    topics, per_partition = filled
    received = Received()
    assigned = []
    client = connect(uv, kafka.bootstrap, on_batch=received.on_batch, on_error=received.on_error)
    client.subscribe(topics, group_id=f"g-{uuid.uuid4().hex[:8]}", on_assign=assigned.extend)
    expected = len(topics) * PARTITIONS * per_partition
    run_until(uv, lambda: received.count >= expected or bool(received.errors), 240, "every record")
    sleep(uv, 0.3)
    assert_complete_in_order(received, topics, per_partition)
    assert sorted(assigned) == sorted((t, p) for t in topics for p in range(PARTITIONS))
    close(uv, client)


@pytest.mark.compat
def test_read_committed_skips_an_aborted_transaction(kafka, make_topic, loop):
    topic = make_topic(partitions=1)
    producer = confluent_kafka.Producer({"bootstrap.servers": kafka.bootstrap,
                                         "transactional.id": f"txn-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for label, commit in ((b"c1", True), (b"ab", False), (b"c2", True)):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, value=b"%s-%d" % (label, i), partition=0)
        producer.flush(30)
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)

    for isolation, expected in (
        ("read_committed", [b"c1-%d" % i for i in range(10)] + [b"c2-%d" % i for i in range(10)]),
        ("read_uncommitted", [b"%s-%d" % (lbl, i) for lbl in (b"c1", b"ab", b"c2") for i in range(10)]),
    ):
        received = Received()
        client = connect(loop, kafka.bootstrap, on_message=received.on_message, on_error=received.on_error,
                         isolation_level=isolation)
        client.assign([(topic, 0, OFFSET_BEGINNING)])
        client.start()
        # Three control records (one per transaction) follow the 30 data records: 33 offsets.
        run_until(loop, lambda c=client: c.position(topic, 0) == 33, 20, f"{isolation} to reach the end")
        assert received.values.get((topic, 0), []) == expected, isolation
        assert not received.errors
        close(loop, client)


@pytest.mark.compat
def test_offsets_for_lag_and_seek_to_time_agree_with_confluent(kafka, make_topic, loop):
    topic = make_topic(partitions=3)
    fill(kafka.bootstrap, topic, 3, 200)
    oracle = confluent_kafka.Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "oracle",
                                       "enable.auto.commit": False})
    client = connect(loop, kafka.bootstrap, on_message=lambda m: None)

    offsets, err = call(loop, lambda cb: client.offsets_for(topic, cb))
    assert err is None
    for p in range(3):
        assert offsets[p] == oracle.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=10)

    client.assign([(topic, p, 10 * (p + 1)) for p in range(3)])
    lag, err = call(loop, client.lag)
    assert err is None
    for p in range(3):
        _low, high = oracle.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=10)
        assert lag[(topic, p)] == (10 * (p + 1), high, high - 10 * (p + 1))

    # Timestamps of real records, read with confluent-kafka, and one past the end.
    oracle.assign([confluent_kafka.TopicPartition(topic, 1, 0)])
    stamps = []
    while len(stamps) < 200:
        msg = oracle.poll(5)
        assert msg is not None and not msg.error()
        stamps.append(msg.timestamp()[1])
    for ts in (stamps[0], stamps[57], stamps[199], stamps[199] + 60_000):
        (want,) = oracle.offsets_for_times([confluent_kafka.TopicPartition(topic, 1, ts)], timeout=10)
        offset, err = call(loop, lambda cb, ts=ts: client.seek_to_time(topic, 1, ts, cb))
        assert err is None
        if want.offset < 0:  # no such record: kafkaev continues from the end
            assert offset == oracle.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 1), timeout=10)[1]
        else:
            assert offset == want.offset, ts
    oracle.close()
    close(loop, client)


def test_pause_resume_seek_and_a_raising_callback(kafka, topic, loop):
    fill(kafka.bootstrap, topic, 1, 50)
    received = Received()
    boom = RuntimeError("handler bug")

    def handler(msg):
        received.on_message(msg)
        if msg.offset == 3 and received.count == 4:
            raise boom
        if msg.offset == 19 and received.count == 20:  # the first pass only
            client.pause([(topic, 0)])

    client = connect(loop, kafka.bootstrap, on_message=handler, on_error=received.on_error)
    client.assign([(topic, 0, 0)])
    client.start()
    run_until(loop, lambda: received.count >= 20, 10, "20 records")
    sleep(loop, 1.0)
    assert received.offsets[(topic, 0)] == list(range(20)), "pause() inside the callback must stop delivery"
    assert received.errors == [boom], "the raising callback goes to on_error, once"
    assert client.position(topic, 0) == 20
    client.resume([(topic, 0)])
    run_until(loop, lambda: received.count >= 50, 10, "the rest after resume")
    assert received.offsets[(topic, 0)] == list(range(50))
    offset, err = call(loop, lambda cb: client.seek(topic, 0, OFFSET_BEGINNING, cb))
    assert (offset, err) == (0, None)
    run_until(loop, lambda: received.count >= 100, 10, "redelivery after seek")
    assert received.offsets[(topic, 0)] == list(range(50)) * 2
    offset, err = call(loop, lambda cb: client.seek(topic, 0, OFFSET_END, cb))
    assert (offset, err) == (50, None)
    with pytest.raises(ValueError, match="not assigned"):
        client.seek(topic, 7, 0)
    with pytest.raises(ValueError, match="offset"):
        client.seek(topic, 0, -5)
    close(loop, client)


def _fetch_counts(client, topic: str) -> dict[int, tuple[int, int]]:
    """Per partition: (Fetch answers with records for it, their record bytes)."""
    return {p.partition: (p.fetches, p.bytes_fetched) for p in client.stats().consumer if p.topic == topic}


def _fetch_counts_never_paused(
    loop, kafka, topic: str, assigned: list[tuple[str, int, int]], total: int, options: dict[str, int],
) -> dict[int, tuple[int, int]]:
    """``_fetch_counts`` of a consumer that reads all ``total`` records without pausing."""
    plain = Received()
    reader = connect(loop, kafka.bootstrap, on_batch=plain.on_batch, on_error=plain.on_error, **options)
    reader.assign(assigned)
    reader.start()
    run_until(loop, lambda: plain.count >= total, 30, "every record, never paused")
    counts = _fetch_counts(reader, topic)
    close(loop, reader)
    return counts


def _read_through_the_pauses(
    loop, client, assigned: list[tuple[str, int, int]], received: Received, per_partition: int,
) -> None:
    """Start ``client`` on ``assigned`` and check that every record arrived once and in order."""
    client.assign(assigned)
    client.start()
    run_until(loop, lambda: received.count >= len(assigned) * per_partition, 60, "every record through the pauses")
    sleep(loop, 0.3)  # nothing more may arrive
    assert not received.errors, received.errors
    for topic, p, _start in assigned:
        assert received.offsets[(topic, p)] == list(range(per_partition)), f"[{p}]: missing, repeated or out of order"


def test_records_fetched_for_a_paused_partition_are_handed_over_on_resume_not_fetched_again(kafka, make_topic, loop):
    """A consumer pausing every partition after each set it takes (back-pressure, as the EOS
    recipe does) gets every record once and in order, none while paused, and fetches each
    record set once: exactly the answers and bytes of a consumer that never pauses."""
    partitions, per_partition = 3, 3000
    topic = make_topic(partitions=partitions)
    fill(kafka.bootstrap, topic, partitions, per_partition, batch_records=100)  # ~4 KB batches
    assigned = [(topic, p, 0) for p in range(partitions)]
    held = [(topic, p) for p in range(partitions)]
    small_fetches = {"max_partition_fetch_bytes": 16_384}  # several answers per partition

    unpaused = _fetch_counts_never_paused(loop, kafka, topic, assigned, partitions * per_partition, small_fetches)

    received = Received()
    while_paused: list[int] = []
    state = {"paused": False, "pauses": 0}

    held_bytes: list[int] = []  # per pause, what the partitions held just before the resume

    def resume() -> None:
        parts = [p for p in client.stats().consumer if p.topic == topic]
        assert all(p.paused for p in parts)
        held_bytes.append(sum(p.held_bytes for p in parts))
        state["paused"] = False
        client.resume(held)

    def on_batch(messages):
        if state["paused"]:
            while_paused.append(len(messages))
        received.on_batch(messages)
        client.pause(held)
        state["paused"] = True
        state["pauses"] += 1
        loop.call_later(0.002, resume)

    client = connect(loop, kafka.bootstrap, on_batch=on_batch, on_error=received.on_error, **small_fetches)
    _read_through_the_pauses(loop, client, assigned, received, per_partition)
    assert not while_paused, f"record sets delivered while paused: {while_paused}"
    assert state["pauses"] > partitions, "the pauses must have crossed answers holding other partitions' records"
    assert _fetch_counts(client, topic) == unpaused, "a held record set was fetched again"
    assert max(held_bytes) > 0, "the stats show what the paused partitions hold"
    assert [(p.paused, p.held_bytes) for p in client.stats().consumer] == [(False, 0)] * partitions
    close(loop, client)


def test_the_rest_of_a_record_set_cut_short_by_a_pause_is_handed_over_on_resume_not_fetched_again(
        kafka, make_topic, loop):
    """``on_message`` pausing its partition every few records, mid-set (back-pressure on
    records in progress): the rest of the set and the Fetch already out wait for the resume.
    Every record arrives once and in order, none while paused, and every record set is fetched
    once: exactly the answers and bytes of a consumer that never pauses."""
    partitions, per_partition, pause_every = 2, 2000, 37
    topic = make_topic(partitions=partitions)
    fill(kafka.bootstrap, topic, partitions, per_partition, batch_records=100)  # ~4 KB batches
    assigned = [(topic, p, 0) for p in range(partitions)]
    small_fetches = {"max_partition_fetch_bytes": 16_384}  # several answers per partition
    unpaused = _fetch_counts_never_paused(loop, kafka, topic, assigned, partitions * per_partition, small_fetches)

    received = Received()
    paused: set[int] = set()
    while_paused: list[tuple[int, int]] = []
    positions: list[tuple[int, int, int]] = []  # (partition, offset, position() while paused)
    pauses = 0

    def resume(partition: int) -> None:
        paused.discard(partition)
        client.resume([(topic, partition)])

    def on_message(msg) -> None:
        nonlocal pauses
        if msg.partition in paused:
            while_paused.append((msg.partition, msg.offset))
        received.on_message(msg)
        if received.count % pause_every == 0:
            client.pause([(topic, msg.partition)])
            paused.add(msg.partition)
            pauses += 1
            loop.call_later(0.002, resume, msg.partition)
            loop.call_soon(lambda p=msg.partition, o=msg.offset: positions.append((p, o, client.position(topic, p))))

    client = connect(loop, kafka.bootstrap, on_message=on_message, on_error=received.on_error, **small_fetches)
    _read_through_the_pauses(loop, client, assigned, received, per_partition)
    assert not while_paused, f"records delivered while paused: {while_paused[:10]}"
    assert pauses >= partitions * per_partition // pause_every - 1
    assert positions and all(position == offset + 1 for _p, offset, position in positions), \
        "a paused partition's position is right after the record that paused it"
    assert _fetch_counts(client, topic) == unpaused, "the rest of a set, or the Fetch already out, was fetched again"
    close(loop, client)


def test_unknown_topic_is_reported_once_not_spun_on(kafka, loop):
    received = Received()
    client = connect(loop, kafka.bootstrap, on_message=received.on_message, on_error=received.on_error)
    missing = f"never-created-{uuid.uuid4().hex[:8]}"
    client.assign([(missing, 0, 0)])
    client.start()
    run_until(loop, lambda: bool(received.errors), 10, "the unknown topic to be reported")
    sleep(loop, 1.5)
    assert len(received.errors) == 1
    err = received.errors[0]
    assert isinstance(err, KafkaError) and err.code == UNKNOWN_TOPIC_OR_PARTITION and missing in str(err)
    assert kafka.metadata().topics.get(missing) is None, "a consumer must not create topics"
    close(loop, client)


def test_topic_deleted_while_consuming_is_reported_once(kafka, make_topic, loop):
    topic = make_topic(partitions=2)
    fill(kafka.bootstrap, topic, 2, 20)
    received = Received()
    client = connect(loop, kafka.bootstrap, on_message=received.on_message, on_error=received.on_error,
                     metadata_min_refresh_ms=50)
    client.assign([(topic, 0, 0), (topic, 1, 0)])
    client.start()
    run_until(loop, lambda: received.count >= 40, 10, "the records before the deletion")
    kafka.delete_topic(topic)
    run_until(loop, lambda: len(received.errors) >= 2, 20, "the deletion to be reported")
    sleep(loop, 1.5)
    assert sorted(e.code for e in received.errors) == [UNKNOWN_TOPIC_OR_PARTITION] * 2, received.errors
    assert {str(e).split("]")[0].split("[")[1] for e in received.errors} == {"0", "1"}, "once per partition"
    assert received.count == 40
    close(loop, client)


@pytest.mark.slow
def test_leader_killed_mid_stream_resumes_at_the_same_position(kafka3, loop):
    topic = kafka3.create_topic(kafka3.unique_topic_name("leader-kill"), partitions=2)
    fill(kafka3.bootstrap, topic, 2, 2000)
    received = Received()
    client = connect(loop, kafka3.bootstrap, on_message=received.on_message, metadata_min_refresh_ms=50)
    client.assign([(topic, 0, 0), (topic, 1, 0)])
    client.start()
    run_until(loop, lambda: received.count >= 1000, 20, "the first records")
    killed = kafka3.leader_of(topic, 0)
    try:
        kafka3.kill(killed)
        survivors = ",".join(kafka3.node(n).bootstrap for n in kafka3.running_nodes() if n != killed)
        fill(survivors, topic, 2, 1000)
        run_until(loop, lambda: received.count >= 6000, 60, "every record through the new leaders")
        sleep(loop, 0.5)
        for p in range(2):
            assert received.offsets[(topic, p)] == list(range(3000)), f"partition {p}: gap or repeat"
        assert all(e.retriable for e in received.errors if isinstance(e, KafkaError)), received.errors
    finally:
        client.close()
        sleep(loop, 0.3)
        kafka3.restart(killed)


def test_poll_fetches_one_round_at_a_time(kafka, make_topic, loop):
    topic = make_topic(partitions=2)
    for _ in range(3):  # three record batches per partition, each larger than the 1 KiB limit
        fill(kafka.bootstrap, topic, 2, 10, value_size=200)
    received = Received()
    client = connect(loop, kafka.bootstrap, on_message=received.on_message, on_error=received.on_error,
                     max_partition_fetch_bytes=1024)
    client.assign([(topic, 0, 0), (topic, 1, 0)])
    rounds = 0
    while received.count < 60:
        before = received.count
        (err,) = call(loop, client.poll)
        assert err is None
        rounds += 1
        assert rounds < 100
        if rounds > 1:
            assert received.count > before, "each round over unread records delivers some"
    sleep(loop, 0.7)
    assert received.count == 60, "nothing is fetched between polls"
    assert rounds > 1, "a 1 KiB partition limit cannot return everything at once"
    assert rounds >= 3, "one batch per partition and round"
    for p in range(2):
        assert received.offsets[(topic, p)] == list(range(30))
    close(loop, client)
