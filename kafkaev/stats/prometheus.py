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

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import REGISTRY, CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry

from .collect import StatsCollector, snapshot_on_loop

if TYPE_CHECKING:
    from ..client import Client

    Metric = CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily

US_PER_S = 1_000_000
MS_PER_S = 1000.0


class KafkaevCollector(Collector):
    """One client's statistics as Prometheus metrics, read at each scrape."""

    def __init__(self, client: Client) -> None:
        self._collector = StatsCollector(client)  # its own: a scrape leaves stats()'s rates alone
        self._loop = client.loop

    def collect(self) -> Iterator[Metric]:
        stats = snapshot_on_loop(self._collector, self._loop)  # a scrape runs on the HTTP server's thread
        client_id = stats.client_id

        def counter(name: str, doc: str, labels: list[str]) -> CounterMetricFamily:
            return CounterMetricFamily(f"kafkaev_{name}", doc, labels=["client_id", *labels])

        def gauge(name: str, doc: str, labels: list[str]) -> GaugeMetricFamily:
            return GaugeMetricFamily(f"kafkaev_{name}", doc, labels=["client_id", *labels])

        broker = ["broker", "host"]
        requests = counter("broker_requests", "Requests sent to the broker.", broker)
        responses = counter("broker_responses", "Responses received from the broker.", broker)
        sent = counter("broker_sent_bytes", "Bytes written to the broker.", broker)
        received = counter("broker_received_bytes", "Bytes read from the broker.", broker)
        connects = counter("broker_connects", "Connection attempts to the broker.", broker)
        reconnects = counter("broker_reconnects", "Connection attempts after the first, per role and lane.", broker)
        throttle = counter("broker_throttle_seconds", "Time the broker held answers back for a quota.", broker)
        in_flight = gauge("broker_in_flight_requests", "Requests awaiting their answer.", broker)
        open_conns = gauge("broker_connections", "Open connections to the broker.", broker)
        rtt = HistogramMetricFamily("kafkaev_broker_request_latency_seconds",
                                    "Request round trips, in the connection's fixed buckets.",
                                    labels=["client_id", *broker])
        for b in stats.brokers:
            values = [client_id, str(b.node_id), f"{b.host}:{b.port}"]
            requests.add_metric(values, b.requests_sent)
            responses.add_metric(values, b.responses_received)
            sent.add_metric(values, b.bytes_sent)
            received.add_metric(values, b.bytes_received)
            connects.add_metric(values, b.connects)
            reconnects.add_metric(values, b.reconnects)
            throttle.add_metric(values, b.throttle_time_ms / MS_PER_S)
            in_flight.add_metric(values, b.in_flight)
            open_conns.add_metric(values, b.connections)
            rtt.add_metric(values, _cumulative(b.rtt_buckets), None)
        yield from (requests, responses, sent, received, connects, reconnects, throttle, in_flight, open_conns, rtt)

        part = ["topic", "partition"]
        produced = counter("producer_records", "Records the broker acknowledged.", part)
        produced_bytes = counter("producer_bytes", "Bytes of the batches acknowledged.", part)
        batches = counter("producer_batches", "Batches acknowledged.", part)
        queued = gauge("producer_queued_records", "Records waiting to be sent.", part)
        queued_bytes = gauge("producer_queued_bytes", "Bytes waiting to be sent.", part)
        for p in stats.producer.partitions:
            values = [client_id, p.topic, str(p.partition)]
            produced.add_metric(values, p.records_delivered)
            produced_bytes.add_metric(values, p.bytes_delivered)
            batches.add_metric(values, p.batches_delivered)
            queued.add_metric(values, p.queued_records)
            queued_bytes.add_metric(values, p.queued_bytes)
        buffer_used = gauge("producer_buffer_used_bytes", "buffer_memory in use.", [])
        buffer_used.add_metric([client_id], stats.producer.buffer_used)
        buffer_limit = gauge("producer_buffer_limit_bytes", "buffer_memory.", [])
        buffer_limit.add_metric([client_id], stats.producer.buffer_limit)
        yield from (produced, produced_bytes, batches, queued, queued_bytes, buffer_used, buffer_limit)

        consumed = counter("consumer_records", "Records handed to the callback since assigned.", part)
        fetched = counter("consumer_fetched_bytes", "Record bytes fetched since assigned.", part)
        fetches = counter("consumer_fetches", "Fetch answers with records since assigned.", part)
        lag = gauge("consumer_lag", "High watermark minus position (-1 while unknown).", part)
        position = gauge("consumer_position", "The next offset to deliver.", part)
        for c in stats.consumer:
            values = [client_id, c.topic, str(c.partition)]
            consumed.add_metric(values, c.records_delivered)
            fetched.add_metric(values, c.bytes_fetched)
            fetches.add_metric(values, c.fetches)
            lag.add_metric(values, c.lag)
            position.add_metric(values, c.position)
        yield from (consumed, fetched, fetches, lag, position)

        group = stats.group
        if group is not None:
            values = [client_id, group.group_id]
            rebalances = counter("group_rebalances", "Rebalances completed.", ["group"])
            rebalances.add_metric(values, group.rebalances)
            rebalance_time = counter("group_rebalance_seconds", "Time spent rebalancing.", ["group"])
            rebalance_time.add_metric(values, group.rebalance_ms_total / MS_PER_S)
            generation = gauge("group_generation", "The group generation joined.", ["group"])
            generation.add_metric(values, group.generation)
            state = gauge("group_state", "1 for the member's current state.", ["group", "state"])
            state.add_metric([*values, group.state], 1)
            assigned = gauge("group_assigned_partitions", "Partitions assigned to this member.", ["group"])
            assigned.add_metric(values, group.assigned_partitions)
            yield from (rebalances, rebalance_time, generation, state, assigned)


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
