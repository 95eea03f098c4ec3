"""Clusters the harness does not start itself: an existing one, or a testcontainers broker.

``KAFKAEV_BROKERS=host:port,...`` points every test at an existing cluster; only its PLAINTEXT bootstrap
is known, so tests that need TLS/SASL listeners or node faults skip with the reason. With
``KAFKAEV_TESTCONTAINERS=1`` and a Docker engine, testcontainers' Kafka image replaces the local JVMs.
Neither can be asked which release it runs (the protocol does not say): it is the one
``KAFKAEV_KAFKA_VERSION`` declares (default 4.4.0), as for the tests' ``requires_kafka`` markers.
"""

from __future__ import annotations

import os
from typing import Any

from kafkaev.local_broker import BROKERS_ENV  # also the default brokers of Client() and the CLI

from . import jars
from .admin import KafkaCluster
from .versions import KafkaVersion, broker_version

TESTCONTAINERS_ENV = "KAFKAEV_TESTCONTAINERS"
TESTCONTAINERS_IMAGE_ENV = "KAFKAEV_TESTCONTAINERS_IMAGE"
# testcontainers' KafkaContainer drives Confluent's image; cp-kafka 8.1 carries Apache Kafka 4.1.
DEFAULT_KAFKA_IMAGE = "confluentinc/cp-kafka:8.1.0"


class ExternalCluster(KafkaCluster):
    """An existing cluster known only by its PLAINTEXT bootstrap servers."""

    def __init__(self, bootstrap: str, node_count: int = 1) -> None:
        super().__init__()
        self.version = jars.kafka_version()  # the declared release: its jars run the Java interop programs
        self.kafka_version = _declared_version()
        servers = [s.strip() for s in bootstrap.split(",") if s.strip()]
        if not servers or any(":" not in s for s in servers):
            raise ValueError(f"bootstrap: expected 'host:port,...', got {bootstrap!r}")
        self._bootstrap = ",".join(servers)
        self.node_count = node_count

    @property
    def bootstrap(self) -> str:
        return self._bootstrap

    def start(self) -> ExternalCluster:
        # Learn the real broker count so default replication factors fit the cluster.
        self.node_count = max(1, len(self.metadata().brokers))
        return self

    def stop(self) -> None:
        self._close_admin()

    def log_tail(self, lines: int = 0) -> str:
        return f"(external cluster at {self._bootstrap}: its logs are not visible to the tests)"

    def __repr__(self) -> str:
        return f"ExternalCluster({self._bootstrap!r})"


class ContainerCluster(ExternalCluster):
    """A single Kafka broker in a Docker container, through testcontainers."""

    def __init__(self, image: str | None = None) -> None:
        # Imported here: Docker support is optional and only this path needs it.
        from testcontainers.community.kafka import KafkaContainer

        KafkaCluster.__init__(self)
        self.version = jars.kafka_version()
        self.kafka_version = _declared_version()
        self.image = image or os.environ.get(TESTCONTAINERS_IMAGE_ENV, DEFAULT_KAFKA_IMAGE)
        self._container: Any = KafkaContainer(self.image).with_kraft()
        self._bootstrap = ""
        self.node_count = 1

    def start(self) -> ContainerCluster:
        self._container.start()
        self._bootstrap = self._container.get_bootstrap_server()
        super().start()
        return self

    def stop(self) -> None:
        super().stop()
        self._container.stop()

    def log_tail(self, lines: int = 60) -> str:
        stdout, stderr = self._container.get_logs()
        text = (stdout + stderr).decode(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def __repr__(self) -> str:
        return f"ContainerCluster({self.image!r}, bootstrap={self._bootstrap!r})"


def _declared_version() -> KafkaVersion:
    """The release ``KAFKAEV_KAFKA_VERSION`` says an external cluster runs (default 4.4.0)."""
    return broker_version(jars.kafka_version())


def external_from_environment() -> KafkaCluster | None:
    """The cluster the environment asks for instead of local JVMs, unstarted; None for the default."""
    brokers = os.environ.get(BROKERS_ENV, "").strip()
    if brokers:
        return ExternalCluster(brokers)
    if os.environ.get(TESTCONTAINERS_ENV) == "1":
        return ContainerCluster()
    return None
