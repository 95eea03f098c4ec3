"""Produce and consume with kafkaev.aio on asyncio's own loop (uvloop works the same):
``python examples/aio_produce_consume.py TOPIC GROUP [COUNT]``."""

import asyncio
import sys

import kafkaev.aio


async def main(topic: str, group: str, count: int) -> None:
    async with kafkaev.aio.Client(acks=-1, linger_ms=5) as client:
        meta = await client.produce(topic, b"first", b"awaited one by one")
        print(f"acknowledged at {meta.topic}[{meta.partition}] @ {meta.offset}")
        # pipelined: a Future per record, all awaited together
        futures = [client.produce_nowait(topic, None, b"record %d" % i) for i in range(1, count)]
        await asyncio.gather(*futures)

        await client.subscribe([topic], group_id=group)
        seen = 0
        async for msg in client:  # in order per partition; counted as delivered when handed out
            print(f"{msg.topic}[{msg.partition}] @ {msg.offset}: {msg.value!r}")
            seen += 1
            if seen == count:
                break
        await client.commit()  # every record handed out so far
    # leaving the `async with` flushed, left the group and closed the sockets


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 10))
