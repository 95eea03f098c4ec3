"""A slow kafkaev.aio consumer in a process of its own, for test_aio_broker.py: 10 ms of body per
record over a large topic for a given time, under the named loop. Its own process, so the RSS it
reports grows with this consumer alone, and the two loops' runs can share the same minute.
It asserts as it goes (offsets in order, the buffer within its bound, still a member at the end,
the commit landed) and prints one line, ``handed=N growth=BYTES``, once all of that held.

    python tests/aio_slow_consumer.py BOOTSTRAP TOPIC LOOP RUN_S VALUE_SIZE
"""

from __future__ import annotations

import asyncio
import sys

import uvloop

import kafkaev.aio
from kafkaev.consumer.buffer import MESSAGE_OBJECT_ALLOWANCE
from kafkaev.consumer.group import GroupState
from kafkaev.types import TopicPartition

BODY_S = 0.010  # what the body of the loop takes per record
FIRST_RECORD_HOLD_S = 1.0  # the buffer fills to its bound meanwhile
SAMPLE_EVERY = 100  # records between RSS and buffer samples
# Past max_buffered_bytes: the answer being put and the Fetch already sent before it (one
# partition here), each with the per-record allowance.
ANSWERS_PAST_LIMIT = 2
LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


def rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


async def consume_slowly(bootstrap: str, topic: str, group: str, run_s: float, value_size: int) -> tuple[int, int]:
    loop = asyncio.get_running_loop()
    growth = 0
    handed = 0
    baseline = rss()  # before the client: its buffer's growth counts
    async with kafkaev.aio.Client(bootstrap, session_timeout_ms=6000, heartbeat_interval_ms=500) as client:
        await client.subscribe([topic], group_id=group)
        buffer = client._buffer
        config = client.config
        answer = config.max_partition_fetch_bytes + value_size  # a first batch may pass the cap
        answer += answer // value_size * MESSAGE_OBJECT_ALLOWANCE
        started = loop.time()
        async for msg in client:
            assert msg.offset == handed, (msg.offset, handed)
            handed += 1
            if handed == 1:
                await asyncio.sleep(FIRST_RECORD_HOLD_S)
            await asyncio.sleep(BODY_S)
            if handed % SAMPLE_EVERY == 0:
                growth = max(growth, rss() - baseline)
                assert buffer.size <= config.max_buffered_bytes + ANSWERS_PAST_LIMIT * answer, buffer.size
            if loop.time() - started > run_s:
                break
        await client.commit()  # still a member: heartbeats went on under the slow body
        assert client._client._consumer.group_state() is GroupState.STABLE
        partition = TopicPartition(topic, 0)
        assert (await client.committed([partition]))[partition] == handed
    return handed, growth


def main() -> None:
    bootstrap, topic, loop_name, run_s, value_size = sys.argv[1:6]
    loop = LOOPS[loop_name]()
    try:
        handed, growth = loop.run_until_complete(
            consume_slowly(bootstrap, topic, f"g-{topic}-{loop_name}", float(run_s), int(value_size)))
    finally:
        loop.close()
    print(f"handed={handed} growth={growth}", flush=True)


if __name__ == "__main__":
    main()
