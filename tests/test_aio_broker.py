"""kafkaev.aio against a real broker, under asyncio's default loop and uvloop (the ``loop``
fixture): produce awaited and pipelined and read back by confluent-kafka, async iteration and
getmany, commit and seek, a group of three async members with one SIGKILLed, producer
back-pressure through ``await produce`` and the callback API's ``on_buffer_room``."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from consumer_helpers import fill, parse

import kafkaev
import kafkaev.aio
from kafkaev.errors import MESSAGE_TOO_LARGE, UNKNOWN_TOPIC_OR_PARTITION, KafkaError
from kafkaev.producer import BufferFullError
from kafkaev.types import TopicPartition

# The counts; KAFKAEV_AIO_RECORDS lowers them while iterating on the code.
RECORDS = int(os.environ.get("KAFKAEV_AIO_RECORDS", "1000000"))
PIPELINE_WINDOW = 1000
AWAITED_VALUE_SIZE = 200
TEST_TIMEOUT_S = 300.0
# A million records through a buffer_memory this small go at the pace of its few batches.
BUFFER_BOUND_TIMEOUT_S = 900.0
TOPIC_VISIBLE_TIMEOUT_S = 10.0


def run(loop: asyncio.AbstractEventLoop, coro: Any, timeout: float = TEST_TIMEOUT_S) -> Any:
    return loop.run_until_complete(asyncio.wait_for(coro, timeout))


def peer_read(bootstrap: str, topic: str, partitions: int, count: int, timeout_s: float = 120.0,
              ) -> dict[int, list[confluent_kafka.Message]]:
    """Every record of ``topic`` read by confluent-kafka, by partition."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"peer-{topic}",
                                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                     for p in range(partitions)])
    out: dict[int, list[confluent_kafka.Message]] = {p: [] for p in range(partitions)}
    got = 0
    deadline = time.monotonic() + timeout_s
    try:
        while got < count and time.monotonic() < deadline:
            for msg in consumer.consume(10000, 1.0):
                assert msg.error() is None, msg.error()
                out[msg.partition()].append(msg)
                got += 1
    finally:
        consumer.close()
    return out


# --- producing ------------------------------------------------------------------------------------
def test_await_produce_returns_metadata_and_raises_kafka_errors(loop, kafka, topic):
    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=1) as client:
            meta = await client.produce(topic, b"key", b"value", headers=[("h", b"1")])
            assert (meta.topic, meta.partition, meta.offset) == (topic, 0, 0)
            assert meta.timestamp > 0
            second = await client.produce(topic, None, b"v2", partition=0, timestamp_ms=1234)
            assert (second.offset, second.timestamp) == (1, 1234)
            with pytest.raises(ValueError, match="partition"):
                await client.produce(topic, None, b"x", partition=7)
            with pytest.raises(kafkaev.KafkaError) as info:
                await client.produce(topic, None, b"x" * 2_000_000)
            assert info.value.code == kafkaev.errors.MESSAGE_TOO_LARGE

    run(loop, body())


def test_record_futures_are_left_out_of_the_collector_while_they_cannot_be_in_a_cycle(loop, kafka, topic):
    """A window of pending Futures outlived the collector's young generations and brought on
    full collections: kafkaev.aio hands each to the producer untracked, and an acknowledged one
    stays so (the tracking back on failure is tests/test_producer_core.py's)."""
    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=1) as client:
            window = [client.produce_nowait(topic, None, b"v%d" % i) for i in range(PIPELINE_WINDOW)]
            assert not any(gc.is_tracked(fut) for fut in window)
            awaited = client.produce(topic, None, b"awaited")
            assert isinstance(awaited, asyncio.Future) and not gc.is_tracked(awaited)
            metas = [await fut for fut in (*window, awaited)]
            assert [m.offset for m in metas] == list(range(PIPELINE_WINDOW + 1))
            assert not any(gc.is_tracked(fut) for fut in (*window, awaited))

    run(loop, body())


def test_a_million_records_produced_async_are_read_back_by_confluent_kafka(loop, kafka, make_topic):
    topic = make_topic(partitions=3)

    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=5, acks=-1) as client:
            half = RECORDS // 2
            window: list[asyncio.Future[Any]] = []
            for seq in range(half):  # pipelined in windows
                window.append(client.produce_nowait(topic, b"%d" % (seq % 97), b"%d" % seq))
                if len(window) == PIPELINE_WINDOW:
                    await asyncio.gather(*window)
                    window.clear()
            await asyncio.gather(*window)
            # awaited one by one from several tasks, so the batches still fill
            next_seq = iter(range(half, RECORDS))

            async def worker() -> None:
                for seq in next_seq:
                    meta = await client.produce(topic, b"%d" % (seq % 97), b"%d" % seq)
                    assert meta.offset >= 0

            await asyncio.gather(*(worker() for _ in range(PIPELINE_WINDOW)))

    run(loop, body())
    assert_in_order_by_key(peer_read(kafka.bootstrap, topic, 3, RECORDS), RECORDS)


def assert_in_order_by_key(by_partition: dict[int, list[Any]], expected: int) -> None:
    """Every seq once; within each key (one partition each), increasing: the order produced."""
    seen: list[int] = []
    for msgs in by_partition.values():
        per_key: dict[bytes, list[int]] = {}
        for m in msgs:
            per_key.setdefault(m.key(), []).append(int(m.value()))
        for seqs in per_key.values():
            assert seqs == sorted(seqs), "records of one key out of order"
        seen += [int(m.value()) for m in msgs]
    assert len(seen) == expected
    assert sorted(seen) == list(range(expected))


def budget_of(client: kafkaev.aio.Client) -> Any:
    """The producer's MemoryBudget: what buffer_memory and buffer_records hold now."""
    return client._client._producer._acc.budget


def test_await_produce_waits_for_buffer_room(loop, kafka, topic):
    """Tight loops against a small buffer_memory: produce_nowait() raising BufferFullError and
    waiting for room, then 1,000 tasks each awaiting produce() in a loop (produce() waits for
    room itself). No BufferFullError escapes, every record is acknowledged, and the budget
    never passes buffer_memory."""
    limit = 128 * 1024  # less than 1,000 awaited records of AWAITED_VALUE_SIZE take
    seen_max = 0
    waits = 0

    async def body() -> None:
        nonlocal seen_max, waits
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=2, buffer_memory=limit, batch_size=8192) as client:
            budget = budget_of(client)
            futs = []
            for seq in range(RECORDS // 10):
                try:
                    futs.append(client.produce_nowait(topic, None, b"%d" % seq))
                except BufferFullError:
                    await client.wait_for_buffer_room()
                    futs.append(client.produce_nowait(topic, None, b"%d" % seq))  # room: this one fits
                seen_max = max(seen_max, budget.reserved + budget.held)
            assert len({m.offset for m in await asyncio.gather(*futs)}) == RECORDS // 10

            next_seq = iter(range(RECORDS))
            acked = 0

            async def worker() -> None:
                nonlocal seen_max, acked, waits
                for seq in next_seq:
                    # 1,000 records of this size outstanding are more than buffer_memory holds
                    await client.produce(topic, None, (b"%d:" % seq).ljust(AWAITED_VALUE_SIZE, b"x"))
                    acked += 1
                    if client._room:  # awaited produce() calls are waiting for room
                        waits += 1
                    seen_max = max(seen_max, budget.reserved + budget.held)

            await asyncio.gather(*(worker() for _ in range(PIPELINE_WINDOW)))
            assert acked == RECORDS

    run(loop, body(), timeout=BUFFER_BOUND_TIMEOUT_S)
    assert waits > 0, "the buffer never filled: the test proves nothing"
    assert 0 < seen_max <= limit


def test_callback_api_tight_loop_through_on_buffer_room(loop, kafka, topic):
    """The callback API's wait-for-room hook: a loop that produces until BufferFullError, then
    registers itself with on_buffer_room, gets every record acknowledged with no error, and
    buffer_memory is never passed."""
    limit = 256 * 1024
    client = kafkaev.Client(kafka.bootstrap, loop=loop, linger_ms=2, buffer_memory=limit)
    budget = client._producer._acc.budget
    acked = 0
    errors: list[BaseException] = []
    next_seq = 0
    waits = 0
    seen_max = 0
    done = loop.create_future()

    def on_delivery(meta: Any, err: Any) -> None:
        nonlocal acked
        if err is not None:
            errors.append(err)
        acked += 1
        if acked == RECORDS and not done.done():
            done.set_result(None)

    def pump() -> None:
        nonlocal next_seq, waits, seen_max
        while next_seq < RECORDS:
            try:
                client.produce(topic, None, b"%d" % next_seq, on_delivery)
            except BufferFullError:
                waits += 1
                client.on_buffer_room(pump)
                return
            next_seq += 1
            seen_max = max(seen_max, budget.reserved + budget.held)

    loop.call_soon(pump)
    run(loop, done)
    assert errors == []
    assert acked == RECORDS and waits > 0
    assert seen_max <= limit
    finished = loop.create_future()
    client.close(lambda err: finished.set_result(err))
    assert run(loop, finished) is None


def test_await_produce_waits_for_buffer_records_room(loop, kafka, topic):
    """1,000 tasks awaiting produce() against a buffer_records of a quarter of that: the count
    is what fills (buffer_memory is the default 32 MiB). Every record is acknowledged once, no
    BufferFullError escapes, and the records outstanding never pass buffer_records."""
    limit = PIPELINE_WINDOW // 4
    count = 20 * PIPELINE_WINDOW
    seen_max = 0
    waits = 0

    async def body() -> None:
        nonlocal seen_max, waits
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=2, buffer_records=limit) as client:
            budget = budget_of(client)
            next_seq = iter(range(count))
            offsets: list[int] = []

            async def worker() -> None:
                nonlocal waits
                for seq in next_seq:
                    offsets.append((await client.produce(topic, None, b"%d" % seq)).offset)
                    if client._room:
                        waits += 1

            async def watch() -> None:
                # Once a turn of the loop: a worker resumes from an acknowledgement, when the
                # count has just fallen, so it cannot see how high the count went.
                nonlocal seen_max
                while True:
                    seen_max = max(seen_max, budget.records)
                    await asyncio.sleep(0)

            watcher = asyncio.ensure_future(watch())
            await asyncio.gather(*(worker() for _ in range(PIPELINE_WINDOW)))
            watcher.cancel()
            assert sorted(offsets) == list(range(count))
            assert budget.records == 0

    run(loop, body())
    assert waits > 0, "buffer_records never filled: the test proves nothing"
    assert 0 < seen_max <= limit


def test_a_record_that_can_never_fit_is_refused_not_waited_for(loop, kafka, topic):
    """A record larger than all of buffer_memory: MESSAGE_TOO_LARGE from produce() while its
    topic's metadata is on its way, once it is known, and when its turn comes behind records
    waiting for room (buffer_records=1 keeps them waiting); the records around it still go."""
    big = b"x" * (2 * 16384)

    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=2, buffer_memory=16384, batch_size=16384,
                                      buffer_records=1) as client:
            with pytest.raises(KafkaError) as held:
                await client.produce(topic, None, big)  # the topic not known yet
            first = await client.produce(topic, None, b"first")
            with pytest.raises(KafkaError) as known:
                await client.produce(topic, None, big)
            blocker = client.produce_nowait(topic, None, b"blocker")  # the one record buffer_records allows
            waiting = asyncio.ensure_future(client.produce(topic, None, b"waiting"))
            await asyncio.sleep(0)
            assert client._room, "no produce() waits for room: the big record would not queue behind one"
            results = await asyncio.gather(client.produce(topic, None, big), waiting, blocker, return_exceptions=True)
            for err in (held.value, known.value, results[0]):
                assert isinstance(err, KafkaError) and err.code == MESSAGE_TOO_LARGE, err
                assert "more than all of it (16384)" in str(err)
            assert [first.offset, results[2].offset, results[1].offset] == [0, 1, 2]

    run(loop, body(), timeout=TEST_TIMEOUT_S)


def test_records_waiting_for_metadata_count_against_buffer_records_too(loop, kafka, topic):
    """A burst for a topic whose metadata is not known yet: the default buffer_records refuses
    the record past it at once, and with no count limit 200,000 wait and are all written."""
    count = 200_000

    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=5) as client:
            limit = client.config.buffer_records
            futs = [client.produce_nowait(topic, None, b"%d" % i) for i in range(limit)]
            with pytest.raises(BufferFullError, match="buffer_records"):
                client.produce_nowait(topic, None, b"one too many")
            budget = budget_of(client)
            assert budget.records == limit and budget.held < budget.limit  # the count refused it, not the bytes
            assert [m.offset for m in await asyncio.gather(*futs)] == list(range(limit))
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=5, buffer_memory=64 * 1024 * 1024,
                                      buffer_records=0) as client:
            futs = [client.produce_nowait(topic, None, b"%d" % i) for i in range(count)]  # none raises
            assert budget_of(client).held > 0
            metas = await asyncio.gather(*futs)
            assert [m.offset for m in metas] == list(range(limit, limit + count))

    run(loop, body())


def test_cancelling_an_awaited_produce_does_not_unsend_it(loop, kafka, topic):
    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap, linger_ms=50) as client:
            task = asyncio.ensure_future(client.produce(topic, None, b"cancelled"))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await client.flush()
            client.assign([(topic, 0, kafkaev.OFFSET_BEGINNING)])
            batch = await client.getmany(timeout_ms=10000)
            assert [m.value for m in batch[TopicPartition(topic, 0)]] == [b"cancelled"]

    run(loop, body())


# --- consuming ------------------------------------------------------------------------------------
def test_async_for_and_getmany_read_everything_in_order(loop, kafka, make_topic):
    topic = make_topic(partitions=2)
    per_partition = 5000
    fill(kafka.bootstrap, topic, 2, per_partition)

    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap) as client:
            client.assign([(topic, p, kafkaev.OFFSET_BEGINNING) for p in range(2)])
            seen: dict[int, list[int]] = {0: [], 1: []}
            async for msg in client:
                p, seq = parse(msg.value)
                assert p == msg.partition
                seen[p].append(seq)
                if len(seen[0]) + len(seen[1]) == per_partition:
                    break
            while len(seen[0]) + len(seen[1]) < 2 * per_partition:
                batch = await client.getmany(timeout_ms=5000, max_records=777)
                assert batch, "getmany timed out with records left"
                assert sum(map(len, batch.values())) <= 777
                for tp, msgs in batch.items():
                    seen[tp.partition] += [parse(m.value)[1] for m in msgs]
            for p in range(2):
                assert seen[p] == list(range(per_partition))
                assert client.position(topic, p) == per_partition
            assert await client.getmany(timeout_ms=200) == {}

    run(loop, body())


def test_commit_and_seek(loop, kafka, topic):
    fill(kafka.bootstrap, topic, 1, 100)
    group = f"g-{topic}"

    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap, auto_commit=False) as client:
            await client.subscribe([topic], group_id=group)
            taken = []
            async for msg in client:
                taken.append(msg.offset)
                if len(taken) == 30:
                    break
            # what was handed out counts, what is merely buffered does not
            await client.commit()
            tp = TopicPartition(topic, 0)
            assert await client.committed([tp]) == {tp: 30}
            await client.commit({tp: 42})
            assert (await client.committed([tp], metadata=True))[tp].offset == 42
            assert await client.seek(topic, 0, 90) == 90
            batch = await client.getmany(timeout_ms=5000)
            assert [m.offset for m in batch[tp]] == list(range(90, 100))
            assert await client.seek(topic, 0, kafkaev.OFFSET_BEGINNING) == 0
            first = await client.__aiter__().__anext__()
            assert first.offset == 0
            lag = await client.lag()
            assert lag[(topic, 0)] == (1, 100, 99)
        async with kafkaev.aio.Client(kafka.bootstrap) as again:
            await again.subscribe([topic], group_id=group)
            msg = await again.__aiter__().__anext__()
            assert msg.offset == 42  # the last commit

    run(loop, body())


def test_cancelled_iteration_counts_only_what_was_handed_out(loop, kafka, topic):
    fill(kafka.bootstrap, topic, 1, 2000)

    async def body() -> None:
        async with kafkaev.aio.Client(kafka.bootstrap) as client:
            client.assign([(topic, 0, kafkaev.OFFSET_BEGINNING)])
            handed: list[int] = []

            async def consume() -> None:
                async for msg in client:
                    handed.append(msg.offset)
                    await asyncio.sleep(0.001)

            task = asyncio.ensure_future(consume())
            while len(handed) < 10:  # cancelled mid-stream, however loaded the machine
                await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert handed == list(range(len(handed))) and handed
            assert client.position(topic, 0) == len(handed)
            rest: list[int] = []
            while len(handed) + len(rest) < 2000:
                batch = await client.getmany(timeout_ms=5000)
                assert batch
                rest += [m.offset for m in batch[TopicPartition(topic, 0)]]
            assert rest == list(range(len(handed), 2000))

    run(loop, body())


def test_pause_keeps_what_is_buffered_and_resume_hands_it_out_not_fetched_again(loop, kafka, make_topic):
    """Pausing every partition after each ``getmany`` (back-pressure from the caller): nothing
    is handed out while paused, every record once and in order after, and each record set is
    fetched once: the answers and bytes of a client that never pauses. What was buffered waits
    beside the buffer and what the Fetch already out brings is held, not dropped."""
    partitions, per_partition = 2, 3000
    topic = make_topic(partitions=partitions)
    fill(kafka.bootstrap, topic, partitions, per_partition, batch_records=100)  # ~4 KB batches
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    small_fetches = {"max_partition_fetch_bytes": 16_384}  # several answers per partition

    def fetch_counts(client: kafkaev.aio.Client) -> dict[int, tuple[int, int]]:
        return {p.partition: (p.fetches, p.bytes_fetched) for p in client.stats().consumer if p.topic == topic}

    async def read_all(pause_between: bool) -> tuple[dict[TopicPartition, list[int]], dict[int, tuple[int, int]]]:
        offsets: dict[TopicPartition, list[int]] = {tp: [] for tp in tps}
        held: list[int] = []  # what the paused partitions hold, per pause
        async with kafkaev.aio.Client(kafka.bootstrap, **small_fetches) as client:
            client.assign([(topic, p, kafkaev.OFFSET_BEGINNING) for p in range(partitions)])
            while sum(map(len, offsets.values())) < partitions * per_partition:
                batch = await client.getmany(timeout_ms=5000, max_records=50)
                assert batch, "records stopped coming"
                for tp, messages in batch.items():
                    offsets[tp] += [m.offset for m in messages]
                if pause_between:
                    client.pause(tps)
                    stats = client.stats().consumer
                    assert all(p.paused for p in stats)
                    held.append(sum(p.held_bytes for p in stats))
                    positions = [client.position(topic, p) for p in range(partitions)]
                    assert await client.getmany(timeout_ms=3) == {}, "handed out while paused"
                    assert positions == [len(offsets[tp]) for tp in tps], "the position counts what was handed out"
                    client.resume(tps)
            assert await client.getmany(timeout_ms=300) == {}, "nothing more may arrive"
            assert not pause_between or max(held) > 0, "the stats show what a pause set aside"
            assert [(p.paused, p.held_bytes) for p in client.stats().consumer] == [(False, 0)] * partitions
            return offsets, fetch_counts(client)

    async def body() -> None:
        _plain, unpaused = await read_all(pause_between=False)
        offsets, counts = await read_all(pause_between=True)
        for tp in tps:
            assert offsets[tp] == list(range(per_partition)), f"{tp}: missing, repeated or out of order"
        assert counts == unpaused, "a record set buffered or in flight when paused was fetched again"

    run(loop, body())


GROUP_MEMBER = textwrap.dedent("""
    import asyncio, sys
    import kafkaev.aio

    async def main(bootstrap, topic, group, out):
        async with kafkaev.aio.Client(bootstrap, auto_commit=True, auto_commit_interval_ms=200,
                                      session_timeout_ms=6000, heartbeat_interval_ms=500) as client:
            await client.subscribe([topic], group_id=group)
            with open(out, "a", buffering=1) as f:
                async for msg in client:
                    f.write(f"{msg.partition} {msg.offset}\\n")
                    await asyncio.sleep(0.0005)

    asyncio.run(main(*sys.argv[1:5]))
""")


def test_group_of_three_async_members_one_killed_loses_nothing(loop, kafka, make_topic, tmp_path):
    """Three members in processes, the records handed out logged as they come; one member is
    SIGKILLed mid-stream. The others take over its partitions from its last commit: every
    record is handed out at least once (the killed one's uncommitted tail again)."""
    partitions = 6
    per_partition = 3000
    topic = make_topic(partitions=partitions)
    fill(kafka.bootstrap, topic, partitions, per_partition)
    group = f"g-{topic}"
    script = tmp_path / "member.py"
    script.write_text(GROUP_MEMBER)
    outs = [tmp_path / f"member{i}.log" for i in range(3)]
    env = {**os.environ, "PYTHONPATH": str(Path(kafkaev.__file__).parent.parent)}
    members = [subprocess.Popen([sys.executable, str(script), kafka.bootstrap, topic, group, str(out)], env=env)
               for out in outs]
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _lines(outs[0]) < 500:
            time.sleep(0.1)
        assert _lines(outs[0]) >= 500, "the first member never got going"
        members[0].send_signal(signal.SIGKILL)
        members[0].wait()
        while time.monotonic() < deadline:
            if len(_handed_out(outs)) == partitions * per_partition:
                break
            time.sleep(0.2)
        assert len(_handed_out(outs)) == partitions * per_partition
    finally:
        for member in members:
            if member.poll() is None:
                member.send_signal(signal.SIGTERM)
                member.wait(30)


def _lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


def _handed_out(outs: list[Path]) -> set[tuple[int, int]]:
    seen: set[tuple[int, int]] = set()
    for out in outs:
        if out.exists():
            for line in out.read_text().splitlines():
                p, o = line.split()
                seen.add((int(p), int(o)))
    return seen


def test_aio_admin_awaits_every_callback_method(loop, kafka):
    async def body() -> None:
        async with kafkaev.aio.Admin(kafka.bootstrap) as admin:
            name = f"aio-admin-{time.monotonic_ns()}"
            created = await admin.create_topics([kafkaev.NewTopic(name, 2, 1)])
            assert created == {name: None}
            # The controller answers the create before this broker replays it: read until it has.
            deadline = time.monotonic() + TOPIC_VISIBLE_TIMEOUT_S
            while True:
                topic = (await admin.describe_topics([name]))[name]
                if topic.error_code != UNKNOWN_TOPIC_OR_PARTITION or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            assert topic.error_code == 0 and topic.num_partitions == 2

    run(loop, body())


def test_bad_construction_is_refused_by_name(loop):
    async def body() -> None:
        with pytest.raises(ValueError, match="on_message"):
            kafkaev.aio.Client("127.0.0.1:1", on_message=print)

    run(loop, body())
    with pytest.raises(RuntimeError, match="running event loop"):
        kafkaev.aio.Client("127.0.0.1:1")


# --- a slow consumer over a large topic -------------------------------------------------------------
SLOW_TOPIC_BYTES = 1024 ** 3  # 1 GB
SLOW_VALUE_SIZE = 10_000
SLOW_RUN_S = float(os.environ.get("KAFKAEV_AIO_SLOW_S", "60"))
SLOW_CONSUMER = Path(__file__).with_name("aio_slow_consumer.py")
SLOW_EXIT_S = 180.0  # past the run: joining, the first fetch, the commit and the close
RSS_GROWTH_LIMIT = 100 * 1024 * 1024
SLOW_LOOPS = ("asyncio", "uvloop")


@pytest.mark.slow
def test_slow_async_for_over_a_large_topic_keeps_memory_bounded(kafka, topic):
    """10 ms per record over a 1 GB topic: fetching waits for the body (max_buffered_bytes),
    so RSS grows by less than 100 MB; heartbeats go on (the member stays in its group). Each
    loop's consumer runs in its own process (tests/aio_slow_consumer.py), both in the same
    minute, each in a group of its own."""
    fill(kafka.bootstrap, topic, 1, SLOW_TOPIC_BYTES // SLOW_VALUE_SIZE, value_size=SLOW_VALUE_SIZE)
    workers = {name: subprocess.Popen([sys.executable, str(SLOW_CONSUMER), kafka.bootstrap, topic, name,
                                       str(SLOW_RUN_S), str(SLOW_VALUE_SIZE)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in SLOW_LOOPS}
    results: dict[str, tuple[int, str, str]] = {}
    try:
        for name, worker in workers.items():
            out, err = worker.communicate(timeout=SLOW_RUN_S + SLOW_EXIT_S)
            results[name] = (worker.returncode, out, err)
    finally:
        for worker in workers.values():
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    for name, (code, out, err) in results.items():
        assert code == 0, f"{name}: the slow consumer failed:\n{err[-4000:]}"
        fields = dict(field.split("=") for field in out.split())
        handed, growth = int(fields["handed"]), int(fields["growth"])
        print(f"slow consumer ({name}): {handed} records in {SLOW_RUN_S:.0f} s, RSS growth {growth / 1e6:.1f} MB")
        assert handed > 100, name
        assert growth < RSS_GROWTH_LIMIT, name
