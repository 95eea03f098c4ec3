"""kafkaev.Client over the real broker's SSL and SASL listeners: an idempotent producer and a consumer
by assignment, each through the secured listener only; confluent-kafka reads the same records back
over PLAINTEXT as the independent check. (The handshakes themselves, and their failures, are
test_conn_security.py's.)"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from consumer_helpers import Received, connect, run_until
from consumer_helpers import close as close_consumer
from producer_helpers import Delivery, produce_all, read_back, wait_for
from producer_helpers import close as close_producer
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev.client import Client
from kafkaev.security import InsecureCredentialsWarning, SASLConfig, TLSConfig
from kafkaev.testing.cluster import LocalCluster
from kafkaev.testing.config import SaslCredentials
from kafkaev.types import OFFSET_BEGINNING

pytestmark = pytest.mark.compat

PARTITIONS = 2
RECORDS = 500
DELIVERY_TIMEOUT_S = 30.0
CONSUME_TIMEOUT_S = 30.0
# listener id -> (listener, SASL user attribute of the cluster or None)
LISTENERS = {
    "ssl-mutual": ("ssl", None),
    "sasl_plaintext-plain": ("sasl_plaintext", "sasl_plain"),
    "sasl_plaintext-scram-sha-256": ("sasl_plaintext", "sasl_scram_sha_256"),
    "sasl_ssl-scram-sha-512": ("sasl_ssl", "sasl_scram_sha_512"),
}


def _sasl(credentials: SaslCredentials) -> SASLConfig:
    return SASLConfig(credentials.mechanism, credentials.username, credentials.password)


def secured_options(cluster: LocalCluster, listener: str, user: str | None) -> dict[str, Any]:
    """Client options (bootstrap included) for one of the cluster's secured listeners."""
    if listener == "ssl":
        tls = TLSConfig(cafile=str(cluster.ca_cert), certfile=str(cluster.client_cert),
                        keyfile=str(cluster.client_key))
        return {"bootstrap": cluster.ssl_bootstrap, "tls": tls}
    assert user is not None
    sasl = _sasl(getattr(cluster, user))
    if listener == "sasl_ssl":
        return {"bootstrap": cluster.sasl_ssl_bootstrap, "tls": TLSConfig(cafile=str(cluster.ca_cert)), "sasl": sasl}
    return {"bootstrap": cluster.sasl_bootstrap, "sasl": sasl}


@pytest.mark.parametrize("listener_id", list(LISTENERS))
def test_client_produces_and_consumes_over_a_secured_listener(secure_kafka, make_topic, loop, listener_id):
    listener, user = LISTENERS[listener_id]
    options = secured_options(secure_kafka, listener, user)
    bootstrap = options.pop("bootstrap")
    topic = make_topic(partitions=PARTITIONS)
    records = [(b"k%d" % i, b"v%d" % i) for i in range(RECORDS)]
    delivery = Delivery(RECORDS)
    received = Received()
    with warnings.catch_warnings():
        # SASL over plaintext warns by design (test_conn_security checks that it does).
        warnings.simplefilter("ignore", InsecureCredentialsWarning)
        producer = Client(bootstrap, loop=loop, acks=-1, idempotent=True, linger_ms=2, **options)
        loop.run_until_complete(produce_all(producer, topic, records, delivery))
        loop.run_until_complete(wait_for(lambda: delivery.complete, DELIVERY_TIMEOUT_S, "acks"))
        close_producer(producer, loop)

        consumer = connect(loop, bootstrap, on_message=received.on_message, on_error=received.on_error, **options)
        consumer.assign([(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        consumer.start()
        run_until(loop, lambda: received.count >= RECORDS or bool(received.errors), CONSUME_TIMEOUT_S,
                  "every record")
        close_consumer(loop, consumer)

    assert not delivery.errors and not delivery.duplicates and not received.errors
    expected: dict[tuple[str, int], list[tuple[int, bytes]]] = {}
    for i, meta in sorted(delivery.metas.items(), key=lambda item: (item[1].partition, item[1].offset)):
        expected.setdefault((topic, meta.partition), []).append((meta.offset, records[i][1]))
    got = {key: list(zip(received.offsets[key], received.values[key], strict=True)) for key in received.offsets}
    assert got == expected
    peer = read_back(secure_kafka.bootstrap, topic, RECORDS)
    assert sorted((m.partition(), m.offset(), m.value()) for m in peer) == sorted(
        (p, offset, value) for (_t, p), pairs in expected.items() for offset, value in pairs
    )
