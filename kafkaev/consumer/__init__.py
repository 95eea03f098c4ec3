"""The consuming half of ``kafkaev.Client``.

``Consumer`` is the facade the client delegates to: manual assignment
(assign/seek/seek_to_time/pause/resume), fetching (poll for one round,
start/stop for continuous fetching), offset queries (offsets_for, lag) and the
consumer group, classic or KIP-848 (subscribe/commit/committed/unsubscribe/group_metadata).

Files: ``subscription`` (assigned partitions and positions), ``fetcher`` and
``fetch_session`` (pipelined Fetch, KIP-227), ``read_replica`` (KIP-392), ``buffer`` (records
waiting to be pulled), ``positions`` (ListOffsets, OffsetForLeaderEpoch), ``membership`` (what
either protocol's member offers), ``group``/``group_consumer`` (classic and KIP-848 membership),
``coordinator``/``offsets``/``protocol``/``assignors`` (the coordinator, commits, the classic
payloads and assignors).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kafkaev.cluster.metadata import ClusterMetadata, Metadata, TopicInfo
from kafkaev.cluster.pool import ConnectionPool
from kafkaev.config import ClientConfig
from kafkaev.errors import STATE, KafkaError
from kafkaev.types import (
    ISOLATION_READ_COMMITTED,
    NO_LEADER_EPOCH,
    NO_OFFSET,
    OFFSET_BEGINNING,
    OFFSET_END,
    ConsumerGroupMetadata,
    OffsetAndMetadata,
    TopicPartition,
)

from .assignors import (
    Assignor,
    CooperativeStickyAssignor,
    GroupAssignment,
    MemberSubscription,
    RangeAssignor,
    RoundRobinAssignor,
    make_assignors,
)
from .buffer import RecordBuffer
from .context import ConsumerContext
from .fetcher import Fetcher
from .group import GroupMember
from .group_consumer import ConsumerGroupMember
from .membership import GroupOptions, GroupState, Membership, TopicSelection
from .offsets import CommitOffset, Committed
from .positions import list_offsets
from .subscription import PartitionState, Phase, ResetKind, SubscriptionState

ResultCallback = Callable[[Any, KafkaError | None], object]
_UNSET: Any = object()
# lag() of a partition whose position is still being looked up
LAG_UNKNOWN = -1


def commit_offset_of(tp: TopicPartition, value: object, what: str = "commit") -> CommitOffset:
    """``commit``'s (or ``send_offsets_to_transaction``'s) value for one partition: an offset,
    or an OffsetAndMetadata."""
    offset: object = value
    metadata: object = None
    leader_epoch: object = NO_LEADER_EPOCH
    if isinstance(value, OffsetAndMetadata):
        offset, metadata, leader_epoch = value
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"{what}: offset for {tp.topic}[{tp.partition}] must be an int >= 0, got {offset!r}")
    if metadata is not None and not isinstance(metadata, str):
        raise TypeError(f"{what}: metadata for {tp.topic}[{tp.partition}] must be a str or None, "
                        f"got {type(metadata).__name__}")
    if isinstance(leader_epoch, bool) or not isinstance(leader_epoch, int) or leader_epoch < NO_LEADER_EPOCH:
        raise ValueError(f"{what}: leader_epoch for {tp.topic}[{tp.partition}] must be an int >= -1, "
                         f"got {leader_epoch!r}")
    return CommitOffset(offset, leader_epoch, metadata)  # checked above


def partition_of(item: object, what: str) -> TopicPartition:
    if isinstance(item, (tuple, list)) and len(item) >= 2 and isinstance(item[0], str) \
            and isinstance(item[1], int) and not isinstance(item[1], bool) and item[1] >= 0:
        return TopicPartition(item[0], item[1])
    raise ValueError(f"{what}: expected (topic, partition) with a str topic and an int partition >= 0, got {item!r}")


def _selection_of(topics: object, pattern: object) -> TopicSelection:
    """subscribe()'s topics or pattern (exactly one of them), checked."""
    if pattern is not None:
        if topics is not None:
            raise ValueError("subscribe: pass 'topics' or 'pattern', not both")
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"subscribe: 'pattern' must be a non-empty str (a regular expression), got {pattern!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"subscribe: 'pattern' {pattern!r} is not a regular expression: {exc}") from None
        return TopicSelection(frozenset(), pattern)
    if isinstance(topics, str) or not isinstance(topics, (list, tuple, set, frozenset)) or not topics \
            or not all(isinstance(t, str) and t for t in topics):
        raise ValueError(f"subscribe: 'topics' must be a non-empty list of topic names, got {topics!r}")
    return TopicSelection(frozenset(topics))


def _check_cb(name: str, cb: object, required: bool = False) -> None:
    if cb is None and not required:
        return
    if not callable(cb):
        raise TypeError(f"{name}: 'cb' must be callable{'' if required else ' or None'}, got {type(cb).__name__}")


def _check_offset(what: str, offset: object) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < OFFSET_BEGINNING:
        raise ValueError(f"{what}: 'offset' must be an int >= 0, OFFSET_BEGINNING (-2) or OFFSET_END (-1), got {offset!r}")
    return offset


class Consumer:
    def __init__(
        self,
        config: ClientConfig,
        loop: asyncio.AbstractEventLoop,
        metadata: Metadata,
        pool: ConnectionPool,
        report: Callable[[BaseException], None],
    ) -> None:
        self.config = config
        self.ctx = ConsumerContext(loop, config, metadata, pool, SubscriptionState(), report,
                                   auto_offset_reset=config.auto_offset_reset)
        self.fetcher = Fetcher(self.ctx, on_message=config.on_message, on_batch=config.on_batch)
        self.group: Membership | None = None
        self.group_protocol = config.group_protocol  # of the group joined, once subscribed
        self.closed = False
        metadata.add_listener(self._on_metadata)

    # --- manual assignment ----------------------------------------------------------------------
    def assign(self, partitions: Iterable[Any]) -> None:
        """Read exactly these partitions: ``[(topic, partition[, offset])]`` or TopicPartitions.
        Without an offset a partition starts where auto_offset_reset says."""
        self._check_open("assign")
        if self.group is not None:
            raise KafkaError(STATE, "assign: the client is subscribed to a group; unsubscribe() first")
        self._require_handler("assign")
        wanted: dict[TopicPartition, int | None] = {}
        for item in partitions:
            tp = partition_of(item, "assign")
            offset = None
            if isinstance(item, (tuple, list)) and len(item) >= 3 and not isinstance(item, TopicPartition):
                offset = _check_offset("assign", item[2])
            wanted[tp] = offset
        subscription = self.ctx.subscription
        subscription.remove([tp for tp in subscription.partitions() if tp not in wanted])
        for tp, offset in wanted.items():
            state = subscription.get(tp)
            if state is not None and offset is None:
                continue  # kept as is
            state = subscription.add(tp)
            self._position(state, offset)
        self.ctx.metadata.add_topics({tp.topic for tp in wanted})
        self.ctx.metadata.refresh(lambda _md, _err: self.fetcher.on_metadata())
        self.fetcher.kick()

    def _position(self, state: Any, offset: int | None) -> None:
        if offset is None:
            policy = self.ctx.auto_offset_reset
            offset = OFFSET_END if policy == "latest" else OFFSET_BEGINNING
        if offset == OFFSET_BEGINNING:
            state.request_reset(ResetKind.EARLIEST)
        elif offset == OFFSET_END:
            state.request_reset(ResetKind.LATEST)
        else:
            state.seek(offset)

    def assignment(self) -> list[TopicPartition]:
        return self.ctx.subscription.partitions()

    def position(self, topic: str, partition: int) -> int:
        """The next offset to be delivered, NO_OFFSET (-1) while it is being looked up. From
        inside ``on_message``/``on_batch``: one past the record being delivered."""
        state = self._state("position", topic, partition)
        return self.ctx.delivered(state)[0] if state.phase is Phase.FETCHING else NO_OFFSET

    def seek(self, topic: str, partition: int, offset: int, cb: ResultCallback | None = None) -> None:
        """Move an assigned partition; ``cb(offset, err)`` once the position is known."""
        _check_cb("seek", cb)
        state = self._state("seek", topic, partition)
        offset = _check_offset("seek", offset)
        self._position(state, offset)
        self._when_positioned(state, cb)
        self.fetcher.kick()

    def seek_to_time(self, topic: str, partition: int, timestamp_ms: int, cb: ResultCallback | None = None) -> None:
        """Move to the first record with a timestamp >= timestamp_ms (the end if none)."""
        _check_cb("seek_to_time", cb)
        state = self._state("seek_to_time", topic, partition)
        if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, int) or timestamp_ms < 0:
            raise ValueError(f"seek_to_time: 'timestamp_ms' must be an int >= 0, got {timestamp_ms!r}")
        state.request_reset(ResetKind.TIMESTAMP, timestamp_ms)
        self._when_positioned(state, cb)
        self.fetcher.kick()

    def _when_positioned(self, state: Any, cb: ResultCallback | None) -> None:
        if cb is None:
            return
        if state.phase is Phase.FETCHING:
            self.ctx.loop.call_soon(self.ctx.call, cb, state.position, None)
            return
        subscription = self.ctx.subscription

        def settled(target: PartitionState, failure: BaseException | None) -> None:
            if failure is not None:
                self.ctx.loop.call_soon(self.ctx.call, cb, None, failure)
            elif subscription.get(target.tp) is not target:
                err = KafkaError(STATE, f"{target.topic}[{target.partition}] was unassigned before its position was found")
                self.ctx.loop.call_soon(self.ctx.call, cb, None, err)
            elif target.phase is Phase.FETCHING:
                self.ctx.loop.call_soon(self.ctx.call, cb, target.position, None)
            elif target.phase is Phase.FAILED:
                err = KafkaError(STATE, f"{target.topic}[{target.partition}]: no position (see on_error)")
                self.ctx.loop.call_soon(self.ctx.call, cb, None, err)
            else:
                target.waiters.append(settled)  # validation still to come

        state.waiters.append(settled)

    def pause(self, partitions: Iterable[Any]) -> None:
        buffer = self.fetcher.buffer
        for tp in [partition_of(p, "pause") for p in partitions]:
            state = self._state("pause", tp.topic, tp.partition)
            state.paused = True
            state.interrupt()
            if buffer is not None:
                # What was fetched and not taken waits beside the buffer, not counted in it (the
                # other partitions go on), and goes back in on resume: not fetched again.
                state.set_aside.extend(buffer.set_aside(state))

    def resume(self, partitions: Iterable[Any]) -> None:
        tps = [partition_of(p, "resume") for p in partitions]
        states = [self._state("resume", tp.topic, tp.partition) for tp in tps]
        for state in states:
            state.paused = False
        self.fetcher.resumed(states)

    def paused(self) -> list[TopicPartition]:
        return [s.tp for s in self.ctx.subscription if s.paused]

    # --- fetching ----------------------------------------------------------------------------------
    def poll(self, cb: Callable[[KafkaError | None], object] | None = None) -> None:
        self._check_open("poll")
        _check_cb("poll", cb)
        self.fetcher.poll(cb)

    def start(self) -> None:
        self._check_open("start")
        self.fetcher.start()

    def stop(self) -> None:
        self.fetcher.stop()

    # --- offsets ------------------------------------------------------------------------------------
    def offsets_for(self, topic: str, cb: ResultCallback) -> None:
        """``cb({partition: (earliest, latest)}, err)`` for every partition of ``topic``."""
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"offsets_for: 'topic' must be a non-empty str, got {topic!r}")
        _check_cb("offsets_for", cb, required=True)
        ctx = self.ctx

        def with_topic(info: TopicInfo | None, err: KafkaError | None) -> None:
            if info is None or err is not None:
                ctx.call(cb, None, err)
                return
            parts = [TopicPartition(topic, p) for p in range(info.num_partitions)]
            self._earliest_latest(parts, lambda result, e: ctx.call(
                cb, None if result is None else {tp.partition: v for tp, v in result.items()}, e))

        ctx.metadata.wait_for_topic(topic, with_topic, timeout_ms=self.config.request_timeout_ms, auto_create=False)

    def _earliest_latest(self, parts: list[TopicPartition], cb: ResultCallback) -> None:
        results: dict[int, Any] = {}

        def one(kind: int) -> Callable[..., None]:
            def done(answers: Any, errors: Any) -> None:
                results[kind] = (answers, errors)
                if len(results) == 2:
                    finish()
            return done

        def finish() -> None:
            earliest, e_errors = results[OFFSET_BEGINNING]
            latest, l_errors = results[OFFSET_END]
            errors = {**e_errors, **l_errors}
            if errors:
                self.ctx.call(cb, None, next(iter(errors.values())))
                return
            self.ctx.call(cb, {tp: (earliest[tp].offset, latest[tp].offset) for tp in parts}, None)

        isolation = self.config.isolation
        list_offsets(self.ctx, dict.fromkeys(parts, OFFSET_BEGINNING), isolation, one(OFFSET_BEGINNING))
        list_offsets(self.ctx, dict.fromkeys(parts, OFFSET_END), isolation, one(OFFSET_END))

    def lag(self, cb: ResultCallback) -> None:
        """``cb({(topic, partition): (position, high_watermark, lag)}, err)`` for the assigned
        partitions; the end offset is asked of the leaders now. position NO_OFFSET and lag
        LAG_UNKNOWN (both -1) while a partition's position is still being looked up."""
        _check_cb("lag", cb, required=True)
        states = list(self.ctx.subscription)
        if not states:
            self.ctx.loop.call_soon(self.ctx.call, cb, {}, None)
            return

        def done(answers: Any, errors: Any) -> None:
            if errors:
                self.ctx.call(cb, None, next(iter(errors.values())))
                return
            result = {}
            for state in states:
                end = answers[state.tp].offset
                position = self.ctx.delivered(state)[0] if state.phase is Phase.FETCHING else NO_OFFSET
                lag = max(end - position, 0) if position >= 0 else LAG_UNKNOWN
                result[(state.topic, state.partition)] = (position, end, lag)
            self.ctx.call(cb, result, None)

        list_offsets(self.ctx, {s.tp: OFFSET_END for s in states}, self.config.isolation, done)

    # --- group ----------------------------------------------------------------------------------------
    def subscribe(
        self,
        topics: Sequence[str] | None = None,
        *,
        pattern: str | None = None,
        group_id: str | None = _UNSET,
        group_protocol: str = _UNSET,
        remote_assignor: str | None = _UNSET,
        on_assign: Callable[[list[TopicPartition]], Any] | None = None,
        on_revoke: Callable[[list[TopicPartition]], Any] | None = None,
        on_lost: Callable[[list[TopicPartition]], Any] | None = None,
        assignors: Sequence[str | Assignor] = _UNSET,
        group_instance_id: str | None = _UNSET,
        session_timeout_ms: int = _UNSET,
        rebalance_timeout_ms: int = _UNSET,
        heartbeat_interval_ms: int = _UNSET,
        auto_commit: bool = _UNSET,
        auto_commit_interval_ms: int = _UNSET,
        auto_offset_reset: str = _UNSET,
    ) -> None:
        """Join ``group_id`` and read the partitions it assigns of ``topics``, or of every topic
        whose whole name matches ``pattern``; a second call changes the subscription (the group
        rebalances). ``group_protocol="consumer"`` is KIP-848's protocol. Defaults come from the
        client's options."""
        self._check_open("subscribe")
        self._require_handler("subscribe")
        selection = _selection_of(topics, pattern)
        c = self.config

        def pick(value: Any, default: Any) -> Any:
            return default if value is _UNSET else value

        # A second subscribe() stays with the protocol the group was joined with unless told otherwise.
        protocol = pick(group_protocol, c.group_protocol if self.group is None else self.group_protocol)
        if protocol == "consumer":
            for name, value in (("assignors", assignors), ("session_timeout_ms", session_timeout_ms),
                                ("heartbeat_interval_ms", heartbeat_interval_ms)):
                if value is not _UNSET:
                    raise ValueError(f"subscribe: '{name}' is not supported with group_protocol='consumer' "
                                     "(the broker sets it)")
        options = ClientConfig.from_kwargs(
            brokers=list(c.bootstrap),
            group_id=pick(group_id, c.group_id),
            group_protocol=protocol,
            remote_assignor=pick(remote_assignor, c.remote_assignor),
            group_instance_id=pick(group_instance_id, c.group_instance_id),
            session_timeout_ms=pick(session_timeout_ms, c.session_timeout_ms),
            rebalance_timeout_ms=pick(rebalance_timeout_ms, c.rebalance_timeout_ms),
            heartbeat_interval_ms=pick(heartbeat_interval_ms, c.heartbeat_interval_ms),
            auto_commit=pick(auto_commit, c.auto_commit),
            auto_commit_interval_ms=pick(auto_commit_interval_ms, c.auto_commit_interval_ms),
            auto_offset_reset=pick(auto_offset_reset, c.auto_offset_reset),
        )  # validates every value, naming the argument
        if options.group_id is None:
            raise ValueError("subscribe: 'group_id' is required (or set group_id in the client options)")
        for name, fn in (("on_assign", on_assign), ("on_revoke", on_revoke), ("on_lost", on_lost)):
            if fn is not None and not callable(fn):
                raise TypeError(f"subscribe: '{name}' must be callable or None, got {type(fn).__name__}")
        chosen = make_assignors(pick(assignors, c.assignors))
        if self.group is not None:
            if options.group_id != self.group.group_id:
                raise KafkaError(STATE, f"subscribe: already in group {self.group.group_id!r}; unsubscribe() first")
            if protocol != self.group_protocol:
                raise KafkaError(STATE, f"subscribe: the group is joined with group_protocol="
                                        f"{self.group_protocol!r}; unsubscribe() first")
            self.group.set_selection(selection)
            return
        if len(self.ctx.subscription):
            raise KafkaError(STATE, "subscribe: partitions are assigned manually; assign([]) first")
        self.ctx.auto_offset_reset = options.auto_offset_reset
        group_options = GroupOptions(
            group_id=options.group_id,
            selection=selection,
            assignors=chosen,
            group_instance_id=options.group_instance_id,
            session_timeout_ms=options.session_timeout_ms,
            rebalance_timeout_ms=options.rebalance_timeout_ms,
            heartbeat_interval_ms=options.heartbeat_interval_ms,
            auto_commit=options.auto_commit,
            auto_commit_interval_ms=options.auto_commit_interval_ms,
            on_assign=on_assign,
            on_revoke=on_revoke,
            on_lost=on_lost,
            remote_assignor=options.remote_assignor,
            client_rack=c.client_rack,
        )
        member_class = ConsumerGroupMember if protocol == "consumer" else GroupMember
        self.group = member_class(self.ctx, group_options,
                                  require_stable=self.config.isolation == ISOLATION_READ_COMMITTED,
                                  on_partitions_changed=self.fetcher.kick)
        self.group_protocol = protocol
        self.group.start()
        self.fetcher.start()

    def commit(self, cb: Callable[[KafkaError | None], object] | None = None,
               offsets: dict[Any, int | OffsetAndMetadata] | None = None) -> None:
        """Commit the current positions (from inside a delivery callback: every record handed
        over so far, the running one included), or ``{(topic, partition): offset}`` where an
        offset may be an ``OffsetAndMetadata`` to store a string with it; ``cb(err)`` once."""
        _check_cb("commit", cb)
        group = self._group("commit")
        if offsets is None:
            group.commit_positions(None, cb, only_advanced=False)
            return
        if not isinstance(offsets, dict):
            raise TypeError(f"commit: 'offsets' must be a dict {{(topic, partition): offset}}, got {type(offsets).__name__}")
        explicit: dict[TopicPartition, CommitOffset] = {}
        for key, value in offsets.items():
            tp = partition_of(key, "commit")
            explicit[tp] = commit_offset_of(tp, value)
        group.offsets.commit(explicit, cb)

    def committed(self, partitions: Iterable[Any], cb: ResultCallback, *, metadata: bool = False) -> None:
        """``cb({(topic, partition): offset or -1}, err)``; with ``metadata=True`` the values are
        ``OffsetAndMetadata`` (offset, the committed string, the leader epoch)."""
        _check_cb("committed", cb, required=True)
        if not isinstance(metadata, bool):
            raise TypeError(f"committed: 'metadata' must be a bool, got {type(metadata).__name__}")
        group = self._group("committed")
        tps = [partition_of(p, "committed") for p in partitions]

        def answer(result: dict[TopicPartition, Committed] | None, err: KafkaError | None) -> None:
            if result is None:
                self.ctx.call(cb, None, err)
            elif metadata:
                self.ctx.call(cb, {tp: OffsetAndMetadata(c.offset, c.metadata, c.leader_epoch)
                                   for tp, c in result.items()}, err)
            else:
                self.ctx.call(cb, {tp: c.offset for tp, c in result.items()}, err)

        group.offsets.fetch(tps, answer)

    def unsubscribe(self, cb: Callable[[KafkaError | None], object] | None = None) -> None:
        """Commit (auto_commit), revoke, leave the group; ``cb(err)`` once."""
        _check_cb("unsubscribe", cb)
        group = self.group
        if group is None:
            if cb is not None:
                self.ctx.loop.call_soon(self.ctx.call, cb, None)
            return
        self.group = None
        group.leave(cb)

    def group_state(self) -> GroupState | None:
        return None if self.group is None else self.group.state

    def group_metadata(self) -> ConsumerGroupMetadata:
        """The group member's identity now, for a transactional producer's
        ``send_offsets_to_transaction`` (KIP-447): group id, generation (the member epoch under
        "consumer"), member id, instance id."""
        return self._group("group_metadata").group_metadata()

    # --- lifetime -------------------------------------------------------------------------------------
    def close(self, cb: Callable[[KafkaError | None], object] | None = None) -> None:
        """Leave the group (committing first with auto_commit) and stop fetching."""
        if self.closed:
            if cb is not None:
                self.ctx.loop.call_soon(self.ctx.call, cb, None)
            return

        def done(err: KafkaError | None) -> None:
            self.closed = True
            self.fetcher.close()
            self.ctx.subscription.clear()
            if cb is not None:
                self.ctx.call(cb, err)

        self.fetcher.stop()
        self.unsubscribe(done)

    def abandon(self) -> None:
        """Stop everything at once: no commit, no LeaveGroup (a crash, as the group sees it)."""
        self.closed = True
        if self.group is not None:
            self.group.abandon()
            self.group = None
        self.fetcher.close()
        self.ctx.subscription.clear()

    # --- helpers --------------------------------------------------------------------------------------
    def _on_metadata(self, _md: ClusterMetadata) -> None:
        if self.closed:
            return
        self.fetcher.on_metadata()
        if self.group is not None:
            self.group.on_metadata()

    def _state(self, what: str, topic: str, partition: int) -> Any:
        state = self.ctx.subscription.get(TopicPartition(topic, partition))
        if state is None:
            raise ValueError(f"{what}: {topic}[{partition}] is not assigned to this client")
        return state

    def _group(self, what: str) -> Membership:
        if self.group is None:
            raise KafkaError(STATE, f"{what}: the client is not subscribed to a group")
        return self.group

    def _check_open(self, what: str) -> None:
        if self.closed:
            raise KafkaError(STATE, f"{what}: the client is closed")

    def use_buffer(self) -> RecordBuffer:
        """Records are pulled from the returned buffer (``kafkaev.aio``) instead of being handed
        to on_message/on_batch; it holds at most ``max_buffered_bytes``."""
        return self.fetcher.use_buffer(self.config.max_buffered_bytes)

    def _require_handler(self, what: str) -> None:
        if self.fetcher.buffer is None and self.config.on_message is None and self.config.on_batch is None:
            raise ValueError(f"{what}: the client needs 'on_message' or 'on_batch' to deliver records")


__all__ = [
    "Assignor",
    "Consumer",
    "CooperativeStickyAssignor",
    "GroupAssignment",
    "MemberSubscription",
    "RangeAssignor",
    "RoundRobinAssignor",
]
