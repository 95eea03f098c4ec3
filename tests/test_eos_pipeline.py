"""The exactly-once pipeline (examples/eos_pipeline.py), crash-tested on the real brokers.

A kafkaev group consumer reads a 6-partition input topic, transforms each record and writes it to an
output topic in transactions of at most 500 input records, committing the input offsets with
``send_offsets_to_transaction``. Its process is SIGKILLed at random moments (right after a
transaction began and right as one commits included) and started again with the same transactional
id; two instances share the input through rebalances; on the three-node cluster the transaction coordinator's broker is also killed once and paused
once. confluent-kafka in read_committed must then read every input record's output exactly once, in
input order per partition, and the group's committed offsets must be the input's end.

``KAFKAEV_EOS_RECORDS`` sets the input size (200,000 by default) for a quicker run while iterating.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from eos_helpers import (
    FINISH_TIMEOUT_S,
    START_TIMEOUT_S,
    CrashHarness,
    PipelineArgs,
    PipelineProcess,
    Record,
    assert_exactly_once,
    committed_offsets,
    end_offsets,
    exactly_once_failures,
    fill_input,
    read_partitions,
    transaction_coordinator,
)

from examples.eos_pipeline import Backlog, transform
from kafkaev import Message, TopicPartition
from kafkaev.testing.cluster import LocalCluster

RECORDS = int(os.environ.get("KAFKAEV_EOS_RECORDS", "200000"))
PARTITIONS = 6
MAX_RECORDS = 500
PROCESS_KILLS = 6
# Enough input that the first instance is still reading when the second has started and joined
# (a process start, init_transactions and a rebalance): at 60,000 a loaded machine once let the
# first read everything before the second was in the group.
REBALANCE_RECORDS = 120_000
REBALANCE_ARRIVAL_PER_S = 10_000  # the second half's pace: records arrive through the join
REBALANCE_ARRIVAL_MAX = 600_000  # a minute of arrivals: the second must have committed by then
COMMITTED_POLL_S = 0.5
# The three-node run: the coordinator's broker is paused at a quarter of the input and killed at
# half of it, each for this long, while the pipeline (also killed twice) goes on.
CLUSTER_PROCESS_KILLS = 2
BROKER_PAUSED_S = 6.0
BROKER_DOWN_S = 3.0
BROKER_RESTART_TIMEOUT_S = 180.0
# A coordinator paused after it wrote PrepareCommit (transactions v2: the epoch bumped) but before
# it answered: the new coordinator answers the retried EndTxn(commit) PRODUCER_FENCED (about one
# run in seven; DESIGN.md, Transactions), a fatal error as in the Java client. The commit did land; the
# pipeline exits and is started again, as its supervisor would. The output is checked as ever.
COORDINATOR_FENCE_EXITS_ALLOWED = 1
# 200,000 records through a Python pipeline on 2 shared cores, seven process starts included.
CRASH_TEST_TIMEOUT_S = 1800


def _args(bootstrap: str, input_topic: str, output_topic: str, instance: str = "txn") -> PipelineArgs:
    return PipelineArgs(bootstrap, input_topic, output_topic, group=f"{input_topic}-group",
                        transactional_id=f"{input_topic}-{instance}", max_records=MAX_RECORDS)


def _check(bootstrap: str, args: PipelineArgs, described: str, records: int = RECORDS) -> None:
    inputs = read_partitions(bootstrap, args.input_topic, PARTITIONS, read_committed=False)
    assert sum(len(partition) for partition in inputs.values()) == records
    outputs = read_partitions(bootstrap, args.output_topic, PARTITIONS)
    failures = exactly_once_failures(inputs, outputs, transform)
    assert not failures, f"{described}\n" + "\n".join(failures)
    ends = end_offsets(bootstrap, args.input_topic, PARTITIONS)
    assert committed_offsets(bootstrap, args.group, args.input_topic, PARTITIONS) == ends, described


def test_the_checker_fails_on_a_duplicate_a_loss_and_a_reorder():
    def recs(*values: bytes) -> list[Record]:
        return [Record(i, b"k" + v.lower(), v) for i, v in enumerate(values)]  # key: the input's

    inputs = {0: recs(b"a", b"b", b"c"), 1: recs(b"d")}
    good = {0: recs(b"A", b"B", b"C"), 1: recs(b"D")}
    assert exactly_once_failures(inputs, good, transform) == []
    assert_exactly_once(inputs, good, transform)
    duplicate = {0: recs(b"A", b"B", b"B", b"C"), 1: recs(b"D")}
    [failure] = exactly_once_failures(inputs, duplicate, transform)
    assert "partition 0" in failure and "1 records more than once" in failure
    lost = {0: recs(b"A", b"C"), 1: recs(b"D")}
    assert "1 records missing" in exactly_once_failures(inputs, lost, transform)[0]
    # the same count as the input, one lost and one twice: counts alone would pass it
    swapped = {0: recs(b"A", b"A", b"C"), 1: recs(b"D")}
    [failure] = exactly_once_failures(inputs, swapped, transform)
    assert "more than once" in failure and "missing" in failure
    reordered = {0: recs(b"B", b"A", b"C"), 1: recs(b"D")}
    assert "out of input order from output index 0" in exactly_once_failures(inputs, reordered, transform)[0]
    untransformed = {0: recs(b"a", b"B", b"C"), 1: recs(b"D")}
    assert "no input's output" in exactly_once_failures(inputs, untransformed, transform)[0]
    moved = {0: recs(b"A", b"B", b"C"), 1: []}
    assert "partition 1" in exactly_once_failures(inputs, moved, transform)[0]
    with pytest.raises(AssertionError, match="exactly once"):
        assert_exactly_once(inputs, lost, transform)


def test_the_backlog_hands_out_each_record_once_in_order_across_transactions():
    def delivered(partition: int, count: int) -> list[Message]:
        return [Message("in", partition, offset, None, b"v") for offset in range(count)]

    backlog = Backlog()
    backlog.append(delivered(0, 7))
    backlog.append(delivered(1, 2))
    assert backlog.records() == 9
    taken: list[tuple[int, list[int]]] = []
    while backlog:
        records = backlog.take(3)
        taken.append((records[0].partition, [msg.offset for msg in records]))
    assert taken == [(0, [0, 1, 2]), (0, [3, 4, 5]), (0, [6]), (1, [0, 1])]
    assert backlog.records() == 0
    # a revoke drops the partially taken first set: the next set is taken from its start
    backlog.append(delivered(0, 5))
    backlog.append(delivered(1, 4))
    backlog.take(2)
    backlog.drop({TopicPartition("in", 0)})
    assert backlog.records() == 4
    assert [(msg.partition, msg.offset) for msg in backlog.take(10)] == [(1, 0), (1, 1), (1, 2), (1, 3)]
    assert not backlog
    # ... and keeps it when it stays
    backlog.append(delivered(0, 5))
    backlog.append(delivered(1, 4))
    backlog.take(2)
    backlog.drop({TopicPartition("in", 1)})
    assert [(msg.partition, msg.offset) for msg in backlog.take(10)] == [(0, 2), (0, 3), (0, 4)]
    backlog.append(delivered(0, 5))
    backlog.take(1)
    backlog.clear()
    backlog.append(delivered(2, 1))
    assert [(msg.partition, msg.offset) for msg in backlog.take(5)] == [(2, 0)]


@pytest.mark.compat  # transactions v2 on 4.x, v1 on 3.9
@pytest.mark.slow
@pytest.mark.timeout(CRASH_TEST_TIMEOUT_S)
def test_the_pipeline_is_exactly_once_through_sigkills(kafka, make_topic):
    input_topic, output_topic = make_topic(partitions=PARTITIONS), make_topic(partitions=PARTITIONS)
    fill_input(kafka.bootstrap, input_topic, PARTITIONS, RECORDS)
    args = _args(kafka.bootstrap, input_topic, output_topic)
    started = time.monotonic()
    run = CrashHarness(args, RECORDS, PROCESS_KILLS, leave_open=True).execute()
    described = f"{run.describe()}; {time.monotonic() - started:.0f}s"
    print(described)  # the seed and the kills, for the log (-s) and a rerun
    assert len(run.kills) >= PROCESS_KILLS and run.runs == len(run.kills) + 1, described
    assert any(kill.left_open for kill in run.kills), f"no kill left a transaction open: {described}"
    assert any(kill.mid_transaction for kill in run.kills), f"no kill landed inside a transaction: {described}"
    assert run.committed <= RECORDS, described  # commits seen reported, each once
    _check(kafka.bootstrap, args, described)
    # The kills cut transactions whose records were already in the log: read_committed skipped them.
    written = read_partitions(kafka.bootstrap, output_topic, PARTITIONS, read_committed=False)
    aborted = sum(len(partition) for partition in written.values()) - RECORDS
    print(f"{aborted} aborted records in the output")
    assert aborted > 0, f"no kill left records to abort: {described}"


@pytest.mark.compat
def test_the_pipeline_is_exactly_once_through_rebalances(kafka, make_topic):
    """A second instance (its own transactional id) joins the group once the first has committed,
    while records keep arriving: the first gives up partitions, aborting an open transaction that
    holds their records, and the second goes on from the committed offsets. Records arrive until
    the second has committed a transaction of its own (however long its start and join take on a
    loaded machine: a pipeline this fast reads whatever is there before a late joiner is in the
    group); once the group has committed the whole input both are told to stop (SIGTERM: commit,
    leave). Neither leaves at its partitions' end by itself: the arrivals come in chunks, and a
    second instance handed partitions the first had just committed to their end, between two
    chunks, would leave before committing anything."""
    before_join = min(RECORDS, REBALANCE_RECORDS) // 2
    input_topic, output_topic = make_topic(partitions=PARTITIONS), make_topic(partitions=PARTITIONS)
    fill_input(kafka.bootstrap, input_topic, PARTITIONS, before_join)
    first_args = _args(kafka.bootstrap, input_topic, output_topic, "first")
    first = PipelineProcess(first_args, exit_at_end=False)
    while (line := first.next_line(START_TIMEOUT_S)) is None or line.event != "committed":
        assert line is not None, f"the first instance exited early: {first.seen[-5:]}\n{first.stderr[-3000:]}"
    second = PipelineProcess(_args(kafka.bootstrap, input_topic, output_topic, "second"), exit_at_end=False)
    second_committed = threading.Event()
    arrived: list[int] = []
    arriving = threading.Thread(
        target=lambda: arrived.append(fill_input(kafka.bootstrap, input_topic, PARTITIONS, REBALANCE_ARRIVAL_MAX,
                                                 start=before_join, records_per_s=REBALANCE_ARRIVAL_PER_S,
                                                 until=second_committed.is_set)),
        daemon=True)
    arriving.start()
    try:
        while (line := second.next_line(START_TIMEOUT_S)) is None or line.event != "committed":
            assert line is not None, f"the second instance exited before committing: {second.seen[-5:]}\n{second.stderr[-3000:]}"
    finally:
        second_committed.set()
        arriving.join(FINISH_TIMEOUT_S)
    assert arrived, "the arriving records' producer failed"
    records = before_join + arrived[0]
    # Both read on; once the group has committed the whole input, both are told to go.
    ends = end_offsets(kafka.bootstrap, input_topic, PARTITIONS)
    deadline = time.monotonic() + FINISH_TIMEOUT_S
    while committed_offsets(kafka.bootstrap, first_args.group, input_topic, PARTITIONS) != ends:
        assert time.monotonic() < deadline, (f"the group never committed the input's end: "
                                             f"{first.lines_so_far()[-5:]} {second.lines_so_far()[-5:]}")
        time.sleep(COMMITTED_POLL_S)
    for process in (first, second):
        process.proc.send_signal(signal.SIGTERM)
    codes = (first.wait(FINISH_TIMEOUT_S), second.wait(FINISH_TIMEOUT_S))
    events = {name: Counter(f"{line.event} {line.records}" if line.event in ("assigned", "revoked") else line.event
                            for line in process.lines_so_far())
              for name, process in (("first", first), ("second", second))}
    described = f"{records} records ({arrived[0]} through the join); events: {events}"
    print(described)
    assert codes == (0, 0), f"{described}\n{first.stderr[-2000:]}\n{second.stderr[-2000:]}"
    gave_up = [line.records for line in first.seen if line.event == "revoked"]
    assert gave_up and gave_up[0] < PARTITIONS, f"the first instance never gave a partition up: {described}"
    assert events["second"]["committed"], f"the second instance never committed: {described}"
    _check(kafka.bootstrap, first_args, described, records)


@dataclass(slots=True)
class CoordinatorFaults:
    """Pauses the transaction coordinator's broker once, then kills it once, at given points of the
    input; a thread undoes each fault after a while (resume, restart), so the pipeline runs on
    meanwhile. The kill waits for the resume: two nodes of three down would stop the cluster."""

    cluster: LocalCluster
    transactional_id: str
    pause_at: int
    kill_at: int
    done: list[str] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    def __call__(self, committed: int) -> None:
        if committed >= self.pause_at and not self.done:
            self._fault("paused", self.cluster.pause, self.cluster.resume, BROKER_PAUSED_S)
        elif committed >= self.kill_at and len(self.done) == 1 and not self.threads[0].is_alive():
            self._fault("killed", self.cluster.kill, self.cluster.restart, BROKER_DOWN_S)

    def _fault(self, what: str, inflict: Callable[[int], None], undo: Callable[[int], None], seconds: float) -> None:
        node = transaction_coordinator(self.cluster.live_bootstrap, self.transactional_id)
        inflict(node)
        self.done.append(f"coordinator {node} {what}")

        def later() -> None:
            time.sleep(seconds)
            undo(node)

        thread = threading.Thread(target=later, daemon=True)
        thread.start()
        self.threads.append(thread)

    def finish(self) -> None:
        for thread in self.threads:
            thread.join(BROKER_RESTART_TIMEOUT_S)


@pytest.mark.slow
@pytest.mark.timeout(CRASH_TEST_TIMEOUT_S)
def test_the_pipeline_is_exactly_once_when_the_coordinator_fails(kafka3):
    # not make_topic: that would start the single-node cluster too
    input_topic, output_topic = (kafka3.create_topic(kafka3.unique_topic_name(f"eos-3nodes-{role}"), partitions=PARTITIONS)
                                 for role in ("in", "out"))
    fill_input(kafka3.bootstrap, input_topic, PARTITIONS, RECORDS)
    args = _args(kafka3.bootstrap, input_topic, output_topic)
    faults = CoordinatorFaults(kafka3, args.transactional_id, pause_at=RECORDS // 4, kill_at=RECORDS // 2)
    started = time.monotonic()
    try:
        run = CrashHarness(args, RECORDS, CLUSTER_PROCESS_KILLS, during=faults,
                           fatal_exits_allowed=COORDINATOR_FENCE_EXITS_ALLOWED).execute()
    finally:
        faults.finish()
    described = f"{run.describe()}; {', '.join(faults.done)}; {time.monotonic() - started:.0f}s"
    print(described)
    assert len(faults.done) == 2, f"the coordinator was not both killed and paused: {described}"
    assert all("PRODUCER_FENCED" in why and "EndTxn(commit)" in why for why in run.fatal_exits), described
    _check(kafka3.bootstrap, args, described)
