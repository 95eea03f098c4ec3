"""Partition choice: sticky keyless (KIP-480), custom partitioners, Java-compatible keyed."""

from __future__ import annotations

import pytest

from kafkaev.producer.partitioner import NO_PARTITION, StickyPartition, custom_partition, keyed_partition
from kafkaev.protocol.codec import murmur2


def test_keyed_partition_is_murmur2_modulo():
    for i in range(500):
        key = b"key-%d" % i
        assert keyed_partition(key, 12) == murmur2(key) % 12
    assert keyed_partition(b"", 7) == murmur2(b"") % 7


def test_sticky_stays_until_released_then_moves():
    sticky = StickyPartition()
    first = sticky.choose(6, [0, 1, 2, 3, 4, 5])
    assert sticky.current == first
    sticky.release((first + 1) % 6)  # another partition's batch closing changes nothing
    assert sticky.current == first
    for _ in range(50):
        prev = sticky.current
        sticky.release(prev)
        assert sticky.current == NO_PARTITION
        assert sticky.choose(6, [0, 1, 2, 3, 4, 5]) != prev  # a full batch moves us on


def test_sticky_prefers_partitions_with_a_leader():
    sticky = StickyPartition()
    chosen = set()
    for _ in range(200):
        chosen.add(sticky.choose(8, [2, 5]))
        sticky.release(sticky.current)
    assert chosen == {2, 5}
    assert sticky.choose(3, []) in (0, 1, 2)  # no leader anywhere: any partition, records wait
    assert StickyPartition().choose(1, [0]) == 0


def test_sticky_spreads_over_all_partitions():
    sticky = StickyPartition()
    counts = [0] * 4
    for _ in range(4000):
        counts[sticky.choose(4, [0, 1, 2, 3])] += 1
        sticky.release(sticky.current)
    assert min(counts) > 700


def test_custom_partitioner_answer_is_checked():
    assert custom_partition(lambda t, k, n: n - 1, "t", b"k", 3) == 2
    for bad in (3, -1, "1", True, None):
        with pytest.raises(ValueError, match="'partitioner' returned"):
            custom_partition(lambda t, k, n, bad=bad: bad, "t", b"k", 3)
