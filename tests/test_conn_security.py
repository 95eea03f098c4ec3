"""TLS and SASL on a kafkaev.Connection against the real broker's SSL and SASL listeners, under
asyncio and uvloop (and, for an answer the real broker cannot be made to give kafkaev, a fake one)."""

from __future__ import annotations

import time
import warnings

import pytest
from conn_support import call, connect, split_bootstrap
from exactly_once import Calls
from fake_broker import FakeBroker, FakeRequest, Reply, normal_reply, reply_frame
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev import errors
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection
from kafkaev.security import InsecureCredentialsWarning, SASLConfig, TLSConfig
from kafkaev.testing.certs import make_tls_files
from kafkaev.testing.config import SASL_MECHANISMS

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


def test_the_broker_refuses_a_sasl_mechanism_it_does_not_enable(secure_kafka, loop):
    """What a SASL listener answers to a SaslHandshake naming a mechanism it does not enable:
    UNSUPPORTED_SASL_MECHANISM and the list it does enable (and then it closes the connection).
    kafkaev only speaks mechanisms the test broker enables, so the handshake is sent by hand on a
    Connection without SASL; the next test has kafkaev meet this answer."""

    async def main():
        conn = Connection(loop)  # ApiVersions is allowed before SaslHandshake
        disconnects = Calls("on_disconnect")
        conn.on_disconnect = disconnects.cb("lost")
        assert await connect(conn, secure_kafka.sasl_bootstrap) is None
        response, err = await call(conn.request, codec.ApiKey.SASL_HANDSHAKE,
                                   codec.SaslHandshakeRequest(mechanism="GSSAPI"), version=1)
        assert err is None
        assert response.error_code == errors.UNSUPPORTED_SASL_MECHANISM == 33
        assert sorted(response.mechanisms) == sorted(SASL_MECHANISMS)
        (lost,) = await disconnects.first_call("lost", 10)
        assert lost is not None and lost.code == errors.TRANSPORT
        conn.disconnect()

    run(loop, main())


def test_sasl_mechanism_not_enabled_fails_with_the_brokers_list(loop):
    """A Connection whose mechanism the broker does not enable fails with AUTHENTICATION naming the
    mechanism, the broker's list and its error, as the broker above answers (a fake broker here: the
    real one enables every mechanism kafkaev speaks)."""
    enabled = ["SCRAM-SHA-256", "SCRAM-SHA-512"]

    def respond(req: FakeRequest) -> Reply:
        if req.api_key != codec.ApiKey.SASL_HANDSHAKE:
            return normal_reply(req)
        answer = codec.SaslHandshakeResponse(error_code=errors.UNSUPPORTED_SASL_MECHANISM,
                                              mechanisms=enabled)
        return Reply(reply_frame(req, answer), close=True)

    async def main():
        broker = await FakeBroker(respond).start()
        try:
            conn = Connection(loop, sasl=SASLConfig("PLAIN", "alice", "secret"))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InsecureCredentialsWarning)
                err = await connect(conn, f"127.0.0.1:{broker.port}")
            assert err is not None and err.code == errors.AUTHENTICATION
            assert err.message == (f"127.0.0.1:{broker.port} does not enable SASL mechanism PLAIN "
                                   "(enabled: SCRAM-SHA-256, SCRAM-SHA-512; UNSUPPORTED_SASL_MECHANISM)")
            handshakes = [(r.api_key, r.body.mechanism) for r in broker.requests[1:]]
            assert handshakes == [(codec.ApiKey.SASL_HANDSHAKE, "PLAIN")]
            assert conn.state == "disconnected"
        finally:
            await broker.stop()

    run(loop, main())


def test_sasl_on_a_listener_without_sasl_fails_clearly(secure_kafka, loop):
    """The PLAINTEXT listener does not speak SASL: it answers SaslHandshake with ILLEGAL_SASL_STATE
    and no mechanisms."""
    host, port = split_bootstrap(secure_kafka.bootstrap)

    async def main():
        conn = Connection(loop, sasl=SASLConfig("PLAIN", "nobody", "x"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureCredentialsWarning)
            err = await connect(conn, secure_kafka.bootstrap, timeout=10)
        assert err is not None and err.code == errors.AUTHENTICATION
        assert err.message == (f"{host}:{port} does not enable SASL mechanism PLAIN "
                               "(enabled: none; ILLEGAL_SASL_STATE)")
        assert conn.state == "disconnected"

    run(loop, main())


def test_sasl_config_validation():
    with pytest.raises(ValueError, match="mechanism"):
        SASLConfig("GSSAPI", "u", "p")
    with pytest.raises(TypeError, match="password"):
        SASLConfig("PLAIN", "u", None)
    with pytest.raises(ValueError, match="keyfile"):
        TLSConfig(keyfile="k.pem")
