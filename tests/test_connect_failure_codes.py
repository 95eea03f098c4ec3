"""A connect that fails keeps its own error code all the way to the user: bad SASL credentials
reach the connect callback, a record's callback and a consumer's on_error as AUTHENTICATION, not
TRANSPORT (the real broker's SASL_PLAINTEXT listener, a wrong password)."""

from __future__ import annotations

import asyncio

import pytest
from producer_helpers import close as close_producer

from kafkaev.client import Client
from kafkaev.errors import AUTHENTICATION, KafkaError
from kafkaev.security import SASLConfig
from kafkaev.testing.cluster import LocalCluster
from kafkaev.types import OFFSET_BEGINNING

# SASL over plaintext warns at each connect, by design (test_conn_security checks that it does).
pytestmark = [pytest.mark.compat, pytest.mark.filterwarnings("ignore::kafkaev.security.InsecureCredentialsWarning")]

WAIT_S = 20.0


def _bad_sasl_client(cluster: LocalCluster, loop, **options) -> Client:
    good = cluster.sasl_plain
    sasl = SASLConfig(good.mechanism, good.username, good.password + "-wrong")
    options.setdefault("on_error", lambda exc: None)
    return Client(cluster.sasl_bootstrap, loop=loop, sasl=sasl, reconnect_backoff_ms=50,
                  reconnect_backoff_max_ms=200, **options)


def _run_until(loop, done, what: str) -> None:
    deadline = loop.time() + WAIT_S
    while not done():
        if loop.time() > deadline:
            raise AssertionError(f"no {what} within {WAIT_S} s")
        loop.run_until_complete(asyncio.sleep(0.02))


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
    loop.run_until_complete(asyncio.sleep(0.2))  # a second report would show here
    close_producer(client, loop)
    assert len(results) == 1
    err = results[0]
    assert err is not None and err.code == AUTHENTICATION, err


def test_consumer_with_bad_credentials_reports_authentication(secure_kafka, loop):
    # A consumer has no record callback to fail: its connect failures reach on_error, with their code.
    errors: list[BaseException] = []
    client = _bad_sasl_client(secure_kafka, loop, on_error=errors.append, on_message=lambda msg: None)
    client.assign([("kafkaev-auth-probe", 0, OFFSET_BEGINNING)])
    client.start()
    _run_until(loop, lambda: bool(errors), "error report")
    close_producer(client, loop)
    assert all(isinstance(e, KafkaError) for e in errors), errors
    assert {e.code for e in errors if isinstance(e, KafkaError)} == {AUTHENTICATION}, errors
