"""kafkaev.producer.core: produce() in C with the real RecordBatchBuilder, and each batch's
delivery callbacks (no broker: the built batches are decoded back)."""

from __future__ import annotations

import asyncio
import ctypes
import gc
import time
import weakref
from functools import partial

import pytest

from kafkaev.config import ClientConfig
from kafkaev.errors import DESTROY, MESSAGE_TOO_LARGE, STATE, KafkaError
from kafkaev.producer.accumulator import BATCH_FIRST_STEP, BATCH_MIN_FIRST_STEP, Accumulator, BufferFullError
from kafkaev.producer.core import Deliveries, ProducerCore, ProducerLifecycle
from kafkaev.producer.partitioner import custom_partition
from kafkaev.protocol.codec import RecordBatchBuilder, decode_record_batches, murmur2
from kafkaev.types import RecordMetadata

PARTITIONS = 4


@pytest.fixture
def loop(new_loop):
    return new_loop("asyncio")  # guarded (conftest.py); these tests do not depend on the loop kind


class Env:
    """A ProducerCore over a real Accumulator (real builders) and one known topic "t"."""

    def __init__(self, loop: asyncio.AbstractEventLoop, partitioner=None, builder_factory=None, **options) -> None:
        options.setdefault("linger_ms", 60_000)  # batches close only when full or asked to
        config = ClientConfig(**options)
        self.acc = Accumulator(config, loop, lambda: None, builder_factory)
        self.tstate = self.acc.add_topic("t")
        self.tstate.update([(1, 0)] * PARTITIONS)
        self.wakes = 0
        self.unknown: list[tuple] = []
        checked = partial(custom_partition, partitioner) if partitioner is not None else None
        self.core = ProducerCore(self.acc, self.wake, checked, config.max_request_size, self.on_unknown)

    def wake(self) -> None:
        self.wakes += 1

    def on_unknown(self, *record) -> None:
        self.unknown.append(record)

    def records(self, partition: int) -> list:
        """Every record of the partition so far: its closed batches, then its open one."""
        part = self.tstate.parts[partition]
        batches = list(part.queue) + ([part.batch] if part.batch is not None else [])
        out = []
        for batch in batches:
            for decoded in decode_record_batches(batch.builder.build()):
                out.extend(decoded.records)
        return out


def calls():
    got: list[tuple] = []

    def cb(meta, err):
        got.append((meta, err))
    return got, cb


def test_key_and_value_types_reach_the_batch_as_bytes(loop):
    env = Env(loop)
    cases = [(None, b"b"), (None, "s-é"), (None, bytearray(b"ba")), (None, memoryview(b"mv")), (None, None),
             (b"k", b"1"), ("ké", b"2"), (bytearray(b"kb"), b"3")]
    for key, value in cases:
        env.core.produce("t", key, value, partition=1)
    got = [(r.key, r.value) for r in env.records(1)]
    assert got == [(None, b"b"), (None, "s-é".encode()), (None, b"ba"), (None, b"mv"), (None, None),
                   (b"k", b"1"), ("ké".encode(), b"2"), (b"kb", b"3")]


def test_keyed_records_follow_murmur2(loop):
    env = Env(loop)
    for i in range(40):
        env.core.produce("t", f"key-{i}", b"v%d" % i)
    for p in range(PARTITIONS):
        for record in env.records(p):
            assert murmur2(record.key) % PARTITIONS == p


def test_keyless_records_stick_to_one_partition_until_its_batch_is_full(loop):
    env = Env(loop, batch_size=2000)
    value = b"x" * 100
    env.core.produce("t", None, value)
    first = env.tstate.sticky.current
    for _ in range(10):
        env.core.produce("t", None, value)
    assert env.tstate.sticky.current == first and env.wakes == 0
    assert len(env.records(first)) == 11
    for _ in range(15):  # fills the first batch (18 records): it is closed and the next ones move on
        env.core.produce("t", None, value)
    assert env.wakes >= 1 and len(env.tstate.parts[first].queue) >= 1
    assert env.tstate.sticky.current != first
    assert sum(len(env.records(p)) for p in range(PARTITIONS)) == 26


def test_headers_and_timestamps(loop):
    env = Env(loop)
    before = time.time_ns() // 1_000_000
    env.core.produce("t", None, b"a", partition=0, headers={"h": "v"})
    env.core.produce("t", None, b"b", partition=0, headers=[("x", None), ("x", bytearray(b"2"))], timestamp_ms=5)
    after = time.time_ns() // 1_000_000
    first, second = env.records(0)
    assert before <= first.timestamp <= after and first.headers == [("h", b"v")]
    assert second.timestamp == 5 and second.headers == [("x", None), ("x", b"2")]


def test_custom_partitioner_is_called_and_checked(loop):
    seen = []

    def partitioner(topic, key, n):
        seen.append((topic, key, n))
        return 3 if key == b"k" else n
    env = Env(loop, partitioner=partitioner)
    env.core.produce("t", b"k", b"v")
    assert seen == [("t", b"k", PARTITIONS)] and len(env.records(3)) == 1
    with pytest.raises(ValueError, match="'partitioner' returned 4"):
        env.core.produce("t", b"other", b"v")


def test_unknown_topic_goes_to_the_slow_path_with_its_create_time(loop):
    env = Env(loop)
    _, cb = calls()
    before = time.time_ns() // 1_000_000
    env.core.produce("new", b"k", b"v", cb, partition=2, headers={"h": b"1"})
    record = env.unknown.pop()
    assert record[:6] == ("new", b"k", b"v", cb, 2, [("h", b"1")])
    assert type(record[6]) is int and before <= record[6] <= time.time_ns() // 1_000_000
    env.core.produce("new", None, b"v", timestamp_ms=7)
    assert env.unknown.pop()[6] == 7


@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        ({"key": 5}, TypeError, "'key'"),
        ({"key": None, "value": 5}, TypeError, "'value'"),
        ({"value": object()}, TypeError, "'value'"),
        ({"partition": PARTITIONS}, ValueError, "'partition'"),
        ({"partition": True}, ValueError, "'partition'"),
        ({"timestamp_ms": 1.5}, TypeError, "'timestamp_ms'"),
        ({"cb": "no"}, TypeError, "'cb'"),
        ({"headers": 5}, TypeError, "'headers'"),
        ({"value": b"x" * 2_000_000}, KafkaError, "max_request_size"),
    ],
)
def test_bad_input_raises_naming_the_argument(loop, kwargs, exc, name):
    env = Env(loop)
    args = {"key": b"k", "value": b"v"}
    args.update(kwargs)
    env.core.produce("t", None, b"first", partition=0)  # an open batch: the append path checks too
    with pytest.raises(exc, match=name):
        env.core.produce("t", args.pop("key"), args.pop("value"), **args)
    assert sum(len(env.records(p)) for p in range(PARTITIONS)) == 1


def test_a_record_too_large_for_any_batch_is_refused_before_opening_one(loop):
    env = Env(loop, max_request_size=1000, batch_size=1000)
    with pytest.raises(KafkaError, match="max_request_size") as info:
        env.core.produce("t", None, b"x" * 1000)
    assert info.value.code == MESSAGE_TOO_LARGE and env.acc.incomplete == 0


def test_callbacks_complete_with_offsets_in_record_order(loop):
    env = Env(loop)
    results: dict[int, tuple] = {}

    def cb_for(i):
        def cb(meta, err):
            assert i not in results, f"callback of record {i} called twice"
            results[i] = (meta, err)
        return cb
    for i in range(10):
        env.core.produce("t", None, b"v", cb_for(i) if i % 3 else None, partition=2, timestamp_ms=1000 + i)
    batch = env.tstate.parts[2].batch
    assert len(batch.deliveries) == 6
    errors: list[BaseException] = []
    batch.deliveries.complete("t", 2, 500, -1, errors.append)
    assert sorted(results) == [1, 2, 4, 5, 7, 8]
    for i, (meta, err) in results.items():
        assert err is None and type(meta) is RecordMetadata
        assert meta == ("t", 2, 500 + i, 1000 + i)
        assert (meta.topic, meta.partition, meta.offset, meta.timestamp) == ("t", 2, 500 + i, 1000 + i)
        assert not gc.is_tracked(meta)
    assert not errors and len(batch.deliveries) == 0
    batch.deliveries.complete("t", 2, 500, -1, errors.append)  # nothing left: nobody is called twice
    assert len(results) == 6


def test_log_append_time_and_acks0_offsets():
    deliveries = Deliveries()
    got, cb = calls()
    for i in range(3):
        deliveries.add(cb, i, 100 + i)
    deliveries.complete("t", 0, -1, 777, print)  # acks=0: no offsets; LogAppendTime wins
    assert [meta for meta, _ in got] == [("t", 0, -1, 777)] * 3


def test_a_raising_callback_is_reported_and_the_others_still_run():
    deliveries = Deliveries()
    got, cb = calls()
    boom = RuntimeError("user bug")

    def bad(meta, err):
        raise boom
    deliveries.add(cb, 0, 1)
    deliveries.add(bad, 1, 1)
    deliveries.add(cb, 2, 1)
    reported: list[BaseException] = []
    deliveries.complete("t", 0, 10, -1, reported.append)
    assert reported == [boom] and [meta.offset for meta, _ in got] == [10, 12]


def test_split_moves_the_later_records_callbacks_with_their_deltas_rebased():
    deliveries = Deliveries()
    got, cb = calls()
    for i in (0, 2, 3, 5):  # records 1 and 4 have no callback
        deliveries.add(cb, i, 100 + i)
    tail = deliveries.split(3)
    assert (len(deliveries), len(tail)) == (2, 2)
    deliveries.complete("t", 0, 10, -1, print)  # the first half landed at 10
    tail.complete("t", 0, 50, -1, print)  # the second half at 50: its records 0 and 2
    assert [(meta.offset, meta.timestamp) for meta, _ in got] == [(10, 100), (12, 102), (50, 103), (52, 105)]


def test_records_sharing_a_callback_and_a_millisecond_keep_their_own_offsets_and_times():
    deliveries = Deliveries()
    got, cb = calls()
    other_got, other = calls()
    # runs broken by a new millisecond, a record without a callback (delta 4), another callback
    for delta, timestamp, callback in [(0, 7, cb), (1, 7, cb), (2, 8, cb), (3, 8, cb), (5, 8, cb), (6, 8, other),
                                       (7, 8, cb)]:
        deliveries.add(callback, delta, timestamp)
    assert len(deliveries) == 7
    deliveries.complete("t", 1, 100, -1, print)
    assert [meta for meta, _ in got] == [("t", 1, 100, 7), ("t", 1, 101, 7), ("t", 1, 102, 8), ("t", 1, 103, 8),
                                         ("t", 1, 105, 8), ("t", 1, 107, 8)]
    assert [meta for meta, _ in other_got] == [("t", 1, 106, 8)]
    assert len(deliveries) == 0


def test_records_of_one_millisecond_share_one_timestamp_int_across_callbacks():
    deliveries = Deliveries()
    metas: list = []
    now_ms = 1_700_000_000_000
    for i in range(3):  # distinct callbacks, as kafkaev.aio's Futures: a run each
        deliveries.add(lambda meta, err: metas.append(meta), i, now_ms)
    deliveries.complete("t", 0, 0, -1, print)
    assert [m.timestamp for m in metas] == [now_ms] * 3
    assert metas[0].timestamp is metas[1].timestamp is metas[2].timestamp


def test_split_inside_a_run_of_one_callback():
    deliveries = Deliveries()
    got, cb = calls()
    for i in range(6):
        deliveries.add(cb, i, 9)
    tail = deliveries.split(4)
    assert (len(deliveries), len(tail)) == (4, 2)
    tail.add(cb, 2, 9)  # the tail's next record extends its run
    deliveries.complete("t", 0, 10, -1, print)
    tail.complete("t", 0, 50, -1, print)
    assert [meta.offset for meta, _ in got] == [10, 11, 12, 13, 50, 51, 52]


def test_fail_calls_every_callback_once_with_the_error():
    deliveries = Deliveries()
    got, cb = calls()
    for i in range(5):
        deliveries.add(cb, i, 1 + i // 3)  # two runs
    err = KafkaError(DESTROY, "closed")
    deliveries.fail(err, print)
    deliveries.fail(err, print)
    assert got == [(None, err)] * 5


def test_futures_get_their_outcome_and_a_cancelled_one_is_left_alone_unreported(loop):
    """kafkaev.aio's records: the batch sets each Future's result (or exception) itself; a
    Future its awaiter cancelled stays cancelled, and that is no error to report."""
    reported: list[BaseException] = []
    acked, cancelled, failed, cancelled_failed = (loop.create_future() for _ in range(4))
    cancelled.cancel()
    cancelled_failed.cancel()
    deliveries = Deliveries()
    for delta, fut in enumerate((acked, cancelled)):
        deliveries.add(fut, delta, 5)
    deliveries.complete("t", 2, 40, -1, reported.append)
    assert acked.result() == ("t", 2, 40, 5)
    assert cancelled.cancelled()
    err = KafkaError(DESTROY, "closed")
    failing = Deliveries()
    for delta, fut in enumerate((failed, cancelled_failed)):
        failing.add(fut, delta, 5)
    failing.fail(err, reported.append)
    assert failed.exception() is err
    assert cancelled_failed.cancelled()
    assert reported == []


def test_a_future_already_done_is_reported_not_passed_over(loop):
    """A record's outcome for a Future that holds one already (settled twice, or by someone
    else) is reported once per record; the Future keeps what it had."""
    reported: list[BaseException] = []
    done = loop.create_future()
    done.set_result("earlier")
    deliveries = Deliveries()
    deliveries.add(done, 0, 5)
    deliveries.complete("t", 0, 7, -1, reported.append)
    again = Deliveries()
    again.add(done, 0, 5)
    again.fail(KafkaError(DESTROY, "closed"), reported.append)
    assert done.result() == "earlier"
    assert [type(exc) for exc in reported] == [asyncio.InvalidStateError] * 2
    assert "already done" in str(reported[0])


def _untracked_future(loop: asyncio.AbstractEventLoop) -> asyncio.Future:
    """A Future as kafkaev.aio hands it to the producer: untracked by the collector."""
    fut = loop.create_future()
    ctypes.pythonapi.PyObject_GC_UnTrack(ctypes.py_object(fut))
    assert not gc.is_tracked(fut)
    return fut


def _raise_from(fut: asyncio.Future) -> BaseException:
    """Retrieve ``fut``'s exception by raising it here: its traceback leads back, through this
    frame's ``fut``, to the Future that holds it (a cycle)."""
    try:
        fut.result()
    except BaseException as exc:  # noqa: BLE001 - whatever it holds
        return exc
    raise AssertionError(f"{fut!r} holds no exception")


def test_an_untracked_future_is_tracked_again_only_when_it_can_be_in_a_cycle(loop):
    """An acknowledged record's Future holds an untracked RecordMetadata and nothing else: it
    stays untracked. A failed or cancelled one is tracked again before the producer lets go,
    and a cycle through its exception is then collected. A Future that came tracked stays so."""
    acked, cancelled, tracked_acked = _untracked_future(loop), _untracked_future(loop), loop.create_future()
    cancelled.cancel()
    deliveries = Deliveries()
    for delta, fut in enumerate((acked, cancelled, tracked_acked)):
        deliveries.add(fut, delta, 5)
    deliveries.complete("t", 0, 10, -1, print)
    assert acked.result() == ("t", 0, 10, 5) and not gc.is_tracked(acked)
    assert not gc.is_tracked(acked.result())
    assert gc.is_tracked(cancelled) and gc.is_tracked(tracked_acked)

    failed = _untracked_future(loop)
    failing = Deliveries()
    failing.add(failed, 0, 5)
    failing.fail(KafkaError(DESTROY, "closed"), print)
    assert gc.is_tracked(failed)
    _raise_from(failed)
    gone = weakref.ref(failed)
    del failed
    gc.collect()
    assert gone() is None


class Delegating:
    """Not a RecordBatchBuilder: produce() goes through its Python-level append."""

    def __init__(self, codec: int, capacity: int) -> None:
        self.inner = RecordBatchBuilder(codec, capacity)
        self.appends = 0

    def append(self, timestamp_ms, key, value, headers):
        self.appends += 1
        return self.inner.append(timestamp_ms, key, value, headers)

    def build(self, **kwargs) -> bytes:
        return self.inner.build(**kwargs)

    @property
    def record_count(self) -> int:
        return self.inner.record_count


def test_builder_stand_ins_still_work(loop):
    env = Env(loop, builder_factory=Delegating)
    got, cb = calls()
    env.core.produce("t", None, b"v", cb, partition=0, timestamp_ms=3)
    env.core.produce("t", b"k", "w", partition=0, timestamp_ms=4)
    batch = env.tstate.parts[0].batch
    assert batch.builder.appends == 2
    assert [(r.key, r.value, r.timestamp) for r in env.records(0)] == [(None, b"v", 3), (b"k", b"w", 4)]
    batch.deliveries.complete("t", 0, 0, -1, print)
    assert got == [(("t", 0, 0, 3), None)]


def test_a_closing_producer_refuses_every_record_and_calls_no_callback(loop):
    # Closing closes the open batches first; from then on each record reaches a path that refuses it.
    env = Env(loop)
    got, cb = calls()
    env.core.produce("t", b"k", b"before", cb)
    assert env.core.lifecycle is ProducerLifecycle.OPEN
    assert env.core._start_closing() and not env.core._start_closing()  # only forward, once
    env.acc.close_all()
    assert env.core.lifecycle is ProducerLifecycle.CLOSING
    refused = [{"key": b"k"}, {"key": None}, {"key": None, "partition": 2}, {"key": "s", "topic": "unknown"}]
    for kwargs in refused:
        topic = kwargs.pop("topic", "t")
        key = kwargs.pop("key")
        with pytest.raises(KafkaError) as info:
            env.core.produce(topic, key, b"after", cb, **kwargs)
        assert info.value.code == STATE
    assert got == [] and env.unknown == [] and all(part.batch is None for part in env.tstate.parts)
    assert sum(len(part.queue) for part in env.tstate.parts) == 1  # only the record from before
    env.core._finish_closing()
    assert env.core.lifecycle is ProducerLifecycle.CLOSED
    with pytest.raises(RuntimeError):
        env.core._finish_closing()
    with pytest.raises(KafkaError, match="closed"):
        env.core.produce("t", None, b"late", cb)
    assert got == []


def test_readmit_is_not_refused_for_memory_and_produce_still_is(loop):
    env = Env(loop, buffer_memory=16384, batch_size=16384)
    env.core.produce("t", None, b"fills the budget", partition=0)
    env.acc.budget.hold(16384 - env.acc.budget.reserved)  # and records waiting for metadata, the rest
    with pytest.raises(BufferFullError):
        env.core.produce("t", None, b"x", partition=1)
    got, cb = calls()
    env.core.readmit("t", None, b"waited for the topic", cb, 1, None, 123)
    assert env.acc.budget.reserved == 2 * BATCH_MIN_FIRST_STEP and env.tstate.parts[1].batch is not None
    with pytest.raises(BufferFullError):
        env.core.produce("t", None, b"x", partition=2)  # the waiver lasted that one call
    assert [(r.value, r.timestamp) for r in env.records(1)] == [(b"waited for the topic", 123)]


def test_a_batch_reserves_its_first_step_and_grows_as_records_fill_it(loop):
    env = Env(loop)  # the default batch_size (1 MiB) and buffer_memory (32 MiB)
    value = b"v" * 1000
    env.core.produce("t", None, value, partition=0)
    batch = env.tstate.parts[0].batch
    assert env.acc.budget.reserved == BATCH_FIRST_STEP == batch.builder.max_batch_size
    limits = []
    while batch.builder.estimated_size + len(value) + 100 <= env.acc._config.batch_size:
        env.core.produce("t", None, value, partition=0)
        if batch.builder.max_batch_size not in limits:
            limits.append(batch.builder.max_batch_size)
        assert env.acc.budget.reserved == batch.builder.max_batch_size  # each step reserved as it is reached
    assert limits == [BATCH_FIRST_STEP << i for i in range(7)]  # doubling, 16 KiB to 1 MiB
    count = len(env.records(0))
    env.core.produce("t", None, value, partition=0)  # past batch_size: the batch closes, a new one opens
    assert env.tstate.parts[0].queue and env.tstate.parts[0].batch is not batch
    assert env.acc.budget.reserved == (1 << 20) + BATCH_FIRST_STEP
    assert len(env.records(0)) == count + 1 and all(r.value == value for r in env.records(0))


def test_a_thousand_partitions_at_the_defaults_fit_the_default_buffer(loop):
    env = Env(loop)
    env.tstate.update([(1, 0)] * 1000)
    for p in range(1000):
        env.core.produce("t", b"k", b"v" * 100, partition=p)
    assert env.acc.budget.reserved == 1000 * BATCH_FIRST_STEP <= env.acc.budget.limit


def test_ten_thousand_quiet_partitions_each_open_a_batch_at_the_defaults(loop):
    # Whole first steps for all would take 160 MiB of the 32: once open batches hold half the
    # budget each new one opens with the least step, so none is refused.
    partitions = 10_000
    env = Env(loop)
    env.tstate.update([(1, 0)] * partitions)
    for p in range(partitions):
        env.core.produce("t", b"k", b"v" * 100, partition=p)
    reserved = sorted(part.batch.reserved for part in env.tstate.parts)
    assert set(reserved) == {BATCH_MIN_FIRST_STEP, BATCH_FIRST_STEP}
    assert reserved.count(BATCH_FIRST_STEP) == env.acc.budget.limit // 2 // BATCH_FIRST_STEP
    assert env.acc.budget.reserved <= env.acc.budget.limit
    assert all(len(env.records(p)) == 1 for p in range(0, partitions, 997))


def test_a_batch_the_budget_cannot_grow_is_full(loop):
    # Room for three first steps: partition 0's batch opens with one, partition 1's (open
    # batches would pass half the budget) with the least step. Partition 0's grows once (two
    # steps) and then is full; the record that did not fit needs a new batch, a whole step
    # again once the full one is closed, for which there is no room.
    step = BATCH_FIRST_STEP
    env = Env(loop, buffer_memory=3 * step, batch_size=3 * step)
    value = b"x" * 1000
    env.core.produce("t", None, value, partition=0)
    env.core.produce("t", None, b"a", partition=1)
    produced = 1
    with pytest.raises(BufferFullError):
        for _ in range(3 * step // len(value)):
            env.core.produce("t", None, value, partition=0)
            produced += 1
    part = env.tstate.parts[0]
    (full,) = part.queue
    assert part.batch is None and full.builder.max_batch_size == 2 * step
    assert env.acc.budget.reserved == 2 * step + BATCH_MIN_FIRST_STEP
    assert 2 * step - len(value) - 100 < full.builder.estimated_size <= 2 * step
    assert [r.value for r in env.records(0)] == [value] * produced  # the refused record is not in it
