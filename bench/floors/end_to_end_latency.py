"""The floor for end-to-end latency: a raw-socket producer and consumer that do no work per record.

It offers the records at the scenario's rate with the clients' own pacing (every ``E2E_TICK_S``,
the records due since the start go out, here as one pre-encoded Produce v7 request), reads the
acknowledgements on a second thread, and fetches them back on a third thread and a second
socket: Fetch v4 from the next offset, parked up to the clients' ``FETCH_MAX_WAIT_MS`` for a byte.
A record's latency runs from its request's write to the read of the Fetch answer that holds it.

Records carry no send time: the topic is fresh and this producer its only writer, so the n-th
record sent has offset n, and a fetched batch's offsets name the request that sent it. Every
batch, one for each possible count per request, is encoded before the clock starts.

What the clients pay beyond it is their own: building and encoding the records, the loop or the
threads between the socket and the callback, and decoding; the broker's append and the parked
Fetch's wake-up are in the floor too.
"""

from __future__ import annotations

import bisect
import math
import socket
import threading
import time

from bench.floors.wire import (
    FETCH_VERSION,
    PRODUCE_VERSION,
    connect,
    fetch_answer,
    fetch_request,
    produce_answer,
    produce_request,
    read_frame,
    record_batches,
)
from bench.measure import Section, e2e_result, make_value
from bench.spec import E2E_TICK_S, RunResult, RunSpec
from kafkaev.errors import (
    LEADER_NOT_AVAILABLE,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_TOPIC_OR_PARTITION,
    error_name,
)

PARTITION = 0
FETCH_MAX_WAIT_MS = 100  # as the clients' runs (kafkaev's fetch_max_wait_ms, confluent's fetch.wait.max.ms)
FETCH_MAX_BYTES = 1_048_576
# Requests carry at most this many ticks' worth of records (more go as several requests): enough
# for a late tick, and few enough batches to encode up front in plain Python.
TICKS_PER_REQUEST = 4
LEAST_PER_REQUEST = 16
PROBE_EVERY_S = 0.05  # as the clients' runs: one record this often until the consumer sees one
PROBE_TIMEOUT_S = 30.0
DRAIN_TIMEOUT_S = 30.0  # after the last record, how long the consumer may take to see the rest
JOIN_TIMEOUT_S = 5.0
# A topic just created may answer these until its leader is in place.
NOT_READY = frozenset({LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION})


class SentLog:
    """When each request went out, by the offset of its first record: written by the producer,
    read by the consumer (appends and reads of a list are atomic under the GIL)."""

    __slots__ = ("first_offsets", "sent_ns", "records")

    def __init__(self) -> None:
        self.first_offsets: list[int] = []
        self.sent_ns: list[int] = []
        self.records = 0  # offsets handed out so far

    def sent(self, count: int, now_ns: int) -> None:
        self.first_offsets.append(self.records)
        self.sent_ns.append(now_ns)
        self.records += count

    def sent_at(self, offset: int) -> int:
        return self.sent_ns[bisect.bisect_right(self.first_offsets, offset) - 1]


class EndToEndFloor:
    """One run: the producer is the caller's thread; ``acks`` and ``fetcher`` run beside it."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        most = max(LEAST_PER_REQUEST, math.ceil(spec.rate * E2E_TICK_S * TICKS_PER_REQUEST))
        self.batches = record_batches(make_value(spec.value_size), int(time.time() * 1000), most)
        self.log = SentLog()
        self.samples: list[tuple[int, float]] = []
        self.failure: list[str] = []
        self.stopping = threading.Event()
        self.producer_sock = connect(spec.bootstrap)
        self.consumer_sock = connect(spec.bootstrap)
        self.correlation_id = 0
        self.requests = 0
        self.answered = 0  # by the acks thread
        self.fetched_to = 0  # by the fetcher: the offset its next Fetch asks for
        self.acks = threading.Thread(target=self._read_acks, name="floor-acks", daemon=True)
        self.fetcher = threading.Thread(target=self._fetch, name="floor-fetcher", daemon=True)

    def wait_for_leader(self, timeout_s: float) -> None:
        """Write one record, answered before anything else is sent: a refused write takes no
        offset, which would shift every later record's."""
        reader = self.producer_sock.makefile("rb")
        deadline = time.perf_counter() + timeout_s
        try:
            while True:
                self.producer_sock.sendall(produce_request(self.correlation_id, self.spec.topic, PARTITION,
                                                           self.batches[0], self.spec.acks))
                self.correlation_id += 1
                sent_ns = time.perf_counter_ns()
                error_code = produce_answer(read_frame(reader))[2]
                if error_code == NONE:
                    self.log.sent(1, sent_ns)
                    return
                if error_code not in NOT_READY or time.perf_counter() > deadline:
                    raise RuntimeError(f"the end-to-end floor's first write answered {error_name(error_code)}")
                time.sleep(PROBE_EVERY_S)
        finally:
            reader.close()

    def send(self, count: int) -> None:
        """``count`` records, in requests of at most the largest batch encoded."""
        most = len(self.batches)
        while count > 0:
            take = min(count, most)
            frame = produce_request(self.correlation_id, self.spec.topic, PARTITION, self.batches[take - 1],
                                    self.spec.acks)
            self.correlation_id += 1
            self.requests += 1
            self.log.sent(take, time.perf_counter_ns())
            self.producer_sock.sendall(frame)
            count -= take

    def _read_acks(self) -> None:
        reader = self.producer_sock.makefile("rb")
        try:
            while not self.stopping.is_set():
                error_code = produce_answer(read_frame(reader))[2]
                self.answered += 1
                if error_code != NONE:
                    self.failure.append(f"Produce answered {error_name(error_code)}")
                    return
        except OSError as exc:  # the socket closed under the read: at the end, or a real failure
            if not self.stopping.is_set():
                self.failure.append(f"Produce connection: {exc!r}")
        finally:
            reader.close()

    def _fetch(self) -> None:
        reader = self.consumer_sock.makefile("rb")
        offset = 0
        correlation_id = 0
        try:
            while not self.stopping.is_set():
                self.consumer_sock.sendall(fetch_request(correlation_id, self.spec.topic, PARTITION, offset,
                                                         FETCH_MAX_WAIT_MS, FETCH_MAX_BYTES))
                correlation_id += 1
                frame = read_frame(reader)
                now_ns = time.perf_counter_ns()
                error_code, batches = fetch_answer(frame)
                if error_code != NONE:
                    self.failure.append(f"Fetch answered {error_name(error_code)}")
                    return
                for base_offset, count in batches:
                    latency_us = (now_ns - self.log.sent_at(base_offset)) / 1000.0
                    self.samples.extend([(now_ns, latency_us)] * count)
                    offset = self.fetched_to = base_offset + count
        except OSError as exc:
            if not self.stopping.is_set():
                self.failure.append(f"Fetch connection: {exc!r}")
        finally:
            reader.close()

    def check(self) -> None:
        if self.failure:
            raise RuntimeError(f"the end-to-end floor failed: {self.failure[0]}")

    def close(self) -> None:
        """Stop both readers: each is blocked in a read (the next ack, a parked Fetch), which the
        shutdown ends."""
        self.stopping.set()
        for sock in (self.producer_sock, self.consumer_sock):
            sock.shutdown(socket.SHUT_RDWR)
        self.acks.join(JOIN_TIMEOUT_S)
        self.fetcher.join(JOIN_TIMEOUT_S)
        for sock in (self.producer_sock, self.consumer_sock):
            sock.close()


def e2e(spec: RunSpec) -> RunResult:
    if spec.acks == 0:
        raise ValueError("the end-to-end floor needs 'acks' of 1 or -1: it checks every write's answer")
    floor = EndToEndFloor(spec)
    floor.wait_for_leader(PROBE_TIMEOUT_S)
    floor.acks.start()
    floor.fetcher.start()
    try:
        deadline = time.perf_counter() + PROBE_TIMEOUT_S
        while not floor.samples:  # the consumer is fetching: start the clock
            floor.check()
            if time.perf_counter() > deadline:
                raise RuntimeError(f"no probe record came back within {PROBE_TIMEOUT_S:.0f}s")
            floor.send(1)
            time.sleep(PROBE_EVERY_S)
        # Every probe back before the clock starts: one fetched later would count as a record.
        while floor.fetched_to < floor.log.records:
            floor.check()
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the probe records did not all come back within {PROBE_TIMEOUT_S:.0f}s")
            time.sleep(PROBE_EVERY_S)
        floor.samples.clear()
        total = int(spec.rate * (spec.warmup_s + spec.duration_s))
        with Section() as section:
            sent = 0
            while sent < total:
                due = min(total, int((time.perf_counter() - section.started) * spec.rate) + 1)
                floor.send(due - sent)
                sent = due
                time.sleep(E2E_TICK_S)
            deadline = time.perf_counter() + DRAIN_TIMEOUT_S
            while ((len(floor.samples) < total or floor.answered < floor.requests)
                   and time.perf_counter() < deadline and not floor.failure):
                time.sleep(FETCH_MAX_WAIT_MS / 1000.0)
        floor.check()
        if floor.answered < floor.requests:
            raise RuntimeError(f"{floor.requests - floor.answered} of {floor.requests} Produce requests "
                               f"unanswered after {DRAIN_TIMEOUT_S:.0f}s")
    finally:
        floor.close()
    return e2e_result(spec, section, floor.samples, total, 0, {
        "requests": f"Produce v{PRODUCE_VERSION} (pre-encoded batches, one per tick) and Fetch v{FETCH_VERSION}, "
                    "TCP_NODELAY",
        "acks": spec.acks, "fetch_max_wait_ms": FETCH_MAX_WAIT_MS})
