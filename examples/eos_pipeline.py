"""Exactly-once processing: read a topic in a group, transform each record, write the results
to another topic, and commit the input offsets inside the same transactions.

    python examples/eos_pipeline.py INPUT OUTPUT [--group GROUP] [--transactional-id ID]
        [--max-records 500] [--commit-interval-ms 100] [--exit-at-end]

Each transaction holds at most --max-records input records (fewer when --commit-interval-ms
passes first): their outputs, and the group's offsets one past them, sent with
``send_offsets_to_transaction`` and the consumer's ``group_metadata()`` (KIP-447: a member of
an older generation is refused). A read_committed reader of OUTPUT sees each input record's
output exactly once, whatever happens to this process:

- killed and started again with the same --transactional-id: ``init_transactions`` fences the
  old one and aborts what it left open, and the group's offsets (read with ``require_stable``,
  which a read_committed client does) start after the last committed transaction;
- partitions revoked by a rebalance: an open transaction holding their records is aborted, as
  the Java client's recipe does; their new owner starts from the committed offsets;
- an error the transaction can recover from: abort, go back to the group's committed offsets
  (where the transaction began, unless its commit landed after all), go on; a fatal one
  (another process took the transactional id): exit 1.

Each output goes to the input's partition number (OUTPUT needs as many partitions), so every
input partition's order is its output partition's order. The transactional id is also the
group member's static identity, so a restarted process takes its place without a rebalance.
SIGTERM (or Ctrl-C) commits the open transaction, then leaves the group. With --exit-at-end the
process leaves once what it was assigned is read to the end and committed. The brokers come
from $KAFKAEV_BROKERS, else the running `kafkaev broker start`. Every step is printed to stdout
as ``<event> <records>``, one line each.
"""

from __future__ import annotations

import argparse
import asyncio
import enum
import signal
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import kafkaev
from kafkaev import KafkaError, Message, TopicPartition

MAX_RECORDS = 500  # input records per transaction, at most
COMMIT_INTERVAL_MS = 100  # an open transaction is committed this long after it began
END_CHECK_INTERVAL_MS = 200  # --exit-at-end: how often an idle pipeline asks whether it is done
TRANSACTION_TIMEOUT_MS = 60_000
CLOSE_TIMEOUT_MS = 10_000  # leaving: what is still buffered gets this long


def transform(value: bytes | None) -> bytes | None:
    """The processing step: here, upper-case the value."""
    return None if value is None else value.upper()


class Event(enum.Enum):
    """What the pipeline reports (printed by main() as ``<event> <records>``)."""

    READY = "ready"  # init_transactions done: older producers with this id are fenced
    ASSIGNED = "assigned"  # records: partitions gained
    REVOKED = "revoked"  # records: partitions given up (or lost)
    BEGIN = "begin"  # a transaction began
    COMMITTING = "committing"  # records: the transaction's input records, offsets being committed
    COMMITTED = "committed"  # records: the transaction's input records, now visible
    ABORTED = "aborted"  # records: input records whose outputs were discarded (they are read again)
    DONE = "done"  # records: every record this process committed; it has left the group


class Phase(enum.Enum):
    IDLE = "idle"  # no transaction open
    OPEN = "open"  # begun; records being produced
    COMMITTING = "committing"  # offsets sent, commit_transaction in flight
    ABORTING = "aborting"


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    input_topic: str
    output_topic: str
    group_id: str
    transactional_id: str
    max_records: int = MAX_RECORDS
    commit_interval_ms: int = COMMIT_INTERVAL_MS
    exit_at_end: bool = False
    transaction_timeout_ms: int = TRANSACTION_TIMEOUT_MS

    def __post_init__(self) -> None:
        if self.max_records < 1:
            raise ValueError(f"'max_records' must be at least 1, got {self.max_records}")
        if self.commit_interval_ms < 1:
            raise ValueError(f"'commit_interval_ms' must be at least 1, got {self.commit_interval_ms}")


class Backlog:
    """Record sets delivered and not yet in a transaction, in the order they came. A set larger
    than what a transaction has room for is taken a part at a time, from an index: cutting the
    rest off it each time would copy a large set once per transaction."""

    __slots__ = ("_sets", "_taken")

    def __init__(self) -> None:
        self._sets: deque[list[Message]] = deque()
        self._taken = 0  # records of the first set already in a transaction

    def __bool__(self) -> bool:
        return bool(self._sets)

    def records(self) -> int:
        return sum(len(records) for records in self._sets) - self._taken

    def append(self, records: list[Message]) -> None:
        self._sets.append(records)

    def take(self, most: int) -> list[Message]:
        """Up to ``most`` records of the first set."""
        records, start = self._sets[0], self._taken
        end = min(len(records), start + most)
        if end == len(records):
            self._sets.popleft()
            self._taken = 0
        else:
            self._taken = end
        return records if start == 0 and end == len(records) else records[start:end]

    def drop(self, partitions: set[TopicPartition]) -> None:
        """Forget the sets of these partitions (revoked: their new owner reads them)."""
        kept = deque(records for records in self._sets if (records[0].topic, records[0].partition) not in partitions)
        if not kept or kept[0] is not self._sets[0]:
            self._taken = 0  # the first set went: the one now first (if any) was not taken from
        self._sets = kept

    def clear(self) -> None:
        self._sets.clear()
        self._taken = 0


class EosPipeline:
    """One consume-transform-produce loop in transactions; ``start()``, then turn the loop.
    ``on_done(err)`` once it has stopped: None after --exit-at-end, else the fatal error."""

    def __init__(self, settings: PipelineSettings, *, brokers: str | None = None,
                 transform: Callable[[bytes | None], bytes | None] = transform,
                 on_event: Callable[[Event, int], object] | None = None,
                 on_done: Callable[[KafkaError | None], object] | None = None,
                 **client_options: object) -> None:
        self.settings = settings
        self.transform = transform
        self.on_event = on_event
        self.on_done = on_done
        self.client = kafkaev.Client(
            brokers, transactional_id=settings.transactional_id,
            transaction_timeout_ms=settings.transaction_timeout_ms,
            isolation_level="read_committed",  # read only committed input; offsets fetched with require_stable
            auto_commit=False,  # offsets are committed by the transactions, never by the consumer
            auto_offset_reset="earliest", on_batch=self._on_batch, **client_options)  # type: ignore[arg-type]
        self.phase = Phase.IDLE
        self.backlog = Backlog()  # delivered, not yet in a transaction
        self.in_transaction = 0  # input records in the open transaction
        self.next_offsets: dict[TopicPartition, int] = {}  # what the open transaction commits
        self.committed_records = 0
        self.stopping = False  # stop() was called: commit what is open, begin nothing more
        self.stopped = False
        self._commit_timer: asyncio.TimerHandle | None = None
        self._end_timer: asyncio.TimerHandle | None = None
        self._end_check_pending = False

    # --- lifetime -----------------------------------------------------------------------------
    def start(self) -> None:
        # Before reading any offset: fences older producers with this id and completes their
        # open transaction, so the committed offsets read next are final.
        self.client.init_transactions(self._initialized)

    def stop(self) -> None:
        """Commit the open transaction, then leave the group and close: ``on_done(None)``.
        Records delivered but not yet in a transaction are left to the group's next reader."""
        if self.stopping:
            return
        self.stopping = True
        if self.phase is Phase.OPEN:
            self._commit()
        elif self.phase is Phase.IDLE:
            self._finish(None)
        # committing or aborting: _committed() or _aborted() finishes

    def _initialized(self, err: KafkaError | None) -> None:
        if err is not None:
            self._finish(err)
            return
        if self.stopping:
            self._finish(None)
            return
        self._event(Event.READY, 0)
        self.client.subscribe([self.settings.input_topic], group_id=self.settings.group_id,
                              group_instance_id=self.settings.transactional_id,
                              on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
        self._schedule_end_check()

    def _finish(self, err: KafkaError | None) -> None:
        if self.stopped:
            return
        self.stopped = True
        for timer in (self._commit_timer, self._end_timer):
            if timer is not None:
                timer.cancel()
        self.client.close(lambda _close_err: self._closed(err), timeout_ms=CLOSE_TIMEOUT_MS)

    def _closed(self, err: KafkaError | None) -> None:
        self._event(Event.DONE, self.committed_records)
        if self.on_done is not None:
            self.on_done(err)

    def _event(self, event: Event, records: int) -> None:
        if self.on_event is not None:
            self.on_event(event, records)

    # --- the group ----------------------------------------------------------------------------
    def _on_assign(self, partitions: list[TopicPartition]) -> None:
        self._event(Event.ASSIGNED, len(partitions))

    def _on_revoke(self, partitions: list[TopicPartition]) -> None:
        self._event(Event.REVOKED, len(partitions))
        gone = set(partitions)
        self.backlog.drop(gone)
        if self.phase is Phase.OPEN and gone.intersection(self.next_offsets):
            # Their new owner starts from the committed offsets: what this transaction holds
            # of them must never become visible.
            self._abort()
        # COMMITTING: the commit lands first (the new owner's require_stable offset fetch
        # waits for it), or the group coordinator refuses this generation's offsets and the
        # transaction is aborted.

    # --- records ------------------------------------------------------------------------------
    def _on_batch(self, messages: list[Message]) -> None:
        if self.stopped:
            return
        self.backlog.append(messages)
        self._drain()

    def _drain(self) -> None:
        """Put backlog records into transactions while one can take them. While a transaction
        commits, the next one's input is read ahead (up to max_records), so it can begin the
        moment the commit lands; an abort discards what was read, so it holds the input."""
        client = self.client
        try:
            while self.backlog and self.phase in (Phase.IDLE, Phase.OPEN) and not self.stopping:
                if self.phase is Phase.IDLE:
                    client.begin_transaction()
                    self.phase = Phase.OPEN
                    self._event(Event.BEGIN, 0)
                    self._commit_timer = client.loop.call_later(self.settings.commit_interval_ms / 1000.0,
                                                                self._commit_due)
                self._produce(self.backlog.take(self.settings.max_records - self.in_transaction))
                if self.in_transaction >= self.settings.max_records:
                    self._commit()
        except KafkaError as err:
            self._failed(err)
            return
        held = client.assignment()
        if self.backlog and (self.phase is Phase.ABORTING or self.backlog.records() >= self.settings.max_records):
            client.pause(held)
        elif self.phase is not Phase.ABORTING and client.paused():
            client.resume(held)

    def _produce(self, records: list[Message]) -> None:
        """Put records of one partition in the transaction."""
        produce, transform, output = self.client.produce, self.transform, self.settings.output_topic
        for msg in records:
            # Errors reach commit_transaction(): a record that failed fails the commit.
            produce(output, msg.key, transform(msg.value), partition=msg.partition)
        last = records[-1]
        self.next_offsets[TopicPartition(last.topic, last.partition)] = last.offset + 1
        self.in_transaction += len(records)

    # --- committing and aborting --------------------------------------------------------------
    def _commit_due(self) -> None:
        self._commit_timer = None
        if self.phase is Phase.OPEN and self.in_transaction:
            self._commit()

    def _commit(self) -> None:
        self._cancel_commit_timer()
        self.phase = Phase.COMMITTING
        self._event(Event.COMMITTING, self.in_transaction)
        client = self.client
        try:
            # No need to wait for the offsets: the commit waits for them, and fails when they did.
            client.send_offsets_to_transaction(dict(self.next_offsets), client.group_metadata())
            client.commit_transaction(self._committed)
        except KafkaError as err:
            self._failed(err)

    def _committed(self, err: KafkaError | None) -> None:
        if err is not None:
            self._failed(err)
            return
        self.committed_records += self.in_transaction
        if self._ended(Event.COMMITTED):
            self._drain()
            self._schedule_end_check()

    def _failed(self, err: KafkaError) -> None:
        """Anything but a fatal error is recovered by aborting: the records are read again."""
        if err.fatal or self.phase in (Phase.IDLE, Phase.ABORTING):
            self._finish(err)
        else:
            self._abort()

    def _abort(self) -> None:
        self._cancel_commit_timer()
        self.phase = Phase.ABORTING
        try:
            self.client.abort_transaction(self._aborted)
        except KafkaError as err:  # not abortable from here: the restart's init_transactions aborts it
            self._finish(err)

    def _aborted(self, err: KafkaError | None) -> None:
        if err is not None:
            # The next init_transactions with this id completes the abort: start again.
            self._finish(err)
            return
        # Read again from the group's committed offsets, as the Java recipe does, not from where
        # this transaction began: a commit whose answer was lost may have landed after all.
        self.backlog.clear()
        held = self.client.assignment()
        if held:
            self.client.committed(held, self._rewound)
        else:
            self._rewound({}, None)

    def _rewound(self, committed: dict[TopicPartition, int] | None, err: KafkaError | None) -> None:
        client = self.client
        if err is not None or committed is None:
            self._finish(err)
            return
        # Delivered since the abort, from the positions before this rewind: read again after it.
        self.backlog.clear()
        held = set(client.assignment())
        for tp, offset in committed.items():
            if tp in held:  # nothing committed yet: from the start (auto_offset_reset)
                client.seek(tp.topic, tp.partition, offset if offset >= 0 else kafkaev.OFFSET_BEGINNING)
        if self._ended(Event.ABORTED):
            if client.paused():
                client.resume(client.assignment())
            self._schedule_end_check()

    def _cancel_commit_timer(self) -> None:
        if self._commit_timer is not None:
            self._commit_timer.cancel()
            self._commit_timer = None

    def _ended(self, event: Event) -> bool:
        """The transaction is over: report it; False when stop() was waiting for that."""
        records, self.in_transaction = self.in_transaction, 0
        self.phase = Phase.IDLE
        self.next_offsets.clear()
        self._event(event, records)
        if self.stopping:
            self._finish(None)
            return False
        return True

    # --- --exit-at-end ------------------------------------------------------------------------
    def _schedule_end_check(self) -> None:
        if self.settings.exit_at_end and not self.stopped and self._end_timer is None:
            self._end_timer = self.client.loop.call_later(END_CHECK_INTERVAL_MS / 1000.0, self._check_end)

    def _idle(self) -> bool:
        return self.phase is Phase.IDLE and not self.backlog

    def _check_end(self) -> None:
        self._end_timer = None
        if self.stopped or self._end_check_pending:
            return
        if not self._idle() or not self.client.assignment():
            self._schedule_end_check()
            return
        self._end_check_pending = True
        self.client.lag(self._lag_answered)

    def _lag_answered(self, lag: dict[tuple[str, int], tuple[int, int, int]] | None, err: KafkaError | None) -> None:
        self._end_check_pending = False
        if self.stopped:
            return
        # lag 0: the position (one past the last record committed, when idle) is the end
        if err is None and lag and self._idle() and all(behind == 0 for _pos, _end, behind in lag.values()):
            self._finish(None)
        else:
            self._schedule_end_check()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--group", default="eos-pipeline")
    parser.add_argument("--transactional-id", default="eos-pipeline-1")
    parser.add_argument("--max-records", type=int, default=MAX_RECORDS)
    parser.add_argument("--commit-interval-ms", type=int, default=COMMIT_INTERVAL_MS)
    parser.add_argument("--exit-at-end", action="store_true")
    args = parser.parse_args(argv)
    settings = PipelineSettings(args.input, args.output, args.group, args.transactional_id,
                                max_records=args.max_records, commit_interval_ms=args.commit_interval_ms,
                                exit_at_end=args.exit_at_end)
    outcome: list[KafkaError | None] = []

    def done(err: KafkaError | None) -> None:
        outcome.append(err)
        kafkaev.stop()

    pipeline = EosPipeline(settings, on_event=lambda event, records: print(event.value, records, flush=True),
                           on_done=done)
    for stop_signal in (signal.SIGTERM, signal.SIGINT):  # commit what is open, then leave
        pipeline.client.loop.add_signal_handler(stop_signal, pipeline.stop)
    pipeline.start()
    kafkaev.run()
    if outcome and outcome[0] is not None:
        print(f"stopped: {outcome[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
