"""A hostile broker through the whole kafkaev.Client, not one Connection: the scripted fake
(fake_broker.py) turns hostile under a client that is producing with callbacks, reading an
assigned partition and running an admin call, and answers every request with garbage, a 2 GB size
prefix, a frame cut off mid-way, a correlation id the client never sent, or nothing at all.

Each pending callback fires exactly once with a clear error (a second firing fails the test: the
``Delivery`` and ``Calls`` records are checked by the ``each_callback_at_most_once`` fixture),
memory stays bounded (no allocation in the size the frame announces), and when the real broker
comes back at the fake's address (the fake pipes new connections to the ``kafka`` fixture) the
same client produces, consumes and answers admin calls again."""

from __future__ import annotations

import asyncio
import struct
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from consumer_helpers import Received
from exactly_once import Calls
from fake_broker import Action, FakeCluster, HangUp, RawBytes, ReceivedRequest, Silence
from producer_helpers import Delivery, produce_all, wait_for

from kafkaev import errors
from kafkaev.admin import Admin
from kafkaev.client import Client
from kafkaev.errors import KafkaError
from kafkaev.protocol import codec
from kafkaev.types import OFFSET_BEGINNING

HOSTILE_RECORDS = 2000
RECOVERED_RECORDS = 500
REQUEST_TIMEOUT_MS = 1000
DELIVERY_TIMEOUT_MS = 4000
# Everything pending has failed by then: delivery timeouts plus a request timeout, with room for load.
SETTLE_S = 30.0
RECOVER_S = 60.0
# What the hostile phase may allocate in Python objects at its peak: the records themselves and a
# few receive buffers, nowhere near the gigabytes a size prefix announces.
MEMORY_BOUND = 64 * 1024 * 1024
SIZE_PREFIX = struct.Struct(">i")
TWO_GB_PREFIX = (1 << 31) - 1  # the largest size an int32 prefix can announce
ONE_GB = 1 << 30  # within the client's max_response_size: framed apart, so grown only as bytes come
CUT_OFF_CLAIM = 100  # a frame announcing this many bytes, of which only the correlation id arrives
UNSENT_CORRELATION_OFFSET = 1_000_000
GARBAGE = bytes(range(256)) * 4
# What a request cut short by a hostile broker may fail with: each says what happened.
CLEAR_CODES = {errors.PROTOCOL, errors.TRANSPORT, errors.TIMED_OUT, errors.MSG_TIMED_OUT, errors.STATE}


def _garbage(req: ReceivedRequest) -> Action:
    """A frame with the right correlation id and a body that decodes as nothing."""
    body = SIZE_PREFIX.pack(req.correlation_id) + GARBAGE
    return RawBytes(SIZE_PREFIX.pack(len(body)) + body)


def _two_gb_prefix(req: ReceivedRequest) -> Action:
    return RawBytes(SIZE_PREFIX.pack(TWO_GB_PREFIX) + SIZE_PREFIX.pack(req.correlation_id), then=Silence())


def _one_gb_prefix_then_stall(req: ReceivedRequest) -> Action:
    return RawBytes(SIZE_PREFIX.pack(ONE_GB) + SIZE_PREFIX.pack(req.correlation_id) + GARBAGE, then=Silence())


def _cut_off(req: ReceivedRequest) -> Action:
    return RawBytes(SIZE_PREFIX.pack(CUT_OFF_CLAIM) + SIZE_PREFIX.pack(req.correlation_id), then=HangUp())


def _unsent_correlation_id(req: ReceivedRequest) -> Action:
    body = codec.MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="hostile", controller_id=-1, topics=[])
    cid = req.correlation_id + UNSENT_CORRELATION_OFFSET
    return RawBytes(codec.encode_response_frame(codec.ApiKey.METADATA, 12, cid, body))


def _stall(req: ReceivedRequest) -> Action:
    return Silence()


HOSTILE: dict[str, Callable[[ReceivedRequest], Action]] = {
    "garbage": _garbage,
    "2gb-size-prefix": _two_gb_prefix,
    "1gb-size-prefix-then-stall": _one_gb_prefix_then_stall,
    "cut-off-frame": _cut_off,
    "unsent-correlation-id": _unsent_correlation_id,
    "stall": _stall,
}


@pytest.fixture
def loop(new_loop):
    return new_loop("uvloop")


def _turn_hostile(cluster: FakeCluster, answer: Callable[[ReceivedRequest], Action]) -> None:
    for api_key in codec.REQUEST_CLASSES:
        cluster.script(api_key, answer)


def _assert_clear(err: Any, what: str) -> None:
    assert isinstance(err, KafkaError), f"{what}: {err!r}"
    assert err.code in CLEAR_CODES, f"{what}: {err!r}"
    assert str(err).strip(), f"{what}: an error without a message"


@pytest.mark.parametrize("hostility", list(HOSTILE))
def test_a_hostile_broker_fails_each_pending_callback_once_and_the_client_recovers(
        loop, fake_cluster, kafka, topic, hostility):
    cluster = fake_cluster(1)
    cluster.create_topic(topic, 1)  # the name the real broker has too (its id comes with its metadata)
    client_errors: list[KafkaError] = []
    received = Received()
    client = Client(cluster.bootstrap, loop=loop, linger_ms=2, request_timeout_ms=REQUEST_TIMEOUT_MS,
                    connect_timeout_ms=REQUEST_TIMEOUT_MS, delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
                    reconnect_backoff_ms=50, reconnect_backoff_max_ms=200, retry_backoff_ms=50,
                    retry_backoff_max_ms=200, metadata_max_age_ms=1000, fetch_max_wait_ms=200,
                    on_error=client_errors.append, on_message=received.on_message)
    admin = Admin(client, loop=loop)
    connected = Calls("connect")
    client.connect(connected.cb("connect"))
    loop.run_until_complete(wait_for(lambda: len(connected) == 1, 10, "the fake's first answer"))
    assert connected["connect"][1] is None
    client.assign([(topic, 0, OFFSET_BEGINNING)])
    client.start()
    loop.run_until_complete(wait_for(lambda: cluster.held_fetches > 0, 10, "a fetch long-polling the fake"))

    tracemalloc.start()
    try:
        _turn_hostile(cluster, HOSTILE[hostility])
        hostile = Delivery(HOSTILE_RECORDS)
        loop.run_until_complete(produce_all(client, topic, [(b"k", b"hostile-%d" % i) for i in range(HOSTILE_RECORDS)],
                                            hostile))
        admin_calls = Calls("admin")
        admin.describe_cluster(admin_calls.cb("describe_cluster"))
        admin.list_topics(admin_calls.cb("list_topics"))
        loop.run_until_complete(wait_for(lambda: hostile.complete and len(admin_calls) == 2, SETTLE_S,
                                         "every pending callback"))
        loop.run_until_complete(asyncio.sleep(REQUEST_TIMEOUT_MS / 1000))  # room for a second firing
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    hostile.assert_each_once()
    assert not hostile.metas, "a record was acknowledged by the hostile broker"
    for index, err in hostile.errors.items():
        _assert_clear(err, f"record {index}")
    admin_calls.assert_each_once(["describe_cluster", "list_topics"])
    for name in ("describe_cluster", "list_topics"):
        result, err = admin_calls[name]
        assert result is None
        _assert_clear(err, name)
    assert peak < MEMORY_BOUND, f"the hostile phase peaked at {peak} bytes"
    assert received.count == 0

    # The real broker comes back at the fake's address: new connections reach it, and its metadata
    # moves the client to its own listener.
    cluster.clear_scripts()
    cluster.nodes[1].proxy_to(kafka.bootstrap.split(",")[0])
    recovered = Delivery(RECOVERED_RECORDS)
    loop.run_until_complete(produce_all(client, topic, [(b"k", b"back-%d" % i) for i in range(RECOVERED_RECORDS)],
                                        recovered))
    loop.run_until_complete(wait_for(lambda: recovered.complete and received.count >= RECOVERED_RECORDS, RECOVER_S,
                                     f"delivery and consumption from the real broker ({len(recovered.metas)} "
                                     f"delivered, {len(recovered.errors)} failed, {received.count} consumed)"))
    recovered.assert_each_once()
    assert not recovered.errors, list(recovered.errors.values())[:3]
    assert sorted(m.offset for m in recovered.metas.values()) == list(range(RECOVERED_RECORDS))
    assert received.values[(topic, 0)] == [b"back-%d" % i for i in range(RECOVERED_RECORDS)]
    again = Calls("admin after recovery")
    admin.list_topics(again.cb("list_topics"))
    loop.run_until_complete(wait_for(lambda: len(again) == 1, RECOVER_S, "an admin call on the real broker"))
    topics, err = again["list_topics"]
    assert err is None and topic in topics
    admin.close()
    closed = Calls("close")
    client.close(closed.cb("close"))
    loop.run_until_complete(wait_for(lambda: len(closed) == 1, 30, "close"))
    unclear = [e for e in client_errors if not isinstance(e, KafkaError) or e.code not in CLEAR_CODES]
    assert not unclear, unclear[:5]
