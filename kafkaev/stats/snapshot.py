"""The typed statistics snapshot ``Client.stats()`` returns and ``stats_cb`` receives.

Every class is a frozen, slotted dataclass: a snapshot is a value, taken at one moment, and
never changes under its reader. Counters count since the object they belong to began (the
client, the partition's assignment); rates are over the time since the previous snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BrokerStats:
    """One broker, over every connection the client opened to it (all roles and lanes)."""

    node_id: int
    host: str
    port: int
    connections: int  # open now
    connects: int  # connection attempts started
    reconnects: int  # attempts after the first one of each (role, lane)
    requests_sent: int
    responses_received: int
    in_flight: int  # requests awaiting their answer now
    bytes_sent: int
    bytes_received: int
    throttle_time_ms: int  # summed over every answer that carried a throttle (a quota)
    throttled_responses: int
    reauthentications: int  # KIP-368: sessions renewed on a live connection
    rtt_count: int  # round trips measured
    rtt_p50_ms: float  # the upper bound of the histogram bucket holding the percentile; 0 without any
    rtt_p99_ms: float
    rtt_buckets: tuple[int, ...]  # bucket i: round trips under 2**i microseconds (the last: all longer)


@dataclass(frozen=True, slots=True)
class ProducerPartitionStats:
    """One partition the producer wrote to."""

    topic: str
    partition: int
    queued_records: int  # in the open batch and the batches waiting to be sent
    queued_bytes: int
    in_flight_batches: int
    records_delivered: int  # acknowledged by the broker
    bytes_delivered: int
    batches_delivered: int
    avg_batch_bytes: float  # of the batches delivered
    avg_records_per_batch: float
    records_per_s: float  # delivered, since the previous snapshot


@dataclass(frozen=True, slots=True)
class ConsumerPartitionStats:
    """One assigned partition; counts since it was assigned."""

    topic: str
    partition: int
    position: int  # the next offset to deliver, -1 while unknown
    high_watermark: int  # from the last Fetch answer, -1 before one
    lag: int  # high_watermark - position, -1 while either is unknown
    records_delivered: int  # handed to on_message / on_batch
    fetches: int  # Fetch answers that carried records for it
    bytes_fetched: int
    records_per_s: float  # since the previous snapshot
    fetches_per_s: float
    paused: bool
    held_bytes: int  # fetched record sets waiting for a resume or the loop's next turn


@dataclass(frozen=True, slots=True)
class GroupStats:
    """The consumer group membership."""

    group_id: str
    state: str  # unjoined, joining, syncing, stable, failed, closed
    generation: int
    member_id: str
    assigned_partitions: int
    rebalances: int  # completed, each ending with an assignment
    last_rebalance_ms: float
    rebalance_ms_total: float


@dataclass(frozen=True, slots=True)
class ProducerStats:
    """The producer: buffer memory, identity and its partitions."""

    buffer_limit: int  # buffer_memory
    buffer_used: int  # bytes reserved by batches and held by records waiting for metadata
    buffer_records_limit: int  # buffer_records (0: no limit)
    buffer_records_used: int  # records produced and not yet completed (in batches or waiting for metadata)
    batches_in_flight: int
    records_waiting_for_metadata: int
    idempotent: bool
    producer_id: int  # -1 until assigned (and when not idempotent)
    producer_epoch: int
    transaction_state: str | None  # None without transactions
    partitions: tuple[ProducerPartitionStats, ...]


@dataclass(frozen=True, slots=True)
class ClientStats:
    """One snapshot of the whole client."""

    client_id: str
    timestamp: float  # time.time() when taken
    interval_s: float  # since the previous snapshot (0 for the first)
    brokers: tuple[BrokerStats, ...]
    producer: ProducerStats
    consumer: tuple[ConsumerPartitionStats, ...]
    group: GroupStats | None
