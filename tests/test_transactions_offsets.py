"""KIP-447 on the real broker: a consumer group's offsets committed inside a transaction with
the consumer's group metadata, refused for a stale generation, and read with require_stable
by a read_committed consumer."""

from __future__ import annotations

import itertools
import time

import pytest
from consumer_helpers import Received, call, close, run_until
from producer_helpers import Delivery
from producer_helpers import close as close_producer
from transaction_helpers import abort, commit, init, peer_read_to_end

from kafkaev.client import Client
from kafkaev.cluster.coordinator import CoordinatorLink
from kafkaev.errors import (
    COORDINATOR_LOAD_IN_PROGRESS,
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    UNKNOWN_MEMBER_ID,
    KafkaError,
)
from kafkaev.producer.markers import MARKERS_WAIT_MAX_S, MarkersWatch
from kafkaev.producer.sender import Sender
from kafkaev.producer.transaction import TxnState
from kafkaev.producer.transaction_manager import TransactionManager
from kafkaev.types import ConsumerGroupMetadata, TopicPartition

INPUT_RECORDS = 20
STALE_CODES = {ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID}


def _fill(kafka, topic: str, count: int, uv) -> None:
    writer = Client(kafka.bootstrap, loop=uv)
    delivery = Delivery(count)
    for n in range(count):
        writer.produce(topic, None, b"%d" % n, delivery.cb(n))
    close_producer(writer, uv)
    delivery.assert_each_once()
    assert not delivery.errors


def _member(kafka, topic: str, group: str, received: Received, uv) -> Client:
    consumer = Client(kafka.bootstrap, loop=uv, group_id=group, auto_commit=False,
                      isolation_level="read_committed", on_message=received.on_message,
                      session_timeout_ms=6000, heartbeat_interval_ms=500)
    consumer.subscribe([topic])
    return consumer


@pytest.mark.compat
def test_offsets_commit_with_the_transaction_and_are_read_stable(kafka, make_topic, uv):
    source, sink = make_topic(), make_topic()
    group = f"eos-{source}"
    _fill(kafka, source, INPUT_RECORDS, uv)
    received = Received()
    consumer = _member(kafka, source, group, received, uv)
    run_until(uv, lambda: received.count >= INPUT_RECORDS, 60, "the input")
    producer = Client(kafka.bootstrap, loop=uv, transactional_id=f"eos-{source}", linger_ms=1)
    assert init(producer, uv) is None

    producer.begin_transaction()
    for value in received.values[(source, 0)]:
        producer.produce(sink, None, b"out-" + value)
    meta = consumer.group_metadata()
    assert meta.group_id == group and meta.generation_id >= 1 and meta.member_id
    (err,) = call(uv, lambda cb: producer.send_offsets_to_transaction({(source, 0): INPUT_RECORDS}, meta, cb))
    assert err is None, err

    # A read_committed member asks with require_stable: the answer waits for the transaction.
    asked_at = time.monotonic()
    answer: list = []
    consumer.committed([(source, 0)], lambda result, e: answer.append((time.monotonic(), result, e)))
    run_until(uv, lambda: time.monotonic() - asked_at > 1.0, 5, "a second")
    assert answer == [], "require_stable must not read offsets of an open transaction"
    committed_at = time.monotonic()
    assert commit(producer, uv) is None
    run_until(uv, lambda: answer, 30, "the committed offsets")
    (answered_at, result, e) = answer[0]
    assert e is None, e
    assert answered_at >= committed_at
    assert result == {TopicPartition(source, 0): INPUT_RECORDS}

    close_producer(producer, uv)
    close(uv, consumer)
    out = [m.value() for m in peer_read_to_end(kafka.bootstrap, sink, 1, "read_committed")]
    assert out == [b"out-%d" % n for n in range(INPUT_RECORDS)]


@pytest.mark.compat
def test_aborted_offsets_are_not_committed(kafka, make_topic, uv):
    source = make_topic()
    group = f"eos-abort-{source}"
    _fill(kafka, source, 5, uv)
    received = Received()
    consumer = _member(kafka, source, group, received, uv)
    run_until(uv, lambda: received.count >= 5, 60, "the input")
    producer = Client(kafka.bootstrap, loop=uv, transactional_id=f"eos-abort-{source}")
    assert init(producer, uv) is None
    producer.begin_transaction()
    (err,) = call(uv, lambda cb: producer.send_offsets_to_transaction({(source, 0): 5}, consumer.group_metadata(), cb))
    assert err is None, err
    assert abort(producer, uv) is None
    result, e = call(uv, lambda cb: consumer.committed([(source, 0)], cb))
    assert e is None, e
    assert result == {TopicPartition(source, 0): -1}
    close_producer(producer, uv)
    close(uv, consumer)


@pytest.mark.compat
def test_a_stale_generation_cannot_send_offsets(kafka, make_topic, uv):
    """KIP-447: once the group moved on to a new generation, a zombie's offsets are refused."""
    source = make_topic(partitions=2)
    group = f"eos-zombie-{source}"
    first_received, second_received = Received(), Received()
    first = _member(kafka, source, group, first_received, uv)
    run_until(uv, lambda: len(first.assignment()) == 2, 60, "the first member's assignment")
    stale = first.group_metadata()
    second = _member(kafka, source, group, second_received, uv)
    run_until(uv, lambda: first.group_metadata().generation_id > stale.generation_id and second.assignment(), 60,
              "a new generation")
    producer = Client(kafka.bootstrap, loop=uv, transactional_id=f"eos-zombie-{source}")
    assert init(producer, uv) is None
    producer.begin_transaction()
    (err,) = call(uv, lambda cb: producer.send_offsets_to_transaction({(source, 0): 1}, stale, cb))
    assert isinstance(err, KafkaError) and err.code in STALE_CODES, err
    assert err.txn_requires_abort and not err.fatal
    assert producer._producer.txn.txn.state is TxnState.ABORTABLE_ERROR
    with pytest.raises(KafkaError, match="commit_transaction: not allowed in state ABORTABLE_ERROR"):
        producer.commit_transaction(lambda e: None)
    assert abort(producer, uv) is None
    # The current generation's member may.
    producer.begin_transaction()
    (err,) = call(uv, lambda cb: producer.send_offsets_to_transaction({(source, 0): 1}, first.group_metadata(), cb))
    assert err is None, err
    assert commit(producer, uv) is None
    close_producer(producer, uv)
    close(uv, second)
    close(uv, first)


TRANSACTIONS_OF_EVERY_PARTITION = 8
SINK_PARTITIONS = 3
FLOAT_SLACK_S = 1e-9  # loop times are floats


def test_first_batches_and_offsets_are_added_one_ask_at_a_time(kafka, make_topic, uv, caplog, monkeypatch):
    """Transactions v2: a broker asked twice at once to add partitions of one transactional id
    to its transaction fails the older ask (a Produce with NOT_ENOUGH_REPLICAS, a TxnOffsetCommit
    with COORDINATOR_LOAD_IN_PROGRESS), each then waits out the retry backoff. A transaction's
    first batches to one leader go in one Produce, whatever connection each partition uses, and
    the offsets go while no first batch is unanswered: nothing is ever sent twice."""
    source, sink = make_topic(), make_topic(partitions=SINK_PARTITIONS)
    group = f"eos-asks-{source}"
    _fill(kafka, source, INPUT_RECORDS, uv)
    received = Received()
    consumer = _member(kafka, source, group, received, uv)
    run_until(uv, lambda: received.count >= INPUT_RECORDS, 60, "the input")
    producer = Client(kafka.bootstrap, loop=uv, transactional_id=f"eos-asks-{source}", linger_ms=1,
                      produce_connections=SINK_PARTITIONS)
    assert init(producer, uv) is None
    if producer._producer.txn.version < 2:
        pytest.skip("transactions v1 add partitions with AddPartitionsToTxn, one at a time")

    refusals: list[int] = []
    answer_code = CoordinatorLink.on_error_code
    monkeypatch.setattr(CoordinatorLink, "on_error_code",
                        lambda link, code: refusals.append(code) or answer_code(link, code))
    caplog.set_level("DEBUG", logger="kafkaev.producer")
    for n in range(TRANSACTIONS_OF_EVERY_PARTITION):
        caplog.clear()
        producer.begin_transaction()
        delivery = Delivery(SINK_PARTITIONS)
        for partition in range(SINK_PARTITIONS):
            producer.produce(sink, None, b"out-%d-%d" % (n, partition), delivery.cb(partition), partition=partition)
        offsets = {(source, 0): n + 1}
        (err,) = call(uv, lambda cb, offsets=offsets: producer.send_offsets_to_transaction(
            offsets, consumer.group_metadata(), cb))
        assert err is None, err
        assert commit(producer, uv) is None
        delivery.assert_each_once()
        assert not delivery.errors, delivery.errors
        sends = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Produce to")]
        assert len(sends) == 1, f"transaction {n}: each first batch once, all in one Produce: {sends}"
        assert f"{SINK_PARTITIONS} batches" in sends[0], sends
    assert COORDINATOR_LOAD_IN_PROGRESS not in refusals, refusals
    close_producer(producer, uv)
    close(uv, consumer)
    out = sorted(m.value() for m in peer_read_to_end(kafka.bootstrap, sink, SINK_PARTITIONS, "read_committed"))
    assert out == sorted(b"out-%d-%d" % (n, p) for n in range(TRANSACTIONS_OF_EVERY_PARTITION)
                         for p in range(SINK_PARTITIONS))


def test_a_transactions_first_batches_wait_for_the_previous_markers(kafka, make_topic, uv, monkeypatch):
    """Transactions v2: EndTxn is answered before the coordinator has written the markers, and a
    Produce that asks to add a partition meanwhile is held by its leader for 20 ms; the next
    transaction's first batches go only once the coordinator said the markers are written, or
    MARKERS_WAIT_MAX_S after EndTxn's answer."""
    sink = make_topic(partitions=SINK_PARTITIONS)
    producer = Client(kafka.bootstrap, loop=uv, transactional_id=f"markers-{sink}", linger_ms=0)
    assert init(producer, uv) is None
    if producer._producer.txn.version < 2:
        pytest.skip("transactions v1 add partitions with AddPartitionsToTxn, which the client retries itself")
    # Each event as (clock, loop time): uvloop's loop time counts whole milliseconds, too coarse
    # to order a send after the answer it followed; the bound is a loop timer's, in loop time.
    epochs: list[tuple[float, float]] = []  # each new epoch: every EndTxn's answer (v2)
    sends: list[tuple[float, float]] = []  # each Produce written
    written: list[tuple[float, float]] = []  # each answer saying the markers are written
    answers: list[tuple[float, float]] = []  # every DescribeTransactions answer
    new_epoch, send_request, answered = TransactionManager._new_epoch, Sender._send_request, MarkersWatch._answered

    def now() -> tuple[float, float]:
        return time.perf_counter(), uv.time()

    monkeypatch.setattr(TransactionManager, "_new_epoch",
                        lambda manager, *args: epochs.append(now()) or new_epoch(manager, *args))

    def watch_answered(watch: MarkersWatch, *args: object) -> None:
        before = watch._written
        answers.append(now())
        answered(watch, *args)
        if watch._written and not before:
            written.append(now())

    monkeypatch.setattr(MarkersWatch, "_answered", watch_answered)
    monkeypatch.setattr(Sender, "_send_request",
                        lambda sender, *args: sends.append(now()) or send_request(sender, *args))
    # Back to back, each begun in the previous one's commit callback, as a pipeline does.
    delivery = Delivery(SINK_PARTITIONS * TRANSACTIONS_OF_EVERY_PARTITION)
    outcomes: list[KafkaError | None] = []

    def transaction(n: int) -> None:
        producer.begin_transaction()
        for partition in range(SINK_PARTITIONS):
            producer.produce(sink, None, b"out-%d-%d" % (n, partition), delivery.cb(n * SINK_PARTITIONS + partition),
                             partition=partition)
        producer.commit_transaction(lambda err: outcomes.append(err) or (
            err is None and n + 1 < TRANSACTIONS_OF_EVERY_PARTITION and transaction(n + 1)))

    uv.call_soon(transaction, 0)
    run_until(uv, lambda: len(outcomes) == TRANSACTIONS_OF_EVERY_PARTITION or any(outcomes), 60, "the transactions")
    assert outcomes == [None] * TRANSACTIONS_OF_EVERY_PARTITION, outcomes
    delivery.assert_each_once()
    assert len(epochs) == TRANSACTIONS_OF_EVERY_PARTITION, epochs
    for ended, next_ended in itertools.pairwise(epochs):
        first = min(sent for sent in sends if ended < sent < next_ended)
        told = [at for at in written if ended < at < first]
        # loop time is whole milliseconds as floats: 1241.990 - 1241.988 < 0.002
        assert told or first[1] - ended[1] >= MARKERS_WAIT_MAX_S - FLOAT_SLACK_S, (ended, first, written, sends)
    # Whether an answer said "written" inside the bound depends on the broker's speed: a
    # slow one (the test cluster's C1-only JVM on a loaded host) is still writing them at 2 ms.
    assert answers, "the coordinator was never asked, or never answered"
    assert producer._producer.txn._markers.asks >= len(answers) >= len(written)
    close_producer(producer, uv)


def test_offsets_go_while_the_markers_are_written_and_their_acceptance_says_so(kafka, make_topic, uv, monkeypatch):
    """v2: a TxnOffsetCommit sent right after EndTxn's answer is not held for the previous
    transaction's markers. The group coordinator answers it CONCURRENT_TRANSACTIONS while they
    are written, it is retried at once, and once accepted the transaction's first batch goes
    with no DescribeTransactions of its own."""
    source, sink = make_topic(), make_topic()
    group = f"eos-early-{source}"
    _fill(kafka, source, 2, uv)
    received = Received()
    consumer = _member(kafka, source, group, received, uv)
    run_until(uv, lambda: received.count >= 2, 60, "the input")
    producer = Client(kafka.bootstrap, loop=uv, transactional_id=f"eos-early-{source}", linger_ms=0)
    assert init(producer, uv) is None
    if producer._producer.txn.version < 2:
        pytest.skip("transactions v1 add the group with AddOffsetsToTxn")
    watch = producer._producer.txn._markers
    second_attempts: list[bool] = []  # each of the second transaction's TxnOffsetCommit attempts: markers pending?
    coordinator = TransactionManager._coordinator

    def coordinator_recorded(manager, link, what, send, *args, **kwargs):
        def send_recorded(conn, answer):
            if what.startswith("TxnOffsetCommit") and asks_before:
                second_attempts.append(watch.pending())
            send(conn, answer)
        coordinator(manager, link, what, send_recorded, *args, **kwargs)

    monkeypatch.setattr(TransactionManager, "_coordinator", coordinator_recorded)
    outcomes: list[tuple[str, KafkaError | None]] = []
    asks_before: list[int] = []

    def second(err: KafkaError | None) -> None:
        outcomes.append(("first commit", err))
        asks_before.append(watch.asks)
        producer.begin_transaction()  # EndTxn was answered just now: its markers are being written
        producer.send_offsets_to_transaction({(source, 0): 2}, consumer.group_metadata(),
                                             lambda e: outcomes.append(("offsets", e)))
        producer.produce(sink, None, b"second", partition=0)
        producer.commit_transaction(lambda e: outcomes.append(("second commit", e)))

    producer.begin_transaction()
    producer.produce(sink, None, b"first", partition=0)
    # the first transaction's offsets find the group's coordinator: the second's go at once
    producer.send_offsets_to_transaction({(source, 0): 1}, consumer.group_metadata(),
                                         lambda e: outcomes.append(("first offsets", e)))
    producer.commit_transaction(second)
    run_until(uv, lambda: len(outcomes) == 4, 30, "the two transactions")
    assert outcomes == [("first offsets", None), ("first commit", None), ("offsets", None),
                        ("second commit", None)], outcomes
    assert second_attempts and second_attempts[0], second_attempts  # sent before the markers were known, within the bound
    assert watch.asks == asks_before[0]  # the first batch waited for the offsets' answer, not for an ask
    result, e = call(uv, lambda cb: consumer.committed([(source, 0)], cb))
    assert e is None and result == {TopicPartition(source, 0): 2}, (result, e)
    close_producer(producer, uv)
    close(uv, consumer)
    out = [m.value() for m in peer_read_to_end(kafka.bootstrap, sink, 1, "read_committed")]
    assert out == [b"first", b"second"]


def test_offsets_sent_while_the_markers_are_written_fail_once_when_the_client_closes(kafka, make_topic, uv):
    """v2: offsets sent right after EndTxn's answer, while its markers are being written; a close
    that gives up at once fails them exactly once, before its own callback, and nothing is sent
    after it."""
    sink = make_topic()
    producer = Client(kafka.bootstrap, loop=uv, transactional_id=f"held-{sink}", linger_ms=0)
    assert init(producer, uv) is None
    if producer._producer.txn.version < 2:
        pytest.skip("transactions v1 send AddOffsetsToTxn first, with no pause")
    producer.begin_transaction()
    producer.produce(sink, None, b"first", partition=0)
    outcomes: list[tuple[str, KafkaError | None]] = []

    def committed(err: KafkaError | None) -> None:
        # Recorded, not asserted here: the client reports what a callback raises.
        outcomes.append(("commit", err))
        if err is None:
            producer.begin_transaction()  # inside the pause: EndTxn was answered just now
            meta = ConsumerGroupMetadata(f"held-{sink}", 1, "member-1")
            producer.send_offsets_to_transaction({(sink, 0): 1}, meta, lambda e: outcomes.append(("offsets", e)))
        producer.close(lambda e: outcomes.append(("close", e)), timeout_ms=0)

    producer.commit_transaction(committed)
    run_until(uv, lambda: outcomes and outcomes[-1][0] == "close", 30, "the close")
    settle = uv.time() + 10 * MARKERS_WAIT_MAX_S  # past the pause: a late send would show now
    run_until(uv, lambda: uv.time() >= settle, 5, "the pause")
    assert [what for what, _err in outcomes] == ["commit", "offsets", "close"], outcomes
    assert outcomes[0][1] is None and isinstance(outcomes[1][1], KafkaError), outcomes
