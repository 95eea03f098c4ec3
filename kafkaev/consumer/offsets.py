"""OffsetCommit and OffsetFetch for a consumer group.

Commits carry the member's generation and id, so a member that lost its
partitions in a rebalance cannot overwrite the new owner's progress (the
coordinator answers ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID,
and the member rejoins). Coordinator moves are retried until request_timeout_ms,
but only for partitions no newer commit has been issued for since: a retried
old commit must never land after a newer one and move the group's offset back
(the Java client leaves async commits unretried for the same reason).
OffsetFetch asks for stable offsets under read_committed (KIP-447) and waits out
UNSTABLE_OFFSET_COMMIT.

Under the consumer group protocol (KIP-848) both carry the member epoch (v9+) in
place of the generation; STALE_MEMBER_EPOCH means the next heartbeat brings a newer
epoch, so the request is tried again (with the epoch of that moment) until
request_timeout_ms.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, Protocol

from kafkaev.backoff import Backoff
from kafkaev.errors import (
    FENCED_INSTANCE_ID,
    FENCED_MEMBER_EPOCH,
    ILLEGAL_GENERATION,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    STALE_MEMBER_EPOCH,
    STATE,
    TIMED_OUT,
    UNKNOWN_MEMBER_ID,
    UNSTABLE_OFFSET_COMMIT,
    KafkaError,
)
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection, OffsetToCommit
from kafkaev.types import NO_LEADER_EPOCH, NO_OFFSET, TopicPartition

from .context import ConsumerContext
from .coordinator import CoordinatorLink, retriable_group_error
from .subscription import Phase, ResetKind

# Errors that mean this member's generation is over: the commit is refused and it must rejoin.
MEMBERSHIP_ERRORS = frozenset({ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS,
                               FENCED_MEMBER_EPOCH})


def _retriable(err: KafkaError, link: CoordinatorLink) -> bool:
    """A commit or fetch worth trying again: the coordinator's errors, or (KIP-848) an epoch the
    next heartbeat will have moved on."""
    return retriable_group_error(err, link) or err.code == STALE_MEMBER_EPOCH


class CommitOffset(NamedTuple):
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str | None = None


class Committed(NamedTuple):
    offset: int  # NO_OFFSET: nothing committed
    leader_epoch: int
    metadata: str | None


class Identity(Protocol):
    """The member a commit is made for: its generation (classic) or member epoch (KIP-848)."""

    @property
    def group_id(self) -> str: ...
    @property
    def generation_id(self) -> int: ...
    @property
    def member_id(self) -> str: ...
    @property
    def group_instance_id(self) -> str | None: ...
    @property
    def member_epoch_for_fetch(self) -> int: ...  # OffsetFetch v9+: -1 for a classic member

    def membership_lost(self, code: int) -> None: ...


def positions_to_commit(ctx: ConsumerContext, manager: OffsetManager, partitions: Sequence[TopicPartition], *,
                        only_advanced: bool) -> dict[TopicPartition, CommitOffset]:
    """The positions of ``partitions`` worth committing; from inside ``on_message``/``on_batch``,
    counting the records handed over so far. ``only_advanced``: those above what is committed."""
    offsets: dict[TopicPartition, CommitOffset] = {}
    for tp in partitions:
        state = ctx.subscription.get(tp)
        if state is None or state.position < 0 or state.phase is Phase.AWAIT_COMMITTED:
            continue
        # From inside a callback: up to and including the record being delivered.
        position, epoch = ctx.delivered(state)
        if only_advanced and position <= manager.last_committed.get(tp, NO_OFFSET):
            continue
        offsets[tp] = CommitOffset(position, epoch, None)
    return offsets


class OffsetManager:
    __slots__ = ("ctx", "link", "member", "require_stable", "last_committed", "_commits_issued", "_newest_commit",
                 "_commit_backoff", "_fetch_backoff", "_position_backoff")

    def __init__(self, ctx: ConsumerContext, link: CoordinatorLink, member: Identity, *, require_stable: bool) -> None:
        self.ctx = ctx
        self.link = link
        self.member = member
        self.require_stable = require_stable
        # Highest offset this member knows to be committed, per partition: auto-commit
        # never sends anything lower, so committed offsets do not go backwards.
        self.last_committed: dict[TopicPartition, int] = {}
        # Every commit() gets the next number; per partition, the number of the newest
        # commit that carries it. An attempt is retried only where it is still the newest.
        self._commits_issued = 0
        self._newest_commit: dict[TopicPartition, int] = {}
        # Retries of OffsetCommit and OffsetFetch back off apart, each reset by an answer.
        self._commit_backoff = Backoff(ctx.config.retry_backoff)
        self._fetch_backoff = Backoff(ctx.config.retry_backoff)
        self._position_backoff = Backoff(ctx.config.retry_backoff)  # seek_to_committed's retries

    # --- commit ------------------------------------------------------------------------------------
    def commit(
        self, offsets: dict[TopicPartition, CommitOffset], cb: Callable[[KafkaError | None], object] | None
    ) -> None:
        """``cb(None)`` when every offset was committed, else ``cb(first_error)``; once."""
        if not offsets:
            if cb is not None:
                self.ctx.loop.call_soon(self.ctx.call, cb, None)
            return
        deadline = self.ctx.loop.time() + self.ctx.config.request_timeout_ms / 1000.0
        self._commits_issued += 1
        serial = self._commits_issued
        for tp in offsets:
            self._newest_commit[tp] = serial
        self._commit_attempt(dict(offsets), cb, deadline, serial)

    def _still_newest(self, offsets: dict[TopicPartition, CommitOffset], serial: int) -> dict[TopicPartition, CommitOffset]:
        return {tp: o for tp, o in offsets.items() if self._newest_commit.get(tp) == serial}

    def _retry_later(
        self, offsets: dict[TopicPartition, CommitOffset], cb: Callable[[KafkaError | None], object] | None,
        deadline: float, serial: int, err: KafkaError,
    ) -> None:
        """Try ``offsets`` again after the backoff, minus what a newer commit now carries."""

        def again() -> None:
            current = self._still_newest(offsets, serial)
            if len(current) == len(offsets):
                self._commit_attempt(current, cb, deadline, serial)
                return
            # This commit did not land for some partitions and never will: say so, once.
            replaced = KafkaError(err.code, f"{err.message or err.description}; not retried for "
                                            f"{len(offsets) - len(current)} partition(s): a newer commit replaced it")
            if not current:
                if cb is not None:
                    self.ctx.call(cb, replaced)
                return
            user_cb = cb
            report_replaced = None if user_cb is None else (lambda e: user_cb(e or replaced))
            self._commit_attempt(current, report_replaced, deadline, serial)

        self.ctx.loop.call_later(self._commit_backoff.next_delay_s(), again)

    def _commit_attempt(
        self, offsets: dict[TopicPartition, CommitOffset], cb: Callable[[KafkaError | None], object] | None,
        deadline: float, serial: int,
    ) -> None:
        member = self.member
        sent_generation = member.generation_id

        def finish(err: KafkaError | None) -> None:
            if cb is not None:
                self.ctx.call(cb, err)

        def retry_or_fail(err: KafkaError) -> None:
            if _retriable(err, self.link) and self.ctx.loop.time() < deadline:
                self._retry_later(offsets, cb, deadline, serial, err)
            else:
                finish(err)

        def on_response(resp: codec.OffsetCommitResponse | None, err: KafkaError | None) -> None:
            if err is not None:
                self.link.forget()
                retry_or_fail(err)
                return
            assert resp is not None  # no error: an answer
            first: KafkaError | None = None
            retry: dict[TopicPartition, CommitOffset] = {}
            for t in resp.topics:
                for p in t.partitions:
                    tp = TopicPartition(t.name, p.partition_index)
                    sent = offsets.get(tp)
                    if sent is None:
                        continue
                    code = p.error_code
                    if code == NONE:
                        if sent.offset > self.last_committed.get(tp, NO_OFFSET):
                            self.last_committed[tp] = sent.offset
                        continue
                    if self.link.on_error_code(code) or code == STALE_MEMBER_EPOCH:
                        retry[tp] = sent
                        continue
                    if code in MEMBERSHIP_ERRORS and sent_generation == member.generation_id:
                        # A refusal of an older generation's commit (sent before a rejoin the
                        # member has since made) says nothing about the current one.
                        member.membership_lost(code)
                    if first is None:
                        first = KafkaError(code, f"committing {tp.topic}[{tp.partition}] at {sent.offset} "
                                                 f"for group {member.group_id!r}")
            if not retry:
                self._commit_backoff.reset()  # the coordinator answered for every partition
            if retry and first is None:
                if self.ctx.loop.time() < deadline:
                    moved = KafkaError(NOT_COORDINATOR, f"the coordinator of group {member.group_id!r} moved")
                    self._retry_later(retry, cb, deadline, serial, moved)
                    return
                first = KafkaError(TIMED_OUT, f"the coordinator of group {member.group_id!r} kept moving")
            finish(first)

        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if err is not None:
                retry_or_fail(err)
                return
            assert conn is not None  # no error: a connection
            nonlocal sent_generation
            sent_generation = member.generation_id
            rows = [OffsetToCommit(tp.topic, tp.partition, o.offset, o.leader_epoch, o.metadata) for tp, o in offsets.items()]
            try:
                conn.offset_commit(member.group_id, sent_generation, member.member_id, rows, on_response,
                                   group_instance_id=member.group_instance_id)
            except KafkaError as exc:
                finish(exc)

        self.link.get(on_conn)

    # --- committed -----------------------------------------------------------------------------------
    def fetch(
        self,
        partitions: Iterable[TopicPartition],
        cb: Callable[[dict[TopicPartition, Committed] | None, KafkaError | None], object],
    ) -> None:
        """``cb({tp: Committed}, None)`` or ``cb(None, err)``, once."""
        wanted = list(partitions)
        deadline = self.ctx.loop.time() + self.ctx.config.request_timeout_ms / 1000.0
        self._fetch_attempt(wanted, cb, deadline)

    def _fetch_attempt(
        self,
        wanted: list[TopicPartition],
        cb: Callable[[dict[TopicPartition, Committed] | None, KafkaError | None], object],
        deadline: float,
    ) -> None:
        group_id = self.member.group_id

        def retry_or_fail(err: KafkaError) -> None:
            if (_retriable(err, self.link) or err.code == UNSTABLE_OFFSET_COMMIT) and self.ctx.loop.time() < deadline:
                self.ctx.loop.call_later(self._fetch_backoff.next_delay_s(), self._fetch_attempt, wanted, cb, deadline)
            else:
                self.ctx.call(cb, None, err)

        def on_response(resp: codec.OffsetFetchResponse | None, err: KafkaError | None) -> None:
            if err is not None:
                self.link.forget()
                retry_or_fail(err)
                return
            assert resp is not None  # no error: an answer
            groups = getattr(resp, "groups", None)
            body = groups[0] if groups else resp
            if body.error_code != NONE:
                self.link.on_error_code(body.error_code)
                retry_or_fail(KafkaError(body.error_code, f"fetching committed offsets of group {group_id!r}"))
                return
            result: dict[TopicPartition, Committed] = {}
            for t in body.topics or ():
                for p in t.partitions or ():
                    tp = TopicPartition(t.name, p.partition_index)
                    if p.error_code != NONE:
                        retry_or_fail(KafkaError(p.error_code, f"committed offset of {tp.topic}[{tp.partition}] "
                                                               f"in group {group_id!r}"))
                        return
                    epoch = getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH)
                    result[tp] = Committed(p.committed_offset, epoch, p.metadata)
                    if p.committed_offset > self.last_committed.get(tp, NO_OFFSET):
                        self.last_committed[tp] = p.committed_offset
            for tp in wanted:
                result.setdefault(tp, Committed(NO_OFFSET, NO_LEADER_EPOCH, None))
            self._fetch_backoff.reset()
            self.ctx.call(cb, result, None)

        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if err is not None:
                retry_or_fail(err)
                return
            assert conn is not None  # no error: a connection
            try:
                epoch = self.member.member_epoch_for_fetch
                conn.offset_fetch(group_id, [TopicPartition(tp.topic, tp.partition) for tp in wanted], on_response,
                                  require_stable=self.require_stable,
                                  member_id=self.member.member_id if epoch >= 0 else None, member_epoch=epoch)
            except KafkaError as exc:
                self.ctx.call(cb, None, exc)

        self.link.get(on_conn)

    # --- positions of newly assigned partitions ---------------------------------------------------
    def seek_to_committed(self, partitions: list[TopicPartition], still_owner: Callable[[], bool],
                          positioned: Callable[[], None]) -> None:
        """Start each of ``partitions`` at its committed offset (validated, KIP-320), else where
        auto_offset_reset says; retried while ``still_owner()``; ``positioned()`` once done."""
        ctx = self.ctx
        snapshot = {tp: (s, s.generation) for tp in partitions if (s := ctx.subscription.get(tp)) is not None}

        def done(result: dict[TopicPartition, Committed] | None, err: KafkaError | None) -> None:
            if err is not None or result is None:
                ctx.report(err or KafkaError(STATE, "no committed offsets"))
                if still_owner():
                    ctx.loop.call_later(self._position_backoff.next_delay_s(),
                                        self.seek_to_committed, partitions, still_owner, positioned)
                return
            self._position_backoff.reset()
            for tp, (state, state_generation) in snapshot.items():
                if ctx.subscription.get(tp) is not state or state.generation != state_generation:
                    continue  # the user seeked meanwhile, or it was revoked
                committed = result.get(tp)
                if committed is not None and committed.offset >= 0:
                    state.seek(committed.offset, committed.leader_epoch)
                    # KIP-320: a leader still in the epoch the offset was committed in has every
                    # record of it (one leader per epoch, its log not truncated within its own
                    # epoch): nothing to check, and a first fetch one round trip sooner.
                    if committed.leader_epoch != ctx.leader(tp.topic, tp.partition)[1]:
                        state.request_validation()
                    continue
                policy = ctx.auto_offset_reset
                if policy == "error":
                    state.fail()
                    ctx.report(KafkaError(
                        STATE, f"{tp.topic}[{tp.partition}]: group {self.member.group_id!r} has no committed "
                               "offset and auto_offset_reset is 'error'; seek() to start"))
                else:
                    state.request_reset(ResetKind.EARLIEST if policy == "earliest" else ResetKind.LATEST)
            positioned()

        self.fetch(list(snapshot), done)
