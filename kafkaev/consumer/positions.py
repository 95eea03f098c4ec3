"""Finding where to read: ListOffsets (resets, seek_to_time, offsets_for, lag) and
OffsetForLeaderEpoch (KIP-320: is the position still on the leader's log?).

Both go to each partition's leader over the ADMIN connection, not the FETCH one,
so they do not queue behind a long-polling Fetch. Partitions whose leader is
unknown or moved are retried after a metadata refresh until request_timeout_ms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, NamedTuple, TypeVar

from kafkaev.backoff import Backoff, BackoffPolicy, RetryTimer
from kafkaev.cluster.metadata import NO_LEADER
from kafkaev.cluster.pool import Role
from kafkaev.errors import (
    NONE,
    OFFSET_OUT_OF_RANGE,
    TIMED_OUT,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSUPPORTED_VERSION,
    KafkaError,
)
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection, EpochLookup, OffsetLookup
from kafkaev.types import NO_LEADER_EPOCH, TopicPartition

from .context import STALE_METADATA_ERRORS, ConsumerContext
from .subscription import PartitionState, Phase, ResetKind

# How long a request waits between attempts while its partitions' leaders are being found.
LEADER_RETRY = BackoffPolicy(base_ms=100, max_ms=1000)


class OffsetAnswer(NamedTuple):
    offset: int  # NO_OFFSET when no record has a timestamp at or after the one asked for
    timestamp: int
    leader_epoch: int


OffsetsCallback = Callable[[dict[TopicPartition, OffsetAnswer], dict[TopicPartition, KafkaError]], object]

Query = TypeVar("Query")  # what is asked per partition (a timestamp, a leader epoch)
Response = TypeVar("Response")  # the broker's answer to one leader's request
Answer = TypeVar("Answer")  # what is kept per partition from it

QueryRows = list[tuple[TopicPartition, Query]]
AnswerRows = Iterable[tuple[TopicPartition, int, Answer]]  # partition, error code, answer


class _LeaderRequest(Generic[Query, Response, Answer]):
    """One logical request over many partitions, split per leader and retried where the
    error says fresh metadata will help. ``done(answers, errors)`` is called once."""

    __slots__ = ("ctx", "pending", "answers", "errors", "deadline", "send", "parse", "done", "outstanding",
                 "backoff")

    def __init__(
        self,
        ctx: ConsumerContext,
        items: dict[TopicPartition, Query],
        send: Callable[[Connection, QueryRows[Query], Callable[[Response | None, KafkaError | None], None]], None],
        parse: Callable[[Response], AnswerRows[Answer]],
        done: Callable[[dict[TopicPartition, Answer], dict[TopicPartition, KafkaError]], object],
    ) -> None:
        self.ctx = ctx
        self.pending = dict(items)
        self.answers: dict[TopicPartition, Answer] = {}
        self.errors: dict[TopicPartition, KafkaError] = {}
        self.deadline = ctx.loop.time() + ctx.config.request_timeout_ms / 1000.0
        self.send = send
        self.parse = parse
        self.done = done
        self.outstanding = 0
        self.backoff = Backoff(LEADER_RETRY)

    def start(self) -> None:
        if not self.pending:
            self._finish()
            return
        by_leader: dict[int, QueryRows[Query]] = {}
        waiting = False
        for tp, item in self.pending.items():
            leader, _epoch = self.ctx.leader(tp.topic, tp.partition)
            if leader == NO_LEADER:
                if self.ctx.topic_missing(tp.topic, tp.partition):
                    self.errors[tp] = KafkaError(
                        UNKNOWN_TOPIC_OR_PARTITION, f"{tp.topic}[{tp.partition}]: the topic or partition does not exist"
                    )
                else:
                    waiting = True
                continue
            by_leader.setdefault(leader, []).append((tp, item))
        for tp in self.errors:
            self.pending.pop(tp, None)
        if waiting:
            self.ctx.metadata.request_refresh()
        if not by_leader:
            self._retry_later() if waiting else self._finish()
            return
        self.outstanding = len(by_leader)
        for leader, rows in by_leader.items():
            self.ctx.pool.get(leader, Role.ADMIN, self._conn_callback(rows))

    def _conn_callback(self, rows: QueryRows[Query]) -> Callable[[Connection | None, KafkaError | None], None]:
        return lambda conn, err: self._on_conn(conn, err, rows)

    def _on_conn(self, conn: Connection | None, err: KafkaError | None, rows: QueryRows[Query]) -> None:
        if conn is None or err is not None:
            self._on_response(None, err, rows)
            return
        try:
            self.send(conn, rows, lambda resp, e: self._on_response(resp, e, rows))
        except KafkaError as exc:
            self.ctx.loop.call_soon(self._on_response, None, exc, rows)

    def _on_response(self, resp: Response | None, err: KafkaError | None, rows: QueryRows[Query]) -> None:
        self.outstanding -= 1
        retry = False
        if err is not None:
            if err.retriable:
                retry = True
                self.ctx.metadata.request_refresh()
            else:
                for tp, _item in rows:
                    self.errors[tp] = err
                    self.pending.pop(tp, None)
        elif resp is not None:
            for tp, code, answer in self.parse(resp):
                if tp not in self.pending:
                    continue
                if code == NONE:
                    self.answers[tp] = answer
                    del self.pending[tp]
                elif code in STALE_METADATA_ERRORS:
                    retry = True
                    self.ctx.metadata.request_refresh()
                else:
                    self.errors[tp] = KafkaError(code, f"{tp.topic}[{tp.partition}]")
                    del self.pending[tp]
        if self.outstanding:
            return
        if self.pending and (retry or err is not None):
            self._retry_later()
        else:
            for tp in self.pending:
                self.errors[tp] = KafkaError(TIMED_OUT, f"{tp.topic}[{tp.partition}]: no answer")
            self.pending.clear()
            self._finish()

    def _retry_later(self) -> None:
        if self.ctx.loop.time() >= self.deadline:
            for tp in self.pending:
                self.errors[tp] = KafkaError(TIMED_OUT, f"{tp.topic}[{tp.partition}]: no leader answered in time")
            self.pending.clear()
            self._finish()
            return
        self.ctx.loop.call_later(self.backoff.next_delay_s(), self.start)

    def _finish(self) -> None:
        self.done(self.answers, self.errors)


def list_offsets(
    ctx: ConsumerContext, queries: dict[TopicPartition, int], isolation: int, done: OffsetsCallback
) -> None:
    """``queries`` maps partition -> timestamp (OFFSET_BEGINNING, OFFSET_END or ms)."""

    def send(conn: Connection, rows: QueryRows[int],
             cb: Callable[[codec.ListOffsetsResponse | None, KafkaError | None], None]) -> None:
        conn.list_offsets(
            [OffsetLookup(tp.topic, tp.partition, ts, ctx.leader(tp.topic, tp.partition)[1]) for tp, ts in rows],
            cb,
            isolation_level=isolation,
        )

    def parse(resp: codec.ListOffsetsResponse) -> AnswerRows[OffsetAnswer]:
        for t in resp.topics:
            for p in t.partitions:
                epoch = getattr(p, "leader_epoch", NO_LEADER_EPOCH)
                yield TopicPartition(t.name, p.partition_index), p.error_code, OffsetAnswer(p.offset, p.timestamp, epoch)

    _LeaderRequest[int, codec.ListOffsetsResponse, OffsetAnswer](ctx, queries, send, parse, done).start()


class EpochEnd(NamedTuple):
    leader_epoch: int
    end_offset: int


def offsets_for_leader_epochs(
    ctx: ConsumerContext,
    queries: dict[TopicPartition, int],
    done: Callable[[dict[TopicPartition, EpochEnd], dict[TopicPartition, KafkaError]], object],
) -> None:
    """``queries`` maps partition -> the leader epoch of the position to check."""

    def send(conn: Connection, rows: QueryRows[int],
             cb: Callable[[codec.OffsetForLeaderEpochResponse | None, KafkaError | None], None]) -> None:
        conn.offset_for_leader_epoch(
            [EpochLookup(tp.topic, tp.partition, epoch, ctx.leader(tp.topic, tp.partition)[1]) for tp, epoch in rows],
            cb,
        )

    def parse(resp: codec.OffsetForLeaderEpochResponse) -> AnswerRows[EpochEnd]:
        for t in resp.topics:
            for p in t.partitions:
                yield TopicPartition(t.topic, p.partition), p.error_code, EpochEnd(p.leader_epoch, p.end_offset)

    _LeaderRequest[int, codec.OffsetForLeaderEpochResponse, EpochEnd](ctx, queries, send, parse, done).start()


class PositionResolver:
    """Moves partitions from AWAIT_RESET / AWAIT_VALIDATION to FETCHING."""

    __slots__ = ("ctx", "on_ready", "isolation", "_retry_timer")

    def __init__(self, ctx: ConsumerContext, isolation: int, on_ready: Callable[[], None]) -> None:
        self.ctx = ctx
        self.isolation = isolation
        self.on_ready = on_ready  # the fetcher's kick: new positions can be fetched
        # At the earliest time a backed-off partition may be tried again.
        self._retry_timer = RetryTimer(ctx.loop, self.kick)

    def kick(self) -> None:
        resets: dict[TopicPartition, int] = {}
        validations: dict[TopicPartition, int] = {}
        now = self.ctx.loop.time()
        for state in self.ctx.subscription:
            if state.in_flight:
                continue
            if state.retry_at > now:
                # Armed here, not only where it failed: a timer may fire a little early.
                self._retry_timer.arm_at(state.retry_at)
                continue
            if state.phase is Phase.AWAIT_RESET:
                resets[state.tp] = (
                    state.reset_timestamp if state.reset_kind is ResetKind.TIMESTAMP else int(state.reset_kind)
                )
            elif state.phase is Phase.AWAIT_VALIDATION:
                validations[state.tp] = state.position_epoch
        if resets:
            self._reset(resets)
        if validations:
            self._validate(validations)

    def close(self) -> None:
        self._retry_timer.cancel()

    # --- resets ------------------------------------------------------------------------------
    def _reset(self, queries: dict[TopicPartition, int]) -> None:
        snapshot = self._mark(queries)

        def done(answers: dict[TopicPartition, OffsetAnswer], errors: dict[TopicPartition, KafkaError]) -> None:
            refusals: list[tuple[PartitionState, KafkaError]] = []
            for tp, state, generation in snapshot:
                state.in_flight = False
                if self.ctx.subscription.get(tp) is not state or state.generation != generation:
                    continue  # seeked, revoked or reset again meanwhile
                answer = answers.get(tp)
                if answer is None:
                    err = errors.get(tp) or KafkaError(TIMED_OUT, f"{tp.topic}[{tp.partition}]")
                    if err.code != UNKNOWN_TOPIC_OR_PARTITION:  # the fetcher reports missing topics
                        self.ctx.report(KafkaError(err.code, f"resetting the position of {tp.topic}[{tp.partition}]: {err}"))
                    refusals.append((state, err))
                elif answer.offset < 0:
                    # No record at or after the timestamp: continue from the end.
                    state.request_reset(ResetKind.LATEST)
                else:
                    state.seek(answer.offset, answer.leader_epoch if state.reset_kind is ResetKind.LATEST else NO_LEADER_EPOCH)
            self._back_off([state for state, _err in refusals])
            # After the backoff is set: a seek() from a waiter starts over at once.
            for state, err in refusals:
                state.notify(err)  # a seek() waiting for this learns why
            self.on_ready()

        list_offsets(self.ctx, queries, self.isolation, done)

    # --- KIP-320 validation --------------------------------------------------------------------
    def _validate(self, queries: dict[TopicPartition, int]) -> None:
        snapshot = self._mark(queries)

        def done(answers: dict[TopicPartition, EpochEnd], errors: dict[TopicPartition, KafkaError]) -> None:
            failed: list[PartitionState] = []
            for tp, state, generation in snapshot:
                state.in_flight = False
                if self.ctx.subscription.get(tp) is not state or state.generation != generation:
                    continue
                answer = answers.get(tp)
                if answer is None:
                    err = errors.get(tp)
                    if err is not None and err.code == UNSUPPORTED_VERSION:
                        self._validated(state)  # nothing to check with: fetch on
                    else:
                        # Try again after a backoff (metadata was refreshed by the request).
                        failed.append(state)
                    continue
                delivered, delivered_epoch = self.ctx.delivered(state)  # counting records pulled mid-set
                if 0 <= answer.end_offset < delivered:
                    self.resume_after_truncation(state, delivered_epoch, answer.end_offset, answer.leader_epoch)
                else:
                    self._validated(state)
            self._back_off(failed)
            self.on_ready()

        offsets_for_leader_epochs(self.ctx, queries, done)

    def _back_off(self, failed: list[PartitionState]) -> None:
        """The partitions that failed in one answer are tried again together, in one request,
        once the longest backoff any of them has earned is over."""
        if not failed:
            return
        delay = self.ctx.config.retry_backoff.delay_s(max(state.position_failures for state in failed))
        retry_at = self.ctx.loop.time() + delay
        for state in failed:
            state.back_off_until(retry_at)
        self._retry_timer.arm_at(retry_at)

    def _validated(self, state: PartitionState) -> None:
        if state.reset_after_validation:
            state.reset_after_validation = False
            self.apply_reset_policy(state)
        else:
            state.resume_fetching()

    def resume_after_truncation(self, state: PartitionState, epoch: int, end_offset: int, end_epoch: int) -> None:
        """The leader's log ends ``epoch`` at ``end_offset``, below the position: say so and
        read on from there (KIP-320), whatever ``auto_offset_reset`` says."""
        self.ctx.report(KafkaError(
            OFFSET_OUT_OF_RANGE,
            f"{state.topic}[{state.partition}]: the log was truncated below position {state.position} "
            f"(leader epoch {epoch} ends at {end_offset}); resuming at {end_offset}",
        ))
        state.seek(end_offset, end_epoch)

    def apply_reset_policy(self, state: PartitionState) -> None:
        """OFFSET_OUT_OF_RANGE without truncation: auto_offset_reset, or an error."""
        policy = self.ctx.auto_offset_reset
        if policy == "error":
            state.fail()
            self.ctx.report(
                KafkaError(
                    OFFSET_OUT_OF_RANGE,
                    f"{state.topic}[{state.partition}]: position {state.position} is out of range "
                    f"and auto_offset_reset is 'error'; seek() to continue",
                )
            )
        else:
            state.request_reset(ResetKind.EARLIEST if policy == "earliest" else ResetKind.LATEST)

    def _mark(self, queries: dict[TopicPartition, int]) -> list[tuple[TopicPartition, PartitionState, int]]:
        snapshot = []
        for tp in queries:
            state = self.ctx.subscription.get(tp)
            if state is not None:
                state.in_flight = True
                snapshot.append((tp, state, state.generation))
        return snapshot

