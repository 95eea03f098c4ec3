"""kafkaev.aio scenarios, on uvloop (bench/aio_drive.py runs the loops)."""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

import uvloop

import kafkaev
import kafkaev.aio
from bench import aio_drive
from bench.clients.kafkaev_client import _throughput_settings
from bench.measure import make_value
from bench.spec import CONSUME_ASYNC_FOR, PRODUCE_AWAIT, RunResult, RunSpec
from kafkaev.producer import BufferFullError

CONSUME_BATCH = 10000


def _versions() -> dict[str, Any]:
    return {"kafkaev": kafkaev.__version__, "loop": f"uvloop {uvloop.__version__}"}


# A record's value, read in C: the driver's per-record body calls it (aiokafka's entry reads its
# records' values the same way).
_value: Callable[[Any], bytes] = attrgetter("value")


async def _produce(spec: RunSpec) -> RunResult:
    settings = _throughput_settings(spec)
    async with kafkaev.aio.Client(spec.bootstrap, **settings) as client:
        await client.connect()
        topic = spec.topic
        value = make_value(spec.value_size)
        produce = client.produce
        produce_nowait = client.produce_nowait

        calls = aio_drive.AsyncProducerCalls(
            awaited=lambda: produce(topic, None, value),
            enqueue=lambda: produce_nowait(topic, None, value),
            enqueue_is_async=False,
            flush=client.flush,
            buffer_full=BufferFullError,
            wait_for_room=client.wait_for_buffer_room,
        )
        api = "await produce()" if spec.mode == PRODUCE_AWAIT else "produce_nowait() windows"
        return await aio_drive.produce(spec, calls, {**settings, "api": api, **_versions()})


async def _consume(spec: RunSpec) -> RunResult:
    settings = {"fetch_max_bytes": 52_428_800, "max_partition_fetch_bytes": 1_048_576}
    async with kafkaev.aio.Client(spec.bootstrap, **settings) as client:
        client.assign([(spec.topic, p, kafkaev.OFFSET_BEGINNING) for p in range(spec.partitions)])
        if spec.mode == CONSUME_ASYNC_FOR:
            return await aio_drive.consume_each(spec, client.__aiter__(), _value,
                                                {**settings, "api": "async for", **_versions()})
        return await aio_drive.consume_batches(
            spec, lambda: client.getmany(timeout_ms=5000, max_records=CONSUME_BATCH), _value,
            {**settings, "api": f"getmany(max_records={CONSUME_BATCH})", **_versions()})


def produce(spec: RunSpec) -> RunResult:
    return uvloop.run(_produce(spec))


def consume(spec: RunSpec) -> RunResult:
    return uvloop.run(_consume(spec))
