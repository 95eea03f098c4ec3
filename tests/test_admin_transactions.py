"""Admin.list_transactions, describe_transactions and describe_producers against the real broker,
while a confluent-kafka transactional producer holds a transaction open and after it commits.
confluent-kafka's AdminClient has none of these calls; the three views are checked against each
other and against what the producer did."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from kafkaev.errors import TRANSACTIONAL_ID_NOT_FOUND
from kafkaev.types import TopicPartition

pytestmark = pytest.mark.compat

TXN_TIMEOUT_S = 30.0
SETTLE_TIMEOUT_S = 15.0
TRANSACTION_TIMEOUT_MS = 60000


def _until(check, what: str):
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"never saw {what}")


def test_an_open_then_committed_transaction_in_all_three_views(kafka, admin, make_topic):
    topic = make_topic(partitions=2)
    txn_id = f"admin-txn-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": kafka.bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS})
    producer.init_transactions(TXN_TIMEOUT_S)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, f"v{i}".encode(), partition=1)
    assert producer.flush(TXN_TIMEOUT_S) == 0

    listed = _until(lambda: [t for t in admin.run(admin.list_transactions) if t.transactional_id == txn_id],
                    f"{txn_id} listed")
    [listing] = listed
    assert listing.state == "Ongoing"
    assert [t.transactional_id for t in admin.run(admin.list_transactions, states=["Ongoing"])].count(txn_id) == 1
    assert txn_id not in {t.transactional_id for t in admin.run(admin.list_transactions, states=["CompleteCommit"])}
    assert txn_id in {t.transactional_id for t in admin.run(admin.list_transactions, producer_ids=[listing.producer_id])}

    described = admin.run(admin.describe_transactions, [txn_id])[txn_id]
    assert described.error is None and described.state == "Ongoing"
    assert described.producer_id == listing.producer_id and described.coordinator == listing.coordinator
    assert described.partitions == (TopicPartition(topic, 1),)
    assert described.timeout_ms == TRANSACTION_TIMEOUT_MS and described.start_time_ms > 0
    assert described.coordinator == admin.run(admin.find_coordinator, txn_id, key_type=1)

    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    producers = admin.run(admin.describe_producers, [p0, p1])
    assert producers[p0].error is None and producers[p0].producers == ()
    [state] = producers[p1].producers
    assert state.producer_id == listing.producer_id and state.producer_epoch == described.producer_epoch
    assert state.last_sequence == 2 and state.current_txn_start_offset == 0

    producer.commit_transaction(TXN_TIMEOUT_S)
    done = _until(lambda: (d := admin.run(admin.describe_transactions, [txn_id])[txn_id]).state == "CompleteCommit"
                  and d, "the commit")
    assert done.partitions == ()
    [after] = admin.run(admin.describe_producers, [p1])[p1].producers
    assert after.current_txn_start_offset == -1  # no transaction open any more


def test_an_unknown_transactional_id_is_its_error(admin):
    txn_id = f"admin-no-txn-{uuid.uuid4().hex[:8]}"
    described = admin.run(admin.describe_transactions, [txn_id])[txn_id]
    assert described.error is not None and described.error.code == TRANSACTIONAL_ID_NOT_FOUND


def test_bad_arguments_name_the_argument(admin):
    with pytest.raises(ValueError, match="'transactional_ids'"):
        admin.describe_transactions([], lambda r, e: None)
    with pytest.raises(TypeError, match="'producer_ids'"):
        admin.list_transactions(lambda r, e: None, producer_ids=["1"])
    with pytest.raises(TypeError, match="'partitions'"):
        admin.describe_producers([("t", 0)], lambda r, e: None)
