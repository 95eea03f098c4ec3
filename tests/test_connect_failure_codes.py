"""A connect that fails keeps its own error code all the way to the user's callbacks: bad SASL
credentials reach the connect callback and a record's callback as AUTHENTICATION, not TRANSPORT."""

from __future__ import annotations

import pytest
from producer_helpers import close as close_producer

from kafkaev.client import Client
from kafkaev.errors import AUTHENTICATION, KafkaError
from kafkaev.security import SASLConfig
from kafkaev.testing.cluster import LocalCluster

# SASL over plaintext warns at each connect, by design (test_conn_security checks that it does).
pytestmark = [pytest.mark.compat, pytest.mark.filterwarnings("ignore::kafkaev.security.InsecureCredentialsWarning")]

WAIT_S = 20.0


def _bad_sasl_client(cluster: LocalCluster, loop, **options) -> Client:
    good = cluster.sasl_plain
    sasl = SASLConfig(good.mechanism, good.username, good.password + "-wrong")
    return Client(cluster.sasl_bootstrap, loop=loop, sasl=sasl, reconnect_backoff_ms=50,
                  reconnect_backoff_max_ms=200, on_error=lambda exc: None, **options)


def _run_until(loop, done, what: str) -> None:
    deadline = loop.time() + WAIT_S
    while not done():
        if loop.time() > deadline:
            raise AssertionError(f"no {what} within {WAIT_S} s")
        loop.run_until_complete(__import__("asyncio").sleep(0.02))


def test_connect_with_bad_credentials_says_authentication(secure_kafka, loop):
    client = _bad_sasl_client(secure_kafka, loop)
    results: list[KafkaError | None] = []
    client.connect(lambda md, err: results.append(err))
    _run_until(loop, lambda: bool(results), "connect answer")
    close_producer(client, loop)
    assert len(results) == 1
    err = results[0]
    assert err is not None and err.code == AUTHENTICATION, err
    assert secure_kafka.sasl_bootstrap.split(",")[0] in str(err)


def test_record_with_bad_credentials_fails_with_authentication(secure_kafka, loop):
    # The metadata wait for the record's topic ends with the cause of the failed bootstrap.
    client = _bad_sasl_client(secure_kafka, loop, metadata_wait_ms=1500, delivery_timeout_ms=3000)
    results: list[KafkaError | None] = []
    client.produce("kafkaev-auth-probe", None, b"v", lambda msg, err: results.append(err))
    _run_until(loop, lambda: bool(results), "delivery report")
    loop.run_until_complete(__import__("asyncio").sleep(0.2))  # a second report would show here
    close_producer(client, loop)
    assert len(results) == 1
    err = results[0]
    assert err is not None and err.code == AUTHENTICATION, err
