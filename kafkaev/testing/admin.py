"""Admin helpers shared by every kind of test cluster, through confluent-kafka's AdminClient.

The peer client does the admin work on purpose: the harness must be trustworthy before kafkaev's own
client exists, and a test of kafkaev should not rely on kafkaev to set itself up. confluent-kafka is a
test extra, imported only by the helpers that use it: ``kafkaev broker start`` runs a ``LocalCluster``
(a ``KafkaCluster``) on a plain install.
"""

from __future__ import annotations

import abc
import enum
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from .probe import BrokerApiVersions, ProbeError, api_versions

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient, ClusterMetadata, TopicMetadata

    from .versions import KafkaVersion

ADMIN_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.1
NO_LEADER = -1

T = TypeVar("T")


class Capability(enum.Enum):
    """What a test may ask of a cluster beyond a PLAINTEXT bootstrap."""

    SECURITY = "SSL and SASL listeners"
    FAULTS = "kill, pause, resume and restart of single nodes"


class PartitionState(NamedTuple):
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class UnknownPartition(KeyError):
    """The metadata asked does not (yet) list the partition."""


def transient_errors() -> tuple[type[Exception], ...]:
    """What a wait treats as "not yet": the cluster is mid-change (a node just died or was created)."""
    from confluent_kafka import KafkaException

    return (KafkaException, UnknownPartition, ProbeError, OSError)


class ClusterTimeout(AssertionError):
    """A wait on cluster state ran out of time; the message says what was expected and what was seen."""


def wait_until(check: Callable[[], T | None | bool], timeout: float, what: str) -> T:
    """Poll ``check`` until it returns something other than None/False and return it, else ClusterTimeout.

    transient_errors() while polling count as "not yet": the cluster may be mid-change (a node just died).
    """
    transient = transient_errors()
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = check()
            if result is not None and result is not False:
                return result  # type: ignore[return-value]
        except transient as exc:
            last_error = exc
        if time.monotonic() >= deadline:
            suffix = f" (last error: {last_error})" if last_error else ""
            raise ClusterTimeout(f"timed out after {timeout:.0f}s waiting for {what}{suffix}")
        time.sleep(POLL_INTERVAL_S)


class KafkaCluster(abc.ABC):
    """Base of the test clusters: a PLAINTEXT bootstrap plus topic and metadata helpers."""

    capabilities: frozenset[Capability] = frozenset()
    node_count: int = 1
    kafka_version: KafkaVersion  # the Apache Kafka release its brokers run

    def __init__(self) -> None:
        self._admin: AdminClient | None = None
        self._admin_bootstrap: str | None = None

    @property
    @abc.abstractmethod
    def bootstrap(self) -> str:
        """PLAINTEXT bootstrap servers, "host:port,host:port"."""

    @abc.abstractmethod
    def start(self) -> KafkaCluster:
        """Bring the cluster up (or connect to it) and return self once it answers."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Release the cluster; for clusters the harness started, stop their processes."""

    @abc.abstractmethod
    def log_tail(self, lines: int = 60) -> str:
        """The last broker log lines, for failure reports."""

    def admin(self) -> AdminClient:
        """A confluent-kafka AdminClient on the current bootstrap (rebuilt when the bootstrap changes)."""
        from confluent_kafka.admin import AdminClient

        bootstrap = self._admin_servers()
        if self._admin is None or self._admin_bootstrap != bootstrap:
            self._admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "kafkaev-test-admin"})
            self._admin_bootstrap = bootstrap
        return self._admin

    def _admin_servers(self) -> str:
        return self.bootstrap

    def _close_admin(self) -> None:
        self._admin = None
        self._admin_bootstrap = None

    def metadata(self, topic: str | None = None, timeout: float = ADMIN_TIMEOUT_S) -> ClusterMetadata:
        return self.admin().list_topics(topic=topic, timeout=timeout)

    def unique_topic_name(self, prefix: str = "kafkaev-test") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:12]}"

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, str] | None = None,
        timeout: float = ADMIN_TIMEOUT_S,
    ) -> str:
        """Create ``name`` and wait until every partition has a leader and a full ISR; return the name."""
        if not name:
            raise ValueError("name: a topic name is required")
        if partitions < 1:
            raise ValueError(f"partitions: must be >= 1, got {partitions}")
        from confluent_kafka.admin import NewTopic

        replication = replication_factor if replication_factor is not None else min(3, self.node_count)
        if replication < 1:
            raise ValueError(f"replication_factor: must be >= 1, got {replication}")
        futures = self.admin().create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=replication, config=config or {})],
            operation_timeout=timeout,
            request_timeout=timeout,
        )
        futures[name].result(timeout=timeout)
        self.wait_for(
            lambda: self._topic_ready(name, partitions, replication),
            timeout,
            f"topic {name!r}: {partitions} partitions with leaders and {replication} in-sync replicas",
        )
        return name

    def delete_topic(self, name: str, timeout: float = ADMIN_TIMEOUT_S) -> None:
        """Delete ``name`` and wait until metadata no longer lists it."""
        futures = self.admin().delete_topics([name], operation_timeout=timeout, request_timeout=timeout)
        futures[name].result(timeout=timeout)
        self.wait_for(lambda: name not in self.metadata().topics, timeout, f"topic {name!r} deleted")

    def partition_state(self, topic: str, partition: int) -> PartitionState:
        found = self._topic_metadata(topic)
        if found is None or partition not in found.partitions:
            raise UnknownPartition(f"no partition {topic}[{partition}] in the cluster metadata")
        meta = found.partitions[partition]
        return PartitionState(meta.leader, tuple(meta.replicas), tuple(meta.isrs))

    def leader_of(self, topic: str, partition: int) -> int:
        """Node id of the partition's leader as the cluster reports it now (-1 while there is none)."""
        return self.partition_state(topic, partition).leader

    def wait_for_leader(
        self, topic: str, partition: int, *, not_on: int | None = None, timeout: float = ADMIN_TIMEOUT_S
    ) -> int:
        """Wait for a leader (other than ``not_on``, if given) and return its node id."""
        wanted = f"a leader for {topic}[{partition}]" + (
            f" other than node {not_on}" if not_on is not None else ""
        )

        def check() -> int | None:
            try:
                leader = self.leader_of(topic, partition)
            except transient_errors():
                return None
            if leader == NO_LEADER or leader == not_on:
                return None
            return leader

        return self.wait_for(check, timeout, wanted)

    def api_versions(self, node_index: int = 0) -> BrokerApiVersions:
        """The raw ApiVersions answer of one bootstrap broker."""
        host, port = self.bootstrap.split(",")[node_index].rsplit(":", 1)
        return api_versions(host, int(port))

    def finalized_features(self) -> dict[str, int]:
        """The cluster's finalized feature levels, from ApiVersions: ``{"metadata.version": 33,
        "transaction.version": 2, ...}``. A feature at level 0 (off) is not listed."""
        return dict(self.api_versions().finalized_features)

    def feature_level(self, name: str) -> int:
        """The finalized level of feature ``name``; 0 when it is off or this Kafka has no such feature."""
        return self.finalized_features().get(name, 0)

    def wait_for(self, check: Callable[[], T | None | bool], timeout: float, what: str) -> T:
        return wait_until(check, timeout, what)

    def _topic_metadata(self, topic: str) -> TopicMetadata | None:
        found = self.metadata(topic).topics.get(topic)
        if found is None or found.error is not None:
            return None
        return found

    def _topic_ready(self, name: str, partitions: int, replication: int) -> bool:
        found = self._topic_metadata(name)
        if found is None or len(found.partitions) != partitions:
            return False
        return all(p.leader != NO_LEADER and len(p.isrs) == replication for p in found.partitions.values())
