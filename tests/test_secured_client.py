"""Whole-client runs on the secured cluster (ACLs on, sessions of 10 s that must be
re-authenticated): a kafkaev.Client produces, consumes in a group and runs admin calls over mutual
TLS, SASL_SSL SCRAM-SHA-512 and SASL_SSL OAUTHBEARER (tokens from the built-in OIDC provider);
and a producer and a group consumer per SASL mechanism run side by side for a minute with
zero errors and zero lost records while every connection re-authenticates again and again."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from typing import Any

import pytest
from consumer_helpers import Received
from producer_helpers import Delivery, produce_all, wait_for
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev.admin import Admin
from kafkaev.client import Client
from kafkaev.protocol.connection import REAUTH_WINDOW_START, REAUTH_WINDOW_WIDTH
from kafkaev.security import SASLConfig, TLSConfig

PARTITIONS = 3
# The count; KAFKAEV_SECURED_RECORDS makes iterating cheaper.
RECORDS = int(os.environ.get("KAFKAEV_SECURED_RECORDS", "100000"))
RUN_TIMEOUT_S = 180.0
SOAK_S = float(os.environ.get("KAFKAEV_REAUTH_SOAK_S", "60"))
SOAK_BATCH = 200
SOAK_PAUSE_S = 0.05
# A connection re-authenticates 85-95% into its session, counted from its own login. That login
# can come many seconds after the client is made: an OAUTHBEARER connection first waits for a token
# from the issuer, whose HTTP server runs on threads of this very process and so competes for the
# GIL with the loop encoding 100,000 records. So the run's length says nothing; each connection's
# own age does: one ready for longer than this has surely re-authenticated.
REAUTH_LATEST = REAUTH_WINDOW_START + REAUTH_WINDOW_WIDTH
REAUTH_SLACK_S = 2.0  # the exchange itself, and a loop busy encoding when the timer is due
AGE_SAMPLE_S = 0.25
AGED_WAIT_S = 30.0  # how long a run may wait at its end for its oldest connection to come of age


class LoginAges:
    """When each of a pool's connections was first seen ready (sampled every AGE_SAMPLE_S, so no
    earlier than its login): the connections whose re-authentication is surely past, and a wait
    until the oldest one's is."""

    def __init__(self, loop: asyncio.AbstractEventLoop, pool: Any, session_s: float) -> None:
        self._pool = pool
        self._due_after_s = session_s * REAUTH_LATEST + REAUTH_SLACK_S
        self.first_ready: dict[int, tuple[float, Any]] = {}  # id(conn) -> (when, conn): conn kept alive
        self._task = loop.create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            self._look()
            await asyncio.sleep(AGE_SAMPLE_S)

    def _look(self) -> None:
        now = time.monotonic()
        for pooled in self._pool.connections():
            if pooled.conn.state == "ready":
                self.first_ready.setdefault(id(pooled.conn), (now, pooled))

    def surely_due(self) -> list[Any]:
        """The pooled connections, still in the pool, whose re-authentication is surely past."""
        now = time.monotonic()
        live = {id(p.conn) for p in self._pool.connections()}
        return [pooled for key, (seen, pooled) in self.first_ready.items()
                if key in live and now - seen >= self._due_after_s]

    async def wait_until_one_is_due(self) -> None:
        await wait_for(lambda: bool(self.surely_due()), AGED_WAIT_S, "a connection past its re-authentication")

    def stop(self) -> None:
        self._task.cancel()

    def assert_each_due_reauthenticated(self) -> None:
        due = self.surely_due()
        assert due, "no connection lived past its re-authentication"
        stale = [(p.role.name, p.node_id, p.lane, p.conn.state) for p in due if p.conn.reauthentications == 0]
        assert not stale, f"connections past their re-authentication that never re-authenticated: {stale}"


def secured_options(secured: Any, kind: str) -> dict[str, Any]:
    """bootstrap, tls and sasl for one way into the secured cluster."""
    cluster = secured.local
    ca = str(cluster.ca_cert)
    if kind == "mutual-tls":
        tls = TLSConfig(cafile=ca, certfile=str(cluster.client_cert), keyfile=str(cluster.client_key))
        return {"bootstrap": cluster.ssl_bootstrap, "tls": tls}
    if kind == "OAUTHBEARER":
        sasl = SASLConfig.oauthbearer(secured.oidc_provider())
    else:
        user = {"PLAIN": cluster.sasl_plain, "SCRAM-SHA-512": cluster.sasl_scram_sha_512}[kind]
        sasl = SASLConfig(user.mechanism, user.username, user.password)
    return {"bootstrap": cluster.sasl_ssl_bootstrap, "tls": TLSConfig(cafile=ca), "sasl": sasl}


def _call(loop: asyncio.AbstractEventLoop, start: Any, *args: Any) -> tuple[Any, Any]:
    future = loop.create_future()
    start(*args, lambda result, err: future.done() or future.set_result((result, err)))
    return loop.run_until_complete(asyncio.wait_for(future, 30))


def _close(loop: asyncio.AbstractEventLoop, client: Client) -> None:
    future = loop.create_future()
    client.close(lambda err: future.set_result(err))
    assert loop.run_until_complete(asyncio.wait_for(future, 60)) is None


def _assert_consumed_exactly(received: Received, delivery: Delivery, topic: str) -> None:
    delivered = {}
    for meta in delivery.metas.values():
        delivered.setdefault((topic, meta.partition), []).append(meta.offset)
    for key, offsets in delivered.items():
        got = received.offsets.get(key, [])
        assert got == sorted(offsets), f"{key}: consumed offsets differ from the delivered ones"


def _setup(secured: Any, kind: str, name: str) -> tuple[str, dict[str, Any], str]:
    """bootstrap, the other options, and a new topic, for one run of ``kind``."""
    options = secured_options(secured, kind)
    bootstrap = options.pop("bootstrap")
    topic = secured.local.create_topic(secured.local.unique_topic_name(f"{name}-{kind}"), partitions=PARTITIONS)
    return bootstrap, options, topic


@pytest.mark.parametrize("kind", ["mutual-tls", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_whole_client_on_a_secured_cluster(secured_kafka, uv, kind):
    loop = uv
    bootstrap, options, topic = _setup(secured_kafka, kind, "whole")
    group = f"whole-{kind}-{uuid.uuid4().hex[:8]}"
    errors: list[BaseException] = []
    received = Received()
    client = Client(bootstrap, loop=loop, acks=-1, idempotent=True, linger_ms=5, on_error=errors.append,
                    on_message=received.on_message, **options)
    ages = LoginAges(loop, client._pool, secured_kafka.reauth_ms / 1000)
    delivery = Delivery(RECORDS)
    records = [(b"%d" % i, b"value-%d" % i) for i in range(RECORDS)]
    loop.run_until_complete(produce_all(client, topic, records, delivery))
    loop.run_until_complete(wait_for(lambda: delivery.complete, RUN_TIMEOUT_S, "every delivery"))
    delivery.assert_each_once()
    assert not delivery.errors

    client.subscribe([topic], group_id=group)
    loop.run_until_complete(wait_for(lambda: received.count >= RECORDS or bool(errors), RUN_TIMEOUT_S,
                                     "every record consumed"))
    _assert_consumed_exactly(received, delivery, topic)
    assert received.count == RECORDS

    admin = Admin(client, loop=loop)
    try:
        topics, err = _call(loop, admin.list_topics)
        assert err is None and topics[topic].partitions and len(topics[topic].partitions) == PARTITIONS
        described, err = _call(loop, admin.describe_topics, [topic])
        assert err is None and len(described[topic].partitions) == PARTITIONS
        groups, err = _call(loop, admin.describe_groups, [group])
        assert err is None and groups[group].error is None and len(groups[group].members) == 1
        created, err = _call(loop, admin.create_topics, [f"{topic}-made"])
        assert err is None and created == {f"{topic}-made": None}
    finally:
        admin.close()
    try:
        if kind != "mutual-tls":
            loop.run_until_complete(ages.wait_until_one_is_due())
            ages.assert_each_due_reauthenticated()
    finally:
        ages.stop()
        _close(loop, client)
    assert not errors, errors


SOAK_MECHANISMS = ("PLAIN", "SCRAM-SHA-512", "OAUTHBEARER")


class Soak:
    """One mechanism's producer and group consumer, producing in bursts for as long as asked, and
    what the run must show for them at its end."""

    def __init__(self, secured: Any, loop: asyncio.AbstractEventLoop, mechanism: str) -> None:
        self.mechanism = mechanism
        bootstrap, options, self.topic = _setup(secured, mechanism, "soak")
        self.errors: list[BaseException] = []
        self.received = Received()
        self.delivery = Delivery(0)
        self.produced = 0
        self.producer = Client(bootstrap, loop=loop, acks=-1, idempotent=True, linger_ms=5,
                               on_error=self.errors.append, **options)
        self.consumer = Client(bootstrap, loop=loop, on_error=self.errors.append,
                               on_message=self.received.on_message, **options)
        self.consumer.subscribe([self.topic], group_id=f"soak-{mechanism}-{uuid.uuid4().hex[:8]}")
        self.opened: dict[int, Any] = {}
        self.after: dict[int, Any] = {}
        self.counts: dict[str, int] = {}

    async def produce_for(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            start = self.produced
            batch = [(b"%d" % i, b"soak-%d" % i) for i in range(start, start + SOAK_BATCH)]
            await produce_all(self.producer, self.topic, batch, self.delivery, start=start)
            self.produced += len(batch)
            self.delivery.expected = self.produced
            await asyncio.sleep(SOAK_PAUSE_S)

    def connections(self) -> dict[int, Any]:
        return {id(p.conn): p for c in (self.producer, self.consumer) for p in c._pool.connections()}

    def caught_up(self) -> bool:
        return self.delivery.complete and self.received.count >= self.produced

    def close(self, loop: asyncio.AbstractEventLoop) -> None:
        """Closes both clients, first noting which sockets are still open and how often each
        opened one re-authenticated."""
        self.after = self.connections()
        self.counts = {f"{p.role.name}/{p.node_id}/{p.lane}": p.conn.reauthentications
                       for p in self.opened.values()}
        for client in (self.producer, self.consumer):
            _close(loop, client)

    def check(self, session_s: float) -> None:
        assert not self.errors, (self.mechanism, self.errors)
        self.delivery.assert_each_once()
        assert not self.delivery.errors, self.mechanism
        _assert_consumed_exactly(self.received, self.delivery, self.topic)
        assert self.received.count == self.produced, self.mechanism
        # The same sockets all along (none was dropped and replaced) ...
        assert set(self.opened) <= set(self.after), f"{self.mechanism}: a connection was replaced during the run"
        # ... each re-authenticated at least every session: 5 times or more in a minute.
        least = max(1, int(SOAK_S // session_s) - 1)
        assert all(n >= least for n in self.counts.values()), (self.mechanism, self.counts)


def test_a_minute_of_traffic_reauthenticates_every_connection(secured_kafka, uv):
    """The three mechanisms' soaks share the minute: each pair's traffic and sessions are its own,
    and running them side by side (on one loop, as a service with several clients does) costs
    the suite one minute instead of three."""
    loop = uv
    soaks = [Soak(secured_kafka, loop, mechanism) for mechanism in SOAK_MECHANISMS]

    async def each(step: Any) -> None:
        await asyncio.gather(*(step(soak) for soak in soaks))

    # Warm up until every consumer reads, so every connection of every client is open.
    loop.run_until_complete(each(lambda soak: soak.produce_for(1.0)))
    loop.run_until_complete(each(lambda soak: wait_for(lambda: soak.received.count > 0, 60,
                                                       f"{soak.mechanism}: the consumer's first records")))
    for soak in soaks:
        soak.opened = soak.connections()
    loop.run_until_complete(each(lambda soak: soak.produce_for(SOAK_S)))
    try:
        loop.run_until_complete(each(lambda soak: wait_for(soak.caught_up, 60,
                                                           f"{soak.mechanism}: every record delivered and consumed")))
    finally:
        for soak in soaks:
            soak.close(loop)
    for soak in soaks:
        soak.check(secured_kafka.reauth_ms / 1000)
