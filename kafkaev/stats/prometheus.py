"""The Prometheus exporter (``pip install kafkaev[prometheus]``): a ``prometheus_client``
collector that reads one ``ClientStats`` snapshot per scrape.

``register(client)`` adds it to a registry (the default one unless given); then
``prometheus_client.start_http_server(port)`` or ``generate_latest()`` exposes it. Names follow
Prometheus' conventions: a ``kafkaev_`` prefix, ``_total`` on counters, base units (bytes,
seconds), one label per dimension (``client_id``, ``broker``, ``topic``, ``partition``,
``group``). The round trips are a histogram over the connection's own fixed buckets, without a
``_sum`` (the connection counts no sum, only buckets).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from .collect import StatsCollector, snapshot_on_loop

if TYPE_CHECKING:
    from ..client import Client

    Scalar = CounterMetricFamily | GaugeMetricFamily
    Metric = Scalar | HistogramMetricFamily

US_PER_S = 1_000_000
MS_PER_S = 1000.0
COUNTER = "counter"
GAUGE = "gauge"


class Series(NamedTuple):
    """One metric family: ``kafkaev_<name>`` (counters get ``_total``), read from one row."""

    name: str
    kind: str  # COUNTER or GAUGE
    doc: str
    value: Callable[[Any], float]


BROKER_LABELS = ("broker", "host")
BROKER_SERIES = (
    Series("broker_requests", COUNTER, "Requests sent to the broker.", lambda b: b.requests_sent),
    Series("broker_responses", COUNTER, "Responses received from the broker.", lambda b: b.responses_received),
    Series("broker_sent_bytes", COUNTER, "Bytes written to the broker.", lambda b: b.bytes_sent),
    Series("broker_received_bytes", COUNTER, "Bytes read from the broker.", lambda b: b.bytes_received),
    Series("broker_connects", COUNTER, "Connection attempts to the broker.", lambda b: b.connects),
    Series("broker_reconnects", COUNTER, "Connection attempts after the first, per role and lane.",
           lambda b: b.reconnects),
    Series("broker_throttle_seconds", COUNTER, "Time the broker held answers back for a quota.",
           lambda b: b.throttle_time_ms / MS_PER_S),
    Series("broker_reauthentications", COUNTER, "KIP-368 re-authentications on live connections.",
           lambda b: b.reauthentications),
    Series("broker_in_flight_requests", GAUGE, "Requests awaiting their answer.", lambda b: b.in_flight),
    Series("broker_connections", GAUGE, "Open connections to the broker.", lambda b: b.connections),
)
PARTITION_LABELS = ("topic", "partition")
PRODUCER_SERIES = (
    Series("producer_records", COUNTER, "Records the broker acknowledged.", lambda p: p.records_delivered),
    Series("producer_bytes", COUNTER, "Bytes of the batches acknowledged.", lambda p: p.bytes_delivered),
    Series("producer_batches", COUNTER, "Batches acknowledged.", lambda p: p.batches_delivered),
    Series("producer_queued_records", GAUGE, "Records waiting to be sent.", lambda p: p.queued_records),
    Series("producer_queued_bytes", GAUGE, "Bytes waiting to be sent.", lambda p: p.queued_bytes),
)
PRODUCER_BUFFER_SERIES = (
    Series("producer_buffer_used_bytes", GAUGE, "buffer_memory in use.", lambda s: s.producer.buffer_used),
    Series("producer_buffer_limit_bytes", GAUGE, "buffer_memory.", lambda s: s.producer.buffer_limit),
    Series("producer_buffer_records", GAUGE, "Records produced and not yet completed (buffer_records counts them).",
           lambda s: s.producer.buffer_records_used),
    Series("producer_buffer_records_limit", GAUGE, "buffer_records (0: no limit).",
           lambda s: s.producer.buffer_records_limit),
)
CONSUMER_SERIES = (
    Series("consumer_records", COUNTER, "Records handed to the callback since assigned.",
           lambda c: c.records_delivered),
    Series("consumer_fetched_bytes", COUNTER, "Record bytes fetched since assigned.", lambda c: c.bytes_fetched),
    Series("consumer_fetches", COUNTER, "Fetch answers with records since assigned.", lambda c: c.fetches),
    Series("consumer_lag", GAUGE, "High watermark minus position (-1 while unknown).", lambda c: c.lag),
    Series("consumer_position", GAUGE, "The next offset to deliver.", lambda c: c.position),
    Series("consumer_paused", GAUGE, "1 while paused.", lambda c: int(c.paused)),
    Series("consumer_held_bytes", GAUGE, "Fetched record-set bytes waiting for a resume or the loop's next turn.",
           lambda c: c.held_bytes),
)
GROUP_LABELS = ("group",)
GROUP_SERIES = (
    Series("group_rebalances", COUNTER, "Rebalances completed.", lambda g: g.rebalances),
    Series("group_rebalance_seconds", COUNTER, "Time spent rebalancing.", lambda g: g.rebalance_ms_total / MS_PER_S),
    Series("group_generation", GAUGE, "The group generation joined.", lambda g: g.generation),
    Series("group_assigned_partitions", GAUGE, "Partitions assigned to this member.",
           lambda g: g.assigned_partitions),
)


def _families(series: Sequence[Series], labels: Sequence[str],
              rows: Iterable[tuple[list[str], Any]]) -> list[Scalar]:
    """One family per series, one sample per (label values, row)."""
    names = ["client_id", *labels]
    families: list[Scalar] = [
        (CounterMetricFamily if s.kind == COUNTER else GaugeMetricFamily)(f"kafkaev_{s.name}", s.doc, labels=names)
        for s in series
    ]
    for values, row in rows:
        for family, s in zip(families, series, strict=True):
            family.add_metric(values, s.value(row))
    return families


class KafkaevCollector(Collector):
    """One client's statistics as Prometheus metrics, read at each scrape."""

    def __init__(self, client: Client) -> None:
        self._collector = StatsCollector(client)  # its own: a scrape leaves stats()'s rates alone
        self._loop = client.loop

    def collect(self) -> Iterator[Metric]:
        stats = snapshot_on_loop(self._collector, self._loop)  # a scrape runs on the HTTP server's thread
        client_id = stats.client_id
        brokers = [([client_id, str(b.node_id), f"{b.host}:{b.port}"], b) for b in stats.brokers]
        yield from _families(BROKER_SERIES, BROKER_LABELS, brokers)
        rtt = HistogramMetricFamily("kafkaev_broker_request_latency_seconds",
                                    "Request round trips, in the connection's fixed buckets.",
                                    labels=["client_id", *BROKER_LABELS])
        for values, broker in brokers:
            rtt.add_metric(values, _cumulative(broker.rtt_buckets), None)
        yield rtt
        yield from _families(PRODUCER_SERIES, PARTITION_LABELS,
                             (([client_id, p.topic, str(p.partition)], p) for p in stats.producer.partitions))
        yield from _families(PRODUCER_BUFFER_SERIES, (), [([client_id], stats)])
        yield from _families(CONSUMER_SERIES, PARTITION_LABELS,
                             (([client_id, c.topic, str(c.partition)], c) for c in stats.consumer))
        group = stats.group
        if group is not None:
            yield from _families(GROUP_SERIES, GROUP_LABELS, [([client_id, group.group_id], group)])
            state = GaugeMetricFamily("kafkaev_group_state", "1 for the member's current state.",
                                      labels=["client_id", *GROUP_LABELS, "state"])
            state.add_metric([client_id, group.group_id, group.state], 1)
            yield state


def _cumulative(buckets: tuple[int, ...]) -> list[tuple[str, float]]:
    """Round-trip buckets as Prometheus' cumulative ``le`` pairs, in seconds."""
    pairs: list[tuple[str, float]] = []
    seen = 0
    last = len(buckets) - 1
    for i, count in enumerate(buckets):
        seen += count
        pairs.append(("+Inf" if i == last else repr((1 << i) / US_PER_S), seen))
    return pairs


def register(client: Client, registry: CollectorRegistry = REGISTRY) -> KafkaevCollector:
    """Expose ``client``'s statistics in ``registry``; returns the collector (unregister it
    with ``registry.unregister(collector)`` when the client closes)."""
    collector = KafkaevCollector(client)
    registry.register(collector)
    return collector
