"""At linger_ms=0 a record for an idle partition goes out inside produce() (Sender.send_alone),
against a FakeCluster: only when nothing of its partition is queued or in flight and its
connection has nothing pending; every callback still fires exactly once, in order, and the
idempotent sequences stay contiguous."""

from __future__ import annotations

import asyncio

from fake_broker import Delay
from test_producer_logic import TOPIC, collect, cluster_with_topic, learn_topic, make, produces, run_until, values

from kafkaev.protocol.codec import ApiKey


def test_a_record_for_an_idle_partition_is_sent_inside_produce(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, linger_ms=0, idempotent=True)
    results, cb_for = collect()
    learn_topic(loop, env)
    env.producer.produce(TOPIC, None, b"warm", cb_for(0), partition=0)  # opens the connection
    run_until(loop, lambda: len(results) == 1)
    sender = env.producer._sender
    env.producer.produce(TOPIC, None, b"alone", cb_for(1), partition=0)
    assert sender.in_flight == 1, "sent inside produce(), before the loop ran"
    # the partition is busy now: the next records linger into one batch, sent after it
    env.producer.produce(TOPIC, None, b"next-1", cb_for(2), partition=0)
    env.producer.produce(TOPIC, None, b"next-2", cb_for(3), partition=0)
    assert sender.in_flight == 1
    run_until(loop, lambda: len(results) == 4)
    results.assert_each_once(range(4))
    assert all(err is None for _, err in results.values()), results
    assert values(cluster, 0) == [b"warm", b"alone", b"next-1", b"next-2"]
    batches = [b for seen in produces(cluster) for b in seen.batches]
    assert [b.values for b in batches][-2:] == [[b"alone"], [b"next-1", b"next-2"]]
    sequences = [(b.base_sequence, len(b.values)) for b in batches]
    assert sequences == [(0, 1), (1, 1), (2, 2)], "idempotent sequences stay contiguous"
    assert [m.offset for m, _ in (results[i] for i in range(4))] == [0, 1, 2, 3]
    assert not env.errors


def test_a_connection_with_a_request_pending_is_not_written_inside_produce(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 2)
    cluster.script(ApiKey.PRODUCE, Delay(0.05))  # the first answer is slow
    env = make(loop, cluster, linger_ms=0, produce_connections=1)
    results, cb_for = collect()
    learn_topic(loop, env)
    env.producer.produce(TOPIC, None, b"warm", cb_for(0), partition=0)
    run_until(loop, lambda: len(results) == 1)
    sender = env.producer._sender
    env.producer.produce(TOPIC, None, b"p0", cb_for(1), partition=0)
    assert sender.in_flight == 1
    # partition 1 is idle, but its connection (the only lane) waits for partition 0's answer
    env.producer.produce(TOPIC, None, b"p1", cb_for(2), partition=1)
    assert sender.in_flight == 1, "a second request on a busy socket waits for the linger turn"
    run_until(loop, lambda: len(results) == 3)
    results.assert_each_once(range(3))
    assert values(cluster, 0) == [b"warm", b"p0"] and values(cluster, 1) == [b"p1"]


def test_records_produced_from_their_predecessors_callback_each_go_alone_in_order(loop, fake_cluster):
    cluster = cluster_with_topic(fake_cluster, 1)
    env = make(loop, cluster, linger_ms=0, idempotent=True)
    results, cb_for = collect()
    learn_topic(loop, env)
    count = 30
    sent_inside: list[int] = []

    def chain(i: int):
        inner = cb_for(i)

        def acked(meta, err):
            inner(meta, err)
            if i + 1 < count:
                env.producer.produce(TOPIC, None, b"%02d" % (i + 1), chain(i + 1), partition=0)
                sent_inside.append(env.producer._sender.in_flight)
        return acked

    env.producer.produce(TOPIC, None, b"00", chain(0), partition=0)
    run_until(loop, lambda: len(results) == count)
    results.assert_each_once(range(count))
    assert all(err is None for _, err in results.values())
    assert values(cluster, 0) == [b"%02d" % i for i in range(count)]
    assert sent_inside == [1] * (count - 1), "each one sent from inside the ack callback"
    assert [b.base_sequence for seen in produces(cluster) for b in seen.batches] == list(range(count))
    assert not env.errors


def test_acks_0_and_a_linger_keep_the_timer(loop, fake_cluster):
    for options in ({"acks": 0, "linger_ms": 0}, {"linger_ms": 5}):
        cluster = cluster_with_topic(fake_cluster, 1)
        env = make(loop, cluster, **options)
        results, cb_for = collect()
        learn_topic(loop, env)
        env.producer.produce(TOPIC, None, b"warm", cb_for(0), partition=0)
        run_until(loop, lambda: len(results) == 1)
        env.producer.produce(TOPIC, None, b"later", cb_for(1), partition=0)
        assert env.producer._sender.in_flight == 0, options
        run_until(loop, lambda: len(results) == 2)
        results.assert_each_once(range(2))
        loop.run_until_complete(asyncio.sleep(0))
