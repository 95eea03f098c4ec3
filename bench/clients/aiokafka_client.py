"""aiokafka scenarios, on uvloop."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiokafka
import uvloop
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from bench import aio_drive
from bench.measure import (
    Section,
    e2e_result,
    histogram,
    latency_us_of,
    make_value,
    stamp,
    summarize_latencies,
)
from bench.spec import (
    CONSUME_ASYNC_FOR,
    CONSUME_GETMANY,
    E2E_TICK_S,
    PRODUCE_AWAIT,
    PRODUCE_WINDOW,
    RunResult,
    RunSpec,
)

CALLS_PER_CLOCK_CHECK = 100
CONSUME_BATCH = 10000
# aiokafka's max_batch_size is per partition and must fit in max_request_size (1 MiB default).
MAX_BATCH_SIZE = 512 * 1024


class Deliveries:
    __slots__ = ("acked", "failed")

    def __init__(self) -> None:
        self.acked = 0
        self.failed = 0

    def __call__(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            self.failed += 1
        else:
            self.acked += 1


def _compression(spec: RunSpec) -> str | None:
    return None if spec.compression == "none" else spec.compression


def _throughput_settings(spec: RunSpec) -> dict[str, Any]:
    return {
        "bootstrap_servers": spec.bootstrap,
        "acks": spec.acks,
        "linger_ms": 5,
        "max_batch_size": MAX_BATCH_SIZE,
        "compression_type": _compression(spec),
        "enable_idempotence": False,
    }


def _latency_settings(spec: RunSpec) -> dict[str, Any]:
    return {
        "bootstrap_servers": spec.bootstrap,
        "acks": spec.acks,
        "linger_ms": 0,
        "compression_type": _compression(spec),
        "enable_idempotence": False,
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
    return {"aiokafka": aiokafka.__version__, "loop": f"uvloop {uvloop.__version__}"}


def _partitions(spec: RunSpec) -> list[TopicPartition]:
    return [TopicPartition(spec.topic, p) for p in range(spec.partitions)]


async def _produce_for(producer: AIOKafkaProducer, topic: str, value: bytes, seconds: float,
                       deliveries: Deliveries) -> int:
    calls = 0
    send = producer.send
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(CALLS_PER_CLOCK_CHECK):
            future = await send(topic, value)
            future.add_done_callback(deliveries)
            calls += 1
    return calls


async def _wait_delivered(deliveries: Deliveries, total: int, timeout: float = 60.0) -> None:
    deadline = time.perf_counter() + timeout
    while deliveries.acked + deliveries.failed < total and time.perf_counter() < deadline:
        await asyncio.sleep(0.001)


async def _produce_async_modes(spec: RunSpec) -> RunResult:
    """The asyncio scenarios (bench/aio_drive.py): send_and_wait() per record, or send() windows."""
    settings = _throughput_settings(spec)
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    topic = spec.topic
    value = make_value(spec.value_size)
    calls = aio_drive.AsyncProducerCalls(
        awaited=lambda: producer.send_and_wait(topic, value),
        enqueue=lambda: producer.send(topic, value),
        enqueue_is_async=True,
        flush=producer.flush,
    )
    api = "send_and_wait()" if spec.mode == PRODUCE_AWAIT else "await send() windows"
    try:
        return await aio_drive.produce(spec, calls, {**settings, "api": api, **_versions()})
    finally:
        await producer.stop()


async def _produce(spec: RunSpec) -> RunResult:
    if spec.mode in (PRODUCE_AWAIT, PRODUCE_WINDOW):
        return await _produce_async_modes(spec)
    settings = _throughput_settings(spec)
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    deliveries = Deliveries()
    value = make_value(spec.value_size)
    try:
        warm = await _produce_for(producer, spec.topic, value, spec.warmup_s, deliveries)
        await producer.flush()
        await _wait_delivered(deliveries, warm)
        acked_before, failed_before = deliveries.acked, deliveries.failed
        with Section() as section:
            calls = await _produce_for(producer, spec.topic, value, spec.duration_s, deliveries)
            call_elapsed = time.perf_counter() - section.started
            await producer.flush()
            await _wait_delivered(deliveries, warm + calls)
    finally:
        await producer.stop()
    acked = deliveries.acked - acked_before
    return RunResult(
        records=acked,
        failed=deliveries.failed - failed_before,
        elapsed_s=section.elapsed,
        call_elapsed_s=call_elapsed,
        calls=calls,
        warmup_records=warm,
        cpu_s=section.cpu,
        bytes=acked * spec.value_size,
        settings={**settings, "api": "await send() + future callback", **_versions()},
    )


async def _roundtrip(spec: RunSpec) -> RunResult:
    settings = _latency_settings(spec)
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    value = make_value(spec.value_size)
    warmup = max(100, spec.count // 10)
    latencies: list[float] = []
    try:
        with Section() as section:
            for i in range(warmup + spec.count):
                started = time.perf_counter_ns()
                await producer.send_and_wait(spec.topic, value)
                if i >= warmup:
                    latencies.append((time.perf_counter_ns() - started) / 1000.0)
    finally:
        await producer.stop()
    return RunResult(
        records=len(latencies),
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        latency_us=summarize_latencies(latencies),
        histogram=histogram(latencies),
        settings={**settings, "api": "send_and_wait()", **_versions()},
    )


async def _e2e(spec: RunSpec) -> RunResult:
    producer_settings = _latency_settings(spec)
    consumer_settings = _consumer_settings(spec, low_latency=True)
    producer = AIOKafkaProducer(**producer_settings)
    consumer = AIOKafkaConsumer(**consumer_settings)
    await producer.start()
    await consumer.start()
    consumer.assign(_partitions(spec))
    await consumer.seek_to_beginning()
    samples: list[tuple[int, float]] = []
    stopping = asyncio.Event()

    async def consume_loop() -> None:
        while not stopping.is_set():
            batches = await consumer.getmany(timeout_ms=100)
            for records in batches.values():
                now = time.perf_counter_ns()
                for record in records:
                    samples.append((now, latency_us_of(record.value, now)))

    reader = asyncio.ensure_future(consume_loop())
    value = make_value(spec.value_size)
    total = int(spec.rate * (spec.warmup_s + spec.duration_s))
    deliveries = Deliveries()
    try:
        # Start the clock only once the consumer is fetching: probes until one arrives.
        deadline = time.perf_counter() + 30
        while not samples and time.perf_counter() < deadline:
            await producer.send_and_wait(spec.topic, stamp(value))
            await asyncio.sleep(0.05)
        samples.clear()
        with Section() as section:
            sent = 0
            while sent < total:
                due = min(total, int((time.perf_counter() - section.started) * spec.rate) + 1)
                while sent < due:
                    future = await producer.send(spec.topic, stamp(value))
                    future.add_done_callback(deliveries)
                    sent += 1
                await asyncio.sleep(E2E_TICK_S)
            await producer.flush()
            deadline = time.perf_counter() + 30
            while len(samples) < total and time.perf_counter() < deadline:
                await asyncio.sleep(0.01)
        stopping.set()
        await reader
    finally:
        await consumer.stop()
        await producer.stop()
    return e2e_result(spec, section, samples, total, deliveries.failed,
                      {"producer": producer_settings, "consumer": consumer_settings, **_versions()})


async def _consume(spec: RunSpec) -> RunResult:
    settings = _consumer_settings(spec, low_latency=False)
    consumer = AIOKafkaConsumer(**settings)
    await consumer.start()
    consumer.assign(_partitions(spec))
    await consumer.seek_to_beginning()
    if spec.mode in (CONSUME_ASYNC_FOR, CONSUME_GETMANY):  # the asyncio scenarios (bench/aio_drive.py)
        try:
            if spec.mode == CONSUME_ASYNC_FOR:
                return await aio_drive.consume_each(spec, consumer, _record_value,
                                                    {**settings, "api": "async for", **_versions()})
            return await aio_drive.consume_batches(
                spec, lambda: consumer.getmany(timeout_ms=5000, max_records=CONSUME_BATCH), _record_value,
                {**settings, "api": f"getmany(max_records={CONSUME_BATCH})", **_versions()})
        finally:
            await consumer.stop()
    records = 0
    counted = 0
    nbytes = 0
    try:
        first = await consumer.getmany(timeout_ms=10000, max_records=CONSUME_BATCH)
        records += sum(len(batch) for batch in first.values())
        with Section() as section:
            # Fast clients stop at `count`; slow ones at the duration_s time cap.
            while records < spec.count and time.perf_counter() - section.started < spec.duration_s:
                batches = await consumer.getmany(timeout_ms=5000, max_records=CONSUME_BATCH)
                if not batches:
                    break
                for batch in batches.values():
                    for record in batch:
                        nbytes += len(record.value)
                    counted += len(batch)
                    records += len(batch)
    finally:
        await consumer.stop()
    return RunResult(
        records=counted,
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        bytes=nbytes,
        settings={**settings, "api": f"getmany(max_records={CONSUME_BATCH})", **_versions()},
        note="" if records >= spec.count else f"stopped at {records}/{spec.count} (time cap or topic end)",
    )


def _record_value(record: Any) -> bytes:
    return record.value  # type: ignore[no-any-return]


def produce(spec: RunSpec) -> RunResult:
    return uvloop.run(_produce(spec))


def roundtrip(spec: RunSpec) -> RunResult:
    return uvloop.run(_roundtrip(spec))


def e2e(spec: RunSpec) -> RunResult:
    return uvloop.run(_e2e(spec))


def consume(spec: RunSpec) -> RunResult:
    return uvloop.run(_consume(spec))
