"""confluent-kafka (librdkafka) scenarios."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

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
from bench.rebalance import REBALANCE_MEMBERS, PauseTracker, SteadyProducer, run_timeline
from bench.spec import (
    BUFFER_FULL_WAIT_S,
    DEFAULTS_LINGER_MS,
    E2E_TICK_S,
    PRODUCE_BUFFER_BYTES,
    PRODUCE_BUFFER_RECORDS,
    RunResult,
    RunSpec,
)

CALLS_PER_CLOCK_CHECK = 1000
CONSUME_BATCH = 10000
# librdkafka's own queue limits are far below a benchmark's burst; raise them (as its docs advise
# for throughput) to the limits every client gets, so produce() measures the client, not
# BufferError back-off.
QUEUE_MAX_MESSAGES = PRODUCE_BUFFER_RECORDS
QUEUE_MAX_KBYTES = PRODUCE_BUFFER_BYTES // 1024
EOS_JOIN_TIMEOUT_S = 30.0  # eos: how long joining the group and the first fetch may take
EOS_END_TIMEOUT_S = 5.0  # eos: no record for this long is the input's end


class Deliveries:
    """Delivery-report counter: the per-record callback every real producer needs."""

    __slots__ = ("acked", "failed")

    def __init__(self) -> None:
        self.acked = 0
        self.failed = 0

    def __call__(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked += 1
        else:
            self.failed += 1


def _throughput_settings(spec: RunSpec) -> dict[str, Any]:
    return {
        "bootstrap.servers": spec.bootstrap,
        "acks": spec.acks,
        "linger.ms": spec.throughput_linger_ms,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": QUEUE_MAX_MESSAGES,
        "queue.buffering.max.kbytes": QUEUE_MAX_KBYTES,
        "compression.type": spec.compression,
        "enable.idempotence": False,
    }


def _defaults_settings(spec: RunSpec) -> dict[str, Any]:
    """confluent-kafka as it comes (acks=all, batch.size 1,000,000, its queue limits), linger aligned."""
    return {"bootstrap.servers": spec.bootstrap, "linger.ms": DEFAULTS_LINGER_MS}


def _latency_settings(spec: RunSpec) -> dict[str, Any]:
    return {
        "bootstrap.servers": spec.bootstrap,
        "acks": spec.acks,
        "linger.ms": 0,
        "socket.nagle.disable": True,
        "compression.type": spec.compression,
        "enable.idempotence": False,
    }


def _consumer_settings(spec: RunSpec, *, low_latency: bool) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "bootstrap.servers": spec.bootstrap,
        "group.id": f"bench-{spec.topic}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
    }
    if low_latency:
        settings.update({"fetch.wait.max.ms": 100, "fetch.queue.backoff.ms": 0, "socket.nagle.disable": True})
    else:
        settings.update({"queued.min.messages": 1_000_000, "fetch.max.bytes": 52_428_800})
    return settings


def _version() -> dict[str, Any]:
    return {"confluent_kafka": confluent_kafka.version()[0], "librdkafka": confluent_kafka.libversion()[0]}


def _produce_for(producer: Producer, topic: str, value: bytes, seconds: float, keys: list[bytes] | None = None) -> int:
    """Produce for ``seconds``; with ``keys``, each record carries the next one in turn."""
    calls = 0
    produce = producer.produce
    next_key = itertools.cycle(keys).__next__ if keys else None
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(CALLS_PER_CLOCK_CHECK):
            key = None if next_key is None else next_key()
            while True:
                try:
                    if key is None:  # the keyless call as it was, for the other scenarios' figures
                        produce(topic, value)
                    else:
                        produce(topic, value, key)
                    break
                except BufferError:  # local queue full: serve delivery reports, then retry
                    producer.poll(BUFFER_FULL_WAIT_S)
            calls += 1
        producer.poll(0)
    return calls


def produce(spec: RunSpec) -> RunResult:
    settings = _defaults_settings(spec) if spec.defaults else _throughput_settings(spec)
    deliveries = Deliveries()
    producer = Producer({**settings, "on_delivery": deliveries})
    value = make_value(spec.value_size)
    keys = record_keys(spec)
    warmup_calls = _produce_for(producer, spec.topic, value, spec.warmup_s, keys)
    producer.flush()
    acked_before, failed_before = deliveries.acked, deliveries.failed
    with Section() as section:
        calls = _produce_for(producer, spec.topic, value, spec.duration_s, keys)
        call_elapsed = time.perf_counter() - section.started
        remaining = producer.flush(60)
    acked = deliveries.acked - acked_before
    return RunResult(
        records=acked,
        failed=deliveries.failed - failed_before + remaining,
        elapsed_s=section.elapsed,
        call_elapsed_s=call_elapsed,
        calls=calls,
        warmup_records=warmup_calls,
        cpu_s=section.cpu,
        bytes=acked * spec.value_size,
        settings={**settings, **_version()},
    )


def roundtrip(spec: RunSpec) -> RunResult:
    settings = _latency_settings(spec)
    deliveries = Deliveries()
    producer = Producer({**settings, "on_delivery": deliveries})
    value = make_value(spec.value_size)
    warmup = max(100, spec.count // 10)
    latencies: list[float] = []
    with Section() as section:
        for i in range(warmup + spec.count):
            target = deliveries.acked + deliveries.failed + 1
            started = time.perf_counter_ns()
            producer.produce(spec.topic, value)
            while deliveries.acked + deliveries.failed < target:
                producer.poll(1.0)
            if i >= warmup:
                latencies.append((time.perf_counter_ns() - started) / 1000.0)
    producer.flush()
    return RunResult(
        records=len(latencies),
        failed=deliveries.failed,
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        latency_us=summarize_latencies(latencies),
        histogram=histogram(latencies),
        settings={**settings, **_version()},
    )


def e2e(spec: RunSpec) -> RunResult:
    producer_settings = _latency_settings(spec)
    consumer_settings = _consumer_settings(spec, low_latency=True)
    deliveries = Deliveries()
    producer = Producer({**producer_settings, "on_delivery": deliveries})
    consumer = Consumer(consumer_settings)
    consumer.assign([TopicPartition(spec.topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(spec.partitions)])
    samples: list[tuple[int, float]] = []
    stop = threading.Event()

    def consume_loop() -> None:
        while not stop.is_set():
            # poll(), not consume(num_messages=N): consume() waits for N messages or the timeout.
            msg = consumer.poll(0.1)
            if msg is not None and msg.error() is None:
                now = time.perf_counter_ns()
                samples.append((now, latency_us_of(msg.value(), now)))

    reader = threading.Thread(target=consume_loop, daemon=True)
    reader.start()
    value = make_value(spec.value_size)
    total = int(spec.rate * (spec.warmup_s + spec.duration_s))
    # Start the clock only once the consumer is fetching: probes until one arrives.
    deadline = time.perf_counter() + 30
    while not samples and time.perf_counter() < deadline:
        producer.produce(spec.topic, stamp(value))
        producer.flush(1)
        time.sleep(0.05)
    samples.clear()
    with Section() as section:
        sent = 0
        while sent < total:
            due = min(total, int((time.perf_counter() - section.started) * spec.rate) + 1)
            while sent < due:
                producer.produce(spec.topic, stamp(value))
                sent += 1
            producer.poll(0)
            time.sleep(E2E_TICK_S)
        producer.flush(30)
        deadline = time.perf_counter() + 30
        while len(samples) < total and time.perf_counter() < deadline:
            time.sleep(0.01)
    stop.set()
    reader.join()
    consumer.close()
    return e2e_result(spec, section, samples, total, deliveries.failed,
                      {"producer": producer_settings, "consumer": consumer_settings, **_version()})


def consume(spec: RunSpec) -> RunResult:
    settings = _consumer_settings(spec, low_latency=False)
    consumer = Consumer(settings)
    consumer.assign([TopicPartition(spec.topic, p, confluent_kafka.OFFSET_BEGINNING) for p in range(spec.partitions)])
    records = 0
    nbytes = 0
    errors = 0
    # The clock starts at the first delivered batch, so connection setup is not counted.
    first = consumer.consume(num_messages=CONSUME_BATCH, timeout=10.0)
    records += len(first)
    with Section() as section:
        counted = 0
        # Fast clients stop at `count`; slow ones at the duration_s time cap.
        while records < spec.count and time.perf_counter() - section.started < spec.duration_s:
            batch = consumer.consume(num_messages=CONSUME_BATCH, timeout=5.0)
            if not batch:
                break
            for msg in batch:
                if msg.error() is not None:
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        errors += 1
                    continue
                nbytes += len(msg.value())
                counted += 1
            records += len(batch)
    consumer.close()
    return RunResult(
        records=counted,
        failed=errors,
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        bytes=nbytes,
        settings={**settings, "api": f"consume(num_messages={CONSUME_BATCH})", **_version()},
        note="" if records >= spec.count else f"stopped at {records}/{spec.count} (time cap or topic end)",
    )


def handle(spec: RunSpec) -> RunResult:
    """The loop written by hand: consume a batch, call the handler on each record, store each
    partition's next offset, commit (asynchronously) what was stored."""
    settings = {**_consumer_settings(spec, low_latency=False), "group.id": f"bench-{spec.topic}-{uuid.uuid4().hex[:8]}",
                "enable.auto.offset.store": False}
    consumer = Consumer(settings)
    consumer.subscribe([spec.topic])
    clock = HandledClock(spec.count, spec.duration_s)

    def handler(_msg: Any) -> None:
        clock.handled()

    deadline = time.perf_counter() + 30 + spec.duration_s
    while not clock.done and time.perf_counter() < deadline:
        batch = consumer.consume(num_messages=CONSUME_BATCH, timeout=1.0)
        if not batch:
            if clock.over_time():
                clock.finish()
            continue
        ends: dict[tuple[str, int], int] = {}
        for msg in batch:
            if msg.error() is not None:
                continue
            handler(msg)
            ends[(msg.topic(), msg.partition())] = msg.offset() + 1
        consumer.store_offsets(offsets=[TopicPartition(t, p, o) for (t, p), o in ends.items()])
        consumer.commit(asynchronous=True)
    consumer.close()
    return RunResult(records=clock.records, elapsed_s=clock.elapsed, cpu_s=clock.cpu,
                     bytes=clock.records * spec.value_size,
                     settings={**settings, "api": "consume() + handler + store_offsets() + commit(asynchronous=True)",
                               **_version()}, note=clock.note())


def rebalance(spec: RunSpec) -> RunResult:
    """Four consumers on threads, a fifth joining and leaving (bench/rebalance.py)."""
    tracker = PauseTracker(spec.partitions)
    settings: dict[str, Any] = {"bootstrap.servers": spec.bootstrap, "group.id": f"bench-{spec.topic}",
                                "group.protocol": spec.group_protocol, "auto.offset.reset": "latest",
                                "fetch.wait.max.ms": 100}
    if spec.group_protocol == "classic":
        settings.update({"partition.assignment.strategy": spec.assignor, "session.timeout.ms": 10000,
                         "heartbeat.interval.ms": 500})

    class Member:
        def __init__(self, index: int) -> None:
            self.index = index
            self.consumer = confluent_kafka.Consumer(settings)
            self.consumer.subscribe([spec.topic])
            self.stop = threading.Event()
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()

        def _run(self) -> None:
            while not self.stop.is_set():
                for msg in self.consumer.consume(CONSUME_BATCH, 0.05):
                    if msg.error() is None:
                        tracker.delivered(msg.partition(), self.index)
            self.consumer.close()

        def close(self) -> None:
            self.stop.set()
            self.thread.join(30)

    producer = SteadyProducer(spec)
    members = [Member(index) for index in range(REBALANCE_MEMBERS)]
    try:
        run_timeline(spec, tracker, time.sleep, lambda: members.append(Member(REBALANCE_MEMBERS)),
                     lambda: members.pop().close())
    finally:
        producer.close()
        for m in members:
            m.close()
    return tracker.result({**settings, **_version()})


def _transactional_settings(spec: RunSpec) -> dict[str, Any]:
    """The throughput settings, transactional: librdkafka makes that idempotent with acks=all."""
    return {**_throughput_settings(spec), "acks": "all", "enable.idempotence": True,
            "transactional.id": f"bench-{spec.topic}"}


def _transactions_for(producer: Producer, topic: str, value: bytes, seconds: float, per_transaction: int) -> int:
    """Whole transactions of ``per_transaction`` records until ``seconds`` have passed; records committed."""
    produce = producer.produce
    committed = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        producer.begin_transaction()
        for i in range(per_transaction):
            while True:
                try:
                    produce(topic, value)
                    break
                except BufferError:
                    producer.poll(BUFFER_FULL_WAIT_S)
            if i % CALLS_PER_CLOCK_CHECK == 0:
                producer.poll(0)
        producer.commit_transaction()  # flushes, then EndTxn; raises if a record failed
        committed += per_transaction
    return committed


def txn_produce(spec: RunSpec) -> RunResult:
    settings = _transactional_settings(spec)
    deliveries = Deliveries()
    producer = Producer({**settings, "on_delivery": deliveries})
    producer.init_transactions()
    value = make_value(spec.value_size)
    warm = _transactions_for(producer, spec.topic, value, spec.warmup_s, spec.txn_records)
    with Section() as section:
        committed = _transactions_for(producer, spec.topic, value, spec.duration_s, spec.txn_records)
    return RunResult(records=committed, failed=deliveries.failed, elapsed_s=section.elapsed, cpu_s=section.cpu,
                     warmup_records=warm, bytes=committed * spec.value_size,
                     settings={**settings, "api": "begin/produce/commit_transaction", **_version()})


def eos(spec: RunSpec) -> RunResult:
    """The Java client's recipe: consume up to txn_records, produce their transforms, send the
    offsets with the consumer's group metadata, commit."""
    consumer_settings = {**_consumer_settings(spec, low_latency=False), "group.id": f"bench-eos-{spec.topic}",
                         "isolation.level": "read_committed"}
    producer_settings = _transactional_settings(spec)
    consumer = Consumer(consumer_settings)
    consumer.subscribe([spec.source_topic])
    producer = Producer(producer_settings)
    producer.init_transactions()
    output = spec.topic
    state = {"committed": 0, "bytes": 0}

    def transact(messages: list[Any]) -> None:
        producer.begin_transaction()
        offsets: dict[tuple[str, int], int] = {}
        for msg in messages:
            value = msg.value().upper()  # examples/eos_pipeline.py's transform
            producer.produce(output, value, msg.key(), partition=msg.partition())
            offsets[(msg.topic(), msg.partition())] = msg.offset() + 1
            state["bytes"] += len(value)
        producer.send_offsets_to_transaction([TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                             consumer.consumer_group_metadata())
        producer.commit_transaction()
        state["committed"] += len(messages)

    def batch(timeout: float) -> list[Any]:
        return [m for m in consumer.consume(num_messages=spec.txn_records, timeout=timeout) if m.error() is None]

    try:
        first: list[Any] = []
        deadline = time.perf_counter() + EOS_JOIN_TIMEOUT_S
        while not first and time.perf_counter() < deadline:  # joining the group
            first = batch(1.0)
        if not first:
            raise RuntimeError(f"no record of {spec.source_topic} within {EOS_JOIN_TIMEOUT_S:.0f}s")
        with Section() as section:  # the clock starts at the first records, as the consume runs do
            messages = first
            while messages:
                transact(messages)
                if state["committed"] >= spec.count or time.perf_counter() - section.started >= spec.duration_s:
                    break
                messages = batch(EOS_END_TIMEOUT_S)
    finally:
        consumer.close()
    committed = state["committed"]
    return RunResult(records=committed, elapsed_s=section.elapsed, cpu_s=section.cpu, bytes=state["bytes"],
                     settings={"producer": producer_settings, "consumer": consumer_settings,
                               "api": f"consume(num_messages={spec.txn_records}) + transaction", **_version()},
                     note="" if committed >= spec.count else f"stopped at {committed}/{spec.count} (time cap)")
