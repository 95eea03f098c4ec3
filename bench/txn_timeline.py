"""``python -m bench.txn_timeline``: where a transaction's time goes, back to back, as in the
``txn_produce_*`` scenarios.

It runs whole transactions of ``--records`` records on one transactional ``kafkaev.Client`` with
the scenarios' settings, each begun from the previous commit's callback, and stamps: the
transaction's begin, its last ``produce()``, its first Produce written, the last Produce answered
before its EndTxn, the EndTxn sent, the commit's callback, and the coordinator's answer that its
markers are written. It reports the medians of: producing the records, ``commit_transaction()``
to its first Produce (the wait for the previous transaction's markers, see DESIGN.md
"Transactions"), that Produce to the flush's end (the broker adding the partition and
appending), EndTxn, and the markers. The three broker steps one transaction waits out in turn
(markers, flush, EndTxn) bound what any client on this broker can do one transaction at a time:
the report's ``broker-bound`` figure is its records over their sum. The stamps cost CPU of their
own: its msg/s is not the scenario's figure::

    python -m bench.txn_timeline --brokers 127.0.0.1:9092 --records 1000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from bench.broker import ExistingCluster
from bench.clients.kafkaev_client import _close, _transactional_settings
from bench.measure import make_value
from bench.spec import KIND_TXN_PRODUCE, RunSpec
from bench.stamping import produce_requests, replaced
from kafkaev import Client, KafkaError
from kafkaev.producer import markers, transaction_manager

VALUE_SIZE = 100  # the scenarios' value size
PARTITIONS = 3  # the scenarios' topic
TIMEOUT_S = 60.0  # the whole run, set up included


@dataclass(slots=True)
class Transaction:
    """One transaction's stamps (perf_counter seconds); 0.0 until reached."""

    begun: float = 0.0
    produced: float = 0.0  # the last produce() returned; commit_transaction() is called then
    first_write: float = 0.0
    last_answer: float = 0.0  # before EndTxn: the flush's end
    end_txn: float = 0.0
    committed: float = 0.0
    markers_written: float = 0.0  # the coordinator's first answer after EndTxn that says so


@dataclass(slots=True)
class Timeline:
    done: list[Transaction] = field(default_factory=list)
    current: Transaction | None = None


@contextmanager
def stamped(timeline: Timeline) -> Iterator[None]:
    """Wrap the sender's write and answer and the transaction manager's EndTxn."""
    end_txn = transaction_manager.TransactionManager._end_txn
    answered = markers.MarkersWatch._answered

    def written() -> None:
        txn = timeline.current
        if txn is not None and not txn.first_write:
            txn.first_write = time.perf_counter()

    def answered_produce() -> None:
        txn = timeline.current
        if txn is not None and not txn.end_txn:
            txn.last_answer = time.perf_counter()

    def end_txn_stamped(self: Any, commit: bool, cb: Callable[..., Any]) -> None:
        txn = timeline.current
        if txn is not None:
            txn.end_txn = time.perf_counter()
        end_txn(self, commit, cb)

    def answered_stamped(self: Any, ended: int, resp: Any, err: Any) -> None:
        answered(self, ended, resp, err)
        # the markers asked about are the last finished transaction's (the current one is open)
        if self._written and timeline.done and not timeline.done[-1].markers_written:
            timeline.done[-1].markers_written = time.perf_counter()

    with replaced([
        *produce_requests(written, answered_produce),
        (transaction_manager.TransactionManager, "_end_txn", end_txn_stamped),
        (markers.MarkersWatch, "_answered", answered_stamped),
    ]):
        yield


@dataclass(frozen=True, slots=True)
class Report:
    """Medians over the run's transactions, in milliseconds."""

    transactions: int
    msgs_per_s: float
    produce_ms: float  # begin to the last produce()
    to_first_write_ms: float  # commit_transaction() to the first Produce written
    flush_ms: float  # that write to the last Produce answer
    end_txn_ms: float  # EndTxn sent to the commit's callback
    commit_ms: float  # commit_transaction() to its callback
    markers_ms: float  # the commit's callback (EndTxn answered) to the coordinator saying its markers are written
    bound_by_markers: int  # transactions whose markers no answer said were written (the watch's bound let the adds go)
    broker_bound_msgs_per_s: float  # records over the median markers + flush + EndTxn: no client CPU at all

    def __str__(self) -> str:
        return (f"{self.transactions} transactions, {self.msgs_per_s / 1e3:.1f}K msg/s; medians: produce "
                f"{self.produce_ms:.2f} ms, commit() to first Produce {self.to_first_write_ms:.2f} ms, Produce to "
                f"flushed {self.flush_ms:.2f} ms, EndTxn {self.end_txn_ms:.2f} ms; commit() to callback "
                f"{self.commit_ms:.2f} ms, markers {self.markers_ms:.2f} ms ({self.bound_by_markers} left to the "
                f"bound); broker-bound {self.broker_bound_msgs_per_s / 1e3:.1f}K msg/s")


def report(done: list[Transaction], records: int, elapsed_s: float) -> Report:
    def median_ms(stage: Callable[[Transaction], float], among: list[Transaction] = done) -> float:
        return statistics.median(stage(t) for t in among) * 1e3 if among else 0.0

    told = [t for t in done if t.markers_written]
    markers_ms = median_ms(lambda t: t.markers_written - t.committed, told)
    flush_ms = median_ms(lambda t: t.last_answer - t.first_write)
    end_txn_ms = median_ms(lambda t: t.committed - t.end_txn)
    return Report(
        transactions=len(done),
        msgs_per_s=len(done) * records / elapsed_s,
        produce_ms=median_ms(lambda t: t.produced - t.begun),
        to_first_write_ms=median_ms(lambda t: t.first_write - t.produced),
        flush_ms=flush_ms,
        end_txn_ms=end_txn_ms,
        commit_ms=median_ms(lambda t: t.committed - t.produced),
        markers_ms=markers_ms,
        # the last transaction's markers are never asked about: no transaction follows it
        bound_by_markers=len(done) - 1 - len(told),
        broker_bound_msgs_per_s=records / ((markers_ms + flush_ms + end_txn_ms) / 1e3),
    )


def run(bootstrap: str, records: int, transactions: int) -> Report:
    """``transactions`` back-to-back transactions of ``records`` records each, to a new topic."""
    cluster = ExistingCluster(bootstrap)
    topic = cluster.create_topic(f"bench-txn-timeline-{uuid.uuid4().hex[:8]}", partitions=PARTITIONS)
    try:
        return _run(bootstrap, topic, records, transactions)
    finally:
        cluster.delete_topic(topic)


def _run(bootstrap: str, topic: str, records: int, transactions: int) -> Report:
    spec = RunSpec(client="kafkaev", kind=KIND_TXN_PRODUCE, bootstrap=bootstrap, topic=topic, txn_records=records)
    client = Client(bootstrap, **_transactional_settings(spec))
    loop = client.loop
    timeline = Timeline()
    value = make_value(VALUE_SIZE)
    failure: list[KafkaError] = []

    def begin() -> None:
        txn = timeline.current = Transaction(begun=time.perf_counter())
        client.begin_transaction()
        for _ in range(records):
            client.produce(topic, None, value)
        txn.produced = time.perf_counter()
        client.commit_transaction(committed)

    def committed(err: KafkaError | None) -> None:
        txn = timeline.current
        assert txn is not None
        txn.committed = time.perf_counter()
        if err is not None:
            failure.append(err)
            loop.stop()
            return
        timeline.done.append(txn)
        if len(timeline.done) < transactions:
            begin()
        else:
            loop.stop()

    def initialized(err: KafkaError | None) -> None:
        if err is not None:
            failure.append(err)
            loop.stop()
        else:
            loop.call_soon(begin)

    stall = loop.call_later(TIMEOUT_S, loop.stop)
    with stamped(timeline):
        started = time.perf_counter()
        client.init_transactions(initialized)
        loop.run_forever()
        elapsed = time.perf_counter() - started
    stall.cancel()
    _close(client)
    if failure:
        raise RuntimeError(f"transaction {len(timeline.done) + 1} failed: {failure[0]}")
    if len(timeline.done) < transactions:
        raise RuntimeError(f"only {len(timeline.done)} of {transactions} transactions within {TIMEOUT_S:.0f}s")
    return report(timeline.done, records, elapsed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", required=True, help="bootstrap of a running cluster")
    parser.add_argument("--records", type=int, default=1000, help="records per transaction (the scenarios: 1000, 10000)")
    parser.add_argument("--transactions", type=int, default=300)
    args = parser.parse_args(argv)
    print(run(args.brokers, args.records, args.transactions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
