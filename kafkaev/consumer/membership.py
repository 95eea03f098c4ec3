"""What the Consumer asks of a group member, whichever protocol it speaks.

``subscribe(group_protocol="classic")`` makes a ``GroupMember`` (group.py: JoinGroup,
SyncGroup, Heartbeat); ``group_protocol="consumer"`` a ``ConsumerGroupMember``
(group_consumer.py: ConsumerGroupHeartbeat, KIP-848). Both are a ``Membership``: the
Consumer knows nothing else of them. Both are built on ``GroupMemberBase``, the one owner of
what they share (the coordinator link, the ``OffsetManager``, the ``OwnedPartitions``, the
``RebalanceClock``, the ``AutoCommitTimer``, the heartbeat timer, starting and committing);
each subclass keeps only its protocol. Their options are one ``GroupOptions``, the
subscribed topics one ``TopicSelection``; ``group_metadata()`` gives what a
transactional producer needs of the member (``kafkaev.ConsumerGroupMetadata``, KIP-447).
"""

from __future__ import annotations

import abc
import asyncio
import enum
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kafkaev.backoff import Backoff
from kafkaev.cluster.metadata import ClusterMetadata, Metadata
from kafkaev.errors import STATE, KafkaError
from kafkaev.types import ConsumerGroupMetadata, TopicPartition

from .assignors import Assignor
from .context import ConsumerContext
from .coordinator import group_coordinator
from .offsets import OffsetManager, positions_to_commit
from .subscription import Phase

# Leaving a consumer-protocol group (KIP-848): a dynamic member for good, a static one for now
# (its partitions wait for it for the session timeout).
LEAVE_EPOCH_DYNAMIC = -1
LEAVE_EPOCH_STATIC = -2
# The epoch a consumer-protocol member joins (and rejoins after being fenced) with.
JOIN_EPOCH = 0
# OffsetFetch v9+'s member epoch of a member that is not a consumer-protocol one.
NO_MEMBER_EPOCH = -1


class GroupState(enum.Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    SYNCING = "syncing"  # classic only: between JoinGroup and SyncGroup
    STABLE = "stable"
    FAILED = "failed"  # fatal error reported; only unsubscribe() leaves this state
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class TopicSelection:
    """What a member subscribes to: topic names, or a pattern (``regex`` as the user wrote it,
    for the broker under "consumer"; ``compiled`` for matching metadata under "classic")."""

    topics: frozenset[str]
    regex: str | None = None

    @property
    def compiled(self) -> re.Pattern[str] | None:
        return None if self.regex is None else re.compile(self.regex)

    def track(self, metadata: Metadata) -> None:
        """Have the metadata follow these topics: a pattern needs every topic's name and id
        (the client matches it under "classic"; under "consumer" the broker assigns by id)."""
        metadata.track_all_topics(self.regex is not None)
        metadata.add_topics(self.topics)

    def matching(self, metadata: ClusterMetadata) -> frozenset[str]:
        """The topics this selection names in ``metadata``: the pattern matched against every
        (non-internal) topic as a whole name, as the Java client does."""
        pattern = self.compiled
        if pattern is None:
            return self.topics
        return frozenset(name for name, info in metadata.topics.items()
                         if not info.is_internal and info.partitions and pattern.fullmatch(name))


@dataclass(slots=True)
class GroupOptions:
    group_id: str
    selection: TopicSelection
    assignors: tuple[Assignor, ...]  # classic only
    group_instance_id: str | None
    session_timeout_ms: int  # classic only: the broker sets it under "consumer"
    rebalance_timeout_ms: int
    heartbeat_interval_ms: int  # classic only: the broker sets it under "consumer"
    auto_commit: bool
    auto_commit_interval_ms: int
    on_assign: Callable[[list[TopicPartition]], Any] | None
    on_revoke: Callable[[list[TopicPartition]], Any] | None
    on_lost: Callable[[list[TopicPartition]], Any] | None
    remote_assignor: str | None = None  # "consumer" only: None is the broker's default
    client_rack: str | None = None


class OwnedPartitions:
    """The partitions a member owns, and the user's callbacks as they change: the one place
    either protocol's member takes, revokes and loses partitions."""

    __slots__ = ("ctx", "options", "partitions", "_changed")

    def __init__(self, ctx: ConsumerContext, options: GroupOptions, changed: Callable[[], None]) -> None:
        self.ctx = ctx
        self.options = options
        self.partitions: list[TopicPartition] = []
        self._changed = changed  # the fetcher's kick

    def take(self, added: list[TopicPartition]) -> None:
        """Own ``added`` (each waits for its committed offset), then ``on_assign``."""
        subscription = self.ctx.subscription
        for tp in added:
            state = subscription.add(tp)
            state.phase = Phase.AWAIT_COMMITTED
            state.generation += 1
        self.partitions = sorted(set(self.partitions) | set(added))
        if self.options.on_assign is not None:
            self.ctx.call(self.options.on_assign, list(added))

    def revoke(self, partitions: list[TopicPartition]) -> asyncio.Future[Any] | None:
        """Give ``partitions`` up (``on_revoke``; the caller committed them, if it commits).
        When on_revoke returns an asyncio Future still running (a handler runner finishing what
        it holds of them), return it: the caller goes on once it is done, as the Java consumer's
        rebalance waits for onPartitionsRevoked; the coordinator bounds the wait by
        rebalance_timeout_ms."""
        if not partitions:
            return None
        pending = None
        if self.options.on_revoke is not None:
            pending = self.ctx.call(self.options.on_revoke, list(partitions))
        self._drop(partitions)
        if isinstance(pending, asyncio.Future) and not pending.done():
            return pending
        return None

    def lose(self) -> None:
        """Everything already belongs to someone else: no commit, ``on_lost`` instead of ``on_revoke``."""
        lost = list(self.partitions)
        if not lost:
            return
        callback = self.options.on_lost or self.options.on_revoke
        if callback is not None:
            self.ctx.call(callback, lost)
        self._drop(lost)

    def _drop(self, partitions: list[TopicPartition]) -> None:
        gone = set(partitions)
        self.partitions = [tp for tp in self.partitions if tp not in gone]
        self.ctx.subscription.remove(partitions)
        self._changed()


class RebalanceClock:
    """A member's rebalances for statistics (kafkaev/stats): how many completed, and how long
    the last one and all of them took, from the first step away from a settled assignment to
    the next settled one."""

    __slots__ = ("loop", "rebalances", "last_rebalance_ms", "rebalance_ms_total", "_started")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.rebalances = 0
        self.last_rebalance_ms = 0.0
        self.rebalance_ms_total = 0.0
        self._started: float | None = None  # loop time the running rebalance began

    @property
    def running(self) -> bool:
        return self._started is not None

    def start(self) -> bool:
        """A rebalance begins (no-op while one runs); True when this call began it."""
        if self._started is not None:
            return False
        self._started = self.loop.time()
        return True

    def finish(self) -> float:
        """The running rebalance settled: count it; its duration in ms (0 when none ran)."""
        started, self._started = self._started, None
        took_ms = 0.0 if started is None else (self.loop.time() - started) * 1000.0
        self.rebalances += 1
        self.last_rebalance_ms = took_ms
        self.rebalance_ms_total += took_ms
        return took_ms


class AutoCommitTimer:
    """A member's auto_commit timer: ``due()`` every ``auto_commit_interval_ms`` until stopped
    (the member decides whether there is something to commit)."""

    __slots__ = ("ctx", "options", "due", "_handle")

    def __init__(self, ctx: ConsumerContext, options: GroupOptions, due: Callable[[], None]) -> None:
        self.ctx = ctx
        self.options = options
        self.due = due
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        if self.options.auto_commit and self._handle is None:
            self._handle = self.ctx.loop.call_later(self.options.auto_commit_interval_ms / 1000.0, self._fire)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self._handle = None
        self.due()
        self.start()


class GroupMemberBase(abc.ABC):
    """What a group member does alike under either protocol, owned here once: the coordinator
    link, the OffsetManager, the owned partitions, the rebalance clock, the auto-commit and
    heartbeat timers, starting, committing, taking and giving up partitions. A subclass speaks
    its protocol: ``_join``, ``_heartbeat`` (what the heartbeat timer runs), its generation."""

    def __init__(self, ctx: ConsumerContext, options: GroupOptions, *, require_stable: bool,
                 on_partitions_changed: Callable[[], None], heartbeat_interval_ms: int) -> None:
        self.ctx = ctx
        self.options = options
        self.group_id = options.group_id
        self.group_instance_id = options.group_instance_id
        self.member_id = ""
        self.state = GroupState.UNJOINED
        self.link = group_coordinator(ctx, options.group_id)
        self.offsets = OffsetManager(ctx, self.link, self, require_stable=require_stable)
        self.ownership = OwnedPartitions(ctx, options, on_partitions_changed)
        self.rebalance_clock = RebalanceClock(ctx.loop)  # for statistics (kafkaev/stats)
        self.auto_commit = AutoCommitTimer(ctx, options, self._auto_commit)
        self.on_partitions_changed = on_partitions_changed  # the fetcher's kick
        self._interval_s = heartbeat_interval_ms / 1000.0  # the classic option, or the broker's answer
        self._heartbeat_handle: asyncio.TimerHandle | None = None
        self._heartbeat_in_flight = False
        self._heartbeat_sent_at = 0.0  # loop time the latest heartbeat went out
        self._heartbeat_backoff = Backoff(ctx.config.retry_backoff)

    # --- what each protocol says ------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def generation_id(self) -> int:
        """What OffsetCommit carries: the classic generation, or the member epoch."""

    @abc.abstractmethod
    def membership_lost(self, code: int) -> None:
        """A commit (or heartbeat) was refused for membership reasons."""

    @abc.abstractmethod
    def _join(self) -> None: ...

    @abc.abstractmethod
    def _heartbeat(self) -> None:
        """What the heartbeat timer runs."""

    @abc.abstractmethod
    def _no_generation(self) -> str | None:
        """Why there is nothing to commit with now (a phrase for the error), or None."""

    @abc.abstractmethod
    def _owner_check(self) -> Callable[[], bool]:
        """A test, made now, of whether partitions taken now are still this member's."""

    def _may_auto_commit(self) -> bool:
        return self.state is GroupState.STABLE and bool(self.owned)

    # --- the Membership interface -----------------------------------------------------------------
    @property
    def owned(self) -> list[TopicPartition]:
        return self.ownership.partitions

    @property
    def member_epoch_for_fetch(self) -> int:
        return NO_MEMBER_EPOCH

    def group_metadata(self) -> ConsumerGroupMetadata:
        return ConsumerGroupMetadata(self.group_id, self.generation_id, self.member_id, self.group_instance_id)

    def start(self) -> None:
        # Join once the subscribed topics are in the metadata: the partition counts recorded at
        # assignment time must be real, and topic ids must have names.
        self.options.selection.track(self.ctx.metadata)
        self.auto_commit.start()
        self.ctx.metadata.refresh(lambda _md, _err: self._join())

    def commit_positions(self, partitions: Sequence[TopicPartition] | None,
                         cb: Callable[[KafkaError | None], object] | None, *, only_advanced: bool) -> None:
        """Commit the current positions of ``partitions`` (default: all owned); from inside
        ``on_message``/``on_batch``, counting the records handed over so far."""
        offsets = positions_to_commit(self.ctx, self.offsets, self.owned if partitions is None else partitions,
                                      only_advanced=only_advanced)
        refusal = self._no_generation() if offsets else None
        if refusal is not None:
            if cb is not None:
                self.ctx.loop.call_soon(self.ctx.call, cb, KafkaError(STATE, f"group {self.group_id!r}: {refusal}"))
            return
        self.offsets.commit(offsets, cb)

    def abandon(self) -> None:
        """Stop at once without committing or leaving (the client is closing hard)."""
        self._stop_timers()
        self.state = GroupState.CLOSED
        self.link.close()

    # --- partitions -------------------------------------------------------------------------------
    def _assign(self, added: list[TopicPartition]) -> None:
        """Own ``added``, then seek each to its committed offset while it is still ours."""
        self.ownership.take(added)
        self.offsets.seek_to_committed(added, self._owner_check(), self.on_partitions_changed)

    def _give_up_all(self, then: Callable[[], object], *, commit: bool) -> None:
        """Commit what was read (auto_commit, when ``commit``) and revoke everything owned, then
        ``then()`` once both are done."""

        def after_commit(err: KafkaError | None) -> None:
            self._report_err(err)
            then()

        self._commit_and_revoke(list(self.owned), after_commit, commit=commit)

    def _commit_and_revoke(self, partitions: list[TopicPartition], then: Callable[[KafkaError | None], object], *,
                           commit: bool) -> None:
        """Commit the positions of ``partitions`` (auto_commit, when ``commit``) and revoke them in
        the same turn: nothing of them is delivered after their positions were taken (records
        delivered while the commit was in flight were read again by the next owner). Then
        ``then(commit_err)`` once the commit is answered and on_revoke's Future (a handler runner
        finishing them) is done, whichever comes last."""
        committed: asyncio.Future[KafkaError | None] = self.ctx.loop.create_future()
        if commit and self.options.auto_commit and partitions:
            self.commit_positions(partitions, committed.set_result, only_advanced=True)
        else:
            committed.set_result(None)
        revoking = self.ownership.revoke(partitions)

        def proceed(_done: object = None) -> None:
            if revoking is not None and not revoking.done():
                revoking.add_done_callback(proceed)
            elif not committed.done():
                committed.add_done_callback(proceed)
            else:
                then(committed.result())

        proceed()

    @staticmethod
    def _after(pending: asyncio.Future[Any] | None, then: Callable[[], object]) -> None:
        if pending is None:
            then()
        else:
            pending.add_done_callback(lambda _done: then())

    # --- timers -----------------------------------------------------------------------------------
    def _arm_heartbeat(self, delay_s: float) -> None:
        self._stop_heartbeat()
        self._heartbeat_handle = self.ctx.loop.call_later(delay_s, self._heartbeat)

    def _heartbeat_sent(self) -> None:
        self._heartbeat_in_flight = True
        self._heartbeat_sent_at = self.ctx.loop.time()

    def _arm_next_heartbeat(self) -> None:
        """The next heartbeat one interval after the last one was sent, as the interval is meant
        (the Java client's timer too): counted from its answer, each round trip would be added."""
        self._arm_heartbeat(max(0.0, self._heartbeat_sent_at + self._interval_s - self.ctx.loop.time()))

    def _stop_heartbeat(self) -> None:
        if self._heartbeat_handle is not None:
            self._heartbeat_handle.cancel()
            self._heartbeat_handle = None

    def _stop_timers(self) -> None:
        self._stop_heartbeat()
        self.auto_commit.stop()

    def _auto_commit(self) -> None:
        if self._may_auto_commit():
            self.commit_positions(None, self._report_err, only_advanced=True)

    def _report_err(self, err: KafkaError | None) -> None:
        """A background commit's outcome: an error goes to on_error."""
        if err is not None:
            self.ctx.report(err)

    def _fatal(self, err: KafkaError) -> None:
        self.state = GroupState.FAILED
        self._stop_timers()
        self.ownership.lose()
        self.ctx.report(err)


class Membership(Protocol):
    """A group member as the Consumer drives it."""

    @property
    def group_id(self) -> str: ...
    @property
    def state(self) -> GroupState: ...
    @property
    def offsets(self) -> OffsetManager: ...
    @property
    def member_id(self) -> str: ...
    @property
    def generation_id(self) -> int: ...  # the classic generation, or the member epoch
    @property
    def owned(self) -> list[TopicPartition]: ...
    @property
    def rebalance_clock(self) -> RebalanceClock: ...  # for statistics

    def start(self) -> None: ...
    def set_selection(self, selection: TopicSelection) -> None: ...
    def commit_positions(self, partitions: Sequence[TopicPartition] | None,
                         cb: Callable[[KafkaError | None], object] | None, *, only_advanced: bool) -> None: ...
    def leave(self, cb: Callable[[KafkaError | None], object] | None) -> None: ...
    def abandon(self) -> None: ...
    def on_metadata(self) -> None: ...
    def group_metadata(self) -> ConsumerGroupMetadata: ...
