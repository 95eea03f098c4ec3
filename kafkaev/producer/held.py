"""The partitions whose lingered batch waits to be sent, filed by the connection they send on.

A lingered batch stays open while its partition, or the connection it sends on, has as many
requests out as it may (``Accumulator``). Before every round the sender asks which of them may
go now. Over 1,000 partitions on a few connections, asking each partition cost the producer
more CPU than any other step of a batch; filed by connection, a round asks each connection
once and passes over every partition of a busy one at once.

A partition is filed under the connection the sender named when it was held, or, when only
its leader's requests of small batches hold it, under all of its leader's produce connections
together (``ALL_LANES``). A leader that moves changes that connection, so ``mark_stale`` has
the next pass file every partition again (``Accumulator.close_held``).
"""

from __future__ import annotations

from collections.abc import Iterator

from .core import PartitionState

# Which connection a partition's batches go on, as the sender names it: (leader, lane).
ConnectionKey = tuple[int, int]
# The lane of a key that stands for every produce connection of its leader at once, counting
# the requests out that carry only small batches (Accumulator.coalesces).
ALL_LANES = -1


class HeldPartitions:
    """Held partitions, each under one connection; iterating gives the partitions."""

    __slots__ = ("_filed", "_since", "_by_connection", "_stale")

    def __init__(self) -> None:
        self._filed: dict[PartitionState, ConnectionKey] = {}  # partition -> the connection it waits on
        self._since: dict[PartitionState, float] = {}  # partition -> when it began to wait (loop time)
        self._by_connection: dict[ConnectionKey, dict[PartitionState, None]] = {}  # in the order held
        self._stale = False

    def __bool__(self) -> bool:
        return bool(self._filed)

    def __contains__(self, part: object) -> bool:
        return part in self._filed

    def __iter__(self) -> Iterator[PartitionState]:
        return iter(self._filed)

    def hold(self, part: PartitionState, connection: ConnectionKey, now: float) -> None:
        """``part`` waits from ``now``, on ``connection`` (filed again if it was under another,
        still waiting since it first did)."""
        filed = self._filed.get(part)
        if filed == connection:
            return
        if filed is None:
            self._since[part] = now
        else:
            self._unfile(part, filed)
        self._filed[part] = connection
        group = self._by_connection.get(connection)
        if group is None:
            group = self._by_connection[connection] = {}
        group[part] = None

    def release(self, part: PartitionState) -> None:
        """``part`` no longer waits."""
        self._unfile(part, self._filed.pop(part))
        del self._since[part]

    def since(self, part: PartitionState) -> float:
        """When ``part`` began to wait."""
        return self._since[part]

    def _unfile(self, part: PartitionState, connection: ConnectionKey) -> None:
        group = self._by_connection[connection]
        del group[part]
        if not group:
            del self._by_connection[connection]

    def by_connection(self) -> list[tuple[ConnectionKey, list[PartitionState]]]:
        """Each connection with its partitions: a snapshot, so that they may be released meanwhile."""
        return [(connection, list(group)) for connection, group in self._by_connection.items()]

    def mark_stale(self) -> None:
        """Partitions may send on other connections now (a leader moved): file them again."""
        if self._filed:
            self._stale = True

    def take_stale(self) -> bool:
        """True once after ``mark_stale``: the caller files every partition again."""
        stale, self._stale = self._stale, False
        return stale

    def clear(self) -> None:
        self._filed.clear()
        self._since.clear()
        self._by_connection.clear()
        self._stale = False
