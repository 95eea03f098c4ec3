"""KIP-368 re-authentication on one kafkaev.Connection against the secured cluster
(``connections.max.reauth.ms=10000``): PLAIN, SCRAM and OAUTHBEARER (a fresh token each time it
is due) re-authenticate on the same socket while requests keep flowing, none failed or
reordered; with re-authentication switched off the broker ends the session and the connection."""

from __future__ import annotations

import asyncio
import time

from conn_support import connect
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev import errors
from kafkaev.protocol.connection import Connection
from kafkaev.security import SASLConfig, TLSConfig

# Enough for two sessions of 10 s each to end: 85-95% of 10 s, twice.
RUN_S = 21.0
PIPELINE_DEPTH = 8
MIN_REAUTHS = 2
# The broker closes an expired session on its next request; a little after 10 s.
DROP_WITHIN_S = 20.0


def _sasl(secured, mechanism: str, reauthenticate: bool = True) -> SASLConfig:
    cluster = secured.local
    if mechanism == "OAUTHBEARER":
        return SASLConfig.oauthbearer(secured.oidc_provider(), reauthenticate=reauthenticate)
    user = {"PLAIN": cluster.sasl_plain, "SCRAM-SHA-512": cluster.sasl_scram_sha_512}[mechanism]
    return SASLConfig(user.mechanism, user.username, user.password, reauthenticate=reauthenticate)


class Pipeline:
    """Keeps PIPELINE_DEPTH Metadata requests in flight; records the order answers come in."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.sent = 0
        self.answered: list[int] = []
        self.failures: list[BaseException] = []
        self.running = True

    def send(self) -> None:
        index = self.sent
        self.sent += 1
        self.conn.metadata([], lambda resp, err: self._answered(index, resp, err))

    def _answered(self, index: int, resp, err) -> None:
        if err is not None:
            self.failures.append(err)
            return
        self.answered.append(index)
        if self.running:
            self.send()


MECHANISMS = ("PLAIN", "SCRAM-SHA-512", "OAUTHBEARER")


def test_reauthenticates_on_the_same_connection_with_requests_in_flight(secured_kafka, loop):
    """One connection per mechanism, side by side on the loop: each re-authenticates on its own
    session's clock, so sharing the run's seconds changes nothing a connection sees."""
    sasls = {mechanism: _sasl(secured_kafka, mechanism) for mechanism in MECHANISMS}
    conns = {mechanism: Connection(loop, sasl=sasl, tls=TLSConfig(cafile=str(secured_kafka.local.ca_cert)))
             for mechanism, sasl in sasls.items()}
    disconnects: dict[str, list[object]] = {mechanism: [] for mechanism in MECHANISMS}
    for mechanism, conn in conns.items():
        conn.on_disconnect = disconnects[mechanism].append

    async def main() -> dict[str, Pipeline]:
        for conn in conns.values():
            assert await connect(conn, secured_kafka.local.sasl_ssl_bootstrap) is None
        pipelines = {mechanism: Pipeline(conn) for mechanism, conn in conns.items()}
        for pipeline in pipelines.values():
            for _ in range(PIPELINE_DEPTH):
                pipeline.send()
        await asyncio.sleep(RUN_S)
        for pipeline in pipelines.values():
            pipeline.running = False
        deadline = time.monotonic() + 10
        while any(conn.pending for conn in conns.values()) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return pipelines

    try:
        pipelines = loop.run_until_complete(main())
        dropped = {mechanism: list(seen) for mechanism, seen in disconnects.items()}  # before ours below
    finally:
        for conn in conns.values():
            conn.disconnect()
    for mechanism, pipeline in pipelines.items():
        assert not pipeline.failures and not dropped[mechanism], mechanism
        # every request answered, in order
        assert pipeline.answered == list(range(pipeline.sent)), mechanism
        assert conns[mechanism].reauthentications >= MIN_REAUTHS, (mechanism, conns[mechanism].reauthentications)
    tokens = sasls["OAUTHBEARER"].tokens
    assert tokens is not None and tokens.fetches >= 1


def test_without_reauthentication_the_broker_ends_the_session(secured_kafka, loop):
    user = secured_kafka.local.sasl_scram_sha_512
    conn = Connection(loop, sasl=_sasl(secured_kafka, user.mechanism, reauthenticate=False),
                      tls=TLSConfig(cafile=str(secured_kafka.local.ca_cert)))
    disconnects: list[object] = []
    conn.on_disconnect = disconnects.append
    conn.on_error = lambda exc: None  # the drop is the expected outcome, asserted below

    async def main() -> float:
        assert await connect(conn, secured_kafka.local.sasl_ssl_bootstrap) is None
        started = time.monotonic()
        pipeline = Pipeline(conn)
        pipeline.send()
        while not disconnects and time.monotonic() - started < DROP_WITHIN_S:
            await asyncio.sleep(0.05)
        return time.monotonic() - started

    elapsed = loop.run_until_complete(main())
    dropped = list(disconnects)
    conn.disconnect()
    assert len(dropped) == 1, "the broker kept a session past connections.max.reauth.ms"
    assert dropped[0].code == errors.TRANSPORT
    assert elapsed > secured_kafka.reauth_ms / 1000 * 0.8
    assert conn.reauthentications == 0
