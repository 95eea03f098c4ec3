"""Statistics: ``Client.stats()`` and the periodic ``stats_cb``.

Counting happens where the work already is (the connection's counters in C, one increment per
acknowledged batch in the producer, per fetched partition in the consumer); everything here
runs only when a snapshot is asked for. Files: ``snapshot`` (the typed snapshot),
``broker_totals`` (per-broker counters of connections the pool replaced), ``collect``
(reading the parts into a snapshot), ``timer`` (``stats_interval_ms``), and the optional
exporters ``prometheus`` and ``otel``.
"""

from .snapshot import (
    BrokerStats,
    ClientStats,
    ConsumerPartitionStats,
    GroupStats,
    ProducerPartitionStats,
    ProducerStats,
)

__all__ = [
    "BrokerStats",
    "ClientStats",
    "ConsumerPartitionStats",
    "GroupStats",
    "ProducerPartitionStats",
    "ProducerStats",
]
