"""The transactional producer on the three-node cluster while its transaction coordinator's
broker is killed or paused: the coordinator is found again, and every transaction is
committed exactly once (one that could not commit is aborted and sent again)."""

from __future__ import annotations

import pytest
from producer_helpers import Delivery, close, wait_for
from transaction_helpers import abort, commit, init, peer_read_to_end

from kafkaev.client import Client

TRANSACTIONS = 30
RECORDS = 50
PARTITIONS = 3
KILL_AT = 10
RESTART_AT = 20


@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_transactions_survive_a_coordinator_failure(kafka3, make_topic, uv, fault):
    topic = make_topic(partitions=PARTITIONS, cluster=kafka3)
    client = Client(kafka3.bootstrap, loop=uv, transactional_id=f"txn-{topic}", linger_ms=2,
                    request_timeout_ms=5000, retry_backoff_ms=50)
    assert init(client, uv, timeout=120) is None
    manager = client._producer.txn
    killed = None
    retried = 0
    for t in range(TRANSACTIONS):
        while True:
            client.begin_transaction()
            delivery = Delivery(RECORDS)
            for i in range(RECORDS):
                client.produce(topic, None, b"%d-%d" % (t, i), delivery.cb(i), partition=i % PARTITIONS)
            if t == KILL_AT and killed is None:
                uv.run_until_complete(wait_for(lambda: manager._link.node_id >= 0, 30, "the coordinator"))
                killed = manager._link.node_id
                # mid-transaction: records in flight, the commit still to come
                (kafka3.kill if fault == "kill" else kafka3.pause)(killed)
            err = commit(client, uv, timeout=180)
            uv.run_until_complete(wait_for(lambda d=delivery: d.complete, 180, "every record's callback"))
            delivery.assert_each_once()
            if err is None:
                assert not delivery.errors
                break
            assert err.txn_requires_abort and not err.fatal, err
            assert abort(client, uv, timeout=180) is None
            retried += 1
        if t == RESTART_AT and killed is not None:
            (kafka3.restart if fault == "kill" else kafka3.resume)(killed)
    close(client, uv)
    assert killed is not None
    got = peer_read_to_end(kafka3.bootstrap, topic, PARTITIONS, "read_committed")
    values = sorted(m.value() for m in got)
    assert values == sorted(b"%d-%d" % (t, i) for t in range(TRANSACTIONS) for i in range(RECORDS))
    # Per partition, transactions in order and each record once.
    for p in range(PARTITIONS):
        seen = [tuple(map(int, m.value().split(b"-"))) for m in got if m.partition() == p]
        assert seen == sorted(seen)
