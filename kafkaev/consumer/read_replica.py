"""KIP-392: which replica a partition is fetched from when the leader names a closer one.

With ``client_rack`` set, Fetch carries the rack and a leader running a replica selector
(RackAwareReplicaSelector) may answer a partition with ``preferred_read_replica``: no records,
read from that node instead. The choice holds until ``metadata_max_age_ms`` has passed (then the
leader is asked again, as the Java client does) or until fetching from that replica fails in
any way, when the partition goes back to its leader at once.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass

from kafkaev.types import TopicPartition

# Fetch's preferred_read_replica when the leader names none.
NO_PREFERRED_REPLICA = -1


@dataclass(slots=True)
class _Preferred:
    node_id: int
    until: float  # loop time after which the leader is asked again


class ReadReplicas:
    """The fetcher's one record of the partitions read from a replica other than their leader."""

    __slots__ = ("_preferred", "_lifetime_s")

    def __init__(self, lifetime_ms: int) -> None:
        self._preferred: dict[TopicPartition, _Preferred] = {}
        self._lifetime_s = lifetime_ms / 1000.0

    def node_for(self, tp: TopicPartition, leader: int, now: float, known_nodes: Container[int]) -> int:
        """The node to fetch ``tp`` from: its preferred replica while that holds, else ``leader``."""
        preferred = self._preferred.get(tp)
        if preferred is None:
            return leader
        if now >= preferred.until or preferred.node_id not in known_nodes:
            del self._preferred[tp]
            return leader
        return preferred.node_id

    def prefer(self, tp: TopicPartition, node_id: int, leader: int, now: float) -> None:
        """The leader named ``node_id`` (its own id, or none, means: read from the leader)."""
        if node_id == NO_PREFERRED_REPLICA or node_id == leader:
            self._preferred.pop(tp, None)
        else:
            self._preferred[tp] = _Preferred(node_id, now + self._lifetime_s)

    def reading_from_replica(self, tp: TopicPartition) -> bool:
        return tp in self._preferred

    def fell_back(self, tp: TopicPartition) -> None:
        """Fetching ``tp`` from its replica failed: back to the leader."""
        self._preferred.pop(tp, None)

    def node_failed(self, node_id: int) -> None:
        """A Fetch to ``node_id`` failed: every partition read from it goes back to its leader."""
        for tp in [tp for tp, p in self._preferred.items() if p.node_id == node_id]:
            del self._preferred[tp]
