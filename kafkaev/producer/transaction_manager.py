"""The transactional producer's conversations with its coordinators.

* The transaction coordinator (FindCoordinator key type 1, over TXN connections) takes
  InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn; the group's coordinator
  (key type 0) takes TxnOffsetCommit. Each is a ``CoordinatorLink``: NOT_COORDINATOR, a
  coordinator loading or unavailable, or a lost connection forget it and the request is sent
  again to the one found next. Those and CONCURRENT_TRANSACTIONS (the coordinator is still
  completing the previous transaction) are retried with the shared backoff, for at most
  ``delivery_timeout_ms``.
* The protocol version comes from the coordinator's finalized ``transaction.version``
  feature: 2 (KIP-890) when it is 2 or more and the broker speaks EndTxn v5 and Produce v12;
  else 1. With v1 a partition is added (AddPartitionsToTxn) before its first batch of a
  transaction goes out and the group with AddOffsetsToTxn; Produce stays below v12 and EndTxn
  below v5. With v2 Produce v12+ and TxnOffsetCommit add partitions and the group by
  themselves, and every EndTxn v5 answers with the producer's next epoch.
* Sequences: batches are built (given their sequence) when first sent and every batch of a
  transaction is answered before its EndTxn, so none is ever re-stamped across a transaction
  boundary. Each new epoch (InitProducerId, a v2 EndTxn) starts every partition at sequence
  0. With v1 the epoch stays across transactions, and an abort after a batch with a sequence
  failed or was dropped bumps it (InitProducerId with the current id and epoch, KIP-360), as
  the Java client does; with v2 the abort's EndTxn already did.
* Errors: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH (reported as PRODUCER_FENCED),
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED and INVALID_TXN_STATE are fatal; a record that failed
  inside the transaction, refused offsets (a stale generation, KIP-447) or any other failed
  request make the transaction abortable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from ..backoff import Backoff
from ..cluster.coordinator import COORDINATOR_ERRORS, CoordinatorLink, CoordinatorType
from ..cluster.metadata import Metadata
from ..cluster.pool import ConnectionPool, Role
from ..config import ClientConfig
from ..consumer import commit_offset_of, partition_of  # the consumer's own checks of an offset
from ..errors import (
    CONCURRENT_TRANSACTIONS,
    DESTROY,
    FATAL,
    FATAL_CODES,
    INVALID_PRODUCER_EPOCH,
    INVALID_TXN_STATE,
    NONE,
    OPERATION_NOT_ATTEMPTED,
    PRODUCER_FENCED,
    PURGE_QUEUE,
    STATE,
    TIMED_OUT,
    TRANSPORT,
    KafkaError,
)
from ..protocol.codec import (
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnResponse,
    ApiKey,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdResponse,
    TxnOffsetCommitResponse,
)
from ..protocol.connection import Connection, OffsetToCommit
from ..types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from .core import PartitionState
from .idempotence import ProducerIdentity
from .markers import MarkersWatch
from .transaction import (
    CONCURRENT_TRANSACTIONS_BACKOFF_S,
    OFFSETS_AFTER_MARKERS_BACKOFF_S,
    Transaction,
    TxnState,
    concurrent_transactions_delay_s,
)

TRANSACTION_VERSION_FEATURE = "transaction.version"
TRANSACTION_V1 = 1
TRANSACTION_V2 = 2
END_TXN_FIRST_V2_VERSION = 5  # EndTxn v5+ bumps the epoch (KIP-890)
PRODUCE_FIRST_V2_VERSION = 12  # Produce v12+ adds the partition to the transaction (KIP-890)
# Coordinator answers after which the same request is sent again (after a backoff).
RETRIABLE_CODES = COORDINATOR_ERRORS | {CONCURRENT_TRANSACTIONS}
# A request lost with its connection (or never answered): the coordinator is looked up again.
CONNECTION_LOST = frozenset({TRANSPORT, TIMED_OUT, STATE, DESTROY})
# EndTxn answers meaning the coordinator ended the transaction before us (a timeout) and
# bumped the epoch: the transaction must be aborted, then the epoch bumped (KIP-588).
ENDED_BY_COORDINATOR = frozenset({INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE})
# Errors that end the transactional producer (beyond errors.FATAL_CODES): the coordinator
# says our view of the transaction is impossible.
FATAL_TXN_CODES = FATAL_CODES | {INVALID_TXN_STATE}

Done = Callable[[KafkaError | None], object]
R = TypeVar("R")


class TxnProducer(Protocol):
    """What the manager needs of the producer (kafkaev.producer.Producer)."""

    def flush(self, cb: Callable[[KafkaError | None], object] | None = None) -> None: ...
    def abort_unsent(self, err: KafkaError) -> None: ...
    def close_open_batches(self) -> None: ...
    def close_batches_of(self, parts: list[PartitionState]) -> None: ...
    def reset_sequences(self) -> None: ...
    def wake(self) -> None: ...


class TransactionManager:
    """The public transactional calls, checked against the ``Transaction`` state, and the
    requests that carry them out."""

    def __init__(self, config: ClientConfig, loop: asyncio.AbstractEventLoop, metadata: Metadata,
                 pool: ConnectionPool, identity: ProducerIdentity, producer: TxnProducer,
                 report: Callable[[BaseException], None]) -> None:
        assert config.transactional_id is not None  # only a transactional client has one
        self._config = config
        self._loop = loop
        self._md = metadata
        self._pool = pool
        self._identity = identity
        self._producer = producer
        self._report = report
        self.transactional_id = config.transactional_id
        self.txn = Transaction(config.transactional_id)
        self._link = CoordinatorLink(config, loop, metadata, pool, config.transactional_id,
                                     CoordinatorType.TRANSACTION, Role.TXN)
        self._group_links: dict[str, CoordinatorLink] = {}
        self.version = TRANSACTION_V1  # chosen again at each InitProducerId
        self._adding = False  # v1: an AddPartitionsToTxn in flight
        self._requests = 0  # coordinator requests in flight (adds, offsets)
        self._offset_commits = 0  # v2: TxnOffsetCommits in flight (each adds the group)
        self._after_verifying: list[Callable[[], object]] = []  # v2: offset commits held by first batches
        self._idle_waiters: list[Callable[[], object]] = []
        self._commit: _PendingCommit | None = None  # the commit_transaction() not answered yet
        # v2: a transaction's first batches wait for the previous transaction's markers
        # (markers.py); its TxnOffsetCommit goes at once and learns of them itself
        self._markers = MarkersWatch(loop, self._link, config.transactional_id, self._markers_written)
        self._adds_wake: asyncio.TimerHandle | None = None
        self._closed = False

    @property
    def open(self) -> bool:
        """A transaction is open (possibly failed) and neither committing nor aborting."""
        return self.txn.state in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR)

    # --- what the sender and produce() ask ----------------------------------------------------
    @property
    def produce_max_version(self) -> int | None:
        """The newest Produce version this protocol allows (v1: below KIP-890's v12)."""
        return None if self.version >= TRANSACTION_V2 else PRODUCE_FIRST_V2_VERSION - 1

    def admit(self, part: PartitionState | None, readmitted: bool = False) -> None:
        """Before a batch opens (or a record waits for its topic): only inside a transaction. A
        record that waited for its topic's metadata was produced inside it, and is let in while
        the commit flushes."""
        txn = self.txn
        if txn.state is TxnState.IN_TRANSACTION or (readmitted and txn.state is TxnState.COMMITTING):
            if part is not None and part not in txn.added:
                if self.version < TRANSACTION_V2:
                    txn.want(part)
                    self._loop.call_soon(self._add_partitions)  # coalesced: one request per turn
                else:
                    self._first_batch_opened(part)
            return
        txn.require("produce", TxnState.IN_TRANSACTION)

    def may_send(self, part: PartitionState) -> bool:
        """May ``part``'s next batch go out now? Only while the transaction is open or
        committing; with v1 once the partition is in it; with v2 not while its first batch
        (which adds it) is unanswered, and a first batch not while a TxnOffsetCommit adds the
        group (see ``first_batch_sent``)."""
        txn = self.txn
        if not txn.sending:
            return False
        if part in txn.added:
            return part not in txn.verifying
        if self.version >= TRANSACTION_V2:
            return not self._offset_commits and self._adds_due()
        txn.want(part)
        self._add_partitions()
        return False

    def _first_batch_opened(self, part: PartitionState) -> None:
        """v2: ``part``'s first batch of the transaction opened. It goes as soon as the adds are
        due, not at the linger's end: its Produce has the leader add the partition, and that round
        trip then overlaps the records still to come, as v1's AddPartitionsToTxn overlaps the
        linger. Records produced in one turn with the commit are not split: the commit flushes
        them before ``_send_first_batches`` runs."""
        txn = self.txn
        if not txn.opened:
            self._loop.call_soon(self._send_first_batches)  # coalesced: once per turn
        txn.opened.add(part)

    def _send_first_batches(self) -> None:
        txn = self.txn
        if not txn.opened:
            return
        if not txn.in_transaction:  # committing: the flush sent them; aborting: dropped
            txn.opened.clear()
            return
        if not self._adds_due():  # the previous markers: _adds_now_due calls again
            return
        opened, txn.opened = txn.opened, set()
        # not a partition whose first batch is closed already and waits to be sent: its next
        # batch lingers, or a sender held back (an offset commit in flight) would meet a
        # short batch every turn
        self._producer.close_batches_of([part for part in opened if part not in txn.added and not part.queue])

    def _adds_due(self) -> bool:
        """v2: may the transaction's first batches go out yet (``MarkersWatch``)? If not, they
        go when the coordinator says the markers are written, or at the watch's bound: then the
        sender is woken."""
        if self._markers.written():
            return True
        if self._adds_wake is None:
            self._adds_wake = self._loop.call_later(self._markers.not_after - self._loop.time(), self._adds_now_due)
        return False

    def _markers_written(self) -> None:
        if self._adds_wake is not None:  # first batches wait: they go now, not at the bound
            self._adds_wake.cancel()
            self._adds_now_due()

    def _adds_now_due(self) -> None:
        self._adds_wake = None
        self._send_first_batches()
        self._producer.wake()

    def first_batch_lane(self, part: PartitionState) -> bool:
        """v2: is ``part``'s next batch its first of the transaction? The sender puts every such
        batch for a leader into one Produce on one connection (``first_batch_sent``)."""
        return self.version >= TRANSACTION_V2 and part not in self.txn.added

    def first_batch_sent(self, part: PartitionState) -> bool:
        """A batch of ``part`` went out; True when it was the partition's first of the
        transaction (v2): its leader now asks the coordinator to add the partition, and nothing
        more of the partition goes until it is answered (``batch_answered``). A broker that is
        asked twice at once for one transactional id (two connections' Produce, or a Produce
        and the group coordinator's TxnOffsetCommit) fails the older ask: the Produce with
        NOT_ENOUGH_REPLICAS, the TxnOffsetCommit with COORDINATOR_LOAD_IN_PROGRESS, each then
        retried after the retry backoff."""
        txn = self.txn
        if self.version < TRANSACTION_V2 or part in txn.added:
            return False
        txn.added.add(part)  # Produce v12+ adds it: the coordinator knows the transaction now
        txn.verifying.add(part)
        return True

    def batch_answered(self, part: PartitionState) -> None:
        """A Produce with a batch of ``part`` was answered (or failed): a partition's first batch
        no longer holds the rest, nor the offset commits waiting for every first batch."""
        txn = self.txn
        if part not in txn.verifying:
            return
        txn.verifying.discard(part)
        if not txn.verifying and self._after_verifying:
            waiting, self._after_verifying = self._after_verifying, []
            for send in waiting:
                send()

    def record_failed(self, err: KafkaError, had_sequence: bool) -> KafkaError:
        """A batch of the transaction failed: the error its records get (marked), and the
        transaction becomes abortable, or fatal when fenced."""
        txn = self.txn
        if had_sequence:
            txn.bump_required = True  # its sequence leaves a gap the broker would refuse
        if err.code == INVALID_PRODUCER_EPOCH:
            err = KafkaError(PRODUCER_FENCED, f"another producer with transactional id {self.transactional_id!r} "
                                              f"has a newer epoch: {err}")
        if err.code in FATAL_TXN_CODES:
            marked = KafkaError(err.code, err.message, fatal=True)
            self._go_fatal(marked)
            return marked
        marked = KafkaError(err.code, err.message, txn_requires_abort=True)
        if txn.record_failed is None:
            txn.record_failed = marked
        self._go_abortable(marked)
        return marked

    def sequence_dropped(self) -> None:
        """An abort dropped a batch that had a sequence: its gap needs a new epoch (v1)."""
        self.txn.bump_required = True

    def sequences_broken(self) -> None:
        """A sequence of the open transaction will never be written: it cannot commit."""
        self.txn.bump_required = True
        self._go_abortable(KafkaError(PURGE_QUEUE, "a batch of the transaction was split or lost its sequence",
                                      txn_requires_abort=True))

    # --- the public calls ---------------------------------------------------------------------
    def init_transactions(self, cb: Done) -> None:
        self._check_cb("init_transactions", cb)
        txn = self.txn
        txn.require("init_transactions", TxnState.UNINITIALIZED)
        txn.to(TxnState.INITIALIZING)

        def done(err: KafkaError | None) -> None:
            if err is None:
                txn.to(TxnState.READY)
            elif txn.state is TxnState.INITIALIZING:
                txn.to(TxnState.UNINITIALIZED)  # may be called again
            self._call(cb, err)

        self._init_producer_id(False, done)

    def begin_transaction(self) -> None:
        self.txn.begin()

    def send_offsets_to_transaction(self, offsets: Mapping[Any, int | OffsetAndMetadata],
                                    group_metadata: ConsumerGroupMetadata, cb: Done | None) -> None:
        what = "send_offsets_to_transaction"
        if cb is not None and not callable(cb):
            raise TypeError(f"{what}: 'cb' must be callable or None, got {type(cb).__name__}")
        if group_metadata is None:
            raise KafkaError(STATE, f"{what}: no consumer group: pass the consumer's group_metadata() "
                                    "(the client must be subscribed to a group)")
        if not isinstance(group_metadata, ConsumerGroupMetadata):
            raise TypeError(f"{what}: 'group_metadata' must be a kafkaev.ConsumerGroupMetadata "
                            f"(consumer.group_metadata()), got {type(group_metadata).__name__}")
        if group_metadata.generation_id < 0 or not group_metadata.member_id:
            # Without a generation the group coordinator cannot tell a zombie (KIP-447).
            raise KafkaError(STATE, f"{what}: the consumer is in no generation of group "
                                    f"{group_metadata.group_id!r} (joining or rebalancing); abort_transaction() "
                                    "and process its records again once it has its partitions")
        if not isinstance(offsets, Mapping):
            raise TypeError(f"{what}: 'offsets' must be a dict {{(topic, partition): offset}}, "
                            f"got {type(offsets).__name__}")
        rows = []
        for key, value in offsets.items():
            tp = partition_of(key, what)
            o = commit_offset_of(tp, value, what)
            rows.append(OffsetToCommit(tp.topic, tp.partition, o.offset, o.leader_epoch, o.metadata))
        txn = self.txn
        txn.require(what, TxnState.IN_TRANSACTION)
        self._requests += 1

        def done(err: KafkaError | None) -> None:
            self._requests -= 1
            if err is not None:
                err = self._failed_request(err)
            self._call(cb, err)
            self._maybe_idle()

        group = group_metadata.group_id
        if not rows:
            self._loop.call_soon(done, None)
        elif self.version >= TRANSACTION_V2 or txn.group_added == group:
            self._txn_offset_commit(rows, group_metadata, done)
        else:
            def added(resp: AddOffsetsToTxnResponse | None, err: KafkaError | None) -> None:
                if err is not None:
                    done(err)
                    return
                txn.group_added = group
                self._txn_offset_commit(rows, group_metadata, done)

            identity = self._identity
            self._coordinator(self._link, f"AddOffsetsToTxn for group {group!r}",
                              lambda conn, answer: conn.add_offsets_to_txn(
                                  self.transactional_id, identity.producer_id, identity.producer_epoch, group, answer),
                              _top_level_code, added, short_concurrent_backoff=True)

    def commit_transaction(self, cb: Done) -> None:
        self._check_cb("commit_transaction", cb)
        txn = self.txn
        txn.require("commit_transaction", TxnState.IN_TRANSACTION)
        txn.to(TxnState.COMMITTING)
        pending = self._commit = _PendingCommit(cb)

        def flushed(_err: KafkaError | None) -> None:
            self._when_idle(ended)

        def ended() -> None:
            # Already answered: the transaction failed while flushing (_go_abortable, _go_fatal).
            if pending.done:
                return
            if not txn.started:  # nothing was sent in it: nothing for the coordinator to end
                txn.finished()
                self._finish_commit(None)
                return
            self._end_txn(True, self._finish_commit)

        self._producer.flush(flushed)

    def _finish_commit(self, err: KafkaError | None) -> None:
        """The pending commit's callback, once."""
        pending = self._commit
        if pending is None or pending.done:
            return
        pending.done = True
        self._commit = None
        self._call(pending.cb, err)

    def abort_transaction(self, cb: Done) -> None:
        self._check_cb("abort_transaction", cb)
        txn = self.txn
        txn.require("abort_transaction", TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR)
        txn.to(TxnState.ABORTING)
        self._producer.abort_unsent(KafkaError(PURGE_QUEUE, "the transaction was aborted before the record was sent",
                                               txn_requires_abort=True))

        def flushed(_err: KafkaError | None) -> None:
            self._when_idle(ended)

        def ended() -> None:
            if txn.state is TxnState.FATAL_ERROR:
                self._call(cb, txn.error)
            elif not txn.started:
                self._after_abort(cb)
            else:
                self._end_txn(False, cb)

        self._producer.flush(flushed)  # waits for what is in flight

    def before_close(self, then: Callable[[], object]) -> None:
        """The client closes: abort a transaction still open; after a fatal error, fail what will
        never be sent now. Then ``then()``."""
        txn = self.txn
        if self.open:
            self.abort_transaction(lambda _err: then())
            return
        if txn.state is TxnState.FATAL_ERROR:
            cause = txn.error
            self._producer.abort_unsent(KafkaError(cause.code if cause is not None else FATAL,
                                                   f"not sent: the transactional producer stopped after {cause}",
                                                   fatal=True))
        then()

    def close(self) -> None:
        self._closed = True
        self._link.closed = True
        for link in self._group_links.values():
            link.closed = True
        if self._adds_wake is not None:
            self._adds_wake.cancel()
            self._adds_wake = None

    # --- requests -----------------------------------------------------------------------------
    def _init_producer_id(self, bump: bool, done: Done) -> None:
        identity = self._identity
        config = self._config

        def send(conn: Connection, answer: Callable[[InitProducerIdResponse | None, KafkaError | None], None]) -> None:
            self._choose_version(conn)
            conn.init_producer_id(answer, transactional_id=self.transactional_id,
                                  transaction_timeout_ms=config.transaction_timeout_ms,
                                  producer_id=identity.producer_id if bump else -1,
                                  producer_epoch=identity.producer_epoch if bump else -1)

        def answered(resp: InitProducerIdResponse | None, err: KafkaError | None) -> None:
            if err is None:
                assert resp is not None  # no error: an answer
                self._new_epoch(resp.producer_id, resp.producer_epoch)
            elif err.code in FATAL_TXN_CODES:
                err = KafkaError(err.code, err.message, fatal=True)
                self._go_fatal(err)
            done(err)

        self._coordinator(self._link, "InitProducerId", send, _top_level_code, answered)

    def _choose_version(self, conn: Connection) -> None:
        level = conn.finalized_features.get(TRANSACTION_VERSION_FEATURE, 0)
        try:
            v2 = (level >= TRANSACTION_V2 and conn.version_for(ApiKey.END_TXN) >= END_TXN_FIRST_V2_VERSION
                  and conn.version_for(ApiKey.PRODUCE) >= PRODUCE_FIRST_V2_VERSION)
        except KafkaError:  # the broker lacks one of them
            v2 = False
        self.version = TRANSACTION_V2 if v2 else TRANSACTION_V1

    def _new_epoch(self, producer_id: int, producer_epoch: int) -> None:
        """A new producer id or epoch (nothing in flight): sequences start again from 0."""
        self._identity.assign(producer_id, producer_epoch)
        self.txn.bump_required = False
        self._producer.reset_sequences()

    def _add_partitions(self) -> None:
        """v1: add the partitions waiting for it, one AddPartitionsToTxn at a time."""
        txn = self.txn
        if self._adding or not txn.pending or not txn.sending:
            return
        parts = list(txn.pending)
        # The transaction's first add meets CONCURRENT_TRANSACTIONS while the previous one's
        # markers are being written: retried within milliseconds (the Java client's rule).
        first = not txn.added
        self._adding = True
        self._requests += 1
        identity = self._identity

        def answered(resp: AddPartitionsToTxnResponse | None, err: KafkaError | None) -> None:
            self._adding = False
            self._requests -= 1
            if err is None:
                txn.now_added(parts)
                self._producer.wake()
                self._add_partitions()  # those that became pending meanwhile
            else:
                self._failed_request(err)
            self._maybe_idle()

        self._coordinator(self._link, "AddPartitionsToTxn",
                          lambda conn, answer: conn.add_partitions_to_txn(
                              self.transactional_id, identity.producer_id, identity.producer_epoch,
                              [TopicPartition(p.topic, p.partition) for p in parts], answer),
                          _add_partitions_code, answered,
                          short_concurrent_backoff=first)

    def _txn_offset_commit(self, rows: list[OffsetToCommit], meta: ConsumerGroupMetadata, done: Done) -> None:
        identity = self._identity
        link = self._group_links.get(meta.group_id)
        if link is None:
            link = self._group_links[meta.group_id] = CoordinatorLink(
                self._config, self._loop, self._md, self._pool, meta.group_id, CoordinatorType.GROUP, Role.TXN)
        v2 = self.version >= TRANSACTION_V2
        markers = self._markers
        if v2:
            # Not held for the previous transaction's markers, as first batches are: while they
            # are being written the group coordinator answers CONCURRENT_TRANSACTIONS at once
            # (a Produce's leader would hold the add for 20 ms), so the offset commit is retried
            # at once until the watch's bound, and its acceptance says they are written.
            if self.txn.verifying:  # the group is added after the partitions (first_batch_sent)
                self._after_verifying.append(lambda: self._txn_offset_commit(rows, meta, done))
                return
            self.txn.offsets_sent = True  # TxnOffsetCommit v5 adds the group to the transaction
            self._offset_commits += 1

        def answered(resp: TxnOffsetCommitResponse | None, err: KafkaError | None) -> None:
            if v2:
                self._offset_commits -= 1
                if err is None:
                    markers.add_accepted()
                if not self._offset_commits:
                    self._producer.wake()  # first batches held by the offset commit
            done(err)

        self._coordinator(link, f"TxnOffsetCommit for group {meta.group_id!r}",
                          lambda conn, answer: conn.txn_offset_commit(
                              self.transactional_id, meta.group_id, identity.producer_id, identity.producer_epoch,
                              rows, answer, generation_id=meta.generation_id, member_id=meta.member_id,
                              group_instance_id=meta.group_instance_id),
                          _txn_offset_commit_code, answered, short_concurrent_backoff=True,
                          retry_at_once=markers.pending if v2 else None)

    def _end_txn(self, commit: bool, cb: Done) -> None:
        txn = self.txn
        identity = self._identity
        what = "commit_transaction" if commit else "abort_transaction"
        v2 = self.version >= TRANSACTION_V2
        lost_answer = False  # an attempt may have reached the coordinator before it moved

        def answer_lost() -> None:
            nonlocal lost_answer
            lost_answer = True

        def send(conn: Connection, answer: Callable[[EndTxnResponse | None, KafkaError | None], None]) -> None:
            if v2:
                conn.end_txn(self.transactional_id, identity.producer_id, identity.producer_epoch, commit, answer)
                return
            # v1 on a broker that speaks v5: stay below it, v5 would ask for KIP-890's semantics
            version = min(conn.version_for(ApiKey.END_TXN), END_TXN_FIRST_V2_VERSION - 1)
            conn.request(ApiKey.END_TXN, EndTxnRequest(transactional_id=self.transactional_id,
                                                       producer_id=identity.producer_id,
                                                       producer_epoch=identity.producer_epoch, committed=commit),
                         lambda resp, err: answer(resp if isinstance(resp, EndTxnResponse) else None, err),
                         version=version)

        def answered(resp: EndTxnResponse | None, err: KafkaError | None) -> None:
            if err is not None and commit and lost_answer and err.code in CONNECTION_LOST:
                # EndTxn(commit) went out and no attempt was answered before the retries
                # stopped: the coordinator may have committed. Abortable, and said so.
                err = KafkaError(err.code, f"{what}: the outcome is unknown: EndTxn(commit) was sent but no answer "
                                           f"came back within delivery_timeout_ms, the transaction may have "
                                           f"committed: {err.message or err.description}",
                                 txn_requires_abort=True, txn_outcome_unknown=True)
                self._go_abortable(err, err)
                self._call(cb, err)
                return
            if err is not None and err.code == PRODUCER_FENCED and commit and lost_answer:
                # The commit's retry, after the coordinator moved with an attempt's outcome
                # unknown: a 4.x coordinator answers so when the transaction was aborted on its
                # side meanwhile (the epoch then moved on by one), or when a coordinator that
                # took over completed the commit without knowing the epoch it bumped
                # (DESIGN.md, Transactions); a fence cannot be told from here. The abort tells: it
                # succeeds or is refused as ended, and fails PRODUCER_FENCED when another
                # producer really took the id.
                err = KafkaError(INVALID_TXN_STATE, f"{what}: the outcome is unknown: the coordinator moved during "
                                                    f"the commit and answered its retry PRODUCER_FENCED: {err.message}",
                                 txn_requires_abort=True, txn_outcome_unknown=True)
                txn.bump_required = True
                self._go_abortable(err, err)
                self._call(cb, err)
                return
            if err is not None and err.code in ENDED_BY_COORDINATOR:
                # The coordinator aborted the transaction itself (it outlived
                # transaction_timeout_ms) and moved the epoch on; a newer producer would have
                # been answered PRODUCER_FENCED. KIP-588: abort, then bump the epoch and go on.
                if not commit:
                    txn.bump_required = True
                    self._after_abort(cb)
                    return
                txn.bump_required = True  # v1: the abort then takes the next epoch (v2's EndTxn gives it)
                err = KafkaError(err.code, f"{what}: the coordinator already aborted the transaction (open longer "
                                           f"than transaction_timeout_ms?): {err.message or err.description}",
                                 txn_requires_abort=True)
                self._go_abortable(err, err)
                self._call(cb, err)
                return
            if err is not None:
                err = KafkaError(err.code, f"{what}: EndTxn: {err.message or err.description}",
                                 fatal=err.code in FATAL_TXN_CODES, txn_requires_abort=err.code not in FATAL_TXN_CODES)
                if err.fatal:
                    self._go_fatal(err)
                elif txn.state is TxnState.COMMITTING:
                    self._go_abortable(err, err)
                elif txn.state is TxnState.ABORTING:
                    txn.error = err
                    txn.to(TxnState.ABORTABLE_ERROR)  # abort_transaction() may be called again
                self._call(cb, err)
                return
            assert resp is not None  # no error: an answer
            if v2:
                self._new_epoch(resp.producer_id, resp.producer_epoch)  # KIP-890: every EndTxn bumps it
                self._markers.ended()
            if commit:
                txn.finished()
                self._call(cb, None)
            else:
                self._after_abort(cb)

        self._coordinator(self._link, f"EndTxn({'commit' if commit else 'abort'})", send, _top_level_code, answered,
                          answer_lost)

    def _after_abort(self, cb: Done) -> None:
        """v1: a sequence of the aborted transaction was lost, so the epoch moves on first."""
        txn = self.txn
        if not txn.bump_required:
            txn.finished()
            self._call(cb, None)
            return

        def bumped(err: KafkaError | None) -> None:
            if err is None:
                txn.finished()
            elif txn.state is TxnState.ABORTING:
                txn.error = err
                txn.to(TxnState.ABORTABLE_ERROR)
            self._call(cb, err)

        self._init_producer_id(True, bumped)

    def _coordinator(self, link: CoordinatorLink, what: str,
                     send: Callable[[Connection, Callable[[R | None, KafkaError | None], None]], None],
                     code_of: Callable[[R], int], done: Callable[[R | None, KafkaError | None], object],
                     on_lost_answer: Callable[[], object] | None = None,
                     short_concurrent_backoff: bool = False,
                     retry_at_once: Callable[[], bool] | None = None) -> None:
        """Send one request to ``link``'s coordinator; ``done(resp, None)`` on success, else
        ``done(None, err)`` once. Coordinator moves, lost connections and
        CONCURRENT_TRANSACTIONS are retried with backoff until delivery_timeout_ms;
        ``on_lost_answer()`` (before the retry or ``done``) when an attempt was written and its
        answer lost, so its outcome is unknown. An attempt that never went out (no connection)
        is not one. ``short_concurrent_backoff``: CONCURRENT_TRANSACTIONS, the coordinator
        completing the previous transaction, is retried within milliseconds
        (``concurrent_transactions_delay_s``); with ``retry_at_once``, at once while it says so
        and from ``OFFSETS_AFTER_MARKERS_BACKOFF_S`` after."""
        backoff = Backoff(self._config.retry_backoff)
        concurrent_retries = 0
        deadline = self._loop.time() + self._config.delivery_timeout_ms / 1000.0

        def attempt() -> None:
            link.get(on_conn)

        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if err is not None:
                retry_or_fail(err, False)
                return
            assert conn is not None  # no error: a connection
            try:
                send(conn, on_answer)
            except KafkaError as exc:  # refused before it was written
                retry_or_fail(exc, False)

        def on_answer(resp: R | None, err: KafkaError | None) -> None:
            if err is None:
                assert resp is not None  # no error: an answer
                code = code_of(resp)
                if code == NONE:
                    done(resp, None)
                    return
                err = KafkaError(code, f"{what} for transactional id {self.transactional_id!r}")
                retry_or_fail(err, False)
                return
            retry_or_fail(err, True)

        def retry_or_fail(err: KafkaError, written: bool) -> None:
            coordinator_moved = link.on_error_code(err.code)
            if err.code in CONNECTION_LOST:
                link.forget()
                if written and on_lost_answer is not None:
                    on_lost_answer()
            retriable = coordinator_moved or err.retriable or err.code in RETRIABLE_CODES or err.code in CONNECTION_LOST
            if retriable and not self._closed and self._loop.time() < deadline:
                nonlocal concurrent_retries
                delay = backoff.next_delay_s()
                if err.code == CONCURRENT_TRANSACTIONS and short_concurrent_backoff:
                    if retry_at_once is not None and retry_at_once():
                        delay = 0.0
                    else:
                        first_s = (CONCURRENT_TRANSACTIONS_BACKOFF_S if retry_at_once is None
                                   else OFFSETS_AFTER_MARKERS_BACKOFF_S)
                        delay = concurrent_transactions_delay_s(concurrent_retries, delay, first_s)
                        concurrent_retries += 1
                self._loop.call_later(delay, attempt)
                return
            done(None, err)

        attempt()

    # --- state helpers ------------------------------------------------------------------------
    def _failed_request(self, err: KafkaError) -> KafkaError:
        """An add or the offsets failed: fatal when fenced, else the transaction must abort."""
        if err.code == INVALID_PRODUCER_EPOCH:
            err = KafkaError(PRODUCER_FENCED, f"another producer took transactional id "
                                              f"{self.transactional_id!r}: {err}")
        if err.code in FATAL_TXN_CODES:
            err = KafkaError(err.code, err.message, fatal=True)
            self._go_fatal(err)
            return err
        err = KafkaError(err.code, err.message, txn_requires_abort=True)
        self._go_abortable(err)
        return err

    def _go_abortable(self, err: KafkaError, commit_error: KafkaError | None = None) -> None:
        """``commit_error``: what the pending commit is answered, when ``err`` is the commit's
        own (EndTxn's) failure, as it is."""
        txn = self.txn
        if txn.sending:
            txn.abortable(err)
            self._producer.close_open_batches()  # produce() now meets the refusal at once
            # A commit waiting for its records hears now, not when the rest (which will never
            # be sent) times out.
            self._finish_commit(commit_error or KafkaError(
                err.code, f"commit_transaction: the transaction cannot commit: {err}", txn_requires_abort=True))

    def _go_fatal(self, err: KafkaError) -> None:
        self.txn.fatal(err)
        self._producer.close_open_batches()
        self._finish_commit(KafkaError(err.code, err.message, fatal=True))

    def _when_idle(self, fn: Callable[[], object]) -> None:
        """``fn()`` once no add or offsets request is in flight."""
        if self._requests == 0:
            fn()
        else:
            self._idle_waiters.append(fn)

    def _maybe_idle(self) -> None:
        if self._requests == 0 and self._idle_waiters:
            waiters, self._idle_waiters = self._idle_waiters, []
            for fn in waiters:
                fn()

    def _call(self, cb: Done | None, err: KafkaError | None) -> None:
        if cb is None:
            if err is not None:
                self._report(err)
            return
        try:
            cb(err)
        except Exception as exc:  # noqa: BLE001
            self._report(exc)

    @staticmethod
    def _check_cb(what: str, cb: object) -> None:
        if not callable(cb):
            raise TypeError(f"{what}: 'cb' must be callable, got {type(cb).__name__}")


class _PendingCommit:
    """A commit_transaction() call until its callback was called."""

    __slots__ = ("cb", "done")

    def __init__(self, cb: Done) -> None:
        self.cb = cb
        self.done = False


def _top_level_code(resp: InitProducerIdResponse | AddOffsetsToTxnResponse | EndTxnResponse) -> int:
    return resp.error_code


def _add_partitions_code(resp: AddPartitionsToTxnResponse) -> int:
    """The first partition's error other than OPERATION_NOT_ATTEMPTED (the others' echo)."""
    first = NONE
    for topic in resp.results_by_topic_v3_and_below:
        for part in topic.results_by_partition:
            code = part.partition_error_code
            if code != NONE and code != OPERATION_NOT_ATTEMPTED:
                if code in RETRIABLE_CODES or code in FATAL_TXN_CODES:
                    return code
                if first == NONE:
                    first = code
    if first == NONE and any(p.partition_error_code == OPERATION_NOT_ATTEMPTED
                             for t in resp.results_by_topic_v3_and_below for p in t.results_by_partition):
        return OPERATION_NOT_ATTEMPTED
    return first if first != NONE else resp.error_code


def _txn_offset_commit_code(resp: TxnOffsetCommitResponse) -> int:
    for topic in resp.topics:
        for part in topic.partitions:
            if part.error_code != NONE:
                return int(part.error_code)
    return NONE
