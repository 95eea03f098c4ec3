"""Transactions through ``kafkaev.aio.Client`` on the real broker, under asyncio's default loop
and uvloop (the ``loop`` fixture): a consume-transform-produce member reads its input with
``async for``, writes the output and the group's offsets in one transaction, aborts one and
commits the next; confluent-kafka at read_committed reads back exactly the committed records,
in order, and the group's committed offset is the committed transaction's."""

from __future__ import annotations

import asyncio
from typing import Any

from transaction_helpers import peer_read_to_end

import kafkaev.aio
from kafkaev.types import TopicPartition

INPUT_RECORDS = 40
SINK_PARTITIONS = 2
ABORTED_OFFSET = INPUT_RECORDS // 2  # the offset the aborted transaction tried to commit
TEST_TIMEOUT_S = 180.0
NOTHING_COMMITTED = -1


def run(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    return loop.run_until_complete(asyncio.wait_for(coro, TEST_TIMEOUT_S))


def _output_partition(n: int) -> int:
    return n % SINK_PARTITIONS


async def _fill(bootstrap: str, topic: str) -> None:
    async with kafkaev.aio.Client(bootstrap, linger_ms=1) as writer:
        await asyncio.gather(*(writer.produce_nowait(topic, None, b"in-%d" % n) for n in range(INPUT_RECORDS)))


async def _read_input(client: kafkaev.aio.Client, source: str) -> list[bytes]:
    values: list[bytes] = []
    async for msg in client:
        assert (msg.topic, msg.partition, msg.offset) == (source, 0, len(values))
        values.append(msg.value)
        if len(values) == INPUT_RECORDS:
            break
    return values


async def _write(client: kafkaev.aio.Client, sink: str, prefix: bytes, inputs: list[bytes]) -> None:
    """The first half awaited one by one, the rest pipelined: every one acknowledged inside
    the open transaction, at the next offset of its partition."""
    half = len(inputs) // 2
    for n, value in enumerate(inputs[:half]):
        await client.produce(sink, None, prefix + value, partition=_output_partition(n))
    futures = [client.produce_nowait(sink, None, prefix + value, partition=_output_partition(n))
               for n, value in enumerate(inputs[half:], start=half)]
    metas = await asyncio.gather(*futures)
    assert [m.partition for m in metas] == [_output_partition(n) for n in range(half, len(inputs))]


def _by_partition(values: list[bytes]) -> list[bytes]:
    """``values`` as a read in partition then offset order returns them."""
    return [v for p in range(SINK_PARTITIONS) for n, v in enumerate(values) if _output_partition(n) == p]


def test_aio_transaction_aborted_then_committed_with_the_groups_offsets(loop, kafka, make_topic):
    source, sink = make_topic(), make_topic(partitions=SINK_PARTITIONS)
    group = f"aio-eos-{source}"
    source_tp = TopicPartition(source, 0)

    async def body() -> None:
        await _fill(kafka.bootstrap, source)
        async with kafkaev.aio.Client(kafka.bootstrap, transactional_id=f"aio-eos-{source}", linger_ms=1,
                                      auto_commit=False, isolation_level="read_committed",
                                      session_timeout_ms=6000, heartbeat_interval_ms=500) as client:
            await client.init_transactions()
            await client.subscribe([source], group_id=group)
            inputs = await _read_input(client, source)
            assert inputs == [b"in-%d" % n for n in range(INPUT_RECORDS)]
            meta = client.group_metadata()
            assert meta.group_id == group and meta.generation_id >= 1 and meta.member_id

            client.begin_transaction()
            await _write(client, sink, b"aborted-", inputs)
            await client.send_offsets_to_transaction({source_tp: ABORTED_OFFSET}, client.group_metadata())
            await client.abort_transaction()
            assert await client.committed([source_tp]) == {source_tp: NOTHING_COMMITTED}

            client.begin_transaction()
            await _write(client, sink, b"out-", inputs)
            await client.send_offsets_to_transaction({source_tp: INPUT_RECORDS}, client.group_metadata())
            await client.commit_transaction()
            assert await client.committed([source_tp]) == {source_tp: INPUT_RECORDS}

    run(loop, body())

    committed = [(m.partition(), m.value()) for m in peer_read_to_end(kafka.bootstrap, sink, SINK_PARTITIONS,
                                                                      "read_committed")]
    expected = _by_partition([b"out-in-%d" % n for n in range(INPUT_RECORDS)])
    assert [v for _, v in committed] == expected
    assert [p for p, _ in committed] == sorted(_output_partition(n) for n in range(INPUT_RECORDS))
    # The aborted records were written (read_uncommitted sees them first), and only aborted.
    uncommitted = [m.value() for m in peer_read_to_end(kafka.bootstrap, sink, SINK_PARTITIONS, "read_uncommitted")]
    aborted = _by_partition([b"aborted-in-%d" % n for n in range(INPUT_RECORDS)])
    per_partition = INPUT_RECORDS // SINK_PARTITIONS
    assert uncommitted == [v for p in range(SINK_PARTITIONS)
                           for part in (aborted, expected)
                           for v in part[p * per_partition:(p + 1) * per_partition]]
