"""How a record's partition is chosen.

* explicit ``partition=`` wins (range-checked by the producer);
* keyed records: ``murmur2(key) % num_partitions``, the Java client's default, so kafkaev,
  Java and librdkafka (``murmur2_random``) producers put a key in the same partition;
* keyless records: sticky partitioning (KIP-480): every keyless record of a topic goes to
  one partition until that partition's batch is closed, then a new one is picked at random
  among partitions with a leader. Batches fill up instead of trickling one record into each;
* a custom ``partitioner(topic, key, num_partitions) -> int`` replaces both rules.

The producer's hot path calls ``murmur2`` directly; this module holds the per-topic sticky
state and the slower paths.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from .._proto import murmur2

__all__ = ["StickyPartition", "custom_partition", "keyed_partition", "murmur2"]

NO_PARTITION = -1


def keyed_partition(key: bytes, num_partitions: int) -> int:
    """The Java client's partition for a non-null key."""
    return murmur2(key) % num_partitions


def custom_partition(
    partitioner: Callable[[str, bytes | None, int], int], topic: str, key: bytes | None, num_partitions: int
) -> int:
    """Calls the user's partitioner and checks its answer (a bad answer is a bug: raised at once)."""
    p = partitioner(topic, key, num_partitions)
    if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < num_partitions:
        raise ValueError(
            f"kafkaev.Client: 'partitioner' returned {p!r} for topic {topic!r}; "
            f"expected an int in 0..{num_partitions - 1}"
        )
    return p


class StickyPartition:
    """The sticky partition of one topic for keyless records (KIP-480)."""

    __slots__ = ("current", "_last", "_rand")

    def __init__(self) -> None:
        self.current = NO_PARTITION
        self._last = NO_PARTITION  # the partition just left: the next choice avoids it
        self._rand = random.Random()

    def choose(self, num_partitions: int, available: Sequence[int]) -> int:
        """Pick a new sticky partition, different from the last one when there is a choice.
        ``available`` lists partitions with a leader; when none has, any partition will do
        (records wait in the accumulator for a leader)."""
        candidates = available if available else range(num_partitions)
        if len(candidates) == 1:
            choice = candidates[0]
        else:
            avoid = self.current if self.current != NO_PARTITION else self._last
            choice = avoid
            while choice == avoid:
                choice = candidates[self._rand.randrange(len(candidates))]
        self.current = choice
        return choice

    def release(self, partition: int) -> None:
        """The batch of ``partition`` closed: the next keyless record picks a new partition."""
        if partition == self.current:
            self._last = partition
            self.current = NO_PARTITION
