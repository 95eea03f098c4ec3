"""Continuous, pipelined fetching: one Fetch per leader at a time, the next one sent
as soon as the previous answer has arrived, before its records are decoded and handed
to the callbacks (the broker reads its log while they run). No poll timer.

Each leader has a ``LeaderFetcher`` with its own incremental fetch session
(KIP-227). A response is applied in two passes. First every partition's errors,
watermarks and next fetch offset (``kafkaev.protocol.codec.next_fetch_offset``: one past the
last complete batch, read from the batch headers alone, so compacted gaps and control
batches are stepped over) are applied and the next Fetch goes out. Then partition by
partition the records at or above the fetch offset are decoded by
``kafkaev.protocol.codec.read_records`` (the C loop) and delivered through ``on_message`` (one
call per record) or ``on_batch`` (one call per partition), and the position moves on.
Decoding a partition just before its delivery keeps one partition's records alive at a
time instead of the whole response's: they stay in the CPU cache and in the allocator's
free memory.

``position`` (what commit() sends) only moves past records once they were handed
over; ``fetch_offset`` runs ahead while they are. Back-pressure: records are delivered
inside the response callback, so at most one response per leader is held (and one
partition's decoded records); with a ``RecordBuffer`` (``use_buffer``, for ``kafkaev.aio``)
they wait there instead, and no Fetch goes out while it holds ``max_buffered_bytes``. A paused
partition leaves the fetch session; what the broker had already sent for it is held (at most
the answer being handed over, decoded when ``on_message`` paused it mid-set, and the Fetch
already out) and handed over on resume, before it is fetched again, as the Java client does
since KAFKA-7548: a consumer that pauses for back-pressure would otherwise fetch each record
set again for every pause, and drop it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from kafkaev.backoff import Backoff
from kafkaev.cluster.metadata import NO_LEADER, BrokerInfo
from kafkaev.cluster.pool import Role
from kafkaev.consumer.delivery import deliver_each, stop_requested
from kafkaev.errors import (
    DESTROY,
    FETCH_SESSION_ID_NOT_FOUND,
    INVALID_FETCH_SESSION_EPOCH,
    NONE,
    OFFSET_OUT_OF_RANGE,
    STATE,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
    KafkaError,
)
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection
from kafkaev.types import ISOLATION_READ_COMMITTED, NO_LEADER_EPOCH, TopicPartition

from .buffer import BufferedRecords, RecordBuffer
from .context import STALE_METADATA_ERRORS, ConsumerContext
from .fetch_session import FetchParams, FetchPlan, FetchSession
from .positions import PositionResolver
from .read_replica import NO_PREFERRED_REPLICA, ReadReplicas
from .subscription import FetchedSet, PartitionState, Phase

log = logging.getLogger("kafkaev.consumer")  # kafkaev/log.py names the areas

SESSION_ERRORS = frozenset({FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH})
# The client's own pool closed the connection under the Fetch while the consumer runs (the broker
# moved to a new address, or the connection was retired): nothing the user must hear of, fetch again.
CLOSED_BY_THE_POOL = frozenset({DESTROY, STATE})

# A response with fewer record bytes than this is handed over before the next Fetch goes out:
# a few dozen small records are delivered in less time than building and writing that Fetch
# takes (one record's end-to-end latency paid for the next request first). A larger one keeps
# the broker reading its log while the callbacks run.
DELIVER_FIRST_BYTES = 16 * 1024


class _Sent:
    """What one partition looked like when its fetch went out."""

    __slots__ = ("state", "generation", "offset")

    def __init__(self, state: PartitionState, generation: int, offset: int) -> None:
        self.state = state
        self.generation = generation
        self.offset = offset


class LeaderFetcher:
    __slots__ = ("node_id", "session", "in_flight", "round_waiters", "backoff", "retry_handle")

    def __init__(self, node_id: int, backoff: Backoff) -> None:
        self.node_id = node_id
        self.session = FetchSession()
        self.in_flight = False
        # poll() callbacks waiting for this leader's answer
        self.round_waiters: list[Callable[[], None]] = []
        self.backoff = backoff  # failed fetches in a row, reset by an answer
        self.retry_handle: asyncio.TimerHandle | None = None  # the wait after a failed fetch


class Fetcher:
    def __init__(self, ctx: ConsumerContext, *, on_message: Any, on_batch: Any) -> None:
        self.ctx = ctx
        config = ctx.config
        self.on_message = on_message
        self.on_batch = on_batch
        self.isolation = config.isolation
        self.read_committed = config.isolation == ISOLATION_READ_COMMITTED
        self.check_crcs = config.check_crcs
        self.leaders: dict[int, LeaderFetcher] = {}  # by the node fetched from (leader or KIP-392 replica)
        self.read_replicas = ReadReplicas(ctx.config.metadata_max_age_ms)
        self.running = False
        self.closed = False
        self.positions = PositionResolver(ctx, config.isolation, self.kick)
        # partitions reported as gone, so each disappearance is reported once
        self.reported_missing: set[TopicPartition] = set()
        # poll() calls waiting for positions or leaders, released by kick() or the timer
        self.pending_polls: list[Callable[[KafkaError | None], object] | None] = []
        self.poll_timer: asyncio.TimerHandle | None = None
        # Set by use_buffer() (kafkaev.aio): fetched records wait there to be pulled.
        self.buffer: RecordBuffer | None = None

    # --- control -------------------------------------------------------------------------------
    def start(self) -> None:
        self.running = True
        self.kick()

    def stop(self) -> None:
        self.running = False

    def close(self) -> None:
        self.running = False
        self.closed = True
        self.positions.close()
        if self.buffer is not None:
            self.buffer.close()
        if self.poll_timer is not None:
            self.poll_timer.cancel()
            self.poll_timer = None
        polls, self.pending_polls = self.pending_polls, []
        for poll_cb in polls:
            if poll_cb is not None:
                self.ctx.loop.call_soon(self.ctx.call, poll_cb, KafkaError(DESTROY, "the consumer was closed"))
        for leader in self.leaders.values():
            if leader.retry_handle is not None:
                leader.retry_handle.cancel()
                leader.retry_handle = None
            waiters, leader.round_waiters = leader.round_waiters, []
            for cb in waiters:
                cb()

    def poll(self, cb: Callable[[KafkaError | None], object] | None) -> None:
        """One fetch round: a Fetch to every leader with fetchable partitions; ``cb(None)``
        once all of them answered. Partitions whose position or leader is still being looked
        up are waited for first (at most request_timeout_ms), so a poll right after assign()
        fetches them."""
        self.positions.kick()
        if not self._positions_pending():
            self._poll_round(cb)
            return
        self.pending_polls.append(cb)
        if self.poll_timer is None:
            self.poll_timer = self.ctx.loop.call_later(self.ctx.config.request_timeout_ms / 1000.0,
                                                       self._release_polls)

    def _positions_pending(self) -> bool:
        ctx = self.ctx
        pending = False
        for state in ctx.subscription:
            if state.paused or state.phase is Phase.FAILED:
                continue
            if state.phase is not Phase.FETCHING:
                pending = True
            elif ctx.leader(state.topic, state.partition)[0] == NO_LEADER and not ctx.topic_missing(state.topic):
                ctx.metadata.request_refresh()
                pending = True
        return pending

    def _release_polls(self) -> None:
        if self.poll_timer is not None:
            self.poll_timer.cancel()
            self.poll_timer = None
        polls, self.pending_polls = self.pending_polls, []
        for cb in polls:
            self._poll_round(cb)

    def _poll_round(self, cb: Callable[[KafkaError | None], object] | None) -> None:
        by_leader = self._fetchable_by_leader()
        # A leader backing off after a failure is not waited for: this round goes without it.
        targets = [self._leader(n) for n in by_leader if self._leader(n).retry_handle is None]
        targets += [leader for leader in self.leaders.values() if leader.in_flight and leader not in targets]
        # Partitions holding record sets (resumed, or kept from a kafkaev.stop()): handed over
        # in this round, at the loop's next turn; fetched from the next round on.
        holding = [state for state in self.ctx.subscription if state.held and not state.paused]
        remaining = len(targets) + (1 if holding else 0)
        if remaining == 0:
            if cb is not None:
                self.ctx.loop.call_soon(self.ctx.call, cb, None)
            return

        def one_done() -> None:
            nonlocal remaining
            remaining -= 1
            if remaining == 0 and cb is not None:
                self.ctx.call(cb, None)

        if holding:
            def hand_over_held() -> None:
                self._hand_over_held(holding, in_round=True)
                one_done()

            self.ctx.loop.call_soon(hand_over_held)

        for leader in targets:
            leader.round_waiters.append(one_done)
            if not leader.in_flight and leader.node_id in by_leader:
                self._send(leader, by_leader[leader.node_id])

    def kick(self) -> None:
        """Send a Fetch to every leader that has fetchable partitions and none in flight."""
        if self.closed:
            return
        self.positions.kick()
        if self.pending_polls and not self._positions_pending():
            self._release_polls()
        if not self.running:
            return
        for node_id, states in self._fetchable_by_leader().items():
            leader = self._leader(node_id)
            if not leader.in_flight and leader.retry_handle is None:
                self._send(leader, states)

    def _leader(self, node_id: int) -> LeaderFetcher:
        leader = self.leaders.get(node_id)
        if leader is None:
            leader = self.leaders[node_id] = LeaderFetcher(node_id, Backoff(self.ctx.config.retry_backoff))
        return leader

    def _fetchable_by_leader(self) -> dict[int, list[PartitionState]]:
        by_leader: dict[int, list[PartitionState]] = {}
        if self.buffer is not None and self.buffer.full:
            return by_leader  # max_buffered_bytes fetched and not taken: fetching waits for the puller
        need_metadata = False
        ctx = self.ctx
        for state in ctx.subscription:
            if not state.fetchable:
                continue
            leader, _epoch = ctx.leader(state.topic, state.partition)
            if leader == NO_LEADER:
                need_metadata = True
                continue
            node = self.read_replicas.node_for(state.tp, leader, ctx.loop.time(), ctx.metadata.current.brokers)
            by_leader.setdefault(node, []).append(state)
        if need_metadata:
            ctx.metadata.request_refresh()
        return by_leader

    # --- one request -----------------------------------------------------------------------------
    def _send(self, leader: LeaderFetcher, states: list[PartitionState]) -> None:
        ctx = self.ctx
        config = ctx.config
        wanted: dict[TopicPartition, FetchParams] = {}
        sent: dict[TopicPartition, _Sent] = {}
        for state in states:
            _leader, epoch = ctx.leader(state.topic, state.partition)
            wanted[state.tp] = FetchParams(state.fetch_offset, config.max_partition_fetch_bytes, epoch,
                                           ctx.topic_id(state.topic), state.fetch_epoch)
            sent[state.tp] = _Sent(state, state.generation, state.fetch_offset)
            state.in_flight = True
        plan = leader.session.plan(wanted)
        leader.in_flight = True

        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if err is not None:
                self._on_response(leader, plan, sent, None, err)
                return
            assert conn is not None  # no error: a connection
            if log.isEnabledFor(logging.DEBUG):
                log.debug("Fetch from %s:%s (node %d): %s", conn.host, conn.port, leader.node_id,
                          ", ".join(f"{tp.topic}[{tp.partition}]@{s.offset}" for tp, s in sent.items()))
            try:
                conn.fetch_multi(
                    plan.request_partitions(),
                    lambda resp, e: self._on_response(leader, plan, sent, resp, e),
                    max_wait_ms=config.fetch_max_wait_ms,
                    min_bytes=config.fetch_min_bytes,
                    max_bytes=config.fetch_max_bytes,
                    isolation_level=self.isolation,
                    session_id=plan.session_id,
                    session_epoch=plan.epoch,
                    forgotten=plan.request_forgotten(leader.session.topic_ids),
                    session_topic_ids=leader.session.topic_ids,
                    rack_id=config.client_rack or "",  # KIP-392: lets the leader name a closer replica
                )
            except KafkaError as exc:
                ctx.loop.call_soon(self._on_response, leader, plan, sent, None, exc)

        ctx.pool.get(leader.node_id, Role.FETCH, on_conn)

    def _on_response(
        self, leader: LeaderFetcher, plan: FetchPlan, sent: dict[TopicPartition, _Sent],
        resp: codec.FetchResponse | None, err: KafkaError | None,
    ) -> None:
        leader.in_flight = False
        for s in sent.values():
            s.state.in_flight = False
        deliveries: list[FetchedSet] = []
        try:
            if self.closed:
                return
            if err is not None:
                self._failed(leader, err)
            elif resp is not None and resp.error_code != NONE:
                if resp.error_code in SESSION_ERRORS:
                    leader.session.reset()  # the next request opens a new session at once
                else:
                    self._failed(leader, KafkaError(resp.error_code, f"Fetch from broker {leader.node_id}"))
            elif resp is not None:  # err is None: the connection hands an answer
                leader.backoff.reset()
                leader.session.completed(plan, resp.session_id)
                deliveries = self._apply(leader, plan, sent, resp)
            deliver_first = sum(len(d.records) for d in deliveries) < DELIVER_FIRST_BYTES
            if not deliver_first:
                # The next Fetch goes out before the records are handed over: the broker reads
                # the log while the callbacks run.
                self.kick()
            try:
                for delivery in deliveries:
                    self._hand_over(delivery)
            finally:
                if deliver_first:
                    self.kick()
        finally:
            waiters, leader.round_waiters = leader.round_waiters, []
            for cb in waiters:
                cb()

    def _failed(self, leader: LeaderFetcher, err: KafkaError) -> None:
        leader.session.reset()
        self.read_replicas.node_failed(leader.node_id)
        self.ctx.metadata.request_refresh()
        if not err.retriable and err.code not in CLOSED_BY_THE_POOL:
            self.ctx.report(err)
        # Back off before asking this broker again. After a failed connect the pool also holds
        # the next one until its own backoff is over: the wait is the longer one, not the sum.
        delay = leader.backoff.next_delay_s()

        def retry() -> None:
            leader.retry_handle = None
            self.kick()

        leader.retry_handle = self.ctx.loop.call_later(delay, retry)

    def _apply(
        self, leader: LeaderFetcher, plan: FetchPlan, sent: dict[TopicPartition, _Sent], resp: codec.FetchResponse
    ) -> list[FetchedSet]:
        """Apply one response: errors, watermarks and fetch offsets; returns the records to hand over."""
        deliveries: list[FetchedSet] = []
        endpoints = getattr(resp, "node_endpoints", None) or ()
        for topic_response in resp.responses:
            topic = topic_response.topic  # named by the connection, also when the request gave ids
            for p in topic_response.partitions:
                tp = TopicPartition(topic, p.partition_index)
                s = sent.get(tp)
                if s is None:
                    continue  # left the session (paused/revoked) after the request was planned
                state = s.state
                if (self.ctx.subscription.get(tp) is not state or state.generation != s.generation
                        or state.fetch_offset != s.offset):
                    continue  # seeked, reset, paused mid-way or revoked while in flight: stale data
                code = p.error_code
                if code != NONE and self.read_replicas.reading_from_replica(tp):
                    self.read_replicas.fell_back(tp)  # KIP-392: any error sends it back to the leader
                    continue
                diverging = p.diverging_epoch
                if code == NONE and diverging is not None and diverging.end_offset >= 0:
                    self._diverged(state, diverging)
                elif code == NONE:
                    delivery = self._records(state, p)
                    if delivery is not None:
                        deliveries.append(delivery)
                elif code == OFFSET_OUT_OF_RANGE:
                    if not state.request_validation(out_of_range=True):
                        self.positions.apply_reset_policy(state)
                elif code in STALE_METADATA_ERRORS:
                    self._leader_moved(state, p, endpoints)
                else:
                    state.fail()
                    self.ctx.report(KafkaError(code, f"fetching {topic}[{p.partition_index}]"))
        return deliveries

    def _diverged(self, state: PartitionState, diverging: codec.FetchResponseEpochEndOffset) -> None:
        """KIP-320: the leader's log no longer holds what was fetched below the fetch offset (an
        unclean leader change truncated it): go back to where the last common epoch ends."""
        if diverging.end_offset < self.ctx.delivered(state)[0]:  # counting records pulled mid-set
            self.positions.resume_after_truncation(state, diverging.epoch, diverging.end_offset, diverging.epoch)
        else:  # only what was fetched and not yet delivered is gone
            state.fetch_offset = diverging.end_offset
            state.fetch_epoch = diverging.epoch

    def _leader_moved(
        self, state: PartitionState, p: codec.PartitionData, endpoints: Sequence[codec.FetchResponseNodeEndpoint]
    ) -> None:
        ctx = self.ctx
        current = getattr(p, "current_leader", None)
        updated = False
        if current is not None and current.leader_id >= 0:
            # KIP-951: the broker names the new leader; no metadata round trip needed.
            infos = [BrokerInfo(e.node_id, e.host, e.port, e.rack) for e in endpoints]
            updated = ctx.metadata.update_leader(state.topic, state.partition, current.leader_id,
                                                 current.leader_epoch, infos)
        if not updated:
            ctx.metadata.request_refresh()
        if p.error_code in (UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID):
            return  # the metadata listener decides whether the topic is gone
        # A new leader may have a shorter log: check the position before reading on (KIP-320).
        state.request_validation()

    def _records(self, state: PartitionState, p: codec.PartitionData) -> FetchedSet | None:
        preferred = getattr(p, "preferred_read_replica", NO_PREFERRED_REPLICA)
        if preferred != NO_PREFERRED_REPLICA:  # KIP-392: no records; read from that node from now on
            leader, _epoch = self.ctx.leader(state.topic, state.partition)
            self.read_replicas.prefer(state.tp, preferred, leader, self.ctx.loop.time())
        state.high_watermark = p.high_watermark
        state.last_stable_offset = p.last_stable_offset
        state.log_start_offset = p.log_start_offset
        records = p.records
        if not records:
            return None
        state.fetches += 1
        state.bytes_fetched += len(records)
        offset = state.fetch_offset
        # From the batch headers only: the next Fetch goes out before any record is decoded.
        next_offset, state.fetch_epoch = codec.next_fetch_position(records, offset, state.fetch_epoch)
        state.fetch_offset = next_offset
        aborted = p.aborted_transactions if self.read_committed else None
        return FetchedSet(state, records, aborted, state.generation, offset, next_offset)

    def _decode(self, delivery: FetchedSet) -> codec.FetchedRecords:
        """The delivery's records as a FetchedRecords: up to the first corrupt entry, whose
        error is in ``error``."""
        state = delivery.state
        return codec.read_records(
            state.topic, state.partition, delivery.records, delivery.fetch_offset,
            check_crcs=self.check_crcs, read_committed=self.read_committed,
            aborted_transactions=delivery.aborted_transactions, stop_at_corrupt=True,
        )

    def _stop_at_corrupt(self, state: PartitionState, error: KafkaError) -> None:
        """A corrupt entry cannot be skipped safely: the partition stops at it, reported once
        (failing it makes the Fetch already sent past the set stale). A seek moves on."""
        state.rewind_fetch()
        state.fail()
        self.ctx.report(KafkaError(
            error.code, f"{state.topic}[{state.partition}] at offset {state.position}: {error.message}"))

    def _hand_over(self, delivery: FetchedSet, *, was_held: bool = False) -> None:
        """Decode ``delivery`` and hand it to the callbacks (or the buffer), unless it has to
        wait: ``was_held`` says it was just taken from the front of ``state.held``."""
        state = delivery.state
        if self.ctx.subscription.get(state.tp) is not state or state.generation != delivery.generation:
            return  # an earlier callback seeked or revoked it: the records are stale
        if state.paused or stop_requested(self.ctx.loop) or (state.held and not was_held):
            # Paused or kafkaev.stop()ped by an earlier callback, or behind sets still held:
            # it waits for the resume or the loop's next turn. Copied out of the answer, which
            # a view would keep alive whole (up to fetch_max_bytes) for as long as it waits.
            self._hold(state, delivery if was_held else delivery._replace(records=bytes(delivery.records)),
                       first=was_held)
            return
        fetched = self._decode(delivery) if delivery.decoded is None else delivery.decoded
        if self.buffer is not None:  # pulled later (kafkaev.aio): the position moves as records are taken
            self._put_in_buffer(self.buffer, delivery, fetched)
            return
        epoch = fetched.last_leader_epoch if fetched.batch_count else NO_LEADER_EPOCH
        messages = fetched.messages
        start, count = delivery.start, len(messages)
        stop = count  # with no records (only control records, aborted or compacted-away offsets): step over them
        while start < count:
            state.interrupted = False
            stop = self._deliver(state, messages, start)
            state.records_delivered += stop - start
            if state.generation != delivery.generation or self.ctx.subscription.get(state.tp) is not state:
                return  # the callback seeked or revoked: its new position stands
            if stop == count or state.paused or stop_requested(self.ctx.loop):
                break
            start = stop  # paused and resumed by the same callback: delivery goes on
        if stop == count:
            # Without a corrupt entry both are the end of the set; with one, where it starts.
            state.position = delivery.next_offset if fetched.error is None else fetched.next_offset
            if epoch != NO_LEADER_EPOCH:
                state.position_epoch = epoch
            if fetched.error is not None:
                self._stop_at_corrupt(state, fetched.error)
            return
        # Paused or stopped mid-way: the rest waits, decoded, ahead of any set held after it,
        # and the Fetch already out (from next_offset) stays valid: nothing is fetched again.
        last_handed_over = messages[stop - 1]
        state.position = last_handed_over.offset + 1
        state.position_epoch = last_handed_over.leader_epoch
        self._hold(state, delivery._replace(records=b"", fetch_offset=state.position, decoded=fetched, start=stop),
                   first=True)

    def _hold(self, state: PartitionState, delivery: FetchedSet, *, first: bool) -> None:
        """``delivery`` waits in ``state.held``: at the front when it was taken from there.
        Unless its partition is paused it is handed over at the loop's next turn (a
        ``poll()``-driven consumer: in its next round)."""
        if first:
            state.held.insert(0, delivery)
        else:
            state.held.append(delivery)
        if self.running and not state.paused:
            self.ctx.loop.call_soon(self._hand_over_held, [state])

    def _put_in_buffer(self, buffer: RecordBuffer, delivery: FetchedSet, fetched: codec.FetchedRecords) -> None:
        messages = fetched.messages
        buffer.put(BufferedRecords(
            delivery.state, delivery.generation, messages[delivery.start:] if delivery.start else messages,
            delivery.next_offset if fetched.error is None else fetched.next_offset,
            fetched.last_leader_epoch if fetched.batch_count else NO_LEADER_EPOCH, fetched.error,
            fetched.bytes_read))

    def resumed(self, states: list[PartitionState]) -> None:
        """``states`` were resumed: what they held is handed over at the loop's next turn (never
        inside the resume() call), then they are fetched again. The Fetch waits for that turn:
        sent now, without the partitions still holding records, it could be parked at the end
        of the others' logs for fetch_max_wait_ms, and one Fetch per leader is out at a time.
        With a RecordBuffer nothing is called back: their records go back in it at once."""
        if self.buffer is not None:
            for state in states:
                self._put_back(self.buffer, state)
            self.kick()
            return
        holding = [state for state in states if state.held]
        if holding and self.running:
            self.ctx.loop.call_soon(self._hand_over_held, holding)
        else:  # poll()-driven, what they hold is handed over in the next round
            self.kick()

    def _put_back(self, buffer: RecordBuffer, state: PartitionState) -> None:
        """A pulled partition was resumed: the sets it set aside go back in the buffer, and the
        sets it held are decoded into it behind them, unless they no longer run from the
        position to the fetch offset under this generation: then it all is fetched again."""
        kept = state.set_aside
        if not kept and not state.held:
            return
        end = kept[-1].next_offset if kept else state.position
        if any(records.generation != state.generation for records in kept) or not state.held_run_from(end):
            state.rewind_fetch()
            return
        held, state.held, state.set_aside = state.held, [], []
        buffer.put_back(kept)
        for delivery in held:
            self._put_in_buffer(buffer, delivery, self._decode(delivery))

    def _hand_over_held(self, states: list[PartitionState], *, in_round: bool = False) -> None:
        """Hand over what ``states`` hold, in order, while they may take it. Outside a poll()
        round only while fetching continuously: after ``stop()`` it waits for a round."""
        if self.closed or not (self.running or in_round):
            return
        subscription = self.ctx.subscription
        for state in states:
            # A callback may pause it again or stop the loop (the rest stays held), seek or revoke it.
            while not state.paused and not stop_requested(self.ctx.loop) and subscription.get(state.tp) is state:
                held = state.take_held()
                if held is None:
                    break
                self._hand_over(held, was_held=True)
        if self.running and stop_requested(self.ctx.loop):  # still stopped: after the stop is over
            waiting = [state for state in states if state.held and not state.paused]
            if waiting:
                self.ctx.loop.call_soon(self._hand_over_held, waiting)
        self.kick()

    def _settle_buffered(self, records: BufferedRecords) -> None:
        """Every record of a buffered set was taken: the position moves to where its fetch
        ended, as after a delivery (a corrupt entry stops the partition there)."""
        state = records.state
        state.position = records.next_offset
        if records.next_epoch != NO_LEADER_EPOCH:
            state.position_epoch = records.next_epoch
        if records.error is not None:
            self._stop_at_corrupt(state, records.error)

    def use_buffer(self, limit: int) -> RecordBuffer:
        """From now on records are put in a ``RecordBuffer`` of ``limit`` bytes for a puller to
        take, instead of being handed to on_message/on_batch; fetching waits while it is full."""
        if self.buffer is None:
            self.buffer = RecordBuffer(self.ctx.subscription, limit, self._settle_buffered, self.kick)
            self.ctx.pulled = self.buffer
        return self.buffer

    def _deliver(self, state: PartitionState, messages: list[codec.Message], start: int) -> int:
        """Hand ``messages[start:]`` over; returns the index after the last one handed over:
        ``len(messages)``, or less when the callback paused the partition or called
        kafkaev.stop() before the end."""
        count = len(messages)
        on_batch = self.on_batch
        if on_batch is not None:
            batch = messages[start:] if start else messages
            cursor = self.ctx.delivery
            # The whole list is handed over: a commit() from on_batch counts all of it.
            cursor.begin(state, batch, len(batch) - 1)
            try:
                on_batch(batch)
            except Exception as exc:  # noqa: BLE001 - reported; delivery goes on
                self.ctx.report(exc)
            finally:
                cursor.end()
            return count
        if self.on_message is None:
            return count
        return deliver_each(self.on_message, messages, start, state, self.ctx.report, self.ctx.delivery)

    # --- metadata -------------------------------------------------------------------------------
    def on_metadata(self) -> None:
        """Called after every metadata update: new leaders can be fetched from, new epochs
        validated against, and topics that vanished are reported once."""
        ctx = self.ctx
        for state in ctx.subscription:
            tp = state.tp
            if ctx.topic_missing(state.topic, state.partition):
                if tp not in self.reported_missing:
                    self.reported_missing.add(tp)
                    if state.phase is not Phase.FAILED:
                        state.fail()
                    ctx.report(KafkaError(
                        UNKNOWN_TOPIC_OR_PARTITION,
                        f"{state.topic}[{state.partition}] does not exist (deleted or never created); "
                        "fetching resumes if it appears",
                    ))
            elif tp in self.reported_missing:
                leader, _epoch = ctx.leader(state.topic, state.partition)
                if leader != NO_LEADER:
                    self.reported_missing.discard(tp)
                    if state.phase is Phase.FAILED:
                        if state.position >= 0:
                            state.seek(state.position, state.position_epoch)
                        else:
                            self.positions.apply_reset_policy(state)
        self.kick()
