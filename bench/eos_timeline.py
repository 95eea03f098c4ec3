"""``python -m bench.eos_timeline``: where a transaction of the ``eos_pipeline`` scenario spends
its time.

It runs the scenario's own pipeline (``bench.clients.kafkaev_client.eos``, which drives
``examples/eos_pipeline.py``) over a pre-filled input topic and stamps each transaction: its
begin, the moment the pipeline commits it (its input records are all produced), the
TxnOffsetCommit and the Produce requests written and answered, EndTxn sent and answered, and
the coordinator's answer that the markers of the transaction are written. It reports the
medians of each stage and the broker's serial steps one transaction waits out in turn: the
previous transaction's markers, the two requests that add to the transaction (the group by
TxnOffsetCommit, then the output partitions by Produce: two adds at once would fail the later
one, so they go one after the other), and EndTxn. ``broker-bound`` is the records of a
transaction over their sum, from one EndTxn answer to the next: what a client that spent no
other time could do one transaction at a time. The stamps cost CPU of their own: its msg/s is not the scenario's figure::

    python -m bench.eos_timeline --brokers 127.0.0.1:9092
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.broker import ExistingCluster, prefill
from bench.clients import kafkaev_client
from bench.run import PRODUCE_PARTITIONS
from bench.scenarios import EOS_TXN_RECORDS
from bench.spec import KIND_EOS, RunSpec
from bench.stamping import produce_requests, replaced
from examples import eos_pipeline
from kafkaev.producer import markers, transaction_manager

VALUE_SIZE = 100  # the scenario's value size
TIME_CAP_S = 60.0  # the pipeline's own time cap
# The first transactions include joining the group and the first fetch; the last one is cut
# short by the stop. Neither is the steady state.
SKIPPED_FIRST = 3
# TransactionManager._coordinator's request names, as its ``what`` argument begins
OFFSETS_REQUEST = "TxnOffsetCommit"
END_TXN_REQUEST = "EndTxn"


@dataclass(slots=True)
class Transaction:
    """One transaction's stamps (perf_counter seconds); 0.0 until reached."""

    begun: float = 0.0
    committing: float = 0.0  # its input records all produced; offsets and commit_transaction() called
    offsets_written: float = 0.0
    offsets_answered: float = 0.0
    output_written: float = 0.0  # the transaction's first Produce
    output_answered: float = 0.0  # its last Produce answer before EndTxn
    end_txn_written: float = 0.0
    end_txn_answered: float = 0.0
    committed: float = 0.0
    markers_written: float = 0.0  # the coordinator's first answer after EndTxn that says so
    asks: int = 0  # DescribeTransactions answers while its first adds waited (the previous markers)


@dataclass(slots=True)
class Timeline:
    transactions: list[Transaction] = field(default_factory=list)

    @property
    def current(self) -> Transaction | None:
        return self.transactions[-1] if self.transactions else None


@contextmanager
def stamped(timeline: Timeline) -> Iterator[None]:
    """Wrap the pipeline's events, the sender's writes and answers, the transaction manager's
    coordinator requests and the markers' answers."""
    event = eos_pipeline.EosPipeline._event
    coordinator = transaction_manager.TransactionManager._coordinator
    answered = markers.MarkersWatch._answered

    def event_stamped(self: Any, what: eos_pipeline.Event, records: int) -> None:
        now = time.perf_counter()
        if what is eos_pipeline.Event.BEGIN:
            timeline.transactions.append(Transaction(begun=now))
        elif (txn := timeline.current) is not None:
            if what is eos_pipeline.Event.COMMITTING:
                txn.committing = now
            elif what is eos_pipeline.Event.COMMITTED:
                txn.committed = now
        event(self, what, records)

    def output_written() -> None:
        txn = timeline.current
        if txn is not None and not txn.output_written:
            txn.output_written = time.perf_counter()

    def output_answered() -> None:
        txn = timeline.current
        if txn is not None and not txn.end_txn_written:
            txn.output_answered = time.perf_counter()

    def coordinator_stamped(self: Any, link: Any, what: str, send: Callable[..., Any], code_of: Callable[..., Any],
                            done: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        txn = timeline.current
        if txn is None or not what.startswith((OFFSETS_REQUEST, END_TXN_REQUEST)):
            coordinator(self, link, what, send, code_of, done, *args, **kwargs)
            return
        offsets = what.startswith(OFFSETS_REQUEST)

        def send_stamped(conn: Any, answer: Callable[..., Any]) -> None:
            now = time.perf_counter()
            if offsets:
                txn.offsets_written = txn.offsets_written or now
            else:
                txn.end_txn_written = txn.end_txn_written or now
            send(conn, answer)

        def done_stamped(resp: Any, err: Any) -> None:
            now = time.perf_counter()
            if offsets:
                txn.offsets_answered = now
            else:
                txn.end_txn_answered = now
            done(resp, err)

        coordinator(self, link, what, send_stamped, code_of, done_stamped, *args, **kwargs)

    def answered_stamped(self: Any, ended: int, resp: Any, err: Any) -> None:
        now, was_written = time.perf_counter(), self._written
        answered(self, ended, resp, err)  # when it says written, the held adds are sent inside
        # asked while the current transaction's first adds wait: about the one before it
        ts = timeline.transactions
        if len(ts) >= 2:
            ts[-1].asks += 1
            if self._written and not was_written:
                ts[-2].markers_written = now

    with replaced([
        (eos_pipeline.EosPipeline, "_event", event_stamped),
        *produce_requests(output_written, output_answered),
        (transaction_manager.TransactionManager, "_coordinator", coordinator_stamped),
        (markers.MarkersWatch, "_answered", answered_stamped),
    ]):
        yield


@dataclass(frozen=True, slots=True)
class Report:
    """Medians over the run's steady transactions, in milliseconds."""

    transactions: int
    records_per_transaction: int
    msgs_per_s: float
    cycle_ms: float  # one transaction's begin to the next one's
    produce_ms: float  # begin to committing: the transaction's input records transformed and produced
    held_ms: float  # committing to its first add written
    # the previous transaction's EndTxn answered to this one's TxnOffsetCommit accepted: its
    # markers written, then the group added (the records are produced meanwhile)
    group_added_ms: float
    offsets_ms: float  # TxnOffsetCommit first written to accepted (adds the group), retries included
    output_ms: float  # the first Produce written to the last answered (adds the output partitions)
    adds_ms: float  # the first of those two written to the last of them answered: the two in turn
    end_txn_ms: float  # EndTxn written to answered
    markers_ms: float  # EndTxn answered to a DescribeTransactions saying the markers are written (if asked)
    asks: float  # DescribeTransactions answers per transaction, mean
    # records over group added + Produce + EndTxn, the broker's steps in turn from one EndTxn
    # answer to the next: what a client that spent no other time could do, one transaction at a time
    broker_bound_msgs_per_s: float

    def __str__(self) -> str:
        return (f"{self.transactions} transactions of {self.records_per_transaction} input records, "
                f"{self.msgs_per_s / 1e3:.1f}K msg/s; medians: cycle {self.cycle_ms:.2f} ms, produce "
                f"{self.produce_ms:.2f}, to the first add {self.held_ms:.2f}, EndTxn to the group added "
                f"{self.group_added_ms:.2f}, adds {self.adds_ms:.2f} (TxnOffsetCommit {self.offsets_ms:.2f}, "
                f"Produce {self.output_ms:.2f}), EndTxn {self.end_txn_ms:.2f}, markers told "
                f"{self.markers_ms:.2f} ({self.asks:.1f} asks a transaction); "
                f"broker-bound {self.broker_bound_msgs_per_s / 1e3:.1f}K msg/s")


def report(stamps: list[Transaction], records_per_transaction: int, msgs_per_s: float) -> Report:
    """``stamps`` in the order they began; the steady ones are those whose every stage was
    reached and that are not among the first few."""
    steady = [t for t in stamps[SKIPPED_FIRST:]
              if t.committed and t.offsets_answered and t.output_answered and t.end_txn_answered]
    if not steady:
        raise RuntimeError(f"no transaction past the first {SKIPPED_FIRST} completed every stage")
    following = {id(a): b.begun for a, b in itertools.pairwise(stamps)}
    ended_before = {id(b): a.end_txn_answered for a, b in itertools.pairwise(stamps) if a.end_txn_answered}

    def median_ms(stage: Callable[[Transaction], float], among: list[Transaction] = steady) -> float:
        return statistics.median(stage(t) for t in among) * 1e3 if among else 0.0

    told = [t for t in steady if t.markers_written]
    cycled = [t for t in steady if id(t) in following]
    preceded = [t for t in steady if id(t) in ended_before]
    group_added_ms = median_ms(lambda t: t.offsets_answered - ended_before[id(t)], preceded)
    markers_ms = median_ms(lambda t: t.markers_written - t.end_txn_answered, told)
    offsets_ms = median_ms(lambda t: t.offsets_answered - t.offsets_written)
    output_ms = median_ms(lambda t: t.output_answered - t.output_written)
    end_txn_ms = median_ms(lambda t: t.end_txn_answered - t.end_txn_written)
    return Report(
        transactions=len(steady),
        records_per_transaction=records_per_transaction,
        msgs_per_s=msgs_per_s,
        cycle_ms=median_ms(lambda t: following[id(t)] - t.begun, cycled),
        produce_ms=median_ms(lambda t: t.committing - t.begun),
        held_ms=median_ms(lambda t: min(t.offsets_written, t.output_written) - t.committing),
        group_added_ms=group_added_ms,
        offsets_ms=offsets_ms,
        output_ms=output_ms,
        adds_ms=median_ms(lambda t: max(t.offsets_answered, t.output_answered)
                          - min(t.offsets_written, t.output_written)),
        end_txn_ms=end_txn_ms,
        markers_ms=markers_ms,
        asks=statistics.mean(t.asks for t in steady),
        broker_bound_msgs_per_s=records_per_transaction / ((group_added_ms + output_ms + end_txn_ms) / 1e3),
    )


def run(bootstrap: str, records: int, records_per_transaction: int = EOS_TXN_RECORDS) -> Report:
    """The pipeline over ``records`` input records, in transactions of ``records_per_transaction``."""
    cluster = ExistingCluster(bootstrap)
    run_id = uuid.uuid4().hex[:8]
    source = cluster.create_topic(f"bench-eos-timeline-{run_id}-in", partitions=PRODUCE_PARTITIONS)
    output = cluster.create_topic(f"bench-eos-timeline-{run_id}-out", partitions=PRODUCE_PARTITIONS)
    try:
        prefill(bootstrap, source, records, VALUE_SIZE)
        spec = RunSpec(client="kafkaev", kind=KIND_EOS, bootstrap=bootstrap, topic=output, source_topic=source,
                       count=records, duration_s=TIME_CAP_S, partitions=PRODUCE_PARTITIONS,
                       value_size=VALUE_SIZE, txn_records=records_per_transaction)
        timeline = Timeline()
        with stamped(timeline):
            result = kafkaev_client.eos(spec)
        return report(timeline.transactions, records_per_transaction, result.records / result.elapsed_s)
    finally:
        cluster.delete_topic(source)
        cluster.delete_topic(output)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", required=True, help="bootstrap of a running cluster")
    parser.add_argument("--records", type=int, default=300_000, help="input records, pre-filled")
    parser.add_argument("--per-transaction", type=int, default=EOS_TXN_RECORDS,
                        help="input records per transaction, at most (the scenario: %(default)s)")
    args = parser.parse_args(argv)
    print(run(args.brokers, args.records, args.per_transaction))
    return 0


if __name__ == "__main__":
    sys.exit(main())
