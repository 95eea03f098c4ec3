"""The exporters against a real broker: a Prometheus scrape of a real HTTP endpoint (taken
while the loop runs, from the server's thread) and an OpenTelemetry in-memory reader each see
the expected series, labels and values."""

from __future__ import annotations

import asyncio
import urllib.request
from collections import Counter
from typing import Any

import pytest
from consumer_helpers import Received, close, connect, run_until

import kafkaev

prometheus_client = pytest.importorskip("prometheus_client")
otel_sdk_metrics = pytest.importorskip("opentelemetry.sdk.metrics")
otel_export = pytest.importorskip("opentelemetry.sdk.metrics.export")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

PARTITIONS = 2
RECORDS = 400
SESSION_MS = 6000
HEARTBEAT_MS = 500


@pytest.fixture
def busy_client(uv: asyncio.AbstractEventLoop, kafka: Any, make_topic: Any) -> Any:
    """One client that produced RECORDS over PARTITIONS partitions and read them back as a
    group member; yields (client, topic, group, records per partition)."""
    topic = make_topic(partitions=PARTITIONS)
    received = Received()
    client = connect(uv, kafka.bootstrap, on_message=received.on_message, on_error=received.on_error,
                     client_id="exporter-test")
    acked: Counter[int] = Counter()
    for i in range(RECORDS):
        client.produce(topic, None, b"v%d" % i, lambda md, err: acked.update([md.partition]) if err is None else None,
                       partition=i % PARTITIONS)
    run_until(uv, lambda: sum(acked.values()) == RECORDS, 30, "the deliveries")
    group = f"exporters-{topic}"
    client.subscribe([topic], group_id=group, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    run_until(uv, lambda: received.count == RECORDS, 30, "every record read")
    run_until(uv, lambda: all(p.lag == 0 for p in client.stats().consumer), 10, "lag 0")
    assert not received.errors
    yield client, topic, group, dict(acked)
    close(uv, client)


def test_a_prometheus_scrape_sees_the_series(uv: asyncio.AbstractEventLoop, busy_client: Any) -> None:
    from kafkaev.stats.prometheus import register

    client, topic, group, per_partition = busy_client
    registry = prometheus_client.CollectorRegistry()
    register(client, registry)
    server, thread = prometheus_client.start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        port = server.server_port
        body = uv.run_until_complete(uv.run_in_executor(
            None, lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()))
    finally:
        server.shutdown()
        thread.join(5)
    samples = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    (broker,) = client.stats().brokers
    broker_labels = (("broker", str(broker.node_id)), ("client_id", "exporter-test"),
                     ("host", f"{broker.host}:{broker.port}"))
    assert samples[("kafkaev_broker_requests_total", broker_labels)] > 0
    assert samples[("kafkaev_broker_received_bytes_total", broker_labels)] > 0
    # Every answer is one round trip, counted in the histogram's last (cumulative) bucket.
    assert samples[("kafkaev_broker_request_latency_seconds_bucket", (*broker_labels, ("le", "+Inf")))] == \
        samples[("kafkaev_broker_responses_total", broker_labels)] > 0
    for partition, count in per_partition.items():
        labels = (("client_id", "exporter-test"), ("partition", str(partition)), ("topic", topic))
        assert samples[("kafkaev_producer_records_total", labels)] == count
        assert samples[("kafkaev_consumer_records_total", labels)] == count
        assert samples[("kafkaev_consumer_lag", labels)] == 0
        assert samples[("kafkaev_consumer_position", labels)] == count
        assert samples[("kafkaev_consumer_paused", labels)] == 0
        assert samples[("kafkaev_consumer_held_bytes", labels)] == 0
    group_labels = (("client_id", "exporter-test"), ("group", group))
    assert samples[("kafkaev_group_rebalances_total", group_labels)] >= 1
    assert samples[("kafkaev_group_state", (*group_labels, ("state", "stable")))] == 1
    client_labels = (("client_id", "exporter-test"),)
    assert samples[("kafkaev_producer_buffer_limit_bytes", client_labels)] == client.config.buffer_memory
    assert samples[("kafkaev_producer_buffer_records_limit", client_labels)] == client.config.buffer_records
    assert samples[("kafkaev_producer_buffer_records", client_labels)] == 0  # everything acknowledged


def test_an_opentelemetry_reader_sees_the_series(busy_client: Any) -> None:
    from kafkaev.stats.otel import instrument

    client, topic, group, per_partition = busy_client
    reader = otel_export.InMemoryMetricReader()
    provider = otel_sdk_metrics.MeterProvider(metric_readers=[reader])
    instrument(client, provider)
    data = reader.get_metrics_data()
    points: dict[str, list[Any]] = {}
    for resource_metrics in data.resource_metrics:
        for scope in resource_metrics.scope_metrics:
            assert scope.scope.name == "kafkaev"
            for metric in scope.metrics:
                points[metric.name] = list(metric.data.data_points)
    sent = {p.attributes["messaging.destination.partition.id"]: p for p in points["messaging.client.sent.messages"]}
    consumed = {p.attributes["messaging.destination.partition.id"]: p
                for p in points["messaging.client.consumed.messages"]}
    for partition, count in per_partition.items():
        s, c = sent[str(partition)], consumed[str(partition)]
        assert s.value == count and c.value == count
        assert s.attributes["messaging.system"] == "kafka" and s.attributes["messaging.destination.name"] == topic
        assert s.attributes["messaging.operation.name"] == "send"
        assert c.attributes["messaging.operation.name"] == "receive"
        assert c.attributes["messaging.consumer.group.name"] == group
    (requests,) = points["kafkaev.broker.requests"]
    (broker,) = client.stats().brokers
    assert requests.value > 0 and requests.attributes["server.address"] == broker.host
    assert requests.attributes["server.port"] == broker.port
    assert all(p.value == 0 for p in points["kafkaev.consumer.lag"])
    (rebalances,) = points["kafkaev.group.rebalances"]
    assert rebalances.value >= 1 and rebalances.attributes["messaging.consumer.group.name"] == group
    provider.shutdown()
    assert isinstance(client, kafkaev.Client)
