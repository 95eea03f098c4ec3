"""confluent_kafka.aio scenarios (AIOProducer, AIOConsumer: librdkafka calls on a thread pool,
results handed back to the loop), on uvloop like the other asyncio clients."""

from __future__ import annotations

from typing import Any

import confluent_kafka
import uvloop
from confluent_kafka.aio import AIOConsumer, AIOProducer

from bench import aio_drive
from bench.clients.confluent import _consumer_settings, _throughput_settings
from bench.measure import make_value
from bench.spec import CONSUME_ASYNC_FOR, PRODUCE_AWAIT, RunResult, RunSpec

CONSUME_BATCH = 10000
POLL_TIMEOUT_S = 5.0


def _versions() -> dict[str, Any]:
    return {"confluent_kafka": confluent_kafka.version()[0], "librdkafka": confluent_kafka.libversion()[0],
            "loop": f"uvloop {uvloop.__version__}"}


def _value(msg: Any) -> bytes:
    return msg.value()  # type: ignore[no-any-return]


async def _produce(spec: RunSpec) -> RunResult:
    settings = _throughput_settings(spec)
    producer = AIOProducer(settings)
    topic = spec.topic
    value = make_value(spec.value_size)

    async def awaited() -> Any:
        return await (await producer.produce(topic, value))

    calls = aio_drive.AsyncProducerCalls(
        awaited=awaited,
        enqueue=lambda: producer.produce(topic, value),
        enqueue_is_async=True,
        flush=producer.flush,
    )
    api = "await (await produce())" if spec.mode == PRODUCE_AWAIT else "await produce() windows"
    try:
        return await aio_drive.produce(spec, calls, {**settings, "api": api, **_versions()})
    finally:
        await producer.close()


class _Polled:
    """``async for`` over AIOConsumer.poll(): it has no iterator of its own."""

    def __init__(self, consumer: AIOConsumer) -> None:
        self._consumer = consumer

    def __aiter__(self) -> _Polled:
        return self

    async def __anext__(self) -> Any:
        while True:
            msg = await self._consumer.poll(POLL_TIMEOUT_S)
            if msg is None:
                raise StopAsyncIteration
            if msg.error() is None:
                return msg


async def _consume(spec: RunSpec) -> RunResult:
    settings = _consumer_settings(spec, low_latency=False)
    consumer = AIOConsumer(settings)
    await consumer.assign([confluent_kafka.TopicPartition(spec.topic, p, confluent_kafka.OFFSET_BEGINNING)
                           for p in range(spec.partitions)])
    try:
        if spec.mode == CONSUME_ASYNC_FOR:
            return await aio_drive.consume_each(spec, _Polled(consumer), _value,
                                                {**settings, "api": "await poll()", **_versions()})
        return await aio_drive.consume_batches(
            spec, lambda: consumer.consume(CONSUME_BATCH, POLL_TIMEOUT_S), _value,
            {**settings, "api": f"await consume({CONSUME_BATCH})", **_versions()})
    finally:
        await consumer.close()


def produce(spec: RunSpec) -> RunResult:
    return uvloop.run(_produce(spec))


def consume(spec: RunSpec) -> RunResult:
    return uvloop.run(_consume(spec))
