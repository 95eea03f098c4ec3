"""The transactional producer's state machine: one ``Transaction`` object per client.

It owns the state, the error that put it in an error state, and what the open transaction
holds: the partitions added to it (or waiting to be, with transactions v1), the consumer
group whose offsets it carries. Every public call checks the state here first and is refused
at once, naming the state, when it does not fit::

    UNINITIALIZED --init_transactions--> INITIALIZING --> READY
    READY --begin_transaction--> IN_TRANSACTION
    IN_TRANSACTION --commit_transaction--> COMMITTING --> READY
    IN_TRANSACTION / ABORTABLE_ERROR --abort_transaction--> ABORTING --> READY
    IN_TRANSACTION / COMMITTING --a record or a request failed--> ABORTABLE_ERROR
    any state --fenced, not authorized--> FATAL_ERROR (nothing leaves it)

``TransactionManager`` (transaction_manager.py) drives the transitions from the
coordinator's answers; this module knows no requests.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from ..errors import FATAL, STATE, KafkaError
from .core import PartitionState


class TxnState(enum.Enum):
    UNINITIALIZED = "uninitialized"  # no producer id yet: init_transactions() first
    INITIALIZING = "initializing"  # InitProducerId in progress
    READY = "ready"  # may begin a transaction
    IN_TRANSACTION = "in transaction"  # records and offsets go into the open transaction
    COMMITTING = "committing"  # flushing, then EndTxn(commit)
    ABORTING = "aborting"  # failing what was not sent, then EndTxn(abort)
    ABORTABLE_ERROR = "abortable error"  # the open transaction cannot commit: abort it
    FATAL_ERROR = "fatal error"  # fenced or not authorized: this client cannot go on


# Which state may follow which: a transition not listed is a bug, raised as one.
_NEXT: dict[TxnState, frozenset[TxnState]] = {
    TxnState.UNINITIALIZED: frozenset({TxnState.INITIALIZING, TxnState.FATAL_ERROR}),
    TxnState.INITIALIZING: frozenset({TxnState.READY, TxnState.UNINITIALIZED, TxnState.FATAL_ERROR}),
    TxnState.READY: frozenset({TxnState.IN_TRANSACTION, TxnState.FATAL_ERROR}),
    TxnState.IN_TRANSACTION: frozenset({TxnState.COMMITTING, TxnState.ABORTING, TxnState.ABORTABLE_ERROR,
                                        TxnState.FATAL_ERROR}),
    TxnState.COMMITTING: frozenset({TxnState.READY, TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR}),
    TxnState.ABORTABLE_ERROR: frozenset({TxnState.ABORTING, TxnState.FATAL_ERROR}),
    TxnState.ABORTING: frozenset({TxnState.READY, TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR}),
    TxnState.FATAL_ERROR: frozenset(),
}
# The first retry delay after CONCURRENT_TRANSACTIONS at a transaction's start (its first
# AddPartitionsToTxn, v1; a Produce the broker could not add, v2; the offsets, whose group
# the coordinator adds): the coordinator is still writing the previous transaction's
# markers, done within milliseconds, so the retry backoff (100 ms by default) would idle the
# producer. 2 ms, doubling on each further answer, never above the retry backoff's own delay:
# the Java client's 20 ms (for its first AddPartitionsToTxn) cost the EOS pipeline a third of
# its transactions per second on a local broker, where one in five TxnOffsetCommits meets it.
CONCURRENT_TRANSACTIONS_BACKOFF_S = 0.002
# The same for a v2 TxnOffsetCommit still refused once the markers' bound
# (markers.MARKERS_WAIT_MAX_S) has passed; inside it, it is retried at once. Its coordinator
# answers at once, so a retry costs one round trip, and the markers are most often being
# finished: the bound also runs out while the client itself is busy (handing a large fetched
# set over, say). With 2 ms, one EOS pipeline transaction in twenty-four waited 4-8 ms.
OFFSETS_AFTER_MARKERS_BACKOFF_S = 0.0005


def concurrent_transactions_delay_s(retries: int, usual_s: float,
                                    first_s: float = CONCURRENT_TRANSACTIONS_BACKOFF_S) -> float:
    """The delay before retry number ``retries`` (0 first) after CONCURRENT_TRANSACTIONS,
    given the retry backoff's ``usual_s``: ``first_s``, doubling, never above ``usual_s``."""
    return min(first_s * 2 ** retries, usual_s)
# States in which records may be sent: the transaction is open or being committed.
SENDING_STATES = frozenset({TxnState.IN_TRANSACTION, TxnState.COMMITTING})


class Transaction:
    """The state, its cause, and the open transaction's partitions and group."""

    __slots__ = ("transactional_id", "state", "error", "added", "pending", "opened", "verifying", "group_added",
                 "offsets_sent", "bump_required", "record_failed")

    def __init__(self, transactional_id: str) -> None:
        self.transactional_id = transactional_id
        self.state = TxnState.UNINITIALIZED
        self.error: KafkaError | None = None  # why the state is ABORTABLE_ERROR or FATAL_ERROR
        self.added: set[PartitionState] = set()  # partitions in the open transaction
        self.pending: set[PartitionState] = set()  # v1: to add with the next AddPartitionsToTxn
        # v2: partitions whose first batch of the open transaction opened and is to go as soon
        # as the adds are due, not at the linger's end (TransactionManager._send_first_batches)
        self.opened: set[PartitionState] = set()
        # v2: partitions whose first batch of the open transaction is in flight (its Produce
        # has the leader add the partition to the transaction; nothing else of them goes yet).
        self.verifying: set[PartitionState] = set()
        self.group_added: str | None = None  # v1: the group AddOffsetsToTxn added
        self.offsets_sent = False  # a TxnOffsetCommit went into the open transaction
        # A batch with a sequence failed or was dropped: the sequences after it would leave a
        # gap, so the epoch must change before the next transaction (v1: InitProducerId bump).
        self.bump_required = False
        self.record_failed: KafkaError | None = None  # the first record failure of the open transaction

    # --- checks --------------------------------------------------------------------------------
    def require(self, op: str, *allowed: TxnState) -> None:
        """Raise at once unless the state is one of ``allowed``, naming the state (and the cause
        of an error state)."""
        state = self.state
        if state in allowed:
            return
        if state is TxnState.FATAL_ERROR:
            cause = self.error
            raise KafkaError(cause.code if cause is not None else FATAL,
                             f"{op}: refused, the transactional producer {self.transactional_id!r} is in state "
                             f"{state.name} after {cause}", fatal=True)
        if state is TxnState.ABORTABLE_ERROR:
            raise KafkaError(STATE, f"{op}: not allowed in state {state.name}, the transaction must be aborted "
                                    f"(abort_transaction) after {self.error}", txn_requires_abort=True)
        wanted = " or ".join(s.name for s in allowed)
        raise KafkaError(STATE, f"{op}: not allowed in state {state.name} (needs {wanted}){_HINTS.get(state, '')}")

    @property
    def in_transaction(self) -> bool:
        return self.state is TxnState.IN_TRANSACTION

    @property
    def sending(self) -> bool:
        """Records of the open transaction may go out."""
        return self.state in SENDING_STATES

    @property
    def started(self) -> bool:
        """The coordinator knows of the open transaction (a partition or the offsets were added
        to it), so it must be ended with EndTxn."""
        return bool(self.added) or self.offsets_sent or self.group_added is not None

    # --- transitions ---------------------------------------------------------------------------
    def to(self, new: TxnState) -> None:
        if new not in _NEXT[self.state]:
            raise RuntimeError(f"transaction state {self.state.name} cannot become {new.name}")
        self.state = new

    def begin(self) -> None:
        self.require("begin_transaction", TxnState.READY)
        self.to(TxnState.IN_TRANSACTION)
        self.record_failed = None

    def abortable(self, err: KafkaError) -> None:
        """The open transaction cannot commit any more. Not while aborting (the abort goes on,
        its own failure is the abort's) nor once fatal."""
        if self.state in (TxnState.IN_TRANSACTION, TxnState.COMMITTING):
            self.error = err
            self.to(TxnState.ABORTABLE_ERROR)

    def fatal(self, err: KafkaError) -> None:
        if self.state is not TxnState.FATAL_ERROR:
            self.error = err
            self.to(TxnState.FATAL_ERROR)

    def finished(self) -> None:
        """EndTxn done (or not needed): the transaction's partitions and group are forgotten."""
        self.added.clear()
        self.pending.clear()
        self.opened.clear()
        self.verifying.clear()
        self.group_added = None
        self.offsets_sent = False
        self.record_failed = None
        self.error = None
        self.to(TxnState.READY)

    # --- partitions ----------------------------------------------------------------------------
    def want(self, part: PartitionState) -> None:
        """v1: ``part`` must be added before its first batch goes out."""
        if part not in self.added:
            self.pending.add(part)

    def now_added(self, parts: Iterable[PartitionState]) -> None:
        for part in parts:
            self.pending.discard(part)
            self.added.add(part)


_HINTS = {
    TxnState.UNINITIALIZED: "; call init_transactions() first",
    TxnState.INITIALIZING: "; wait for init_transactions()'s callback",
    TxnState.READY: "; call begin_transaction() first",
    TxnState.IN_TRANSACTION: "; a transaction is already open: commit_transaction() or abort_transaction()",
    TxnState.COMMITTING: "; wait for commit_transaction()'s callback",
    TxnState.ABORTING: "; wait for abort_transaction()'s callback",
}
