"""kafka-python scenarios."""

from __future__ import annotations

import threading
import time
from typing import Any

import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from bench.measure import (
    Section,
    e2e_result,
    histogram,
    latency_us_of,
    make_value,
    stamp,
    summarize_latencies,
)
from bench.spec import E2E_TICK_S, RunResult, RunSpec

CALLS_PER_CLOCK_CHECK = 100
CONSUME_BATCH = 10000
BATCH_SIZE = 512 * 1024


class Deliveries:
    __slots__ = ("acked", "failed")

    def __init__(self) -> None:
        self.acked = 0
        self.failed = 0

    def ok(self, metadata: Any) -> None:
        self.acked += 1

    def error(self, exc: BaseException) -> None:
        self.failed += 1


def _compression(spec: RunSpec) -> str | None:
    return None if spec.compression == "none" else spec.compression


def _throughput_settings(spec: RunSpec) -> dict[str, Any]:
    return {
        "bootstrap_servers": spec.bootstrap,
        "acks": spec.acks,
        "linger_ms": 5,
        "batch_size": BATCH_SIZE,
        "compression_type": _compression(spec),
    }


def _latency_settings(spec: RunSpec) -> dict[str, Any]:
    return {
        "bootstrap_servers": spec.bootstrap,
        "acks": spec.acks,
        "linger_ms": 0,
        "compression_type": _compression(spec),
    }


def _consumer_settings(spec: RunSpec, *, low_latency: bool) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "bootstrap_servers": spec.bootstrap,
        "group_id": None,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
    }
    if low_latency:
        settings["fetch_max_wait_ms"] = 100
    else:
        settings.update({"fetch_max_bytes": 52_428_800, "max_partition_fetch_bytes": 1_048_576})
    return settings


def _versions() -> dict[str, Any]:
    return {"kafka-python": kafka.__version__}


def _send_for(producer: KafkaProducer, topic: str, value: bytes, seconds: float, deliveries: Deliveries) -> int:
    calls = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(CALLS_PER_CLOCK_CHECK):
            producer.send(topic, value).add_callback(deliveries.ok).add_errback(deliveries.error)
            calls += 1
    return calls


def produce(spec: RunSpec) -> RunResult:
    settings = _throughput_settings(spec)
    producer = KafkaProducer(**settings)
    deliveries = Deliveries()
    value = make_value(spec.value_size)
    warmup_calls = _send_for(producer, spec.topic, value, spec.warmup_s, deliveries)
    producer.flush()
    acked_before, failed_before = deliveries.acked, deliveries.failed
    with Section() as section:
        calls = _send_for(producer, spec.topic, value, spec.duration_s, deliveries)
        call_elapsed = time.perf_counter() - section.started
        producer.flush()
    producer.close()
    acked = deliveries.acked - acked_before
    return RunResult(
        records=acked,
        failed=deliveries.failed - failed_before,
        elapsed_s=section.elapsed,
        call_elapsed_s=call_elapsed,
        calls=calls,
        warmup_records=warmup_calls,
        cpu_s=section.cpu,
        bytes=acked * spec.value_size,
        settings={**settings, "api": "send() + callbacks", **_versions()},
    )


def roundtrip(spec: RunSpec) -> RunResult:
    settings = _latency_settings(spec)
    producer = KafkaProducer(**settings)
    value = make_value(spec.value_size)
    warmup = max(100, spec.count // 10)
    latencies: list[float] = []
    with Section() as section:
        for i in range(warmup + spec.count):
            started = time.perf_counter_ns()
            producer.send(spec.topic, value).get(timeout=30)
            if i >= warmup:
                latencies.append((time.perf_counter_ns() - started) / 1000.0)
    producer.close()
    return RunResult(
        records=len(latencies),
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        latency_us=summarize_latencies(latencies),
        histogram=histogram(latencies),
        settings={**settings, "api": "send().get()", **_versions()},
    )


def e2e(spec: RunSpec) -> RunResult:
    producer_settings = _latency_settings(spec)
    consumer_settings = _consumer_settings(spec, low_latency=True)
    producer = KafkaProducer(**producer_settings)
    consumer = KafkaConsumer(**consumer_settings)
    consumer.assign([TopicPartition(spec.topic, p) for p in range(spec.partitions)])
    consumer.seek_to_beginning()
    samples: list[tuple[int, float]] = []
    stop = threading.Event()

    def consume_loop() -> None:
        while not stop.is_set():
            for records in consumer.poll(timeout_ms=100).values():
                now = time.perf_counter_ns()
                for record in records:
                    samples.append((now, latency_us_of(record.value, now)))

    reader = threading.Thread(target=consume_loop, daemon=True)
    reader.start()
    value = make_value(spec.value_size)
    total = int(spec.rate * (spec.warmup_s + spec.duration_s))
    deliveries = Deliveries()
    # Start the clock only once the consumer is fetching: probes until one arrives.
    deadline = time.perf_counter() + 30
    while not samples and time.perf_counter() < deadline:
        producer.send(spec.topic, stamp(value)).get(timeout=10)
        time.sleep(0.05)
    samples.clear()
    with Section() as section:
        sent = 0
        while sent < total:
            due = min(total, int((time.perf_counter() - section.started) * spec.rate) + 1)
            while sent < due:
                producer.send(spec.topic, stamp(value)).add_errback(deliveries.error)
                sent += 1
            time.sleep(E2E_TICK_S)
        producer.flush()
        deadline = time.perf_counter() + 30
        while len(samples) < total and time.perf_counter() < deadline:
            time.sleep(0.01)
    stop.set()
    reader.join()
    consumer.close()
    producer.close()
    return e2e_result(spec, section, samples, total, deliveries.failed,
                      {"producer": producer_settings, "consumer": consumer_settings, **_versions()})


def consume(spec: RunSpec) -> RunResult:
    settings = _consumer_settings(spec, low_latency=False)
    consumer = KafkaConsumer(**settings)
    consumer.assign([TopicPartition(spec.topic, p) for p in range(spec.partitions)])
    consumer.seek_to_beginning()
    records = sum(len(b) for b in consumer.poll(timeout_ms=10000, max_records=CONSUME_BATCH).values())
    counted = 0
    nbytes = 0
    with Section() as section:
        # Fast clients stop at `count`; slow ones at the duration_s time cap.
        while records < spec.count and time.perf_counter() - section.started < spec.duration_s:
            batches = consumer.poll(timeout_ms=5000, max_records=CONSUME_BATCH)
            if not batches:
                break
            for batch in batches.values():
                for record in batch:
                    nbytes += len(record.value)
                counted += len(batch)
                records += len(batch)
    consumer.close()
    return RunResult(
        records=counted,
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        bytes=nbytes,
        settings={**settings, "api": f"poll(max_records={CONSUME_BATCH})", **_versions()},
        note="" if records >= spec.count else f"stopped at {records}/{spec.count} (time cap or topic end)",
    )
