"""Bad credentials fail cleanly through the whole kafkaev.Client: ``connect``'s callback gets one
KafkaError naming the cause within 10 s, nothing is logged with a traceback, and no exception
escapes to the loop (the loop fixture fails the test on one). Each cause has its own test."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

import pytest
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev import errors
from kafkaev.client import Client
from kafkaev.security import OAuthBearerToken, SASLConfig, TLSConfig
from kafkaev.testing.certs import make_tls_files

WRONG_PASSWORD = "not-the-password"
SECRETS = (WRONG_PASSWORD,)  # searched for by secret_guard, with the clusters' own
FAIL_WITHIN_S = 10.0
CONNECT_TIMEOUT_MS = 5000


def _connect_error(loop, bootstrap: str, caplog, **options):
    """The error ``connect`` reports, and how long it took; asserts no traceback was logged."""
    reported: list[BaseException] = []
    client = Client(bootstrap, loop=loop, connect_timeout_ms=CONNECT_TIMEOUT_MS, on_error=reported.append,
                    **options)
    future = loop.create_future()
    started = time.monotonic()
    with caplog.at_level(logging.DEBUG):
        client.connect(lambda md, err: future.done() or future.set_result(err))
        err = loop.run_until_complete(asyncio.wait_for(future, FAIL_WITHIN_S * 2))
        elapsed = time.monotonic() - started
        closed = loop.create_future()
        client.close(closed.set_result)
        loop.run_until_complete(asyncio.wait_for(closed, 30))
    assert err is not None, "connect succeeded with bad credentials"
    assert elapsed < FAIL_WITHIN_S, f"took {elapsed:.1f}s"
    assert not any(r.exc_info or "Traceback" in r.getMessage() for r in caplog.records)
    assert "Traceback" not in str(err)
    return err


def test_wrong_password(secure_kafka, loop, caplog):
    user = secure_kafka.sasl_scram_sha_512
    err = _connect_error(loop, secure_kafka.sasl_ssl_bootstrap, caplog, tls=TLSConfig(cafile=str(secure_kafka.ca_cert)),
                         sasl=SASLConfig(user.mechanism, user.username, WRONG_PASSWORD))
    assert err.code == errors.AUTHENTICATION and "Authentication failed" in str(err)
    assert WRONG_PASSWORD not in str(err)


def test_expired_token(secured_kafka, loop, caplog):
    issuer = secured_kafka.issuer
    # The JWT expired a minute ago (past the brokers' clock skew allowance); the provider claims
    # it is good for another hour, so it is the broker that refuses it.
    jwt = issuer.token_for("kafkaev-oauth", 60, issued_at=time.time() - 180)
    sasl = SASLConfig.oauthbearer(lambda: OAuthBearerToken.from_lifetime(jwt, 3600))
    err = _connect_error(loop, secured_kafka.local.sasl_ssl_bootstrap, caplog,
                         tls=TLSConfig(cafile=str(secured_kafka.local.ca_cert)), sasl=sasl)
    assert err.code == errors.AUTHENTICATION and "OAUTHBEARER" in str(err)
    assert "invalid_token" in str(err) or "expired" in str(err).lower(), err
    assert jwt not in str(err)


def test_wrong_ca(secure_kafka, loop, caplog, tmp_path):
    stranger = make_tls_files(tmp_path / "stranger")
    err = _connect_error(loop, secure_kafka.ssl_bootstrap, caplog,
                         tls=TLSConfig(cafile=str(stranger.ca_cert), certfile=str(secure_kafka.client_cert),
                                       keyfile=str(secure_kafka.client_key)))
    assert err.code == errors.SSL and "certificate verify failed" in str(err)


def test_missing_client_certificate(secure_kafka, loop, caplog):
    err = _connect_error(loop, secure_kafka.ssl_bootstrap, caplog, tls=TLSConfig(cafile=str(secure_kafka.ca_cert)))
    # TLS 1.3: the broker's refusal arrives after the handshake, as an alert on the first read.
    assert err.code in (errors.SSL, errors.TRANSPORT), err
    assert "certificate required" in str(err) or "bad certificate" in str(err) or "closed" in str(err), err


def _alias_for_loopback() -> str:
    """A name that reaches 127.0.0.1 but is not on the broker certificate (127.0.0.1, localhost)."""
    name = socket.gethostname()
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(name, None, socket.AF_INET)}
    except OSError:
        addresses = set()
    if name in ("localhost", "127.0.0.1") or addresses != {"127.0.0.1"}:
        pytest.skip(f"this host's name {name!r} does not resolve to 127.0.0.1 only")
    return name


def test_hostname_mismatch(secure_kafka, loop, caplog):
    alias = _alias_for_loopback()
    port = secure_kafka.ssl_bootstrap.split(",")[0].rsplit(":", 1)[1]
    tls = TLSConfig(cafile=str(secure_kafka.ca_cert), certfile=str(secure_kafka.client_cert),
                    keyfile=str(secure_kafka.client_key))
    err = _connect_error(loop, f"{alias}:{port}", caplog, tls=tls)
    assert err.code == errors.SSL and ("Hostname mismatch" in str(err) or "doesn't match" in str(err)), err
