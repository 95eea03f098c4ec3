"""The transactional producer on the real broker: commit and abort, read back by
confluent-kafka (read_committed and read_uncommitted) and by kafkaev's own read_committed
consumer."""

from __future__ import annotations

import pytest
from producer_helpers import Delivery, close
from transaction_helpers import abort, commit, init, peer_read_to_end

from kafkaev.client import Client
from kafkaev.errors import PURGE_QUEUE


@pytest.mark.compat
def test_commit_and_abort_small(kafka, make_topic, uv):
    topic = make_topic(partitions=3)
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
    committed = sorted(int(m.value()) for m in peer_read_to_end(kafka.bootstrap, topic, 3, "read_committed"))
    assert committed == [n for n in range(40) if (n // 10) % 2 == 0]
    everything = sorted(int(m.value()) for m in peer_read_to_end(kafka.bootstrap, topic, 3, "read_uncommitted"))
    # An abort may fail records before they are sent (PURGE_QUEUE); those never reach the log.
    purged = {n for n, e in delivery.errors.items() if e.code == PURGE_QUEUE}
    assert everything == [n for n in range(40) if n not in purged]
