"""The OpenTelemetry exporter (``pip install kafkaev[otel]``): observable instruments on the
OpenTelemetry metrics API, read from one ``ClientStats`` snapshot per collection.

``instrument(client)`` registers them on a meter of the global meter provider (or the one
given); the SDK's readers and exporters do the rest. Where OpenTelemetry's messaging semantic
conventions have a metric, it is used with their attributes: ``messaging.client.sent.messages``
and ``messaging.client.consumed.messages`` (``messaging.system`` ``kafka``,
``messaging.destination.name``, ``messaging.destination.partition.id``,
``messaging.operation.name``, ``messaging.consumer.group.name``). The rest are ``kafkaev.*``
instruments with ``server.address``/``server.port`` for a broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Meter, MeterProvider, Observation

from .collect import StatsCollector, snapshot_on_loop
from .snapshot import ClientStats

if TYPE_CHECKING:
    from ..client import Client

METER_NAME = "kafkaev"
MS_PER_S = 1000.0
SYSTEM = {"messaging.system": "kafka"}
# The callbacks of one collection all run within this many seconds of its first: they share
# its snapshot instead of each taking one.
SNAPSHOT_REUSE_S = 0.5


class _SharedSnapshot:
    __slots__ = ("_collector", "_loop", "_taken_at", "_stats")

    def __init__(self, client: Client) -> None:
        self._collector = StatsCollector(client)  # its own: collections leave stats()'s rates alone
        self._loop = client.loop
        self._taken_at = float("-inf")
        self._stats: ClientStats | None = None

    def get(self) -> ClientStats:
        now = time.monotonic()
        if self._stats is None or now - self._taken_at > SNAPSHOT_REUSE_S:
            # A periodic reader collects on a thread of its own.
            self._stats = snapshot_on_loop(self._collector, self._loop)
            self._taken_at = now
        return self._stats


def _broker_attributes(stats: ClientStats, node_id: int, host: str, port: int) -> dict[str, str | int]:
    return {**SYSTEM, "messaging.client.id": stats.client_id, "server.address": host, "server.port": port,
            "kafkaev.broker.id": node_id}


def _partition_attributes(stats: ClientStats, topic: str, partition: int, operation: str) -> dict[str, str]:
    attributes = {**SYSTEM, "messaging.client.id": stats.client_id, "messaging.destination.name": topic,
                  "messaging.destination.partition.id": str(partition), "messaging.operation.name": operation}
    if operation == "receive" and stats.group is not None:
        attributes["messaging.consumer.group.name"] = stats.group.group_id
    return attributes


def instrument(client: Client, meter_provider: MeterProvider | None = None) -> Meter:
    """Register ``client``'s statistics as observable instruments; returns the meter."""
    meter = (meter_provider or metrics.get_meter_provider()).get_meter(METER_NAME)
    shared = _SharedSnapshot(client)

    def observe(read: Callable[[ClientStats], Iterable[Observation]]) -> Callable[[CallbackOptions], Iterable[Observation]]:
        return lambda _options: list(read(shared.get()))

    def brokers(value: Callable[..., float]) -> Callable[[CallbackOptions], Iterable[Observation]]:
        return observe(lambda s: (Observation(value(b), _broker_attributes(s, b.node_id, b.host, b.port))
                                  for b in s.brokers))

    meter.create_observable_counter("messaging.client.sent.messages", [observe(lambda s: (
        Observation(p.records_delivered, _partition_attributes(s, p.topic, p.partition, "send"))
        for p in s.producer.partitions))], unit="{message}", description="Records the broker acknowledged.")
    meter.create_observable_counter("messaging.client.consumed.messages", [observe(lambda s: (
        Observation(c.records_delivered, _partition_attributes(s, c.topic, c.partition, "receive"))
        for c in s.consumer))], unit="{message}", description="Records handed to the callback since assigned.")
    meter.create_observable_gauge("kafkaev.consumer.lag", [observe(lambda s: (
        Observation(c.lag, _partition_attributes(s, c.topic, c.partition, "receive")) for c in s.consumer))],
        unit="{message}", description="High watermark minus position (-1 while unknown).")
    meter.create_observable_gauge("kafkaev.producer.queued.messages", [observe(lambda s: (
        Observation(p.queued_records, _partition_attributes(s, p.topic, p.partition, "send"))
        for p in s.producer.partitions))], unit="{message}", description="Records waiting to be sent.")
    meter.create_observable_gauge("kafkaev.producer.buffer.usage", [observe(lambda s: (
        Observation(s.producer.buffer_used, {**SYSTEM, "messaging.client.id": s.client_id}),))],
        unit="By", description="buffer_memory in use.")
    meter.create_observable_counter("kafkaev.broker.requests", [brokers(lambda b: b.requests_sent)],
                                    unit="{request}", description="Requests sent to the broker.")
    meter.create_observable_counter("kafkaev.broker.sent.bytes", [brokers(lambda b: b.bytes_sent)],
                                    unit="By", description="Bytes written to the broker.")
    meter.create_observable_counter("kafkaev.broker.received.bytes", [brokers(lambda b: b.bytes_received)],
                                    unit="By", description="Bytes read from the broker.")
    meter.create_observable_counter("kafkaev.broker.reconnects", [brokers(lambda b: b.reconnects)],
                                    unit="{connection}", description="Connection attempts after the first.")
    meter.create_observable_counter("kafkaev.broker.throttle.time", [brokers(lambda b: b.throttle_time_ms / MS_PER_S)],
                                    unit="s", description="Time the broker held answers back for a quota.")
    meter.create_observable_gauge("kafkaev.broker.requests.in_flight", [brokers(lambda b: b.in_flight)],
                                  unit="{request}", description="Requests awaiting their answer.")
    meter.create_observable_gauge("kafkaev.broker.rtt.p50", [brokers(lambda b: b.rtt_p50_ms / MS_PER_S)],
                                  unit="s", description="Median round trip (upper bound of its bucket).")
    meter.create_observable_gauge("kafkaev.broker.rtt.p99", [brokers(lambda b: b.rtt_p99_ms / MS_PER_S)],
                                  unit="s", description="99th percentile round trip (upper bound of its bucket).")

    def group_of(s: ClientStats) -> Iterable[Observation]:
        if s.group is None:
            return ()
        return (Observation(s.group.rebalances, {**SYSTEM, "messaging.client.id": s.client_id,
                                                 "messaging.consumer.group.name": s.group.group_id}),)

    meter.create_observable_counter("kafkaev.group.rebalances", [observe(group_of)], unit="{rebalance}",
                                    description="Rebalances completed.")
    return meter
