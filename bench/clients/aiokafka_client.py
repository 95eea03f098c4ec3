"""aiokafka scenarios, on uvloop."""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import aiokafka
import uvloop
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from bench import aio_drive
from bench.measure import (
    HandledClock,
    Section,
    e2e_result,
    histogram,
    latency_us_of,
    make_value,
    record_keys,
    stamp,
    summarize_latencies,
)
from bench.spec import (
    CONSUME_ASYNC_FOR,
    CONSUME_GETMANY,
    DEFAULTS_LINGER_MS,
    E2E_TICK_S,
    HANDLE_ASYNC,
    PRODUCE_AWAIT,
    PRODUCE_WINDOW,
    RunResult,
    RunSpec,
)

CALLS_PER_CLOCK_CHECK = 100
CONSUME_BATCH = 10000
# aiokafka's max_batch_size is per partition and must fit in max_request_size (1 MiB default).
MAX_BATCH_SIZE = 512 * 1024
EOS_JOIN_TIMEOUT_S = 30.0  # eos: how long joining the group and the first fetch may take
EOS_END_TIMEOUT_S = 5.0  # eos: no record for this long is the input's end


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
        "linger_ms": spec.throughput_linger_ms,
        "max_batch_size": MAX_BATCH_SIZE,
        "compression_type": _compression(spec),
        "enable_idempotence": False,
    }


def _defaults_settings(spec: RunSpec) -> dict[str, Any]:
    """aiokafka as it comes (acks=1, max_batch_size 16 KiB), linger aligned."""
    return {"bootstrap_servers": spec.bootstrap, "linger_ms": DEFAULTS_LINGER_MS}


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
                       deliveries: Deliveries, keys: list[bytes] | None = None) -> int:
    """Produce for ``seconds``; with ``keys``, each record carries the next one in turn."""
    calls = 0
    send = producer.send
    next_key = itertools.cycle(keys).__next__ if keys else None
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(CALLS_PER_CLOCK_CHECK):
            future = await (send(topic, value) if next_key is None else send(topic, value, next_key()))
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
    settings = _defaults_settings(spec) if spec.defaults else _throughput_settings(spec)
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    deliveries = Deliveries()
    value = make_value(spec.value_size)
    keys = record_keys(spec)
    try:
        warm = await _produce_for(producer, spec.topic, value, spec.warmup_s, deliveries, keys)
        await producer.flush()
        await _wait_delivered(deliveries, warm)
        acked_before, failed_before = deliveries.acked, deliveries.failed
        with Section() as section:
            calls = await _produce_for(producer, spec.topic, value, spec.duration_s, deliveries, keys)
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


def _transactional_settings(spec: RunSpec) -> dict[str, Any]:
    """The throughput settings, transactional (aiokafka needs idempotence and acks=all for that)."""
    return {**_throughput_settings(spec), "acks": "all", "enable_idempotence": True,
            "transactional_id": f"bench-{spec.topic}"}


async def _transactions_for(producer: AIOKafkaProducer, topic: str, value: bytes, seconds: float,
                            per_transaction: int, deliveries: Deliveries) -> int:
    """Whole transactions of ``per_transaction`` records until ``seconds`` have passed; records committed."""
    send = producer.send
    committed = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        async with producer.transaction():  # commits on exit, once every record is acknowledged
            for _ in range(per_transaction):
                future = await send(topic, value)
                future.add_done_callback(deliveries)
        committed += per_transaction
    return committed


async def _txn_produce(spec: RunSpec) -> RunResult:
    settings = _transactional_settings(spec)
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    deliveries = Deliveries()
    value = make_value(spec.value_size)
    try:
        warm = await _transactions_for(producer, spec.topic, value, spec.warmup_s, spec.txn_records, deliveries)
        failed_before = deliveries.failed
        with Section() as section:
            committed = await _transactions_for(producer, spec.topic, value, spec.duration_s, spec.txn_records,
                                                deliveries)
    finally:
        await producer.stop()
    return RunResult(records=committed, failed=deliveries.failed - failed_before, elapsed_s=section.elapsed,
                     cpu_s=section.cpu, warmup_records=warm, bytes=committed * spec.value_size,
                     settings={**settings, "api": "async with transaction(): await send()", **_versions()})


async def _eos(spec: RunSpec) -> RunResult:
    """aiokafka's recipe: getmany up to txn_records, send their transforms inside a transaction,
    send_offsets_to_transaction with the group id, commit."""
    group = f"bench-eos-{spec.topic}"
    consumer_settings = {**_consumer_settings(spec, low_latency=False), "group_id": group,
                         "isolation_level": "read_committed"}
    producer_settings = _transactional_settings(spec)
    consumer = AIOKafkaConsumer(spec.source_topic, **consumer_settings)
    producer = AIOKafkaProducer(**producer_settings)
    await consumer.start()
    await producer.start()
    output = spec.topic
    committed = 0
    nbytes = 0

    async def batch(timeout_s: float) -> dict[TopicPartition, list[Any]]:
        return await consumer.getmany(timeout_ms=int(timeout_s * 1000), max_records=spec.txn_records)

    try:
        first: dict[TopicPartition, list[Any]] = {}
        deadline = time.perf_counter() + EOS_JOIN_TIMEOUT_S
        while not first and time.perf_counter() < deadline:  # joining the group
            first = await batch(1.0)
        if not first:
            raise RuntimeError(f"no record of {spec.source_topic} within {EOS_JOIN_TIMEOUT_S:.0f}s")
        with Section() as section:  # the clock starts at the first records, as the consume runs do
            batches = first
            while batches:
                async with producer.transaction():
                    offsets = {}
                    for tp, records in batches.items():
                        for record in records:
                            value = record.value.upper()  # examples/eos_pipeline.py's transform
                            await producer.send(output, value, record.key, partition=record.partition)
                            nbytes += len(value)
                        offsets[tp] = records[-1].offset + 1
                        committed += len(records)
                    await producer.send_offsets_to_transaction(offsets, group)
                if committed >= spec.count or time.perf_counter() - section.started >= spec.duration_s:
                    break
                batches = await batch(EOS_END_TIMEOUT_S)
    finally:
        await consumer.stop()
        await producer.stop()
    return RunResult(records=committed, elapsed_s=section.elapsed, cpu_s=section.cpu, bytes=nbytes,
                     settings={"producer": producer_settings, "consumer": consumer_settings,
                               "api": f"getmany(max_records={spec.txn_records}) + transaction()", **_versions()},
                     note="" if committed >= spec.count else f"stopped at {committed}/{spec.count} (time cap)")


# A record's value, read in C (as kafkaev.aio's entry reads its records' values).
_record_value: Callable[[Any], bytes] = attrgetter("value")


def produce(spec: RunSpec) -> RunResult:
    return uvloop.run(_produce(spec))


def txn_produce(spec: RunSpec) -> RunResult:
    return uvloop.run(_txn_produce(spec))


def eos(spec: RunSpec) -> RunResult:
    return uvloop.run(_eos(spec))


def roundtrip(spec: RunSpec) -> RunResult:
    return uvloop.run(_roundtrip(spec))


def e2e(spec: RunSpec) -> RunResult:
    return uvloop.run(_e2e(spec))


def consume(spec: RunSpec) -> RunResult:
    return uvloop.run(_consume(spec))


async def _handle(spec: RunSpec) -> RunResult:
    """The loop written by hand: getmany() a batch, call (or await) the handler on each record,
    commit each partition's next offset."""
    settings = {**_consumer_settings(spec, low_latency=False), "group_id": f"bench-{spec.topic}-{uuid.uuid4().hex[:8]}"}
    consumer = AIOKafkaConsumer(spec.topic, **settings)
    await consumer.start()
    clock = HandledClock(spec.count, spec.duration_s)

    def sync_handler(_record: Any) -> None:
        clock.handled()

    async def async_handler(_record: Any) -> None:
        clock.handled()

    deadline = time.perf_counter() + 30 + spec.duration_s
    try:
        while not clock.done and time.perf_counter() < deadline:
            batches = await consumer.getmany(timeout_ms=1000, max_records=CONSUME_BATCH)
            if not batches:
                if clock.over_time():
                    clock.finish()
                continue
            for records in batches.values():
                if spec.mode == HANDLE_ASYNC:
                    for record in records:
                        await async_handler(record)
                else:
                    for record in records:
                        sync_handler(record)
            await consumer.commit({tp: records[-1].offset + 1 for tp, records in batches.items()})
    finally:
        await consumer.stop()
    return RunResult(records=clock.records, elapsed_s=clock.elapsed, cpu_s=clock.cpu,
                     bytes=clock.records * spec.value_size,
                     settings={**settings, "api": f"getmany() + {spec.mode} handler + commit()", **_versions()},
                     note=clock.note())


def handle(spec: RunSpec) -> RunResult:
    return uvloop.run(_handle(spec))
