"""Shared by the exactly-once pipeline tests: the input, the checking reader (confluent-kafka in
read_committed, the independent oracle), and the crash harness that SIGKILLs the pipeline process
(``examples/eos_pipeline.py``) at random moments and starts it again with the same transactional id.

A record is checked by its identity: every input record's key and transformed value must be in its
output partition once, at its input position. A count that happens to match proves nothing.
"""

from __future__ import annotations

import asyncio
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import confluent_kafka
from confluent_kafka import TopicPartition as PeerPartition
from transaction_helpers import peer_read_to_end

from kafkaev import Connection

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = ROOT / "examples" / "eos_pipeline.py"
DELIVERY_TIMEOUT_S = 120.0
PACED_CHUNK = 1000  # records between two checks of a paced fill's rate
SHOWN = 5  # records named in a failure message
# A pipeline process that does not say "ready" in this long is stuck, not slow.
START_TIMEOUT_S = 90.0
FINISH_TIMEOUT_S = 600.0
# Kill modes: at a random moment, right after a transaction began, right as one commits.
KILL_ANYTIME = "anytime"
KILL_MID_TRANSACTION = "mid-transaction"
KILL_MID_COMMIT = "mid-commit"
KILL_MODES = (KILL_ANYTIME, KILL_MID_TRANSACTION, KILL_MID_COMMIT)
MID_TRANSACTION_DELAY_S = (0.0, 0.03)  # after "begin": records are being produced
# After "committing": the outputs are flushed, and EndTxn goes out only once they and the offsets
# are acknowledged: a kill in between leaves the transaction's records in the log for the next
# run's init_transactions to abort. Where that window falls after the test reads the line moves
# with the machine's load (3 to 7 ms measured on a quiet one), so the delay is drawn from a wide
# range and the crash test kills until one lands in it (EXTRA_KILLS_MAX).
MID_COMMIT_DELAY_S = (0.001, 0.012)
# Mid-commit kills in every run with kills enough (the other modes once each).
MID_COMMIT_KILLS = 2
# A mid-commit kill freezes the process this long first: the broker reads and appends what it
# had written by then.
FROZEN_BEFORE_KILL_S = 0.05
# Mid-commit kills before the planned ones, until one leaves a transaction open, each after
# EXTRA_KILL_AFTER_RECORDS more records are committed (a run's first commit was never in the
# window). Measured on a quiet machine, about one kill in ten lands in it, around 7 ms after
# the test reads "committing"; 60 tries miss it about once in 500 runs.
EXTRA_KILLS_MAX = 60
EXTRA_KILL_AFTER_RECORDS = 1000
ANYTIME_DELAY_S = (0.0, 0.2)
OPEN_TRANSACTION_EVENTS = ("begin", "committing")


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    key: bytes | None
    value: bytes | None


def input_value(partition: int, seq: int) -> bytes:
    """A value no other input record has, readable in a failure message."""
    return b"record p%d #%06d " % (partition, seq) + b"x" * 40


def fill_input(bootstrap: str, topic: str, partitions: int, count: int, *, start: int = 0,
               records_per_s: float | None = None, until: Callable[[], bool] | None = None) -> int:
    """Up to ``count`` records from record ``start`` on, record i in partition i % partitions, with
    confluent-kafka (idempotent, so each partition holds them in produce order); at most
    ``records_per_s`` when given, so that records keep arriving for a while; fewer when ``until()``
    turns true (checked every PACED_CHUNK records). Returns how many it wrote."""
    failures: list[object] = []
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True,
        "queue.buffering.max.messages": 500_000,
        "on_delivery": lambda err, _msg: failures.append(err) if err is not None else None,
    })
    began = time.monotonic()
    written = 0
    for i in range(start, start + count):
        if written % PACED_CHUNK == 0 and written:
            if until is not None and until():
                break
            if records_per_s is not None:
                due = began + written / records_per_s
                while (ahead := due - time.monotonic()) > 0:
                    producer.poll(ahead)  # returns early when it serves a delivery report
        partition, seq = i % partitions, i // partitions
        while True:
            try:
                producer.produce(topic, key=b"k%d-%d" % (partition, seq), value=input_value(partition, seq),
                                 partition=partition)
                break
            except BufferError:
                producer.poll(0.01)
        written += 1
    remaining = producer.flush(DELIVERY_TIMEOUT_S)
    assert not remaining and not failures, f"filling {topic}: {remaining} undelivered, failures {failures[:3]}"
    return written


def read_partitions(bootstrap: str, topic: str, partitions: int, *, read_committed: bool = True) -> dict[int, list[Record]]:
    """Every record of each partition from its start to its end (the last stable offset when
    read_committed), in offset order, read by confluent-kafka without a group."""
    records: dict[int, list[Record]] = {p: [] for p in range(partitions)}
    isolation = "read_committed" if read_committed else "read_uncommitted"
    for msg in peer_read_to_end(bootstrap, topic, partitions, isolation):
        records[msg.partition()].append(Record(msg.offset(), msg.key(), msg.value()))
    return records


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset per partition (-1001, librdkafka's "none", where there is none)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        answer = consumer.committed([PeerPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in answer}


def open_transaction_in_log(bootstrap: str, topic: str) -> bool:
    """Does a partition of ``topic`` hold records of a transaction still open: its last stable
    offset (what a read_committed reader's end is) behind its end?"""
    ends = {}
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-open-{os.getpid()}",
                                             "isolation.level": isolation})
        try:
            partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
            ends[isolation] = [consumer.get_watermark_offsets(PeerPartition(topic, p), timeout=30)[1]
                               for p in sorted(partitions)]
        finally:
            consumer.close()
    return ends["read_committed"] != ends["read_uncommitted"]


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-ends-{os.getpid()}"})
    try:
        return {p: consumer.get_watermark_offsets(PeerPartition(topic, p), timeout=30)[1] for p in range(partitions)}
    finally:
        consumer.close()


def _shown(items: Iterable[object]) -> str:
    listed = list(items)
    more = f" and {len(listed) - SHOWN} more" if len(listed) > SHOWN else ""
    return ", ".join(repr(item) for item in listed[:SHOWN]) + more


def exactly_once_failures(inputs: dict[int, list[Record]], outputs: dict[int, list[Record]],
                          transform: Callable[[bytes | None], bytes | None]) -> list[str]:
    """What is wrong with ``outputs``: per partition, the (key, transformed value) of each input
    record, once, in input order. Empty when nothing is."""
    failures = []
    for partition in sorted(set(inputs) | set(outputs)):
        wanted = [(r.key, transform(r.value)) for r in inputs.get(partition, [])]
        got = [(r.key, r.value) for r in outputs.get(partition, [])]
        if got == wanted:
            continue
        counts = Counter(got)
        wanted_set = set(wanted)
        duplicated = [item for item, n in counts.items() if n > 1]
        missing = [item for item in wanted if item not in counts]
        foreign = [item for item in counts if item not in wanted_set]
        problems = []
        if duplicated:
            problems.append(f"{len(duplicated)} records more than once ({_shown(duplicated)})")
        if missing:
            problems.append(f"{len(missing)} records missing ({_shown(missing)})")
        if foreign:
            problems.append(f"{len(foreign)} records that are no input's output ({_shown(foreign)})")
        if not problems:
            first = next(i for i, (a, b) in enumerate(zip(got, wanted, strict=True)) if a != b)
            problems.append(f"out of input order from output index {first}: {got[first]!r}, expected {wanted[first]!r}")
        failures.append(f"partition {partition} ({len(got)} outputs for {len(wanted)} inputs): " + "; ".join(problems))
    return failures


def assert_exactly_once(inputs: dict[int, list[Record]], outputs: dict[int, list[Record]],
                        transform: Callable[[bytes | None], bytes | None]) -> None:
    failures = exactly_once_failures(inputs, outputs, transform)
    assert not failures, "the output is not each input's output exactly once, in order:\n" + "\n".join(failures)


# --- the pipeline process ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PipelineArgs:
    bootstrap: str
    input_topic: str
    output_topic: str
    group: str
    transactional_id: str
    max_records: int = 500

    def command(self, *, exit_at_end: bool = True) -> list[str]:
        return [sys.executable, str(PIPELINE), self.input_topic, self.output_topic, "--group", self.group,
                "--transactional-id", self.transactional_id, "--max-records", str(self.max_records),
                *(["--exit-at-end"] if exit_at_end else [])]


@dataclass(frozen=True, slots=True)
class Line:
    event: str
    records: int


class PipelineProcess:
    """One run of examples/eos_pipeline.py; its stdout events are read by a thread as they come."""

    def __init__(self, args: PipelineArgs, *, exit_at_end: bool = True) -> None:
        # This checkout's kafkaev, as if installed: the script's own folder is all Python adds to its path.
        env = {**os.environ, "KAFKAEV_BROKERS": args.bootstrap, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(args.command(exit_at_end=exit_at_end), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[Line | None] = queue.Queue()
        self.seen: list[Line] = []
        self.stderr = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for text in self.proc.stdout:
            event, _, records = text.strip().partition(" ")
            self.lines.put(Line(event, int(records) if records.isdigit() else 0))
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def next_line(self, timeout: float) -> Line | None:
        """The next event, None once stdout closed; AssertionError after ``timeout``."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the pipeline said nothing for {timeout:.0f}s; last events {self.seen[-5:]}"
                                 f"\n{self.stderr[-2000:]}") from None
        if line is not None:
            self.seen.append(line)
        return line

    def lines_so_far(self) -> list[Line]:
        """Every event read so far, those next_line() has not returned yet included."""
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return self.seen
            if line is not None:
                self.seen.append(line)

    def freeze(self, seconds: float) -> None:
        """SIGSTOP, then wait ``seconds`` with the process frozen (its sockets stay open)."""
        self.proc.send_signal(signal.SIGSTOP)
        time.sleep(seconds)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self._reader.join(30)

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the pipeline did not finish in {timeout:.0f}s; last events {self.seen[-5:]}") from None
        self._reader.join(30)
        self._stderr_reader.join(30)
        return code


@dataclass(slots=True)
class Kill:
    mode: str
    after_committed: int  # records the harness had seen committed, all runs together
    last_event: str  # the last event the process printed before it was killed
    # Its open transaction's records were in the output's log (the last stable offset behind
    # the end): the next run's init_transactions aborts them. Checked after mid-commit kills only.
    left_open: bool = False

    @property
    def mid_transaction(self) -> bool:
        return self.last_event in OPEN_TRANSACTION_EVENTS


@dataclass(slots=True)
class CrashRun:
    """What a crash-tested run did: the kills, and the records seen committed and aborted."""

    seed: int
    kills: list[Kill] = field(default_factory=list)
    committed: int = 0  # a lower bound: a commit cut short by a kill may have landed unreported
    aborted: int = 0
    runs: int = 0
    fatal_exits: list[str] = field(default_factory=list)  # why a run stopped on its own

    def describe(self) -> str:
        kills = ", ".join(f"{k.mode} at {k.after_committed} (after {k.last_event!r}{', left open' if k.left_open else ''})"
                          for k in self.kills)
        exits = f"; fatal exits: {self.fatal_exits}" if self.fatal_exits else ""
        return f"seed {self.seed}, {self.runs} runs, kills: {kills}{exits}"


class CrashHarness:
    """Runs the pipeline to the end of its input, SIGKILLing it ``kills`` times on the way at
    random points of the input (a seeded RNG, printed on failure), each time in one of the kill
    modes (all three used when ``kills`` >= 3), and starting it again with the same transactional id.
    ``during(committed)`` is called with each event, for a test's own faults (a broker killed).
    A run that stops on its own fails the test, unless ``fatal_exits_allowed`` says how many may.
    With ``leave_open``, mid-commit kills come first (up to EXTRA_KILLS_MAX) until one has left
    a transaction's records in the log: that window is a millisecond or two of a commit, so a kill
    from outside often lands before its records are written or after its EndTxn."""

    def __init__(self, args: PipelineArgs, total: int, kills: int, seed: int | None = None,
                 during: Callable[[int], object] | None = None, fatal_exits_allowed: int = 0,
                 leave_open: bool = False) -> None:
        self.args = args
        self.leave_open = leave_open
        self.fatal_exits_allowed = fatal_exits_allowed
        self.total = total
        self.seed = seed if seed is not None else random.SystemRandom().randrange(2**32)
        self.rng = random.Random(self.seed)
        # Every mode once and MID_COMMIT_KILLS mid-commit ones (when there are kills enough), the rest drawn.
        planned = [*KILL_MODES, *[KILL_MID_COMMIT] * (MID_COMMIT_KILLS - 1)][:kills]
        self.modes = planned + [self.rng.choice(KILL_MODES) for _ in range(kills - len(planned))]
        self.rng.shuffle(self.modes)
        # Kill points spread over the input, none at its very start or end.
        self.points = sorted(self.rng.sample(range(total // 20, total * 9 // 10), kills))
        self.during = during
        self.run = CrashRun(self.seed)

    def execute(self) -> CrashRun:
        if self.leave_open:
            self._kill_until_left_open()
        for point, mode in zip(self.points, self.modes, strict=True):
            process = self._run_until(self._start(), point)
            self._kill(process, mode)
        while True:
            process = self._start()
            while (line := process.next_line(FINISH_TIMEOUT_S)) is not None:
                self._note(line)
            code = process.wait(FINISH_TIMEOUT_S)
            if code == 0:
                return self.run
            self._exited(process, code)

    def _kill_until_left_open(self) -> None:
        for _attempt in range(EXTRA_KILLS_MAX):
            process = self._run_until(self._start(), self.run.committed + EXTRA_KILL_AFTER_RECORDS)
            self._kill(process, KILL_MID_COMMIT)
            if self.run.kills[-1].left_open:
                return

    def _start(self) -> PipelineProcess:
        self.run.runs += 1
        process = PipelineProcess(self.args)
        line = process.next_line(START_TIMEOUT_S)
        assert line is not None and line.event == "ready", (
            f"the pipeline did not start: {line} ({self.run.describe()})\n{process.stderr[-3000:]}")
        return process

    def _exited(self, process: PipelineProcess, code: int) -> None:
        """The pipeline stopped on its own (a fatal error): a test failure, unless the test allows
        that many, in which case it is started again, as a supervisor would."""
        reason = (process.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        assert code != 0 and len(self.run.fatal_exits) < self.fatal_exits_allowed, (
            f"the pipeline exited {code} ({self.run.describe()}):\n{process.stderr[-3000:]}")
        self.run.fatal_exits.append(reason)

    def _note(self, line: Line) -> None:
        if line.event == "committed":
            self.run.committed += line.records
        elif line.event == "aborted":
            self.run.aborted += line.records
        if self.during is not None:
            self.during(self.run.committed)

    def _run_until(self, process: PipelineProcess, point: int) -> PipelineProcess:
        """Let the pipeline run until ``point`` records are committed; the process then running."""
        while self.run.committed < point:
            line = process.next_line(FINISH_TIMEOUT_S)
            if line is None:
                self._exited(process, process.wait(FINISH_TIMEOUT_S))
                process = self._start()
            else:
                self._note(line)
        return process

    def _kill(self, process: PipelineProcess, mode: str) -> None:
        trigger = {KILL_MID_TRANSACTION: "begin", KILL_MID_COMMIT: "committing"}.get(mode)
        low, high = {KILL_MID_TRANSACTION: MID_TRANSACTION_DELAY_S, KILL_MID_COMMIT: MID_COMMIT_DELAY_S}.get(
            mode, ANYTIME_DELAY_S)
        while trigger is not None:
            line = process.next_line(FINISH_TIMEOUT_S)
            if line is None:
                self._exited(process, process.wait(FINISH_TIMEOUT_S))
                process = self._start()
                continue
            self._note(line)
            if line.event == trigger:
                break
        time.sleep(self.rng.uniform(low, high))
        if mode == KILL_MID_COMMIT:
            # Frozen first, so what it wrote reaches the broker over a live socket and nothing
            # more goes out (no EndTxn): a kill alone can beat the commit's requests or lose them.
            process.freeze(FROZEN_BEFORE_KILL_S)
        process.kill()
        # Events printed before the kill landed still count (a commit it reported did happen).
        while (line := process.lines.get(timeout=30)) is not None:
            process.seen.append(line)
            self._note(line)
        last = process.seen[-1].event if process.seen else ""
        left_open = mode == KILL_MID_COMMIT and open_transaction_in_log(self.args.bootstrap, self.args.output_topic)
        self.run.kills.append(Kill(mode, self.run.committed, last, left_open))


# --- the transaction coordinator ------------------------------------------------------------------
COORDINATOR_KEY_TYPE_TRANSACTION = 1
COORDINATOR_LOOKUP_TIMEOUT_S = 60.0
COORDINATOR_RETRY_S = 0.2


def transaction_coordinator(bootstrap: str, transactional_id: str) -> int:
    """The node id of ``transactional_id``'s transaction coordinator: FindCoordinator with key
    type 1, asked of the first broker of ``bootstrap`` that answers, until one is named."""
    async def ask(host: str, port: int) -> int | None:
        loop = asyncio.get_running_loop()
        conn = Connection(loop)
        connected: asyncio.Future[object] = loop.create_future()
        conn.connect(host, port, cb=lambda _conn, err: connected.done() or connected.set_result(err))
        try:
            if await connected is not None:
                return None
            answered: asyncio.Future[int | None] = loop.create_future()

            def answer(resp: object, err: object) -> None:
                coordinators = getattr(resp, "coordinators", None) or []
                found = [c.node_id for c in coordinators if c.error_code == 0 and c.node_id >= 0]
                if not answered.done():
                    answered.set_result(None if err is not None or not found else found[0])

            conn.find_coordinator(transactional_id, answer, key_type=COORDINATOR_KEY_TYPE_TRANSACTION)
            return await answered
        finally:
            conn.disconnect()

    async def lookup() -> int:
        deadline = time.monotonic() + COORDINATOR_LOOKUP_TIMEOUT_S
        while time.monotonic() < deadline:
            for address in bootstrap.split(","):
                host, _, port = address.rpartition(":")
                node = await ask(host, int(port))
                if node is not None:
                    return node
            await asyncio.sleep(COORDINATOR_RETRY_S)
        raise AssertionError(f"no broker of {bootstrap} named a transaction coordinator for {transactional_id!r}")

    return asyncio.run(lookup())
