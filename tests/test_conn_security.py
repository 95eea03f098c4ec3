"""TLS and SASL on a kafkaev.Connection against the real broker's SSL and SASL listeners, under
asyncio and uvloop."""

from __future__ import annotations

import time
import warnings

import pytest
from conn_support import call, connect

from kafkaev import errors
from kafkaev._conn import Connection
from kafkaev.security import InsecureCredentialsWarning, SASLConfig, TLSConfig
from kafkaev.testing.certs import make_tls_files

pytestmark = pytest.mark.compat


def run(loop, coro):
    return loop.run_until_complete(coro)


def client_tls(kafka, **overrides) -> TLSConfig:
    settings = dict(cafile=str(kafka.ca_cert), certfile=str(kafka.client_cert), keyfile=str(kafka.client_key))
    settings.update(overrides)
    return TLSConfig(**settings)


async def assert_usable(conn: Connection) -> None:
    response, err = await call(conn.metadata, None)
    assert err is None and [b.node_id for b in response.brokers] == [1]


def test_tls_mutual_ok(secure_kafka, loop):
    async def main():
        conn = Connection(loop, tls=client_tls(secure_kafka))
        assert await connect(conn, secure_kafka.ssl_bootstrap) is None
        await assert_usable(conn)
        conn.disconnect()

    run(loop, main())


def test_tls_wrong_ca_fails_clearly(secure_kafka, loop, tmp_path):
    other = make_tls_files(tmp_path / "other-ca")

    async def main():
        conn = Connection(loop, tls=client_tls(secure_kafka, cafile=str(other.ca_cert)))
        started = time.monotonic()
        err = await connect(conn, secure_kafka.ssl_bootstrap, timeout=10)
        assert err is not None and err.code == errors.SSL
        assert "certificate verify failed" in str(err)
        assert time.monotonic() - started < 5
        assert conn.state == "disconnected"

    run(loop, main())


def test_tls_verify_false_accepts_unknown_ca(secure_kafka, loop, tmp_path):
    other = make_tls_files(tmp_path / "other-ca")

    async def main():
        tls = client_tls(secure_kafka, cafile=str(other.ca_cert), verify=False)
        conn = Connection(loop, tls=tls)
        assert await connect(conn, secure_kafka.ssl_bootstrap) is None
        await assert_usable(conn)
        conn.disconnect()

    run(loop, main())


@pytest.mark.parametrize("user", ["sasl_plain", "sasl_scram_sha_256", "sasl_scram_sha_512"])
def test_sasl_ok_and_warns_over_plaintext(secure_kafka, loop, user):
    creds = getattr(secure_kafka, user)

    async def main():
        conn = Connection(loop, sasl=SASLConfig(creds.mechanism, creds.username, creds.password))
        with pytest.warns(InsecureCredentialsWarning, match=creds.mechanism):
            assert await connect(conn, secure_kafka.sasl_bootstrap) is None
        await assert_usable(conn)
        conn.disconnect()

    run(loop, main())


@pytest.mark.parametrize("user", ["sasl_plain", "sasl_scram_sha_256", "sasl_scram_sha_512"])
def test_sasl_wrong_password_fails_clearly_without_hang(secure_kafka, loop, user):
    creds = getattr(secure_kafka, user)

    async def main():
        conn = Connection(loop, sasl=SASLConfig(creds.mechanism, creds.username, creds.password + "-wrong"))
        started = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureCredentialsWarning)
            err = await connect(conn, secure_kafka.sasl_bootstrap, timeout=20)
        assert err is not None and err.code == errors.AUTHENTICATION
        assert creds.username in str(err) and "SASL_AUTHENTICATION_FAILED" in str(err)
        assert time.monotonic() - started < 10
        assert conn.state == "disconnected"

    run(loop, main())


def test_sasl_ssl_scram_no_warning(secure_kafka, loop):
    creds = secure_kafka.sasl_scram_sha_512

    async def main():
        tls = TLSConfig(cafile=str(secure_kafka.ca_cert))
        conn = Connection(loop, tls=tls, sasl=SASLConfig(creds.mechanism, creds.username, creds.password))
        with warnings.catch_warnings():
            warnings.simplefilter("error", InsecureCredentialsWarning)
            assert await connect(conn, secure_kafka.sasl_ssl_bootstrap) is None
        await assert_usable(conn)
        conn.disconnect()

    run(loop, main())


def test_sasl_mechanism_not_enabled(secure_kafka, loop):
    async def main():
        # The TLS listener does not speak SASL at all; the SASL listener enables these three only.
        conn = Connection(loop, sasl=SASLConfig("PLAIN", "nobody", "x"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureCredentialsWarning)
            err = await connect(conn, secure_kafka.bootstrap, timeout=10)
        # A PLAINTEXT listener answers SaslHandshake with ILLEGAL_SASL_STATE (or closes).
        assert err is not None and err.code in (errors.AUTHENTICATION, errors.TRANSPORT)

    run(loop, main())


def test_sasl_config_validation():
    with pytest.raises(ValueError, match="mechanism"):
        SASLConfig("GSSAPI", "u", "p")
    with pytest.raises(TypeError, match="password"):
        SASLConfig("PLAIN", "u", None)
    with pytest.raises(ValueError, match="keyfile"):
        TLSConfig(keyfile="k.pem")
