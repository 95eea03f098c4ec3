"""The transactional producer on the real broker: commit and abort, read back by
confluent-kafka (read_committed and read_uncommitted) and by kafkaev's own read_committed
consumer; which protocol version each broker gets."""

from __future__ import annotations

import asyncio
import os

import pytest
from consumer_helpers import Received, run_until
from producer_helpers import Delivery, close, flush
from transaction_helpers import abort, begin_and_write, commit, init, peer_read_to_end

from kafkaev.client import Client
from kafkaev.errors import PURGE_QUEUE
from kafkaev.producer.transaction import TxnState
from kafkaev.producer.transaction_manager import TRANSACTION_V1, TRANSACTION_V2
from kafkaev.types import OFFSET_BEGINNING

TRANSACTIONS = int(os.environ.get("KAFKAEV_TXN_COUNT", "1000"))
RECORDS_PER_TRANSACTION = 100
PARTITIONS = 3
LONG_LINGER_MS = 20000  # a batch that waits for it cannot be acknowledged within a test's waits
SHORT_WAIT_S = 0.3


def _expected_version(kafka) -> int:
    return TRANSACTION_V2 if kafka.finalized_features().get("transaction.version", 0) >= 2 else TRANSACTION_V1


@pytest.mark.compat
def test_commit_and_abort_small(kafka, make_topic, uv):
    topic = make_topic(partitions=PARTITIONS)
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=1)
    assert init(client, uv) is None
    delivery = Delivery(40)
    for txn in range(4):
        client.begin_transaction()
        for i in range(10):
            n = txn * 10 + i
            client.produce(topic, b"k%d" % n, b"%d" % n, delivery.cb(n))
        result = commit(client, uv) if txn % 2 == 0 else abort(client, uv)
        assert result is None
    delivery.assert_each_once()
    close(client, uv)
    committed = sorted(int(m.value()) for m in peer_read_to_end(kafka.bootstrap, topic, PARTITIONS, "read_committed"))
    assert committed == [n for n in range(40) if (n // 10) % 2 == 0]
    everything = sorted(int(m.value()) for m in peer_read_to_end(kafka.bootstrap, topic, PARTITIONS,
                                                                 "read_uncommitted"))
    # An abort may fail records before they are sent (PURGE_QUEUE); those never reach the log.
    purged = {n for n, e in delivery.errors.items() if e.code == PURGE_QUEUE}
    assert not set(delivery.errors) - purged
    assert everything == [n for n in range(40) if n not in purged]


@pytest.mark.compat
def test_the_protocol_version_follows_the_finalized_feature(kafka, topic, uv):
    """4.x brokers (transaction.version 2) get KIP-890's v2, whose every EndTxn bumps the
    epoch; 3.9 gets v1, whose epoch stays across transactions."""
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}")
    assert init(client, uv) is None
    manager = client._producer.txn
    assert manager is not None
    expected = _expected_version(kafka)
    assert manager.version == expected
    if kafka.kafka_version.major >= 4:
        assert manager.version == TRANSACTION_V2, "a 4.x broker must get transactions v2"
    else:
        assert manager.version == TRANSACTION_V1
    identity = client._producer._sender.identity
    epochs = [identity.producer_epoch]
    for _ in range(3):
        client.begin_transaction()
        client.produce(topic, None, b"x")
        assert commit(client, uv) is None
        epochs.append(identity.producer_epoch)
    if expected == TRANSACTION_V2:
        assert epochs == [epochs[0] + i for i in range(4)], epochs
    else:
        assert epochs == [epochs[0]] * 4, epochs
    close(client, uv)


@pytest.mark.compat
def test_abort_fails_every_unsent_record_once(kafka, topic, uv):
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=60000)
    assert init(client, uv) is None
    client.begin_transaction()
    delivery = Delivery(500)
    for n in range(500):
        client.produce(topic, None, b"%d" % n, delivery.cb(n))
    assert abort(client, uv) is None
    delivery.assert_each_once()
    assert not delivery.metas
    assert {e.code for e in delivery.errors.values()} == {PURGE_QUEUE}
    assert all(e.txn_requires_abort for e in delivery.errors.values())
    assert client._producer.txn.txn.state is TxnState.READY
    # The next transaction works as usual.
    client.begin_transaction()
    client.produce(topic, None, b"after")
    assert commit(client, uv) is None
    close(client, uv)
    assert [m.value() for m in peer_read_to_end(kafka.bootstrap, topic, 1, "read_uncommitted")] == [b"after"]


@pytest.mark.compat
def test_a_first_batch_goes_before_its_linger_once_the_adds_are_due(kafka, topic, uv):
    """v2: a transaction's first batch to a partition has its leader add the partition, so it
    goes as soon as the previous transaction's markers are written, not at the linger's end:
    that round trip overlaps the records still to come. The partition's later batches linger
    as usual. v1 adds the partition with AddPartitionsToTxn, and its batches linger."""
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=LONG_LINGER_MS)
    assert init(client, uv) is None
    early = _expected_version(kafka) == TRANSACTION_V2
    for _ in range(2):  # the second transaction's first batch waits for the first one's markers
        delivery = Delivery(2)
        client.begin_transaction()
        client.produce(topic, None, b"first", delivery.cb(0))
        if early:
            run_until(uv, lambda d=delivery: bool(d.metas), LONG_LINGER_MS / 1000 / 2, "the first batch's ack")
        client.produce(topic, None, b"second", delivery.cb(1))
        uv.run_until_complete(asyncio.sleep(SHORT_WAIT_S))
        assert 1 not in delivery.metas, "a later batch must linger"
        assert (0 in delivery.metas) is early
        assert commit(client, uv) is None
        delivery.assert_each_once()
    close(client, uv)
    values = [m.value() for m in peer_read_to_end(kafka.bootstrap, topic, 1, "read_committed")]
    assert values == [b"first", b"second"] * 2


def _read_committed_with_kafkaev(kafka, topic: str, partitions: int, uv) -> dict[int, list[bytes]]:
    """kafkaev's own read_committed consumer, from the beginning to each partition's end."""
    received = Received()
    reader = Client(kafka.bootstrap, loop=uv, isolation_level="read_committed", on_batch=received.on_batch)
    ends = {}

    def got_ends(result, err):
        assert err is None, err
        ends.update({p: latest for p, (_earliest, latest) in result.items()})

    reader.offsets_for(topic, got_ends)
    run_until(uv, lambda: len(ends) == partitions, 30, "end offsets")
    reader.assign([(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    reader.start()
    # read_committed steps over the last commit marker too: each position reaches the end offset
    run_until(uv, lambda: all(reader.position(topic, p) >= ends[p] for p in range(partitions)), 120,
              "the read_committed consumer to reach the end")
    close(reader, uv)
    return {p: received.values.get((topic, p), []) for p in range(partitions)}


@pytest.mark.compat
def test_alternate_commit_and_abort_many_transactions(kafka, make_topic, uv):
    """1,000 transactions of 100 records, alternately committed and aborted: read_committed
    readers (confluent-kafka's and kafkaev's) see exactly the committed records in order,
    read_uncommitted sees all of them."""
    topic = make_topic(partitions=PARTITIONS)
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=2)
    assert init(client, uv) is None
    total = TRANSACTIONS * RECORDS_PER_TRANSACTION
    delivery = Delivery(total)
    for txn in range(TRANSACTIONS):
        client.begin_transaction()
        for i in range(RECORDS_PER_TRANSACTION):
            n = txn * RECORDS_PER_TRANSACTION + i
            client.produce(topic, None, b"%d" % n, delivery.cb(n), partition=n % PARTITIONS)
        if txn % 2 == 0:
            assert commit(client, uv) is None
        else:
            flush(client, uv)  # every record written, so read_uncommitted sees all of them
            assert abort(client, uv) is None
    delivery.assert_each_once()
    assert not delivery.errors, list(delivery.errors.items())[:3]
    close(client, uv)

    def expected(committed_only: bool) -> dict[int, list[bytes]]:
        out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        for n in range(total):
            if not committed_only or (n // RECORDS_PER_TRANSACTION) % 2 == 0:
                out[n % PARTITIONS].append(b"%d" % n)
        return out

    def by_partition(messages) -> dict[int, list[bytes]]:
        out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        for m in messages:
            out[m.partition()].append(m.value())
        return out

    committed = by_partition(peer_read_to_end(kafka.bootstrap, topic, PARTITIONS, "read_committed"))
    assert committed == expected(True)
    everything = by_partition(peer_read_to_end(kafka.bootstrap, topic, PARTITIONS, "read_uncommitted"))
    assert everything == expected(False)
    assert _read_committed_with_kafkaev(kafka, topic, PARTITIONS, uv) == committed


@pytest.mark.compat
def test_close_aborts_an_open_transaction(kafka, topic, uv):
    """Left open, the transaction would hold read_committed readers back at its first offset
    until transaction_timeout_ms; close() aborts it."""
    client = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=1)
    assert init(client, uv) is None
    begin_and_write(client, uv, topic, b"open", 5)
    close(client, uv)
    other = Client(kafka.bootstrap, loop=uv, transactional_id=f"txn-other-{topic}")
    assert init(other, uv) is None
    other.begin_transaction()
    other.produce(topic, None, b"after")
    assert commit(other, uv) is None
    close(other, uv)
    assert [m.value() for m in peer_read_to_end(kafka.bootstrap, topic, 1, "read_committed")] == [b"after"]
