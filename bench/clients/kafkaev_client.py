"""kafkaev scenarios, through the public ``kafkaev.Client`` API on uvloop."""

from __future__ import annotations

import asyncio
import itertools
import sys
import time
import uuid
from typing import Any

import kafkaev
from bench.measure import (
    HandledClock,
    Section,
    cpu_seconds,
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
    CONSUME_PER_MESSAGE,
    DEFAULTS_LINGER_MS,
    E2E_TICK_S,
    HANDLE_ASYNC,
    PRODUCE_BUFFER_BYTES,
    PRODUCE_BUFFER_RECORDS,
    RunResult,
    RunSpec,
)
from kafkaev.client import Client
from kafkaev.producer import BufferFullError
from kafkaev.runner import default_loop
from kafkaev.types import OFFSET_BEGINNING

CALLS_PER_TICK = 1000  # produce() calls between two turns of the loop
BATCH_SIZE = 1024 * 1024
# The README's high-throughput setting: a broker handles one request per connection at a time,
# so the run's partitions (3) go out over up to three connections to their broker.
PRODUCE_CONNECTIONS = 3
FLUSH_TIMEOUT_S = 20.0
PROBE_TIMEOUT_S = 15.0  # e2e: how long the first probe record may take to come back
STALL_MARGIN_S = 10.0  # consume: seconds past the time cap before a silent run counts as stalled
EOS_JOIN_TIMEOUT_S = 30.0  # eos: how long joining the group and the first fetch may take


class Deliveries:
    __slots__ = ("acked", "failed")

    def __init__(self) -> None:
        self.acked = 0
        self.failed = 0

    def __call__(self, meta: Any, err: Any) -> None:
        if err is None:
            self.acked += 1
        else:
            self.failed += 1


def _compression(spec: RunSpec) -> str | None:
    return None if spec.compression == "none" else spec.compression


def _throughput_settings(spec: RunSpec) -> dict[str, Any]:
    return {"acks": spec.acks, "linger_ms": spec.throughput_linger_ms, "batch_size": BATCH_SIZE, "buffer_memory": PRODUCE_BUFFER_BYTES,
            "buffer_records": PRODUCE_BUFFER_RECORDS,
            "produce_connections": PRODUCE_CONNECTIONS, "compression": _compression(spec)}


def _defaults_settings(spec: RunSpec) -> dict[str, Any]:
    """kafkaev as it comes (acks=-1, its batch size, buffer and connections), linger aligned."""
    return {"linger_ms": DEFAULTS_LINGER_MS}


def _latency_settings(spec: RunSpec) -> dict[str, Any]:
    settings: dict[str, Any] = {"acks": spec.acks, "linger_ms": 0, "compression": _compression(spec)}
    if spec.busy_poll_us:
        settings["busy_poll_us"] = spec.busy_poll_us
    return settings


def _stats_settings(spec: RunSpec) -> dict[str, Any]:
    """Statistics on: a snapshot every ``stats_interval_ms``, kept, as a user's stats_cb would."""
    if spec.stats_interval_ms == 0:
        return {}
    snapshots: list[Any] = []
    return {"stats_interval_ms": spec.stats_interval_ms, "stats_cb": snapshots.append}


def _version() -> dict[str, Any]:
    return {"kafkaev": kafkaev.__version__}


def _connect(client: Client) -> None:
    loop = client.loop
    future = loop.create_future()
    client.connect(lambda md, err: future.done() or (future.set_exception(err) if err else future.set_result(md)))
    loop.run_until_complete(future)


def _flush(client: Client, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
    """Flush, bounded: a flush that never answers is a failed run with its reason, not a hang."""
    loop = client.loop
    future = loop.create_future()
    client.flush(lambda err: future.done() or future.set_result(err))
    try:
        err = loop.run_until_complete(asyncio.wait_for(future, timeout_s))
    except asyncio.TimeoutError:
        raise RuntimeError(f"flush did not finish within {timeout_s:.0f}s ({client.pending} batches pending)") from None
    if err is not None:
        raise err


def _close(client: Client) -> None:
    loop = client.loop
    future = loop.create_future()
    client.close(lambda err: future.done() or future.set_result(err))
    loop.run_until_complete(future)


def _produce_for(client: Client, topic: str, value: bytes, seconds: float, cb: Deliveries,
                 keys: list[bytes] | None = None) -> int:
    """Produce from inside the loop in chunks, so the loop sends between chunks; with ``keys``,
    each record carries the next one in turn."""
    loop = client.loop
    produce = client.produce
    state = {"calls": 0}
    deadline = time.perf_counter() + seconds
    next_key = itertools.cycle(keys).__next__ if keys else None

    def pump() -> None:
        calls = state["calls"]
        full = False
        try:
            if next_key is None:
                for _ in range(CALLS_PER_TICK):
                    produce(topic, None, value, cb)
                    calls += 1
            else:
                for _ in range(CALLS_PER_TICK):
                    produce(topic, next_key(), value, cb)
                    calls += 1
        except BufferFullError:
            full = True
        state["calls"] = calls
        if time.perf_counter() >= deadline:
            loop.stop()
        elif full:
            # Let acknowledgements free the buffer, as the confluent-kafka run does with
            # a short poll, instead of spinning on BufferFullError.
            loop.call_later(BUFFER_FULL_WAIT_S, pump)
        else:
            loop.call_soon(pump)

    loop.call_soon(pump)
    loop.run_forever()
    return state["calls"]


def produce(spec: RunSpec) -> RunResult:
    settings = _defaults_settings(spec) if spec.defaults else _throughput_settings(spec)
    client = Client(spec.bootstrap, **settings, **_stats_settings(spec))
    _connect(client)
    deliveries = Deliveries()
    value = make_value(spec.value_size)
    keys = record_keys(spec)
    warm = _produce_for(client, spec.topic, value, spec.warmup_s, deliveries, keys)
    _flush(client)
    acked_before, failed_before = deliveries.acked, deliveries.failed
    with Section() as section:
        calls = _produce_for(client, spec.topic, value, spec.duration_s, deliveries, keys)
        call_elapsed = time.perf_counter() - section.started
        _flush(client)
    _close(client)
    acked = deliveries.acked - acked_before
    return RunResult(records=acked, failed=deliveries.failed - failed_before, elapsed_s=section.elapsed,
                     call_elapsed_s=call_elapsed, calls=calls, warmup_records=warm, cpu_s=section.cpu,
                     bytes=acked * spec.value_size, settings={**settings, **_version()})


def roundtrip(spec: RunSpec) -> RunResult:
    settings = _latency_settings(spec)
    client = Client(spec.bootstrap, **settings)
    _connect(client)
    loop = client.loop
    value = make_value(spec.value_size)
    warmup = max(100, spec.count // 10)
    latencies: list[float] = []
    state = {"i": 0, "started": 0, "failed": 0}

    def send() -> None:
        state["started"] = time.perf_counter_ns()
        client.produce(spec.topic, None, value, acked)

    def acked(meta: Any, err: Any) -> None:
        if err is not None:
            state["failed"] += 1
        elif state["i"] >= warmup:
            latencies.append((time.perf_counter_ns() - state["started"]) / 1000.0)
        state["i"] += 1
        if state["i"] < warmup + spec.count:
            send()
        else:
            loop.stop()

    with Section() as section:
        loop.call_soon(send)
        loop.run_forever()
    _close(client)
    return RunResult(records=len(latencies), failed=state["failed"], elapsed_s=section.elapsed, cpu_s=section.cpu,
                     latency_us=summarize_latencies(latencies), histogram=histogram(latencies),
                     settings={**settings, "api": "produce() from the previous ack's callback", **_version()})


def e2e(spec: RunSpec) -> RunResult:
    samples: list[tuple[int, float]] = []

    def on_message(msg: Any) -> None:
        now = time.perf_counter_ns()
        samples.append((now, latency_us_of(msg.value, now)))

    settings = {**_latency_settings(spec), "fetch_max_wait_ms": 100}
    client = Client(spec.bootstrap, on_message=on_message, **settings)
    _connect(client)
    loop = client.loop
    client.assign([(spec.topic, p, OFFSET_BEGINNING) for p in range(spec.partitions)])
    client.start()
    value = make_value(spec.value_size)
    deliveries = Deliveries()
    deadline = time.perf_counter() + PROBE_TIMEOUT_S
    while not samples:  # the consumer is fetching: start the clock
        if time.perf_counter() > deadline:
            raise RuntimeError(f"no probe record came back within {PROBE_TIMEOUT_S:.0f}s "
                               f"({deliveries.acked} acked, {deliveries.failed} failed)")
        client.produce(spec.topic, None, stamp(value), deliveries)
        _flush(client)
        loop.run_until_complete(_sleep(0.05))
    samples.clear()
    total = int(spec.rate * (spec.warmup_s + spec.duration_s))
    state = {"sent": 0}
    with Section() as section:

        failure: list[BaseException] = []

        def tick() -> None:
            due = min(total, int((time.perf_counter() - section.started) * spec.rate) + 1)
            try:
                while state["sent"] < due:
                    client.produce(spec.topic, None, stamp(value), deliveries)
                    state["sent"] += 1
            except BufferFullError:
                pass  # as its message says: let the loop run, produce again on the next tick
            except Exception as exc:  # noqa: BLE001 - ends the run with its reason instead of hanging it
                failure.append(exc)
                loop.stop()
                return
            if state["sent"] < total:
                loop.call_later(E2E_TICK_S, tick)
            else:
                loop.stop()

        loop.call_soon(tick)
        loop.run_forever()
        if failure:
            raise RuntimeError(f"produce() raised after {state['sent']} records: {failure[0]!r}")
        _flush(client)
        end = time.perf_counter() + 30
        while len(samples) < total and time.perf_counter() < end:
            loop.run_until_complete(_sleep(0.01))
    client.stop()
    _close(client)
    return e2e_result(spec, section, samples, total, deliveries.failed,
                      {**settings, "api": "on_message", **_version()})


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


class _ConsumeCounter:
    """Counts delivered records the way the peers' loops do: the clock starts at the first
    delivery (connection set-up and the first fetch's round trip are not counted, nor are the
    records of that first delivery), and stops once ``count`` records were delivered in all or
    ``duration_s`` after the first delivery, whichever comes first."""

    __slots__ = ("spec", "loop", "delivered", "bytes", "checkpoint", "first_delivery", "started", "cpu_started",
                 "records", "measured_bytes", "elapsed", "cpu", "done", "cap")

    def __init__(self, spec: RunSpec, loop: Any) -> None:
        self.spec = spec
        self.loop = loop
        self.delivered = 0  # every record, the first delivery's included
        self.bytes = 0  # of the records after the first delivery
        # The delivered count at which the callbacks look up from counting: the first
        # delivery, then the end of the run, then never.
        self.checkpoint = 1
        self.first_delivery = 0
        self.started = 0.0
        self.cpu_started = 0.0
        self.records = 0  # the measured ones, set when the clock stops
        self.measured_bytes = 0
        self.elapsed = 0.0
        self.cpu = 0.0
        self.done = False
        self.cap: Any = None

    def _at_checkpoint(self) -> None:
        if not self.started:
            self.started = time.perf_counter()
            self.cpu_started = cpu_seconds()
            self.first_delivery = self.delivered
            self.bytes = 0
            self.checkpoint = self.spec.count
            self.cap = self.loop.call_later(self.spec.duration_s, self.finish)
        else:
            self.finish()

    def finish(self) -> None:
        if self.done:
            return
        self.elapsed = time.perf_counter() - self.started
        self.cpu = cpu_seconds() - self.cpu_started
        self.records = self.delivered - self.first_delivery
        self.measured_bytes = self.bytes
        self.done = True
        self.checkpoint = sys.maxsize  # records still being handed over until the loop stops
        self.cap.cancel()
        self.loop.stop()

    def on_message(self, msg: Any) -> None:
        # As little per record as the peers' loops do (they add each value's length, and count
        # per batch): one length, one count, one comparison.
        self.bytes += len(msg.value)
        self.delivered += 1
        if self.delivered >= self.checkpoint:
            self._at_checkpoint()

    def on_batch(self, messages: list[Any]) -> None:
        size = 0
        for msg in messages:
            size += len(msg.value)
        self.bytes += size
        self.delivered += len(messages)
        if self.delivered >= self.checkpoint:
            self._at_checkpoint()


def consume(spec: RunSpec) -> RunResult:
    per_message = spec.mode == CONSUME_PER_MESSAGE
    settings = {"fetch_max_bytes": 52_428_800, "max_partition_fetch_bytes": 1_048_576}
    loop = default_loop()
    counter = _ConsumeCounter(spec, loop)
    handler = {"on_message": counter.on_message} if per_message else {"on_batch": counter.on_batch}
    client = Client(spec.bootstrap, loop=loop, **handler, **settings, **_stats_settings(spec))
    _connect(client)
    client.assign([(spec.topic, p, OFFSET_BEGINNING) for p in range(spec.partitions)])
    stall = loop.call_later(spec.duration_s + STALL_MARGIN_S, loop.stop)  # a run that never delivers
    client.start()
    loop.run_forever()
    stall.cancel()
    client.stop()
    _close(client)
    if not counter.done:
        raise RuntimeError(f"kafkaev delivered {counter.delivered} records and then stalled")
    return RunResult(records=counter.records, elapsed_s=counter.elapsed, cpu_s=counter.cpu,
                     bytes=counter.measured_bytes,
                     settings={**settings, "api": next(iter(handler)), **_version()},
                     note="" if counter.delivered >= spec.count else
                     f"stopped at {counter.delivered}/{spec.count} (time cap)")


def handle(spec: RunSpec) -> RunResult:
    """kafkaev.Runner with a no-op handler (sync or async): it commits what was handled after
    each loop turn's batch by itself."""
    loop = default_loop()
    clock = HandledClock(spec.count, spec.duration_s)
    if spec.mode == HANDLE_ASYNC:
        async def handler(_msg: Any) -> None:
            clock.handled()
            if clock.done:
                loop.stop()
    else:
        def handler(_msg: Any) -> None:
            clock.handled()
            if clock.done:
                loop.stop()
    settings = {"fetch_max_bytes": 52_428_800, "max_partition_fetch_bytes": 1_048_576}
    runner = kafkaev.Runner(spec.bootstrap, loop=loop, **settings)
    runner.consumer("bench", [spec.topic], handler, group_id=f"bench-{spec.topic}-{uuid.uuid4().hex[:8]}",
                    concurrency=spec.partitions)
    runner.start()
    stall = loop.call_later(spec.duration_s + STALL_MARGIN_S, loop.stop)  # a run that never handles
    cap = loop.call_later(spec.duration_s + 1, lambda: (clock.finish(), loop.stop()) if clock.over_time() else None)
    loop.run_forever()
    stall.cancel()
    cap.cancel()
    clock.finish()
    stopped: list[object] = []
    runner.stop(lambda err: (stopped.append(err), loop.stop()))
    loop.run_forever()
    if not clock.done:
        raise RuntimeError(f"kafkaev.Runner handled {clock.total} records and then stalled")
    return RunResult(records=clock.records, elapsed_s=clock.elapsed, cpu_s=clock.cpu,
                     bytes=clock.records * spec.value_size,
                     settings={**settings, "api": f"Runner.consumer({spec.mode} handler, "
                                                  f"concurrency={spec.partitions})", **_version()},
                     note=clock.note())


def rebalance(spec: RunSpec) -> RunResult:
    """A group on one loop: four members, a fifth joining and leaving (bench/rebalance.py)."""
    tracker = PauseTracker(spec.partitions)
    group = f"bench-{spec.topic}"
    protocol = spec.group_protocol
    options: dict[str, Any] = {"group_id": group, "group_protocol": protocol, "auto_offset_reset": "latest"}
    if protocol == "classic":
        options.update({"assignors": (spec.assignor,), "session_timeout_ms": 10000, "heartbeat_interval_ms": 500})

    def member(index: int) -> Client:
        def on_batch(messages: list[Any]) -> None:
            tracker.delivered(messages[0].partition, index)

        client = Client(spec.bootstrap, on_batch=on_batch, fetch_max_wait_ms=100)
        _connect(client)
        client.subscribe([spec.topic], **options)
        return client

    producer = SteadyProducer(spec)
    loop = default_loop()

    def wait(seconds: float) -> None:
        loop.run_until_complete(_sleep(seconds))

    members = [member(index) for index in range(REBALANCE_MEMBERS)]
    try:
        run_timeline(spec, tracker, wait, lambda: members.append(member(REBALANCE_MEMBERS)),
                     lambda: _close(members.pop()))
    finally:
        producer.close()
        for client in members:
            _close(client)
    return tracker.result({**options, **_version()})


def _transactional_settings(spec: RunSpec) -> dict[str, Any]:
    """The throughput settings, transactional (which implies idempotence and acks=-1)."""
    settings = {key: value for key, value in _throughput_settings(spec).items() if key != "acks"}
    return {**settings, "transactional_id": f"bench-{spec.topic}"}


def _await(client: Client, start: Any, what: str) -> None:
    """``start(cb)``, then turn the loop until ``cb(err)``; raise ``err``."""
    future = client.loop.create_future()
    start(lambda err: future.done() or future.set_result(err))
    err = client.loop.run_until_complete(asyncio.wait_for(future, FLUSH_TIMEOUT_S))
    if err is not None:
        raise RuntimeError(f"{what}: {err}")


def _transactions_for(client: Client, topic: str, value: bytes, seconds: float, per_transaction: int,
                      cb: Deliveries) -> int:
    """Whole transactions of ``per_transaction`` records until ``seconds`` have passed, produced from
    inside the loop in chunks (as ``_produce_for``); records committed."""
    loop = client.loop
    produce = client.produce
    state = {"left": 0, "committed": 0}
    failure: list[BaseException] = []
    deadline = time.perf_counter() + seconds

    def begin() -> None:
        client.begin_transaction()
        state["left"] = per_transaction
        pump()

    def pump() -> None:
        left = state["left"]
        full = False
        try:
            for _ in range(min(CALLS_PER_TICK, left)):
                produce(topic, None, value, cb)
                left -= 1
        except BufferFullError:
            full = True
        state["left"] = left
        if not left:
            client.commit_transaction(committed)
        elif full:
            loop.call_later(BUFFER_FULL_WAIT_S, pump)
        else:
            loop.call_soon(pump)

    def committed(err: Any) -> None:
        if err is not None:
            failure.append(err)
            loop.stop()
            return
        state["committed"] += per_transaction
        if time.perf_counter() >= deadline:
            loop.stop()
        else:
            begin()

    loop.call_soon(begin)
    loop.run_forever()
    if failure:
        raise RuntimeError(f"commit_transaction failed after {state['committed']} records: {failure[0]}")
    return state["committed"]


def txn_produce(spec: RunSpec) -> RunResult:
    settings = _transactional_settings(spec)
    client = Client(spec.bootstrap, **settings)
    _await(client, client.init_transactions, "init_transactions")
    deliveries = Deliveries()
    value = make_value(spec.value_size)
    warm = _transactions_for(client, spec.topic, value, spec.warmup_s, spec.txn_records, deliveries)
    failed_before = deliveries.failed
    with Section() as section:
        committed = _transactions_for(client, spec.topic, value, spec.duration_s, spec.txn_records, deliveries)
    _close(client)
    return RunResult(records=committed, failed=deliveries.failed - failed_before, elapsed_s=section.elapsed,
                     cpu_s=section.cpu, warmup_records=warm, bytes=committed * spec.value_size,
                     settings={**settings, "api": "begin/produce/commit_transaction", **_version()})


def eos(spec: RunSpec) -> RunResult:
    """examples/eos_pipeline.py's pipeline (the README's recipe), stopped once ``count`` input
    records are committed or at the time cap; the clock runs from its first transaction to its last
    commit."""
    from examples.eos_pipeline import EosPipeline, Event, PipelineSettings

    loop = default_loop()
    settings = PipelineSettings(spec.source_topic, spec.topic, group_id=f"bench-eos-{spec.topic}",
                                transactional_id=f"bench-{spec.topic}", max_records=spec.txn_records)
    client_settings = {key: value for key, value in _transactional_settings(spec).items() if key != "transactional_id"}
    client_settings.update(fetch_max_bytes=52_428_800, max_partition_fetch_bytes=1_048_576)
    section = Section()
    outcome: list[Any] = []
    stall = loop.call_later(EOS_JOIN_TIMEOUT_S + spec.duration_s, lambda: pipeline.stop())

    def on_event(event: Event, _records: int) -> None:
        if event is Event.BEGIN and not section.started:
            section.start()
            stall.cancel()
            loop.call_later(spec.duration_s, pipeline.stop)  # the time cap
        elif (event is Event.COMMITTED and (pipeline.stopping or pipeline.committed_records >= spec.count)
              or event is Event.DONE) and not section.elapsed and section.started:
            section.stop()
            pipeline.stop()

    def on_done(err: Any) -> None:
        outcome.append(err)
        loop.stop()

    pipeline = EosPipeline(settings, brokers=spec.bootstrap, on_event=on_event, on_done=on_done, loop=loop,
                           **client_settings)
    pipeline.start()
    loop.run_forever()
    if outcome and outcome[0] is not None:
        raise RuntimeError(f"the pipeline stopped: {outcome[0]}")
    if not section.started:
        raise RuntimeError(f"no record of {spec.source_topic} within {EOS_JOIN_TIMEOUT_S:.0f}s")
    committed = pipeline.committed_records
    return RunResult(records=committed, elapsed_s=section.elapsed, cpu_s=section.cpu,
                     bytes=committed * spec.value_size,
                     settings={**client_settings, "api": "examples/eos_pipeline.py (on_batch)", **_version()},
                     note="" if committed >= spec.count else f"stopped at {committed}/{spec.count} (time cap)")
