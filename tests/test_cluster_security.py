"""The test cluster's TLS and SASL listeners work with a real client (confluent-kafka), and refuse
clients that should be refused: no client certificate, an unknown CA, a wrong SCRAM password; and
the harness's own SASL login, which a start or restart waits for, logs each user in."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer

from kafkaev.testing.certs import make_tls_files
from kafkaev.testing.cluster import BrokerStartError, LocalCluster
from kafkaev.testing.config import SaslCredentials
from kafkaev.testing.peer import PeerRecord, round_trip, sasl_config, ssl_config
from kafkaev.testing.sasl_probe import LoginRefused, sasl_login

pytestmark = pytest.mark.compat

REFUSAL_TIMEOUT_S = 20.0
LOGIN_WAIT_S = 1.0  # how long a refused login is retried before the start gives up, in the test below
RECORDS = [PeerRecord(b"key", b"value", (("trace", b"abc"),)), PeerRecord(None, b"second")]


def _assert_round_trip(config: dict[str, str], topic: str) -> None:
    trip = round_trip(config, topic, RECORDS)
    assert [(m.key(), m.value()) for m in trip.consumed] == [(r.key, r.value) for r in RECORDS]
    assert trip.consumed[0].headers() == [("trace", b"abc")]
    assert [m.offset() for m in trip.consumed] == [m.offset() for m in trip.delivered]


def _first_error(config: dict[str, str]) -> KafkaError:
    """Start a producer with ``config`` and return the first client error it reports (bounded)."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append, "reconnect.backoff.ms": 200})
    producer.produce("kafkaev-refused", b"never-delivered")
    deadline = time.monotonic() + REFUSAL_TIMEOUT_S
    while not errors:
        assert time.monotonic() < deadline, f"no error within {REFUSAL_TIMEOUT_S}s for {config}"
        producer.poll(0.2)
    producer.purge()
    producer.flush(1)
    return errors[0]


def test_ssl_with_client_certificate(secure_kafka: LocalCluster, topic: str) -> None:
    _assert_round_trip(ssl_config(secure_kafka), topic)


def test_ssl_without_client_certificate_is_refused(secure_kafka: LocalCluster) -> None:
    error = _first_error(ssl_config(secure_kafka, client_cert=False))
    # The broker demands a client certificate and aborts the handshake with a TLS alert.
    assert error.code() in (KafkaError._SSL, KafkaError._TRANSPORT), error
    assert "bad certificate" in error.str() or "certificate required" in error.str(), error


def test_ssl_rejects_broker_signed_by_unknown_ca(secure_kafka: LocalCluster, tmp_path: Path) -> None:
    stranger = make_tls_files(tmp_path / "other-ca")
    config = {**ssl_config(secure_kafka), "ssl.ca.location": str(stranger.ca_cert)}
    error = _first_error(config)
    # librdkafka reports the failed handshake as _SSL or as _TRANSPORT, depending on when it sees it.
    assert error.code() in (KafkaError._SSL, KafkaError._TRANSPORT), error
    assert "certificate verify failed" in error.str(), error


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_plaintext(secure_kafka: LocalCluster, topic: str, mechanism: str) -> None:
    credentials = {c.mechanism: c for c in (secure_kafka.sasl_plain, *secure_kafka.scram_users)}[mechanism]
    _assert_round_trip(sasl_config(secure_kafka, credentials), topic)


def test_sasl_ssl_scram(secure_kafka: LocalCluster, topic: str) -> None:
    _assert_round_trip(sasl_config(secure_kafka, secure_kafka.sasl_scram_sha_512, tls=True), topic)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_wrong_password_is_refused(secure_kafka: LocalCluster, mechanism: str) -> None:
    user = {c.mechanism: c for c in (secure_kafka.sasl_plain, *secure_kafka.scram_users)}[mechanism]
    wrong = SaslCredentials(user.mechanism, user.username, user.password + "-wrong")
    error = _first_error(sasl_config(secure_kafka, wrong))
    assert error.code() == KafkaError._AUTHENTICATION, error
    assert "Authentication failed" in error.str()


def test_the_sasl_probe_logs_each_user_in_and_reports_a_refusal(secure_kafka: LocalCluster) -> None:
    """The harness's own login (kafkaev.testing.sasl_probe), which holds back a start or restart until
    every SASL user can log in: each user logs in; a wrong password and an unknown user are refused."""
    port = int(secure_kafka.sasl_bootstrap.split(",")[0].rsplit(":", 1)[1])
    for user in (secure_kafka.sasl_plain, *secure_kafka.scram_users):
        sasl_login("127.0.0.1", port, user)
    for mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        for refused in (SaslCredentials(mechanism, secure_kafka.sasl_scram_sha_512.username, "probe-wrong-secret"),
                        SaslCredentials(mechanism, "kafkaev-nobody", "probe-wrong-secret")):
            with pytest.raises(LoginRefused, match="error code 58") as info:  # SASL_AUTHENTICATION_FAILED
                sasl_login("127.0.0.1", port, refused)
            assert "probe-wrong-secret" not in str(info.value)


def test_a_login_the_broker_refuses_fails_the_start_naming_the_user(secure_kafka: LocalCluster) -> None:
    node = secure_kafka.node(1)
    wrong = SaslCredentials("SCRAM-SHA-512", secure_kafka.sasl_scram_sha_512.username, "never-formatted-secret")
    started = time.monotonic()
    with pytest.raises(BrokerStartError, match="SCRAM-SHA-512 login of 'kafkaev-scram512'") as info:
        secure_kafka._wait_logins(node, time.monotonic() + LOGIN_WAIT_S, [secure_kafka.sasl_scram_sha_256, wrong])
    assert LOGIN_WAIT_S <= time.monotonic() - started < REFUSAL_TIMEOUT_S
    assert "never-formatted-secret" not in str(info.value)
