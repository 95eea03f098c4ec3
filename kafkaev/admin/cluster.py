"""The cluster as a whole: who is in it, which node is the controller, which feature levels are
finalized (KIP-584, from ApiVersions), and electing partition leaders."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..errors import KafkaError
from ..protocol import codec
from ..protocol.connection import Connection
from ..types import TopicPartition
from .core import (
    DEFAULT_TIMEOUT_MS,
    INT32_MAX,
    AdminCore,
    ResultCallback,
    answered,
    check_int,
    check_partitions,
    error_or_none,
    send_request,
)


class ElectionType(enum.IntEnum):
    PREFERRED = 0  # the first in-sync replica of the assignment
    UNCLEAN = 1  # any live replica, when no in-sync one is left (may lose records)


@dataclass(frozen=True, slots=True)
class BrokerDescription:
    node_id: int
    host: str
    port: int
    rack: str | None = None
    is_fenced: bool = False


@dataclass(frozen=True, slots=True)
class FeatureRange:
    min_level: int
    max_level: int


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str
    controller_id: int  # in KRaft, a broker that forwards to the active controller
    brokers: tuple[BrokerDescription, ...]
    finalized_features: Mapping[str, FeatureRange] = field(default_factory=dict)  # what the cluster runs at
    supported_features: Mapping[str, FeatureRange] = field(default_factory=dict)  # what the answering broker could
    finalized_features_epoch: int = -1


class ClusterAdmin(AdminCore):
    """Cluster description and leader elections."""

    def describe_cluster(self, cb: ResultCallback[ClusterDescription], *, include_fenced: bool = False) -> None:
        """``cb(ClusterDescription, err)``: the brokers (fenced ones too when asked), the
        controller, the cluster id and the feature levels."""
        done = self._once(cb)

        def send(conn: Connection) -> None:
            def with_features(described: codec.DescribeClusterResponse | None, err: KafkaError | None) -> None:
                if described is None or err is not None:
                    done(None, err)
                else:  # the same broker's ApiVersions: its finalized feature levels
                    conn.api_versions_request(answered(codec.ApiVersionsResponse, done,
                                                       lambda versions: _description(described, versions)))

            send_request(conn, codec.DescribeClusterRequest(include_fenced_brokers=bool(include_fenced)),
                         codec.DescribeClusterResponse, answered(
                             codec.DescribeClusterResponse, with_features, lambda resp: resp,
                             lambda resp: error_or_none(resp.error_code, resp.error_message)))

        self._on_any(done, send)

    def elect_leaders(self, election_type: ElectionType, cb: ResultCallback[dict[TopicPartition, KafkaError | None]],
                      *, partitions: Iterable[TopicPartition] | None = None,
                      timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        """Elect leaders of ``partitions`` (None: every partition whose leader is not its preferred
        one): ``cb({TopicPartition: KafkaError | None}, err)``, None where a leader was elected
        (ELECTION_NOT_NEEDED where it already had the one asked for)."""
        try:
            kind = ElectionType(election_type)
        except ValueError:
            raise ValueError(f"kafkaev.Admin: 'election_type' must be an ElectionType, got {election_type!r}") from None
        wanted = None if partitions is None else check_partitions("partitions", partitions)
        check_int("timeout_ms", timeout_ms, 0, INT32_MAX)
        done = self._once(cb)

        on_response = answered(codec.ElectLeadersResponse, done, lambda resp: {
            TopicPartition(r.topic, p.partition_id): error_or_none(p.error_code, p.error_message)
            for r in resp.replica_election_results for p in r.partition_result},
            lambda resp: error_or_none(resp.error_code))

        by_topic: dict[str, list[int]] = {}
        for tp in wanted or ():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = codec.ElectLeadersRequest(
            election_type=kind, timeout_ms=timeout_ms,
            topic_partitions=None if wanted is None else [codec.ElectLeadersRequestTopicPartitions(
                topic=topic, partitions=parts) for topic, parts in by_topic.items()])
        self._on_controller(done, lambda conn: send_request(
            conn, body, codec.ElectLeadersResponse, on_response,
            timeout_ms=self.config.request_timeout_ms + timeout_ms))


def _description(described: codec.DescribeClusterResponse, versions: codec.ApiVersionsResponse) -> ClusterDescription:
    brokers = tuple(sorted((BrokerDescription(b.broker_id, b.host, b.port, b.rack, b.is_fenced)
                            for b in described.brokers), key=lambda b: b.node_id))
    return ClusterDescription(
        described.cluster_id, described.controller_id, brokers,
        {f.name: FeatureRange(f.min_version_level, f.max_version_level) for f in versions.finalized_features or ()},
        {f.name: FeatureRange(f.min_version, f.max_version) for f in versions.supported_features or ()},
        versions.finalized_features_epoch)
