"""How a record's partition is chosen.

* explicit ``partition=`` wins (range-checked by the producer);
* keyed records: ``murmur2(key) % num_partitions``, the Java client's default, so kafkaev,
  Java and librdkafka (``murmur2_random``) producers put a key in the same partition;
* keyless records: sticky partitioning (KIP-480): every keyless record of a topic goes to
  one partition until that partition's batch is closed, then a new one is picked at random
  among partitions with a leader. Batches fill up instead of trickling one record into each;
* a custom ``partitioner(topic, key, num_partitions) -> int`` replaces both rules.

The rules run in C on the producer's hot path (``kafkaev.producer.core``, which also defines the
per-topic ``StickyPartition``); this module holds the user partitioner's check and the
Python-level entry points.
"""

from __future__ import annotations

from collections.abc import Callable

from ..protocol.codec import murmur2
from .core import NO_PARTITION, StickyPartition

__all__ = ["NO_PARTITION", "StickyPartition", "custom_partition", "keyed_partition", "murmur2"]


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
