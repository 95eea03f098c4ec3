"""Leader failure while records are in flight, on the three-node cluster.

With idempotence every record must end up in the log exactly once and in order; without it
nothing may be lost (duplicates are allowed and counted). Every callback fires exactly once.
"""

from __future__ import annotations

import collections
import os

import pytest
from producer_helpers import Delivery, close, produce_all, read_back, wait_for

from kafkaev.client import Client

RECORDS = int(os.environ.get("KAFKAEV_FAULT_RECORDS", "200000"))
PARTITIONS = 3
FAULT_AT = RECORDS // 4  # records produced before the leader is hit


async def _produce_with_fault(client, cluster, topic, records, delivery, fault):
    victim = cluster.leader_of(topic, 0)
    await produce_all(client, topic, records[:FAULT_AT], delivery)
    await wait_for(lambda: len(delivery.metas) > FAULT_AT // 2, 120, "records in flight before the fault")
    fault(victim)
    await produce_all(client, topic, records[FAULT_AT:], delivery, start=FAULT_AT)
    return victim


def _check_log(cluster, topic, records, idempotent):
    got = read_back(cluster.bootstrap, topic, len(records), timeout=120)
    counts = collections.Counter(int(m.value()) for m in got)
    missing = [i for i in range(len(records)) if counts[i] == 0]
    assert not missing, f"{len(missing)} records lost, e.g. {missing[:5]}"
    duplicates = sum(c - 1 for c in counts.values())
    if idempotent:
        assert duplicates == 0, f"{duplicates} duplicates with idempotence on"
        last = collections.defaultdict(lambda: -1)
        for m in got:
            i = int(m.value())
            assert i > last[m.partition()], "per-partition order broken"
            last[m.partition()] = i
    return duplicates


@pytest.mark.three_nodes
@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "plain"])
@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_leader_failure_while_in_flight(kafka3, make_topic, uv, idempotent, fault):
    topic = make_topic(partitions=PARTITIONS, replication_factor=3, cluster=kafka3)
    records = [(b"k%d" % (i % 1000), b"%d" % i) for i in range(RECORDS)]
    client = Client(kafka3.bootstrap, loop=uv, idempotent=idempotent, acks=-1, linger_ms=5,
                    request_timeout_ms=5000, retry_backoff_ms=50, metadata_min_refresh_ms=50,
                    reconnect_backoff_ms=50, reconnect_backoff_max_ms=500, delivery_timeout_ms=120000)
    delivery = Delivery(RECORDS)
    paused: list[int] = []

    def hit(node: int) -> None:
        if fault == "kill":
            kafka3.kill(node)
        else:
            kafka3.pause(node)
            paused.append(node)
            # resumed after a few seconds: requests to it time out meanwhile
            uv.call_later(4.0, kafka3.resume, node)

    try:
        uv.run_until_complete(_produce_with_fault(client, kafka3, topic, records, delivery, hit))
        uv.run_until_complete(wait_for(lambda: delivery.complete, 150, "every callback"))
    finally:
        for node in paused:
            try:
                kafka3.resume(node)
            except Exception:  # noqa: BLE001 - already resumed by the timer
                pass
    delivery.assert_each_once()
    assert not delivery.errors, f"{len(delivery.errors)} records failed, e.g. {list(delivery.errors.values())[:3]}"
    close(client, uv)
    duplicates = _check_log(kafka3, topic, records, idempotent)
    print(f"{fault} {'idempotent' if idempotent else 'plain'}: {duplicates} duplicates in the log")
