"""Drains ready batches to partition leaders and settles every batch exactly once.

* All ready batches for one leader go out together: one Produce request carries at most one
  batch per partition (the broker's rule since Produce v3), so a partition with several
  queued batches fills consecutive requests, pipelined on that leader's PRODUCE connection
  up to ``max_in_flight`` per partition.
* A batch is encoded (and, when idempotent, given its sequence) the first time it is sent,
  and resent byte for byte on retry.
* Answers: success (or DUPLICATE_SEQUENCE_NUMBER: already written) completes the records'
  callbacks with their offsets; a retriable error puts the batch back in its partition's
  queue in sequence order, with backoff, until ``delivery_timeout_ms``; NOT_LEADER_OR_FOLLOWER
  uses the new leader from the response (KIP-951) before asking for a metadata refresh; any
  other error fails the batch's records.
* Idempotent ordering: after a retriable failure a partition sends nothing until all its
  in-flight batches are answered, then resends its queue in order with the same sequences.
  A sequence the broker no longer accepts (KIP-360) triggers an epoch bump once nothing is
  in flight. The partitions whose sequences broke then start again from sequence 0, their
  queued batches re-stamped. Every other partition first resends the batches it had already
  sent, unchanged under the old producer id and epoch (the broker may have written them and
  must see their old sequence to drop them), and starts its new batches from 0 once those
  are answered, as the Java producer does.
"""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

from ..backoff import Backoff, RetryTimer
from ..cluster.metadata import BrokerInfo, Metadata
from ..cluster.pool import ConnectionPool, Role
from ..config import ClientConfig
from ..errors import (
    CONCURRENT_TRANSACTIONS,
    DESTROY,
    DUPLICATE_SEQUENCE_NUMBER,
    FENCED_LEADER_EPOCH,
    LEADER_NOT_AVAILABLE,
    MESSAGE_TOO_LARGE,
    MSG_TIMED_OUT,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OUT_OF_ORDER_SEQUENCE_NUMBER,
    PROTOCOL,
    STATE,
    UNKNOWN_LEADER_EPOCH,
    UNKNOWN_PRODUCER_ID,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    KafkaError,
)
from ..protocol.codec import (
    EncodedBatch,
    PartitionProduceResponse,
    ProduceResponse,
    ProduceResponseNodeEndpoint,
)
from ..protocol.connection import Connection, ProducePartition
from ..types import NO_OFFSET, NO_TIMESTAMP
from .accumulator import Accumulator, PartitionState, ProducerBatch
from .held import ALL_LANES, ConnectionKey
from .idempotence import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, ProducerIdentity, next_sequence
from .transaction import concurrent_transactions_delay_s

if TYPE_CHECKING:
    from .transaction_manager import TransactionManager

log = logging.getLogger("kafkaev.producer")  # kafkaev/log.py names the areas

# Errors meaning "your idea of the leader is stale": look up the leader again.
LEADER_ERRORS = frozenset({
    NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH,
    UNKNOWN_LEADER_EPOCH,
    # Produce v13+ names the topic by id: a topic deleted and created again has a new one.
    UNKNOWN_TOPIC_ID,
})
# Errors meaning the broker does not accept this producer's sequence state (KIP-360).
SEQUENCE_ERRORS = frozenset({OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID})
# A connection closed under a request (not by close()): the outcome is unknown, retry.
CONNECTION_CLOSED = frozenset({DESTROY, STATE})
# Delivery deadlines are checked this often at most (seconds).
SWEEP_INTERVAL_MAX_S = 0.1
# The produce connection (lane) of a leader that carries a transaction's first batches (v2):
# one Produce for all of them, so the leader asks the coordinator to add them in one request.
FIRST_BATCH_LANE = 0


class _Lane(NamedTuple):
    leader: int
    lane: int


class Sender:
    def __init__(
        self,
        config: ClientConfig,
        loop: asyncio.AbstractEventLoop,
        acc: Accumulator,
        metadata: Metadata,
        pool: ConnectionPool,
        report: Callable[[BaseException], None],
        on_batch_done: Callable[[], None],
    ) -> None:
        self._config = config
        self._loop = loop
        self._acc = acc
        self._batches = acc.batches  # each batch's bookkeeping, completed here
        self._md = metadata
        self._pool = pool
        self._report = report  # a user callback raised: to on_error / the loop's handler
        self._on_batch_done = on_batch_done
        self._acks = config.acks
        self._max_in_flight = config.max_in_flight
        self._max_request_size = config.max_request_size
        self._lanes = config.produce_connections
        self._lane_of: dict[PartitionState, _Lane] = {}  # the leader and lane a partition sends on
        self._next_lane: dict[int, int] = {}  # per leader: the lane its next new partition takes
        self._request_timeout_ms = config.request_timeout_ms
        self.identity = ProducerIdentity() if config.idempotent else None
        # A transactional producer's manager: it owns the identity (InitProducerId, EndTxn v5
        # epochs), gates each partition's batches, and turns failures into the transaction's state.
        self.txn: TransactionManager | None = None
        self._transactional_id = config.transactional_id
        self._identity_backoff = Backoff(config.retry_backoff)  # InitProducerId waits and retries
        self._bump_needed = False
        # The partitions whose sequence state the broker lost or refused, or that skipped a
        # sequence: restamped from 0 at the next bump.
        self._resequence_parts: set[PartitionState] = set()
        # Batches sent under an earlier producer id/epoch and resent as they are, until answered;
        # their partition's new batches wait for them.
        self._earlier_identity: set[ProducerBatch] = set()
        self.in_flight = 0  # batches sent and not yet answered, all partitions
        # Per leader: requests out that carry only batches the accumulator would hold for its
        # leader's small requests (Accumulator.coalesces), what ALL_LANES counts.
        self._coalescing_out: dict[int, int] = {}
        self._scheduled = False
        self._retry_timer = RetryTimer(loop, self.send_ready)  # partitions backing off, InitProducerId
        self._sweep_timer: asyncio.TimerHandle | None = None
        self._sweep_s = min(SWEEP_INTERVAL_MAX_S, config.delivery_timeout_ms / 10000.0)
        self._closed = False
        acc.count_requests_with(self)

    # --- scheduling ----------------------------------------------------------------------------
    def wake(self) -> None:
        """Something became ready: send on the next loop iteration (coalesced)."""
        if not self._scheduled and not self._closed:
            self._scheduled = True
            self._loop.call_soon(self._run)
        if self._sweep_timer is None and not self._closed:
            self._sweep_timer = self._loop.call_later(self._sweep_s, self._sweep)

    def send_now(self) -> None:
        """Something became ready: send in this turn. From the linger timer (waking instead
        cost one more turn of the loop between the linger's end and the write, paid by every
        record at ``linger_ms=0``), and at ``linger_ms=0`` from ``produce()`` once a batch holds
        a first step."""
        if self._closed:
            return
        if self._sweep_timer is None:
            self._sweep_timer = self._loop.call_later(self._sweep_s, self._sweep)
        self.send_ready()

    def _run(self) -> None:
        self._scheduled = False
        self.send_ready()

    def _wake_at(self, when: float) -> None:
        self._retry_timer.arm_at(when)

    # --- sending -------------------------------------------------------------------------------
    def send_ready(self) -> None:
        """Send every batch that may go now. It runs no callback of the user's (a connection
        never calls back from inside the call that sent), so a ``produce()`` that sends at
        once (``send_now``) never runs inside it."""
        acc = self._acc
        if acc.held:
            acc.close_held()
        if not acc.ready or self._closed:
            return
        identity = self.identity
        txn = self.txn
        if identity is not None and (self._bump_needed or not identity.ready):
            if txn is None:  # a transactional producer's identity comes from its manager
                self._prepare_identity()
            return
        now = self._loop.time()
        max_in_flight = self._max_in_flight
        by_connection: dict[tuple[int, int], list[PartitionState]] = {}
        # The earliest end of a backoff among the partitions passed over: one timer for them
        # all. Over a topic just created, hundreds of partitions back off at once, and asking
        # the timer for each, at every round, was a sixth of the producer's time.
        backoff_ends = math.inf
        for part in acc.ready:  # a snapshot; each one has a batch queued
            queue = part.queue
            retry_at = part.retry_at
            if retry_at > now:
                if retry_at < backoff_ends:
                    backoff_ends = retry_at
                continue
            if txn is not None and not txn.may_send(part):
                continue  # outside the open transaction, or not added to it yet (v1) or being added (v2)
            in_flight = queue.in_flight_count
            if part.retrying:
                if in_flight:
                    continue  # resend in order only once everything in flight is answered
                part.retrying = False
            if in_flight >= max_in_flight:
                continue
            if in_flight and (queue.head.split or queue.last_in_flight.split):
                continue  # a split batch's halves go one at a time (ProducerBatch.split)
            if part.leader < 0:
                self._md.request_refresh()
                continue
            # a transaction's first batches (v2) share one Produce: their leader adds them at once
            lane = FIRST_BATCH_LANE if txn is not None and txn.first_batch_lane(part) else self._lane(part)
            key = (part.leader, lane)
            group = by_connection.get(key)
            if group is None:
                by_connection[key] = [part]
            else:
                group.append(part)
        for (leader, lane), parts in by_connection.items():
            conn = self._pool.ready(leader, Role.PRODUCE, lane)
            if conn is None:
                self._pool.get(leader, Role.PRODUCE, partial(self._on_connection, leader, lane), lane)
                continue
            if conn.on_writable is None:
                conn.on_writable = self._on_writable
            if not conn.writable:
                continue  # back-pressure: on_writable(True) wakes us
            self._send_to(conn, parts)
        if backoff_ends != math.inf:
            self._wake_at(backoff_ends)

    def _lane(self, part: PartitionState) -> int:
        """Which of the leader's produce connections ``part`` sends on: the one it was given
        when it first sent to this leader, the leader's lanes taken in turn, so partitions
        spread evenly over them and a partition's requests stay in order on one socket. A new
        leader gives it a new lane once nothing of it is in flight to the old one."""
        if self._lanes == 1:
            return 0
        assigned = self._lane_of.get(part)
        if assigned is not None and (assigned.leader == part.leader or part.queue.in_flight_count):
            return assigned.lane
        lane = self._next_lane.get(part.leader, 0)
        self._next_lane[part.leader] = (lane + 1) % self._lanes
        self._lane_of[part] = _Lane(part.leader, lane)
        if assigned is not None:
            self._acc.connections_moved()  # it may be held, filed under its old lane
        return lane

    # --- what the accumulator asks (ProduceConnections) ------------------------------------------
    def connection_of(self, part: PartitionState) -> ConnectionKey:
        """The produce connection ``part``'s next batch goes on: (leader, lane). Asked by the
        accumulator when ``part``'s batch has lingered, once per held partition and round."""
        assigned = self._lane_of.get(part)
        if assigned is not None and assigned.leader == part.leader:
            return assigned  # the common case: no new key made
        return _Lane(part.leader, self._lane(part))

    def requests_out(self, connection: ConnectionKey) -> int:
        """How many requests ``connection`` has out (0 when it is not connected); with lane
        ``ALL_LANES``, how many requests of small batches only its leader has out over all of
        its produce connections."""
        leader, lane = connection
        if leader < 0:
            return 0
        if lane == ALL_LANES:
            return self._coalescing_out.get(leader, 0)
        conn = self._pool.ready(leader, Role.PRODUCE, lane)
        return 0 if conn is None else conn.pending

    def _on_connection(self, node_id: int, lane: int, conn: Connection | None, err: KafkaError | None) -> None:
        if err is None:
            self.wake()
        else:
            # The pool backs off (and reports the failure: metadata refresh); ask again when its
            # backoff is over, not after a wait of our own on top.
            self._wake_at(self._loop.time() + self._pool.retry_in_s(node_id, Role.PRODUCE, lane))

    def _on_writable(self, writable: bool) -> None:
        if writable:
            self.wake()

    def _send_to(self, conn: Connection, parts: list[PartitionState]) -> None:
        txn = self.txn
        max_in_flight = self._max_in_flight
        max_size = self._max_request_size
        while parts:
            request: list[ProducerBatch] = []
            size = 0
            again: list[PartitionState] = []
            for part in parts:
                queue = part.queue
                batch = queue.head
                data = batch.data
                if data is None:
                    if self._earlier_identity and self._awaits_earlier_identity(part):
                        continue  # its first batch under the new epoch goes after the old ones
                    data = self._build(batch)
                if request and size + len(data) > max_size:
                    again.append(part)
                    continue
                queue.send_head()
                request.append(batch)
                size += len(data)
                if txn is not None and txn.first_batch_sent(part):
                    continue  # the rest follows its answer (on the partition's own lane)
                if queue and queue.in_flight_count < max_in_flight and not batch.split and not queue.head.split:
                    again.append(part)
            self._send_request(conn, request)
            parts = again

    def _build(self, batch: ProducerBatch) -> EncodedBatch:
        part = batch.part
        identity = self.identity
        builder = batch.builder
        assert builder is not None  # not built yet: the batch has not completed
        if identity is not None:
            if batch.base_seq < 0:  # else a split half, given its share of the original's sequences
                batch.base_seq = part.next_seq
                part.next_seq = next_sequence(part.next_seq, batch.record_count)
            batch.producer_epoch = identity.producer_epoch
            data = builder.finish(producer_id=identity.producer_id, producer_epoch=identity.producer_epoch,
                                  base_sequence=batch.base_seq, transactional=self.txn is not None)
        else:
            data = builder.finish()
        # The builder stays with the batch until it completes (Accumulator.release): a large
        # batch's data holds the builder's buffer, taken back warm for a later batch.
        self._batches.budget.rebase(batch, len(data))
        batch.data = data
        return data

    def _awaits_earlier_identity(self, part: PartitionState) -> bool:
        earlier = self._earlier_identity
        return any(b in earlier for b in part.queue.in_flight)

    def _send_request(self, conn: Connection, batches: list[ProducerBatch]) -> None:
        self.in_flight += len(batches)
        # With every topic's id known the request may name topics by id (Produce v13+).
        payload = []
        topic_ids: dict[str, uuid.UUID | None] = {}  # looked up once per topic, not per batch
        for b in batches:
            assert b.data is not None  # encoded by _send_to
            part = b.part
            topic = part.topic
            if topic in topic_ids:
                topic_id = topic_ids[topic]
            else:
                topic_id = topic_ids[topic] = self._topic_id(topic)
            payload.append(ProducePartition(topic, part.partition, b.data, topic_id))

        coalescing_leader = batches[0].part.leader if all(map(self._acc.coalesces, batches)) else None
        if coalescing_leader is not None:
            self._coalescing_out[coalescing_leader] = self._coalescing_out.get(coalescing_leader, 0) + 1

        def on_response(resp: ProduceResponse | None, err: KafkaError | None) -> None:
            if coalescing_leader is not None:
                self._coalescing_out[coalescing_leader] -= 1
            self._on_response(batches, resp, err)

        txn = self.txn
        if log.isEnabledFor(logging.DEBUG):
            log.debug("Produce to %s:%s: %d batches, %d records, %d bytes (%s)", conn.host, conn.port, len(batches),
                      sum(b.record_count for b in batches), sum(b.reserved for b in batches),
                      ", ".join(f"{b.part.topic}[{b.part.partition}]" for b in batches))
        try:
            conn.produce_batch(payload, on_response, acks=self._acks, timeout_ms=self._request_timeout_ms,
                               transactional_id=self._transactional_id,
                               max_version=txn.produce_max_version if txn is not None else None)
        except KafkaError as exc:  # e.g. the connection dropped between ready() and now
            self._loop.call_soon(on_response, None, exc)

    def _topic_id(self, topic: str) -> uuid.UUID | None:
        info = self._md.topic(topic)
        return None if info is None else info.topic_id

    # --- answers -------------------------------------------------------------------------------
    def _on_response(self, batches: list[ProducerBatch], resp: ProduceResponse | None, err: KafkaError | None) -> None:
        self.in_flight -= len(batches)
        if err is not None:
            for b in batches:
                self._failed(b, err, None, ())
            self._md.request_refresh()
        elif resp is None:  # acks=0: complete at write time, no offsets
            for b in batches:
                self._succeeded(b, NO_OFFSET, NO_TIMESTAMP)
            self._on_batch_done()
        else:
            answers: dict[tuple[str, int], PartitionProduceResponse] = {}
            for t in resp.responses:  # named by the connection, also when the request gave ids
                for p in t.partition_responses:
                    answers[(t.name, p.index)] = p
            endpoints = resp.node_endpoints
            succeeded = False
            for b in batches:
                answer = answers.get((b.part.topic, b.part.partition))
                if answer is None:
                    self._failed(b, KafkaError(PROTOCOL, "the Produce response has no answer for this partition"),
                                 None, ())
                    continue
                code = answer.error_code
                if code == NONE or code == DUPLICATE_SEQUENCE_NUMBER:
                    self._succeeded(b, answer.base_offset, answer.log_append_time_ms)
                    succeeded = True
                else:
                    self._failed(b, KafkaError(code, answer.error_message), answer, endpoints)
            if succeeded:
                self._on_batch_done()
        if self.txn is not None:
            for b in batches:
                self.txn.batch_answered(b.part)
        self._acc.close_unlingered()
        self.send_ready()

    def _succeeded(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        """``batch`` was written; the caller calls ``_on_batch_done`` once for the response's
        batches (a frame per batch counts when most carry a record or two)."""
        if self._earlier_identity:
            self._earlier_identity.discard(batch)
        self._batches.complete(batch, base_offset, log_append_time, self._report)

    def _failed(self, batch: ProducerBatch, err: KafkaError, answer: PartitionProduceResponse | None,
                endpoints: Sequence[ProduceResponseNodeEndpoint]) -> None:
        batch.part.queue.answered(batch)
        part = batch.part
        code = err.code
        batch.last_error = err
        batch.outcome_unknown = answer is None
        if code == MESSAGE_TOO_LARGE and batch.record_count > 1:
            # The topic's max.message.bytes is below this batch: its records go again as two
            # halves, as the Java producer does; only a single record that is too large fails.
            self._earlier_identity.discard(batch)  # replaced by its halves
            try:
                self._acc.split(batch)
            except KafkaError as exc:  # its own bytes did not decode: cannot happen, but fail it once
                self._fail(batch, KafkaError(code, f"{err.message or err.name}; splitting the batch failed: {exc}"))
                return
            if self.identity is not None and batch.base_seq >= 0:
                if self.txn is not None:
                    # no new epoch inside a transaction: the halves take the refused batch's
                    # sequences, which the broker never wrote, so the later ones stay valid
                    self._halves_keep_sequences(batch)
                else:
                    self._need_resequence(part)  # its sequence was never written: the later ones restart
            return
        if self.identity is not None and code in SEQUENCE_ERRORS:
            if self.txn is not None and not self._earlier_pending(batch):
                self._fail(batch, err)  # inside a transaction: it must abort, the abort bumps the epoch
                return
            if not self._earlier_pending(batch):
                # the broker lost or rejects our sequence state: new epoch, sequences from 0
                self._need_resequence(part)
            self._retry(batch, immediate=True)
            return
        if not err.retriable and not (code in CONNECTION_CLOSED and not self._closed):
            self._fail(batch, err)
            return
        if code in LEADER_ERRORS and not self._use_current_leader(part, answer, endpoints):
            self._md.request_refresh()
        if self._loop.time() >= batch.deadline:
            self._fail(batch, KafkaError(MSG_TIMED_OUT, f"not delivered within delivery_timeout_ms; last error: {err}"))
            return
        self._retry(batch, immediate=False, concurrent_transactions=code == CONCURRENT_TRANSACTIONS)

    def _earlier_pending(self, batch: ProducerBatch) -> bool:
        """Is a batch sent before this one of the same partition still unresolved (its failure
        explains this OUT_OF_ORDER_SEQUENCE_NUMBER)?"""
        part = batch.part
        return any(b.order < batch.order and (b.data is not None or b.base_seq >= 0) for b in part.queue) or any(
            b.order < batch.order for b in part.queue.in_flight
        )

    def _halves_keep_sequences(self, batch: ProducerBatch) -> None:
        """A transactional batch split after MESSAGE_TOO_LARGE: its halves (queued, unbuilt)
        take its sequence range in order."""
        depth = len(batch.order) + 1
        halves = sorted((b for b in batch.part.queue if len(b.order) == depth and b.order[:-1] == batch.order),
                        key=lambda b: b.order)
        sequence = batch.base_seq
        for half in halves:
            half.base_seq = sequence
            sequence = next_sequence(sequence, half.record_count)

    def _retry(self, batch: ProducerBatch, *, immediate: bool, concurrent_transactions: bool = False) -> None:
        """``concurrent_transactions``: the broker could not add the partition to the
        transaction while the coordinator completes the previous one, a matter of milliseconds."""
        part = batch.part
        batch.attempts += 1
        if self.identity is not None:
            part.retrying = True
        if not immediate:
            # The batch counts its own attempts: its n-th retry waits the policy's n-th delay.
            delay = self._config.retry_backoff.delay_s(batch.attempts - 1)
            if concurrent_transactions:
                delay = concurrent_transactions_delay_s(batch.attempts - 1, delay)
            part.retry_at = max(part.retry_at, self._loop.time() + delay)
        self._acc.requeue(batch)

    def _use_current_leader(self, part: PartitionState, answer: PartitionProduceResponse | None,
                            endpoints: Sequence[ProduceResponseNodeEndpoint]) -> bool:
        """KIP-951: Produce v10+ names the new leader; True when it was applied."""
        current = getattr(answer, "current_leader", None) if answer is not None else None
        if current is None or current.leader_id < 0:
            return False
        brokers = [BrokerInfo(e.node_id, e.host, e.port, e.rack) for e in (endpoints or ())]
        if self._md.update_leader(part.topic, part.partition, current.leader_id, current.leader_epoch, brokers):
            part.retry_at = 0.0  # the new leader is known: no need to back off
            return True
        return False

    def _fail(self, batch: ProducerBatch, err: KafkaError) -> None:
        """Final failure: every record of the batch gets ``(None, err)``."""
        if self.txn is not None:
            # the transaction cannot commit now; its records hear so (or that it was fenced)
            self.fail_records(batch, self.txn.record_failed(err, batch.base_seq >= 0))
            return
        if batch.base_seq >= 0 and self.identity is not None and batch not in self._earlier_identity:
            # a sequence the broker never wrote: the partition's later sequences leave a gap
            # (under an earlier identity the gap is harmless: new batches do not follow it)
            self._need_resequence(batch.part)
        self.fail_records(batch, err)

    def fail_records(self, batch: ProducerBatch, err: KafkaError) -> None:
        if self._earlier_identity:
            self._earlier_identity.discard(batch)
        self._acc.release(batch)
        batch.deliveries.fail(err, self._report)
        self._on_batch_done()

    # --- idempotence ---------------------------------------------------------------------------
    def _need_resequence(self, part: PartitionState) -> None:
        if self.txn is not None:
            self.txn.sequences_broken()  # no bump inside a transaction: it must abort
            return
        self._resequence_parts.add(part)
        self._bump_needed = True

    def reset_sequences(self) -> None:
        """The producer id or epoch changed with nothing in flight (a transaction ended): every
        partition starts again at sequence 0, and nothing sent under the old epoch is resent."""
        for tstate in self._acc.topics.values():
            for part in tstate.parts:
                part.next_seq = 0
                part.retrying = False
        self._resequence_parts.clear()
        self._earlier_identity.clear()
        self._bump_needed = False

    def drop_queued(self, err: KafkaError) -> bool:
        """Fail every batch queued and not in flight with ``err`` (an abort); True when one of
        them had a sequence, which the partition's next batches would then skip."""
        had_sequence = False
        for tstate in self._acc.topics.values():
            for part in tstate.parts:
                queue = part.queue
                while queue:
                    batch = queue.drop_head()
                    had_sequence = had_sequence or batch.base_seq >= 0
                    self.fail_records(batch, err)
        return had_sequence

    def _prepare_identity(self) -> None:
        identity = self.identity
        assert identity is not None
        if identity.requesting:
            return
        if self._bump_needed and self.in_flight:
            return  # bump only once every batch of the old epoch is answered
        node = self._any_leader()
        if node is None:
            self._md.request_refresh()
            self._wake_at(self._loop.time() + self._identity_backoff.next_delay_s())
            return
        conn = self._pool.ready(node, Role.PRODUCE)
        if conn is None:
            self._pool.get(node, Role.PRODUCE, partial(self._on_connection, node, 0))
            return
        identity.request(conn, self._on_identity, bump=self._bump_needed)

    def _any_leader(self) -> int | None:
        for part in self._acc.ready:
            if part.leader >= 0:
                return part.leader
        ids = self._pool.node_ids
        return ids[0] if ids else None

    def _on_identity(self, err: KafkaError | None) -> None:
        identity = self.identity
        assert identity is not None
        if err is not None:
            if self._bump_needed and not err.retriable:
                # the broker refused the bump (or lost the id): start over with a fresh id
                identity.producer_id = NO_PRODUCER_ID
                identity.producer_epoch = NO_PRODUCER_EPOCH
            if not err.retriable:
                self._report(err)  # records keep waiting (bounded by delivery_timeout_ms); say why
            self._wake_at(self._loop.time() + self._identity_backoff.next_delay_s())
            return
        self._identity_backoff.reset()
        if self._bump_needed or any(p.next_seq for t in self._acc.topics.values() for p in t.parts):
            self._resequence()
        self._bump_needed = False
        self.wake()

    def _resequence(self) -> None:
        """New producer id or epoch (nothing in flight): every partition's new batches start at
        sequence 0. A partition whose sequences broke has its queue stamped again from 0, in
        order. Elsewhere, batches already sent keep their old identity and sequence: the broker
        may have written them (their answer was lost), and only the old sequence lets it tell."""
        identity = self.identity
        assert identity is not None
        earlier = self._earlier_identity
        for tstate in self._acc.topics.values():
            for part in tstate.parts:
                part.next_seq = 0
                part.retrying = False
                if part in self._resequence_parts:
                    for batch in part.queue:
                        earlier.discard(batch)
                        if batch.data is None:
                            # Built now, so the sequences follow the queue's order (a split
                            # batch's halves are unbuilt ahead of built batches).
                            self._build(batch)
                        else:
                            batch.base_seq = part.next_seq
                            batch.producer_epoch = identity.producer_epoch
                            batch.data = batch.data.restamped(identity.producer_id, identity.producer_epoch,
                                                              batch.base_seq)
                            part.next_seq = next_sequence(part.next_seq, batch.record_count)
                else:
                    earlier.update(batch for batch in part.queue if batch.data is not None)
        self._resequence_parts.clear()

    # --- delivery timeout ----------------------------------------------------------------------
    def _sweep(self) -> None:
        """Fail queued batches whose delivery deadline passed (in-flight ones are settled by
        their answer or the request timeout)."""
        self._sweep_timer = None
        acc = self._acc
        now = self._loop.time()
        for part in acc.ready:
            queue = part.queue
            while queue and queue.head.deadline <= now:
                batch = queue.drop_head()
                self._fail(batch, KafkaError(MSG_TIMED_OUT, self._expired_message(batch)))
        if acc.incomplete and not self._closed:
            self._sweep_timer = self._loop.call_later(self._sweep_s, self._sweep)
        if acc.ready or acc.held:
            self.send_ready()  # also the periodic kick for partitions waiting for a leader

    def _expired_message(self, batch: ProducerBatch) -> str:
        """Why a queued batch never went out: its leader's failed connect, if that is what it
        waits for, then the last error it was answered with, if any."""
        message = "not delivered within delivery_timeout_ms"
        part = batch.part
        if part.leader >= 0:
            # The lane it sends on, without assigning one (_lane would); a single lane is 0.
            assigned = self._lane_of.get(part)
            lane = assigned.lane if assigned is not None and assigned.leader == part.leader else 0
            err = self._pool.connect_error(part.leader, Role.PRODUCE, lane)
            if err is not None:
                address = self._pool.address(part.leader)
                where = f"{address[0]}:{address[1]} (node {part.leader})" if address else f"node {part.leader}"
                message += f": the leader {where} could not be reached: {err}"
        if batch.last_error is not None:
            message += f"; last error: {batch.last_error}"
        return message

    def close(self) -> None:
        self._closed = True
        self._retry_timer.cancel()
        if self._sweep_timer is not None:
            self._sweep_timer.cancel()
            self._sweep_timer = None
