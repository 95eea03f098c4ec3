"""Per-broker counters of the connections the pool no longer holds.

The pool makes a new ``Connection`` for every connect; a connection's own counters end with
it. Before the pool lets one go it hands it here, so a broker's totals in ``Client.stats()``
cover the life of the client, reconnects included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..protocol.connection import Connection

from ..protocol.connection import RTT_BUCKET_COUNT


class ConnectionCounters:
    """The summed counters of some connections to one broker."""

    __slots__ = ("requests_sent", "responses_received", "bytes_sent", "bytes_received", "throttle_time_ms",
                 "throttled_responses", "reauthentications", "rtt", "connects", "reconnects")

    def __init__(self) -> None:
        self.requests_sent = 0
        self.responses_received = 0
        self.bytes_sent = 0
        self.bytes_received = 0
        self.throttle_time_ms = 0
        self.throttled_responses = 0
        self.reauthentications = 0  # KIP-368
        self.rtt = [0] * RTT_BUCKET_COUNT
        self.connects = 0
        self.reconnects = 0

    def add(self, conn: Connection) -> None:
        self.requests_sent += conn.requests_sent
        self.responses_received += conn.responses_received
        self.bytes_sent += conn.bytes_sent
        self.bytes_received += conn.bytes_received
        self.throttle_time_ms += conn.throttle_time_ms
        self.throttled_responses += conn.throttled_responses
        self.reauthentications += conn.reauthentications
        for i, count in enumerate(conn.rtt_histogram()):
            self.rtt[i] += count

    def copy(self) -> ConnectionCounters:
        twin = ConnectionCounters()
        for name in ConnectionCounters.__slots__:
            setattr(twin, name, getattr(self, name))
        twin.rtt = list(self.rtt)
        return twin


class BrokerTotals:
    """Owned by the pool: what its retired connections counted, and its connects, per node."""

    __slots__ = ("_nodes",)

    def __init__(self) -> None:
        self._nodes: dict[int, ConnectionCounters] = {}

    def _of(self, node_id: int) -> ConnectionCounters:
        counters = self._nodes.get(node_id)
        if counters is None:
            counters = self._nodes[node_id] = ConnectionCounters()
        return counters

    def connecting(self, node_id: int, first: bool) -> None:
        """A connect to ``node_id`` starts; ``first``: the first of its (role, lane)."""
        counters = self._of(node_id)
        counters.connects += 1
        if not first:
            counters.reconnects += 1

    def retire(self, node_id: int, conn: Connection) -> None:
        """``conn`` leaves the pool: its counters join the node's totals."""
        self._of(node_id).add(conn)

    def of(self, node_id: int) -> ConnectionCounters:
        """A copy of the node's retired totals (zeros for a node never seen)."""
        counters = self._nodes.get(node_id)
        return ConnectionCounters() if counters is None else counters.copy()

    @property
    def node_ids(self) -> list[int]:
        return list(self._nodes)
