"""The transactional producer's errors on the real broker: wrong use refused at once naming
the state, fencing by a second client with the same id, a transaction the broker timed out,
and a record that failed inside a transaction."""

from __future__ import annotations

import pytest
from consumer_helpers import sleep
from producer_helpers import Delivery, close, flush, wait_for
from transaction_helpers import abort, begin_and_write, commit, init, peer_read_to_end

import kafkaev
from kafkaev.client import Client
from kafkaev.errors import MESSAGE_TOO_LARGE, PRODUCER_FENCED, STATE, KafkaError
from kafkaev.producer.transaction import TxnState
from kafkaev.producer.transaction_manager import TRANSACTION_V2
from kafkaev.types import ConsumerGroupMetadata


def _state(client: Client) -> TxnState:
    manager = client._producer.txn
    assert manager is not None
    return manager.txn.state


@pytest.mark.compat
def test_wrong_use_is_refused_at_once_naming_the_state(kafka, topic, uv):
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}")
    meta = ConsumerGroupMetadata("g", 1, "member")
    with pytest.raises(KafkaError, match="begin_transaction: not allowed in state UNINITIALIZED") as info:
        client.begin_transaction()
    assert info.value.code == STATE
    with pytest.raises(KafkaError, match="produce: not allowed in state UNINITIALIZED"):
        client.produce(topic, None, b"x")
    with pytest.raises(KafkaError, match="commit_transaction: not allowed in state UNINITIALIZED"):
        client.commit_transaction(lambda err: None)
    assert init(client, uv) is None
    with pytest.raises(KafkaError, match="init_transactions: not allowed in state READY"):
        client.init_transactions(lambda err: None)
    with pytest.raises(KafkaError, match="commit_transaction: not allowed in state READY .*begin_transaction"):
        client.commit_transaction(lambda err: None)
    with pytest.raises(KafkaError, match="abort_transaction: not allowed in state READY"):
        client.abort_transaction(lambda err: None)
    with pytest.raises(KafkaError, match="produce: not allowed in state READY"):
        client.produce(topic, None, b"outside")
    with pytest.raises(KafkaError, match="produce: not allowed in state READY"):
        client.produce("a-topic-not-known-yet", None, b"outside")
    with pytest.raises(KafkaError, match="send_offsets_to_transaction: not allowed in state READY"):
        client.send_offsets_to_transaction({(topic, 0): 1}, meta, lambda err: None)
    client.begin_transaction()
    with pytest.raises(KafkaError, match="begin_transaction: not allowed in state IN_TRANSACTION"):
        client.begin_transaction()
    with pytest.raises(KafkaError, match="send_offsets_to_transaction: no consumer group"):
        client.send_offsets_to_transaction({(topic, 0): 1}, None, lambda err: None)  # type: ignore[arg-type]
    with pytest.raises(KafkaError, match="group_metadata: the client is not subscribed to a group"):
        client.group_metadata()
    with pytest.raises(TypeError, match="'group_metadata' must be a kafkaev.ConsumerGroupMetadata"):
        client.send_offsets_to_transaction({(topic, 0): 1}, ("g", 1, "m"), lambda err: None)  # type: ignore[arg-type]
    with pytest.raises(KafkaError, match="send_offsets_to_transaction: the consumer is in no generation"):
        client.send_offsets_to_transaction({(topic, 0): 1}, ConsumerGroupMetadata("g", -1, ""), lambda err: None)
    with pytest.raises(ValueError, match="send_offsets_to_transaction: offset for"):
        client.send_offsets_to_transaction({(topic, 0): -5}, meta, lambda err: None)
    with pytest.raises(TypeError, match="commit_transaction: 'cb' must be callable"):
        client.commit_transaction(None)  # type: ignore[arg-type]
    delivery = Delivery(1)
    client.produce(topic, None, b"inside", delivery.cb(0))
    client.commit_transaction(lambda err: None)
    assert _state(client) is TxnState.COMMITTING
    with pytest.raises(KafkaError, match="begin_transaction: not allowed in state COMMITTING"):
        client.begin_transaction()
    with pytest.raises(KafkaError, match="produce: not allowed in state COMMITTING"):
        client.produce(topic, None, b"while committing")
    uv.run_until_complete(wait_for(lambda: _state(client) is TxnState.READY, 30, "the commit"))
    delivery.assert_each_once()
    close(client, uv)
    plain = Client(kafka.bootstrap, loop=uv)
    with pytest.raises(KafkaError, match="begin_transaction: the client has no transactional_id"):
        plain.begin_transaction()
    close(plain, uv)


def test_conflicting_options_are_value_errors():
    with pytest.raises(ValueError, match="'idempotent' must be True"):
        Client("127.0.0.1:9", transactional_id="t", idempotent=False)
    with pytest.raises(ValueError, match="'acks' must be -1"):
        Client("127.0.0.1:9", transactional_id="t", acks=1)
    with pytest.raises(ValueError, match="'transactional_id' must be a non-empty str"):
        Client("127.0.0.1:9", transactional_id="")
    with pytest.raises(ValueError, match="'transaction_timeout_ms'"):
        Client("127.0.0.1:9", transactional_id="t", transaction_timeout_ms=0)
    config = Client("127.0.0.1:9", transactional_id="t", acks="all").config
    assert config.idempotent and config.acks == -1


@pytest.mark.compat
@pytest.mark.parametrize("next_call", ["produce", "commit"])
def test_a_second_client_with_the_same_id_fences_the_first(kafka, topic, uv, next_call):
    tid = f"txn-{topic}-{next_call}"
    first = Client(kafka.bootstrap, loop=uv, transactional_id=tid, linger_ms=1)
    assert init(first, uv) is None
    begin_and_write(first, uv, topic, b"first", 10)

    second = Client(kafka.bootstrap, loop=uv, transactional_id=tid)
    assert init(second, uv) is None  # fences the first and aborts its open transaction

    if next_call == "produce":
        late = Delivery(1)
        first.produce(topic, None, b"first-late", late.cb(0))
        uv.run_until_complete(wait_for(lambda: late.complete, 30, "the fenced record's callback"))
        late.assert_each_once()
        err = late.errors[0]
        assert err.code == PRODUCER_FENCED and err.fatal, err
        with pytest.raises(KafkaError, match="commit_transaction: refused.*FATAL_ERROR") as info:
            first.commit_transaction(lambda err: None)
        assert info.value.code == PRODUCER_FENCED and info.value.fatal
    else:
        err = commit(first, uv)
        assert isinstance(err, KafkaError) and err.code == PRODUCER_FENCED and err.fatal, err
    assert _state(first) is TxnState.FATAL_ERROR
    with pytest.raises(KafkaError, match="begin_transaction: refused") as info:
        first.begin_transaction()
    assert info.value.fatal
    with pytest.raises(KafkaError, match="produce: refused"):
        first.produce(topic, None, b"after fencing")

    second.begin_transaction()
    second.produce(topic, None, b"second")
    assert commit(second, uv) is None
    close(first, uv)
    close(second, uv)
    assert [m.value() for m in peer_read_to_end(kafka.bootstrap, topic, 1, "read_committed")] == [b"second"]


@pytest.mark.compat
def test_a_transaction_hung_past_its_timeout_is_aborted_by_the_broker(kafka, topic, uv):
    tid = f"txn-{topic}"
    hung = Client(kafka.bootstrap, loop=uv, transactional_id=tid, transaction_timeout_ms=1000, linger_ms=1)
    assert init(hung, uv) is None
    begin_and_write(hung, uv, topic, b"hung", 5)
    sleep(uv, 4.0)  # the coordinator aborts it (checked every second by the test broker)
    # Aborted: nothing of it is visible, and nothing holds the last stable offset back.
    assert peer_read_to_end(kafka.bootstrap, topic, 1, "read_committed") == []
    err = commit(hung, uv)
    assert isinstance(err, KafkaError), "a transaction the broker aborted must not commit"
    recovered: list[bytes] = []
    if hung._producer.txn.version >= TRANSACTION_V2:
        # The coordinator tells a timeout from a newer producer: abort, take the next epoch, go on.
        assert err.txn_requires_abort and not err.fatal, err
        assert _state(hung) is TxnState.ABORTABLE_ERROR
        assert abort(hung, uv) is None
        hung.begin_transaction()
        hung.produce(topic, None, b"recovered")
        assert commit(hung, uv) is None
        recovered.append(b"recovered")
    else:
        # A v1 coordinator answers PRODUCER_FENCED: its epoch moved on when it aborted.
        assert err.code == PRODUCER_FENCED and err.fatal, err
    restarted = Client(kafka.bootstrap, loop=uv, transactional_id=tid)
    assert init(restarted, uv) is None
    restarted.begin_transaction()
    restarted.produce(topic, None, b"restarted")
    assert commit(restarted, uv) is None
    close(hung, uv)
    close(restarted, uv)
    got = [m.value() for m in peer_read_to_end(kafka.bootstrap, topic, 1, "read_committed")]
    assert got == [*recovered, b"restarted"]


@pytest.mark.compat
def test_a_record_failed_inside_a_transaction_requires_an_abort(kafka, make_topic, uv):
    topic = make_topic(config={"max.message.bytes": "2000"})
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=1)
    assert init(client, uv) is None
    client.begin_transaction()
    delivery = Delivery(2)
    client.produce(topic, None, b"small", delivery.cb(0))
    flush(client, uv)
    client.produce(topic, None, b"x" * 5000, delivery.cb(1))  # larger than the topic allows
    uv.run_until_complete(wait_for(lambda: delivery.complete, 30, "the refused record"))
    delivery.assert_each_once()
    err = delivery.errors[1]
    assert err.code == MESSAGE_TOO_LARGE and err.txn_requires_abort and not err.fatal
    assert _state(client) is TxnState.ABORTABLE_ERROR
    with pytest.raises(KafkaError, match="commit_transaction: not allowed in state ABORTABLE_ERROR") as info:
        client.commit_transaction(lambda err: None)
    assert info.value.txn_requires_abort
    with pytest.raises(KafkaError, match="produce: not allowed in state ABORTABLE_ERROR"):
        client.produce(topic, None, b"more")
    assert abort(client, uv) is None
    # The next transaction goes on, its sequences accepted after the failed one (v1: a bump).
    client.begin_transaction()
    after = Delivery(20)
    for n in range(20):
        client.produce(topic, None, b"after-%d" % n, after.cb(n))
    assert commit(client, uv) is None
    after.assert_each_once()
    assert not after.errors
    close(client, uv)
    got = [m.value() for m in peer_read_to_end(kafka.bootstrap, topic, 1, "read_committed")]
    assert got == [b"after-%d" % n for n in range(20)]


def test_kafkaev_exports_the_group_metadata_type():
    meta = kafkaev.ConsumerGroupMetadata("g", 3, "m-1", "i-1")
    assert (meta.group_id, meta.generation_id, meta.member_id, meta.group_instance_id) == ("g", 3, "m-1", "i-1")


@pytest.mark.compat
def test_a_commit_hears_at_once_when_a_record_of_it_fails(kafka, make_topic, uv):
    """The commit does not wait for records that will never be sent once the transaction
    cannot commit; the abort then fails them, each once."""
    topic = make_topic(partitions=2, config={"max.message.bytes": "2000"})
    # Small batches, one request at a time: most of partition 1's are still queued when
    # partition 0's record is refused.
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=1,
                    delivery_timeout_ms=60000, batch_size=256, max_in_flight=1)
    assert init(client, uv) is None
    client.begin_transaction()
    delivery = Delivery(2001)
    client.produce(topic, None, b"x" * 5000, delivery.cb(0), partition=0)  # refused by the topic
    for n in range(1, 2001):  # partition 0's only batch is the refused record: no split
        client.produce(topic, None, b"small-%d" % n, delivery.cb(n), partition=1)
    started = uv.time()
    err = commit(client, uv, timeout=20)
    assert isinstance(err, KafkaError) and err.txn_requires_abort and not err.fatal, err
    assert uv.time() - started < 20
    assert abort(client, uv) is None
    delivery.assert_each_once()
    assert delivery.errors[0].code == MESSAGE_TOO_LARGE
    close(client, uv)
    assert peer_read_to_end(kafka.bootstrap, topic, 2, "read_committed") == []


@pytest.mark.compat
def test_a_fenced_client_closes_at_once_failing_what_it_never_sent(kafka, topic, uv):
    tid = f"txn-{topic}"
    first = Client(kafka.bootstrap, loop=uv, transactional_id=tid, linger_ms=1, batch_size=256, max_in_flight=1,
                   delivery_timeout_ms=60000)
    assert init(first, uv) is None
    first.begin_transaction()
    warmup = Delivery(1)
    first.produce(topic, None, b"first", warmup.cb(0))
    flush(first, uv)
    second = Client(kafka.bootstrap, loop=uv, transactional_id=tid)
    assert init(second, uv) is None
    delivery = Delivery(2000)
    for n in range(2000):  # small batches, one request at a time: most stay queued
        first.produce(topic, None, b"late-%d" % n, delivery.cb(n))
    uv.run_until_complete(wait_for(lambda: _state(first) is TxnState.FATAL_ERROR, 30, "the fence"))
    close(first, uv, timeout=20)
    delivery.assert_each_once()
    assert not delivery.metas
    assert all(e.fatal for e in delivery.errors.values())
    close(second, uv)


@pytest.mark.compat
def test_a_batch_split_inside_a_transaction_keeps_its_sequences(kafka, make_topic, uv):
    """A batch larger than the topic allows is split (MESSAGE_TOO_LARGE); inside a transaction
    the halves take its sequences, so the transaction still commits, every record once, in order."""
    topic = make_topic(config={"max.message.bytes": "2000"})
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=50)
    assert init(client, uv) is None
    for txn in range(2):
        client.begin_transaction()
        delivery = Delivery(60)
        for n in range(60):
            client.produce(topic, None, b"%d-%02d-" % (txn, n) + b"v" * 200, delivery.cb(n))
        assert commit(client, uv) is None
        delivery.assert_each_once()
        assert not delivery.errors
        offsets = [delivery.metas[n].offset for n in range(60)]
        assert offsets == sorted(offsets)
    close(client, uv)
    got = [m.value()[:5] for m in peer_read_to_end(kafka.bootstrap, topic, 1, "read_committed")]
    assert got == [b"%d-%02d-" % (t, n) for t in range(2) for n in range(60)]
