"""What commit() and kafkaev.stop() mean from inside a delivery callback, on the real broker:
everything handed to a callback so far counts as delivered, the record whose callback is
running included; after stop() no further record is handed over, and the next run() resumes
right after the last one that was."""

from __future__ import annotations

import uuid

from consumer_helpers import Received, call, close, connect, fill, run_until, sleep

import kafkaev
from kafkaev.types import TopicPartition


def committed_offset(loop, client, topic: str) -> int:
    offsets, err = call(loop, lambda cb: client.committed([(topic, 0)], cb))
    assert err is None, err
    return offsets[TopicPartition(topic, 0)]


def test_commit_inside_on_message_includes_the_running_record(kafka, topic, loop):
    fill(kafka.bootstrap, topic, 1, 10)
    received = Received()
    commits: list[object] = []
    positions: list[int] = []

    def handler(msg):
        received.on_message(msg)
        if msg.offset == 5:
            positions.append(client.position(topic, 0))
            client.commit(commits.append)

    client = connect(loop, kafka.bootstrap, on_message=handler, on_error=received.on_error)
    client.subscribe([topic], group_id=f"g-{uuid.uuid4().hex[:8]}", auto_commit=False)
    run_until(loop, lambda: received.count >= 10 and bool(commits), 30, "10 records and the commit")
    assert commits == [None]
    assert positions == [6], "position() inside on_message counts the running record"
    assert committed_offset(loop, client, topic) == 6, "the commit covers offsets 0..5, the running one included"
    assert received.offsets[(topic, 0)] == list(range(10))
    assert client.position(topic, 0) == 10
    # Outside a delivery commit() sends the position: everything.
    (err,) = call(loop, client.commit)
    assert err is None, err
    assert committed_offset(loop, client, topic) == 10
    assert not received.errors, received.errors
    close(loop, client)


def test_commit_inside_on_batch_includes_the_whole_batch(kafka, topic, loop):
    fill(kafka.bootstrap, topic, 1, 10)
    received = Received()
    commits: list[object] = []
    batch_ends: list[int] = []

    def handler(messages):
        received.on_batch(messages)
        if not batch_ends:
            batch_ends.append(messages[-1].offset + 1)
            client.commit(commits.append)

    client = connect(loop, kafka.bootstrap, on_batch=handler, on_error=received.on_error)
    client.subscribe([topic], group_id=f"g-{uuid.uuid4().hex[:8]}", auto_commit=False)
    run_until(loop, lambda: received.count >= 10 and bool(commits), 30, "the batch and the commit")
    assert commits == [None]
    assert committed_offset(loop, client, topic) == batch_ends[0], "the whole batch, not the position before it"
    close(loop, client)


def test_stop_inside_on_message_delivers_no_further_record(kafka, topic, loop):
    fill(kafka.bootstrap, topic, 1, 10)
    received = Received()
    stop_at = [2]  # the offset whose callback calls stop()

    def handler(msg):
        received.on_message(msg)
        if msg.offset == stop_at[0]:
            kafkaev.stop()

    client = connect(loop, kafka.bootstrap, on_message=handler, on_error=received.on_error)
    client.assign([(topic, 0, 0)])
    client.start()
    kafkaev.run(loop=loop)
    assert received.offsets[(topic, 0)] == [0, 1, 2], "exactly 3 calls: the rest of the batch waits"
    assert client.position(topic, 0) == 3
    # The next run resumes right after the last record handed over, none skipped or repeated.
    stop_at[0] = 6
    kafkaev.run(loop=loop)
    assert received.offsets[(topic, 0)] == list(range(7))
    assert client.position(topic, 0) == 7
    # Turned without a stop pending, the rest arrives.
    run_until(loop, lambda: received.count >= 10, 10, "the rest")
    sleep(loop, 0.3)
    assert received.offsets[(topic, 0)] == list(range(10))
    assert not received.errors, received.errors
    close(loop, client)


def test_stop_inside_on_message_then_commit_covers_what_was_delivered(kafka, topic, loop):
    fill(kafka.bootstrap, topic, 1, 10)
    received = Received()
    commits: list[object] = []

    def handler(msg):
        received.on_message(msg)
        if msg.offset == 3:
            kafkaev.stop()
            client.commit(commits.append)

    client = connect(loop, kafka.bootstrap, on_message=handler, on_error=received.on_error)
    client.subscribe([topic], group_id=f"g-{uuid.uuid4().hex[:8]}", auto_commit=False)
    kafkaev.run(loop=loop)
    assert received.offsets[(topic, 0)] == [0, 1, 2, 3]
    assert client.position(topic, 0) == 4
    run_until(loop, lambda: bool(commits), 30, "the commit")
    assert commits == [None]
    assert committed_offset(loop, client, topic) == 4
    close(loop, client)
