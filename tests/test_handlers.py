"""kafkaev.Runner on the real broker: retries, dead letters (read back by confluent-kafka), a
dead-letter topic that rejects the record, parallelism by partition and by key."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter, defaultdict

from consumer_helpers import fill, parse
from handlers_helpers import Overlaps, committed, produce, read_all, run_until, start, stop

import kafkaev

PARTITIONS = 4
PER_PARTITION = 200


def group() -> str:
    return f"g-{uuid.uuid4().hex[:8]}"


def test_retries_handle_every_record_in_partition_order(kafka, make_topic, loop, caplog):
    topic = make_topic(partitions=PARTITIONS)
    fill(kafka.bootstrap, topic, PARTITIONS, PER_PARTITION)
    failures_wanted = {}  # (partition, seq) -> failures before success (1-3) for every 7th record
    for p in range(PARTITIONS):
        for seq in range(0, PER_PARTITION, 7):
            failures_wanted[(p, seq)] = seq % 3 + 1
    failed_so_far: dict[tuple[int, int], int] = defaultdict(int)
    handled: dict[int, list[int]] = defaultdict(list)  # partition -> offsets handled successfully, in order
    attempts: dict[int, list[int]] = defaultdict(list)  # partition -> offset of every call, in order

    def handler(msg):
        record = parse(msg.value)
        attempts[msg.partition].append(msg.offset)
        if failed_so_far[record] < failures_wanted.get(record, 0):
            failed_so_far[record] += 1
            raise RuntimeError(f"flaky {record}")
        handled[msg.partition].append(msg.offset)

    gid = group()
    errors: list[BaseException] = []
    runner = kafkaev.Runner(kafka.bootstrap, loop=loop, on_error=errors.append)
    runner.consumer("flaky", [topic], handler, group_id=gid, max_retries=3, retry_backoff_ms=1, concurrency=2)
    caplog.set_level(logging.WARNING, logger="kafkaev.handlers")
    start(loop, runner)
    run_until(loop, lambda: sum(map(len, handled.values())) >= PARTITIONS * PER_PARTITION, 60, "every record")
    run_until(loop, lambda: runner.stats("flaky").lag == 0 and all(
        o == PER_PARTITION for o in committed(kafka.bootstrap, gid, topic, PARTITIONS).values()), 30,
        "the commits to reach the end")
    stats = runner.stats("flaky")
    stop(loop, runner)
    for p in range(PARTITIONS):
        assert handled[p] == list(range(PER_PARTITION)), f"partition {p}: each record once, in offset order"
        assert attempts[p] == sorted(attempts[p]), f"partition {p}: a retry runs before the next record"
    assert stats.retried == sum(failures_wanted.values())
    assert stats.handled == PARTITIONS * PER_PARTITION
    assert (stats.failed, stats.dead_lettered, stats.skipped, stats.in_flight) == (0, 0, 0, 0)
    assert committed(kafka.bootstrap, gid, topic, PARTITIONS) == dict.fromkeys(range(PARTITIONS), PER_PARTITION)
    retry_lines = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert len(retry_lines) == stats.retried
    assert f"consumer 'flaky': handler failed on {topic}[" in retry_lines[0] and "(attempt 1 of 4)" in \
        "".join(retry_lines) and "RuntimeError: flaky" not in retry_lines[0] and "flaky (" in retry_lines[0]
    assert not errors, errors


def test_dead_letters_keep_the_record_and_say_where_it_came_from(kafka, make_topic, loop):
    topic = make_topic(partitions=2)
    dlq = make_topic(partitions=1)
    records = []
    for i in range(40):
        headers = [("trace", b"t%d" % i), ("empty", None)]
        if i % 10 == 0:
            headers.append(("kafkaev.dlq.original-offset", b"999999"))  # forged: must not survive
        value = None if i % 10 == 5 else b"value-%d" % i  # a tombstone stays one
        key = None if i == 20 else b"key-%d" % i
        records.append((i % 2, key, value, headers))
    produce(kafka.bootstrap, topic, records)
    poison = {i for i in range(40) if i % 5 == 0}  # always fails

    def handler(msg):
        index = int(msg.headers[0][1][1:])
        if index in poison:
            raise ValueError("no good: " + "é" * 2000)  # past 1,024 bytes

    gid = group()
    errors: list[BaseException] = []
    runner = kafkaev.Runner(kafka.bootstrap, loop=loop, on_error=errors.append, acks=1)  # dead letters still -1
    runner.consumer("billing", [topic], handler, group_id=gid, max_retries=2, retry_backoff_ms=1,
                    dead_letter_topic=dlq)
    start(loop, runner)
    run_until(loop, lambda: runner.stats("billing").handled + runner.stats("billing").dead_lettered >= 40, 60,
              "every record handled or dead-lettered")
    run_until(loop, lambda: committed(kafka.bootstrap, gid, topic, 2) == {0: 20, 1: 20}, 30, "commits at the end")
    stats = runner.stats("billing")
    dead_letters_by = runner._schedulers["billing"].dead_letter_client
    assert dead_letters_by is not None and dead_letters_by.config.acks == -1, "acks=1 consumers, acks=-1 letters"
    assert dead_letters_by is not runner._memberships[0].client
    stop(loop, runner)
    assert (stats.handled, stats.dead_lettered, stats.failed, stats.retried, stats.skipped) == (32, 8, 8, 16, 0)
    letters = read_all(kafka.bootstrap, dlq, len(poison))
    by_index = {int(dict(m.headers())["trace"][1:]): m for m in letters}
    assert sorted(by_index) == sorted(poison)
    offsets_in_partition: dict[int, list[int]] = defaultdict(list)
    for i, (partition, _key, _value, _headers) in enumerate(records):
        offsets_in_partition[partition].append(i)
    for i in poison:
        partition, key, value, headers = records[i]
        letter = by_index[i]
        assert letter.key() == key and letter.value() == value
        kept = [(n, v) for n, v in headers if not n.startswith("kafkaev.dlq.")]
        got = letter.headers()
        assert got[:len(kept)] == kept, "the source headers, in order, without forged kafkaev.dlq.* ones"
        provenance = dict(got[len(kept):])
        assert list(provenance) == ["kafkaev.dlq.consumer", "kafkaev.dlq.original-topic",
                                    "kafkaev.dlq.original-partition", "kafkaev.dlq.original-offset",
                                    "kafkaev.dlq.attempts", "kafkaev.dlq.error"]
        assert provenance["kafkaev.dlq.consumer"] == b"billing"
        assert provenance["kafkaev.dlq.original-topic"] == topic.encode()
        assert provenance["kafkaev.dlq.original-partition"] == str(partition).encode()
        assert provenance["kafkaev.dlq.original-offset"] == str(offsets_in_partition[partition].index(i)).encode()
        assert provenance["kafkaev.dlq.attempts"] == b"3"
        error = provenance["kafkaev.dlq.error"]
        assert error.startswith("ValueError: no good: é".encode()) and len(error) <= 1024
        assert len(error) >= 1023, "cut at 1,024 bytes on a character boundary"
        error.decode("utf-8")
    assert not errors, errors


def test_a_rejected_dead_letter_stops_the_consumer_without_a_commit_past_it(kafka, make_topic, loop):
    topic = make_topic(partitions=1)
    dlq = make_topic(partitions=1, config={"max.message.bytes": "2000"})
    big = 7
    produce(kafka.bootstrap, topic, [(0, b"k%d" % i, (b"x" * 5000) if i == big else b"v%d" % i, [])
                                     for i in range(20)])
    calls: list[int] = []

    def handler(msg):
        calls.append(msg.offset)
        if msg.offset == big:
            raise RuntimeError("cannot handle the big one")

    gid = group()
    errors: list[BaseException] = []
    runner = kafkaev.Runner(kafka.bootstrap, loop=loop, on_error=errors.append)
    runner.consumer("strict", [topic], handler, group_id=gid, max_retries=1, retry_backoff_ms=1,
                    dead_letter_topic=dlq)
    start(loop, runner)
    run_until(loop, lambda: runner.health().status == "DOWN", 60, "the consumer to go down")
    health = runner.health()
    assert "strict" in health.reasons and dlq in health.reasons["strict"] and f"{topic}[0]@{big}" in \
        health.reasons["strict"] and "MESSAGE_TOO_LARGE" in health.reasons["strict"], health
    assert not runner.stats("strict").running
    run_until(loop, lambda: bool(errors), 10, "on_error")
    assert len(errors) == 1 and isinstance(errors[0], kafkaev.KafkaError) and "strict" in str(errors[0])
    stop(loop, runner)
    assert committed(kafka.bootstrap, gid, topic, 1)[0] == big, "committed up to the failed record, not past it"
    assert calls[:big + 2] == [*range(big + 1), big], "in order, the big one tried twice"
    assert max(calls) == big, "nothing after the failed record was handled"

    # After a restart (the record is fine now) it is handled again, and the rest after it.
    again: list[int] = []
    runner = kafkaev.Runner(kafka.bootstrap, loop=loop)
    runner.consumer("strict", [topic], lambda msg: again.append(msg.offset), group_id=gid,
                    dead_letter_topic=dlq)
    start(loop, runner)
    run_until(loop, lambda: len(again) >= 20 - big, 60, "the rest")
    run_until(loop, lambda: committed(kafka.bootstrap, gid, topic, 1)[0] == 20, 30, "the commit")
    stop(loop, runner)
    assert again == list(range(big, 20))


def test_concurrency_runs_partitions_in_parallel(kafka, make_topic, loop):
    partitions = 8
    per_partition = 40
    topic = make_topic(partitions=partitions)
    fill(kafka.bootstrap, topic, partitions, per_partition)

    def measure(concurrency: int) -> tuple[int, float, float, dict[int, list[int]]]:
        """Most handlers in flight at once, the run's span, the handlers' summed durations, and
        each partition's offsets in completion order."""
        overlaps = Overlaps()
        order: dict[int, list[int]] = defaultdict(list)
        intervals: list[tuple[float, float]] = []

        async def handler(msg):
            began = time.perf_counter()
            overlaps.enter(msg.partition)
            try:
                await asyncio.sleep(0.001)
            finally:
                overlaps.leave(msg.partition)
            order[msg.partition].append(msg.offset)
            intervals.append((began, time.perf_counter()))

        runner = kafkaev.Runner(kafka.bootstrap, loop=loop)
        runner.consumer("parallel", [topic], handler, group_id=group(), concurrency=concurrency)
        start(loop, runner)
        run_until(loop, lambda: len(intervals) >= partitions * per_partition, 120, "every record")
        stop(loop, runner)
        assert not overlaps.clashes, "two records of one partition ran at once"
        span = max(end for _, end in intervals) - min(began for began, _ in intervals)
        busy = sum(end - began for began, end in intervals)
        return overlaps.most, span, busy, order

    most_1, span_1, busy_1, order_1 = measure(1)
    most_8, span_8, busy_8, order_8 = measure(8)
    for order in (order_1, order_8):
        assert sorted(order) == list(range(partitions))
        assert all(offsets == list(range(per_partition)) for offsets in order.values())
    assert most_1 == 1
    assert most_8 == 8, "eight handlers in flight at once"
    # Throughput in records per handler-duration is the handlers' average parallelism (summed
    # durations over the span). On a loaded machine each 1 ms sleep stretches, in both runs, so
    # the wall-clock ratio says more about the machine than the schedule; this one does not.
    parallelism_1 = busy_1 / span_1
    parallelism_8 = busy_8 / span_8
    assert parallelism_8 / parallelism_1 >= 6, (
        f"concurrency=8 kept {parallelism_8:.2f} handlers busy on average, concurrency=1 {parallelism_1:.2f} "
        f"(wall clock: {span_1:.3f} s against {span_8:.3f} s)")


def test_key_ordering_never_runs_one_key_twice_at_once(kafka, make_topic, loop):
    topic = make_topic(partitions=2)
    keys = 6
    per_key = 30
    records = [(i % 2, b"key-%d" % (i % keys), b"%d" % i, []) for i in range(keys * per_key)]
    produce(kafka.bootstrap, topic, records)
    overlaps = Overlaps()
    seen: dict[bytes, list[int]] = defaultdict(list)

    async def handler(msg):
        overlaps.enter(msg.key)
        try:
            await asyncio.sleep(0.002 if int(msg.value) % 3 else 0)
        finally:
            overlaps.leave(msg.key)
        seen[msg.key].append(int(msg.value))

    gid = group()
    runner = kafkaev.Runner(kafka.bootstrap, loop=loop)
    runner.consumer("keyed", [topic], handler, group_id=gid, ordering="key", concurrency=4)
    start(loop, runner)
    run_until(loop, lambda: sum(map(len, seen.values())) >= keys * per_key, 60, "every record")
    run_until(loop, lambda: committed(kafka.bootstrap, gid, topic, 2) == {0: keys * per_key // 2,
                                                                         1: keys * per_key // 2}, 30, "commits")
    stop(loop, runner)
    assert not overlaps.clashes, f"records of one key ran at once: {overlaps.clashes[:5]}"
    assert overlaps.most == 4, "different keys ran in parallel, up to concurrency"
    for key, values in seen.items():
        assert values == sorted(values), f"{key!r} out of order"
        assert len(values) == per_key


def test_a_revocation_waits_for_the_running_handlers_and_commits_them(kafka, make_topic, loop):
    """A second member joins while the first has handlers running on partitions it is about to
    give up: those finish and are committed before the partitions move, so the newcomer starts
    after them and no record is handled twice."""
    partitions = 4
    per_partition = 60
    topic = make_topic(partitions=partitions)
    fill(kafka.bootstrap, topic, partitions, per_partition)
    handled: list[tuple[str, int, int]] = []

    def handler_for(member: str):
        async def handler(msg):
            await asyncio.sleep(0.02)
            handled.append((member, msg.partition, msg.offset))
        return handler

    gid = group()
    options = {"loop": loop, "session_timeout_ms": 10000, "heartbeat_interval_ms": 500}
    first = kafkaev.Runner(kafka.bootstrap, **options)
    first.consumer("slow", [topic], handler_for("first"), group_id=gid, concurrency=4)
    start(loop, first)
    run_until(loop, lambda: len(handled) >= 20, 60, "the first member to be under way")
    second = kafkaev.Runner(kafka.bootstrap, **options)
    second.consumer("slow", [topic], handler_for("second"), group_id=gid, concurrency=4)
    start(loop, second)
    run_until(loop, lambda: any(m == "second" for m, _, _ in handled), 60, "the second member's first record")
    run_until(loop, lambda: len({(p, o) for _, p, o in handled}) >= partitions * per_partition, 120,
              "every record")
    stop(loop, first)
    stop(loop, second)
    seen = Counter((p, o) for _, p, o in handled)
    twice = [k for k, n in seen.items() if n > 1]
    assert not twice, f"handled twice across the rebalance: {sorted(twice)[:10]}"
    assert committed(kafka.bootstrap, gid, topic, partitions) == dict.fromkeys(range(partitions), per_partition)
    for p in range(partitions):
        offsets = [o for _, q, o in handled if q == p]
        assert offsets == sorted(offsets), f"partition {p} out of order across the handover"


def test_run_on_a_plain_running_loop_until_cancelled(kafka, make_topic, event_loop_kind, new_loop):
    """``await runner.run()`` on whatever loop runs the coroutine (no loop option): cancelling it
    stops the runner, and a handler in flight at that moment finishes and is committed."""
    loop = new_loop(event_loop_kind)
    topic = make_topic(partitions=2)
    fill(kafka.bootstrap, topic, 2, 50)
    handled: list[tuple[int, int]] = []
    gid = group()

    async def main() -> tuple[object, kafkaev.Runner]:
        release = asyncio.Event()

        async def handler(msg):
            if len(handled) == 30:
                await release.wait()  # in flight when the runner is cancelled
            handled.append((msg.partition, msg.offset))

        runner = kafkaev.Runner(kafka.bootstrap)
        runner.consumer("plain", [topic], handler, group_id=gid, concurrency=2)
        task = asyncio.ensure_future(runner.run())
        while len(handled) < 30:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        task.cancel()
        await asyncio.sleep(0.05)
        release.set()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled", runner
        return "returned", runner

    outcome, runner = loop.run_until_complete(main())
    assert outcome == "cancelled"
    assert runner.health().reasons == {"plain": "stopped"}
    done = committed(kafka.bootstrap, gid, topic, 2)
    per_partition: dict[int, list[int]] = defaultdict(list)
    for p, o in handled:
        per_partition[p].append(o)
    for p in range(2):
        ran = per_partition[p]
        assert ran == list(range(len(ran)))
        assert done[p] == len(ran), "the commit covers exactly what was handled, the one in flight included"


def test_a_partition_with_too_many_unfinished_records_is_paused(kafka, make_topic, loop):
    """A handler stuck on one record: its partition takes max_unprocessed records (and the one
    whose delivery the pause ends), pauses, and resumes once half of them are done."""
    topic = make_topic(partitions=1)
    total = 400
    bound = 50
    fill(kafka.bootstrap, topic, 1, total)
    gate = asyncio.Event()
    handled: list[int] = []

    async def handler(msg):
        await gate.wait()
        handled.append(msg.offset)

    gid = group()
    runner = kafkaev.Runner(kafka.bootstrap, loop=loop)
    runner.consumer("stuck", [topic], handler, group_id=gid, max_unprocessed=bound)
    start(loop, runner)
    client = runner._memberships[0].client
    tp = kafkaev.TopicPartition(topic, 0)
    run_until(loop, lambda: tp in client.paused(), 30, "the partition to pause")
    loop.run_until_complete(asyncio.sleep(0.5))  # nothing more comes while paused
    offsets = runner._schedulers["stuck"].work(tp).offsets
    assert offsets.unfinished == bound + 1, "the bound, and the record whose delivery the pause ended"
    assert runner.stats("stuck").in_flight == 1 and not handled
    gate.set()
    run_until(loop, lambda: len(handled) >= total, 60, "every record once resumed")
    run_until(loop, lambda: committed(kafka.bootstrap, gid, topic, 1) == {0: total}, 30, "the commit")
    assert tp not in client.paused()
    stop(loop, runner)
    assert handled == list(range(total))
