"""Offsets: partitions' offsets by time, a group's committed offsets (list, alter, delete, lag),
and resetting them the way ``kafka-consumer-groups.sh --reset-offsets`` does.

A reset works out every partition's target from the log (earliest, latest, by timestamp) and the
group's current commit, clamps an explicit offset or a shift into the log's range, and then, unless
it is a dry run, commits the targets for the group, which must have no members: the coordinator
takes a commit without a generation only from nobody.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..errors import NON_EMPTY_GROUP, NONE, STATE, KafkaError
from ..protocol import codec
from ..protocol.connection import Connection, OffsetLookup, OffsetToCommit
from ..types import (
    ISOLATION_READ_COMMITTED,
    ISOLATION_READ_UNCOMMITTED,
    NO_LEADER_EPOCH,
    NO_OFFSET,
    NO_TIMESTAMP,
    OFFSET_BEGINNING,
    OFFSET_END,
    TopicPartition,
)
from .core import (
    INT64_MAX,
    Gather,
    ResultCallback,
    check_int,
    check_names,
    check_partitions,
    error_or_none,
    gathered,
    send_request,
)
from .groups import ConsumerGroupDescription, GroupAdmin

MAX_TIMESTAMP = -3  # ListOffsets: the offset of the record with the largest timestamp (KIP-734)
NO_GENERATION = -1  # an OffsetCommit from outside the group
NO_MEMBER = ""
INACTIVE_STATES = frozenset({"Empty", "Dead"})  # group states in which offsets can be reset


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Which offset ``list_offsets`` asks for: ``earliest()``, ``latest()``, ``max_timestamp()``
    or ``for_timestamp(ms)`` (the first record at or after ms)."""

    timestamp: int

    def __post_init__(self) -> None:
        check_int("OffsetSpec.timestamp", self.timestamp, MAX_TIMESTAMP, INT64_MAX)

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(OFFSET_BEGINNING)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(OFFSET_END)

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return cls(MAX_TIMESTAMP)

    @classmethod
    def for_timestamp(cls, timestamp_ms: int) -> OffsetSpec:
        check_int("timestamp_ms", timestamp_ms, 0, INT64_MAX)
        return cls(timestamp_ms)


@dataclass(frozen=True, slots=True)
class ListedOffset:
    """A partition's offset for an OffsetSpec (NO_OFFSET: no record at or after the timestamp)."""

    offset: int
    timestamp: int = NO_TIMESTAMP
    leader_epoch: int = NO_LEADER_EPOCH
    error: KafkaError | None = None


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str | None = None
    error: KafkaError | None = None


@dataclass(frozen=True, slots=True)
class PartitionLag:
    topic: str
    partition: int
    committed: int  # NO_OFFSET when the group has no committed offset for it
    end_offset: int
    lag: int  # end_offset - committed (end_offset when nothing is committed)


class ResetKind(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    TIMESTAMP = "timestamp"
    OFFSET = "offset"
    SHIFT = "shift"


@dataclass(frozen=True, slots=True)
class OffsetReset:
    """Where ``reset_group_offsets`` moves a group: ``to_earliest()``, ``to_latest()``,
    ``to_timestamp(ms)``, ``to_offset(n)`` or ``shift_by(n)`` (from the committed offset)."""

    kind: ResetKind
    value: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, ResetKind):
            raise TypeError(f"kafkaev.OffsetReset: 'kind' must be a ResetKind, got {self.kind!r}")
        low = -INT64_MAX if self.kind is ResetKind.SHIFT else 0
        check_int("OffsetReset.value", self.value, low, INT64_MAX)

    @classmethod
    def to_earliest(cls) -> OffsetReset:
        return cls(ResetKind.EARLIEST)

    @classmethod
    def to_latest(cls) -> OffsetReset:
        return cls(ResetKind.LATEST)

    @classmethod
    def to_timestamp(cls, timestamp_ms: int) -> OffsetReset:
        return cls(ResetKind.TIMESTAMP, timestamp_ms)

    @classmethod
    def to_offset(cls, offset: int) -> OffsetReset:
        return cls(ResetKind.OFFSET, offset)

    @classmethod
    def shift_by(cls, delta: int) -> OffsetReset:
        return cls(ResetKind.SHIFT, delta)


@dataclass(frozen=True, slots=True)
class PartitionReset:
    """One partition of a reset: the group's offset before (NO_OFFSET: none), the target, and the
    error that kept it from being committed (or from being worked out)."""

    topic: str
    partition: int
    current: int
    target: int
    error: KafkaError | None = None


class OffsetAdmin(GroupAdmin):
    """Offset lookups and a group's committed offsets."""

    # --- the log ------------------------------------------------------------------------------
    def list_offsets(self, specs: Mapping[TopicPartition, OffsetSpec],
                     cb: ResultCallback[dict[TopicPartition, ListedOffset]], *,
                     isolation_level: int = ISOLATION_READ_UNCOMMITTED) -> None:
        """``cb({TopicPartition: ListedOffset}, err)``, asking each partition's leader; a partition
        that failed has its ``.error``."""
        if not isinstance(specs, Mapping):
            raise TypeError(f"kafkaev.Admin: 'specs' must be a mapping, got {type(specs).__name__}")
        check_partitions("specs", specs)
        for tp, spec in specs.items():
            if not isinstance(spec, OffsetSpec):
                raise TypeError(f"kafkaev.Admin: 'specs[{tp.topic}[{tp.partition}]]' must be an OffsetSpec, got {type(spec).__name__}")
        check_int("isolation_level", isolation_level, ISOLATION_READ_UNCOMMITTED, ISOLATION_READ_COMMITTED)
        self._list_offsets({tp: spec.timestamp for tp, spec in specs.items()}, self._once(cb), isolation_level)

    def _list_offsets(self, timestamps: dict[TopicPartition, int],
                      done: ResultCallback[dict[TopicPartition, ListedOffset]],
                      isolation_level: int = ISOLATION_READ_UNCOMMITTED) -> None:
        def merge(parts: list[dict[TopicPartition, ListedOffset]] | None, err: KafkaError | None) -> None:
            done(None if parts is None else {tp: o for part in parts for tp, o in part.items()}, err)

        def send(conn: Connection, tps: list[TopicPartition], gather: Gather[dict[TopicPartition, ListedOffset]]
                 ) -> None:
            on_response = gathered(codec.ListOffsetsResponse, gather, lambda resp: {
                TopicPartition(t.name, p.partition_index): ListedOffset(
                    p.offset, p.timestamp, p.leader_epoch, error_or_none(p.error_code, f"{t.name}[{p.partition_index}]"))
                for t in resp.topics for p in t.partitions})
            conn.list_offsets([OffsetLookup(tp.topic, tp.partition, timestamps[tp], NO_LEADER_EPOCH) for tp in tps],
                              on_response, isolation_level=isolation_level)

        def unreachable(errors: dict[TopicPartition, KafkaError]) -> dict[TopicPartition, ListedOffset]:
            return {tp: ListedOffset(NO_OFFSET, error=e) for tp, e in errors.items()}

        self._on_leaders(timestamps, merge, send, unreachable)

    def end_offsets(self, partitions: Iterable[TopicPartition], cb: ResultCallback[dict[TopicPartition, int]]) -> None:
        """``cb({TopicPartition: end offset}, err)``, asking each partition's leader; any failed
        partition fails the call."""
        wanted = check_partitions("partitions", partitions)
        self._end_offsets(wanted, self._once(cb))

    def _end_offsets(self, partitions: list[TopicPartition], done: ResultCallback[dict[TopicPartition, int]]) -> None:
        self._offsets_or_fail({tp: OFFSET_END for tp in partitions}, done)

    def _offsets_or_fail(self, timestamps: dict[TopicPartition, int],
                         done: ResultCallback[dict[TopicPartition, int]]) -> None:
        def on_listed(listed: dict[TopicPartition, ListedOffset] | None, err: KafkaError | None) -> None:
            if listed is None or err is not None:
                done(None, err)
                return
            for found in listed.values():
                if found.error is not None:
                    done(None, found.error)
                    return
            done({tp: found.offset for tp, found in listed.items()}, None)

        self._list_offsets(timestamps, on_listed)

    # --- a group's commits --------------------------------------------------------------------
    def list_group_offsets(self, group_id: str, cb: ResultCallback[dict[TopicPartition, CommittedOffset]], *,
                           partitions: Iterable[TopicPartition] | None = None, require_stable: bool = False) -> None:
        """``cb({TopicPartition: CommittedOffset}, err)``: the group's commits, for ``partitions``
        (NO_OFFSET where none) or every partition it committed."""
        check_names("group_id", [group_id])
        wanted = None if partitions is None else check_partitions("partitions", partitions)
        self._committed(group_id, wanted, self._once(cb), require_stable)

    def _committed(self, group_id: str, partitions: list[TopicPartition] | None,
                   done: ResultCallback[dict[TopicPartition, CommittedOffset]], require_stable: bool = False) -> None:
        def attempt(conn: Connection, _node: int,
                    outcome: Callable[[dict[TopicPartition, CommittedOffset] | None, KafkaError | None, int], None]
                    ) -> None:
            def on_response(resp: codec.OffsetFetchResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None:
                    outcome(None, err, NONE)
                    return
                code, committed = _committed_offsets(resp)
                failure = error_or_none(code, f"OffsetFetch for group {group_id!r}")
                outcome(None if failure else committed, failure, code)

            conn.offset_fetch(group_id, partitions, on_response, require_stable=require_stable)

        self._coordinated(group_id, done, attempt)

    def group_lag(self, group_id: str, cb: ResultCallback[list[PartitionLag]]) -> None:
        """``cb([PartitionLag], err)`` for every partition the group has committed offsets for."""
        check_names("group_id", [group_id])
        done = self._once(cb)

        def on_committed(found: dict[TopicPartition, CommittedOffset] | None, err: KafkaError | None) -> None:
            if found is None or err is not None:
                done(None, err)
                return
            committed = {tp: c.offset for tp, c in found.items() if c.offset != NO_OFFSET}
            if not committed:
                done([], None)
                return

            def with_ends(ends: dict[TopicPartition, int] | None, e: KafkaError | None) -> None:
                if ends is None or e is not None:
                    done(None, e)
                    return
                done([PartitionLag(tp.topic, tp.partition, off, ends[tp], ends[tp] - off if off >= 0 else ends[tp])
                      for tp, off in sorted(committed.items())], None)

            self._end_offsets(list(committed), with_ends)

        self._committed(group_id, None, on_committed)

    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int],
                            cb: ResultCallback[dict[TopicPartition, KafkaError | None]]) -> None:
        """Commit ``offsets`` for a group that has no members: ``cb({TopicPartition: KafkaError |
        None}, err)`` (UNKNOWN_MEMBER_ID where the group is active)."""
        check_names("group_id", [group_id])
        if not isinstance(offsets, Mapping):
            raise TypeError(f"kafkaev.Admin: 'offsets' must be a mapping, got {type(offsets).__name__}")
        check_partitions("offsets", offsets)
        for tp, offset in offsets.items():
            check_int(f"offsets[{tp.topic}[{tp.partition}]]", offset, 0, INT64_MAX)
        self._commit(group_id, dict(offsets), self._once(cb))

    def _commit(self, group_id: str, offsets: dict[TopicPartition, int],
                done: ResultCallback[dict[TopicPartition, KafkaError | None]]) -> None:
        def attempt(conn: Connection, _node: int,
                    outcome: Callable[[dict[TopicPartition, KafkaError | None] | None, KafkaError | None, int], None]
                    ) -> None:
            def on_response(resp: codec.OffsetCommitResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None:
                    outcome(None, err, NONE)
                    return
                results = {TopicPartition(t.name, p.partition_index): error_or_none(p.error_code)
                           for t in resp.topics for p in t.partitions}
                # The coordinator moved: every partition says so, and all of it goes again.
                codes = {p.error_code for t in resp.topics for p in t.partitions}
                outcome(results, None, codes.pop() if len(codes) == 1 else NONE)

            conn.offset_commit(group_id, NO_GENERATION, NO_MEMBER,
                               [OffsetToCommit(tp.topic, tp.partition, off) for tp, off in offsets.items()], on_response)

        self._coordinated(group_id, done, attempt)

    def delete_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition],
                             cb: ResultCallback[dict[TopicPartition, KafkaError | None]]) -> None:
        """Delete the group's commits for ``partitions``: ``cb({TopicPartition: KafkaError | None},
        err)`` (GROUP_SUBSCRIBED_TO_TOPIC where a member still consumes the topic)."""
        check_names("group_id", [group_id])
        wanted = check_partitions("partitions", partitions)
        done = self._once(cb)
        by_topic: dict[str, list[int]] = {}
        for tp in wanted:
            by_topic.setdefault(tp.topic, []).append(tp.partition)

        def attempt(conn: Connection, _node: int,
                    outcome: Callable[[dict[TopicPartition, KafkaError | None] | None, KafkaError | None, int], None]
                    ) -> None:
            def on_response(resp: codec.OffsetDeleteResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None:
                    outcome(None, err, NONE)
                    return
                failure = error_or_none(resp.error_code, f"OffsetDelete for group {group_id!r}")
                outcome(None if failure else {TopicPartition(t.name, p.partition_index): error_or_none(p.error_code)
                                              for t in resp.topics for p in t.partitions}, failure, resp.error_code)

            body = codec.OffsetDeleteRequest(group_id=group_id, topics=[codec.OffsetDeleteRequestTopic(
                name=topic, partitions=[codec.OffsetDeleteRequestPartition(partition_index=p) for p in parts])
                for topic, parts in by_topic.items()])
            send_request(conn, body, codec.OffsetDeleteResponse, on_response)

        self._coordinated(group_id, done, attempt)

    # --- reset --------------------------------------------------------------------------------
    def reset_group_offsets(self, group_id: str, reset: OffsetReset, cb: ResultCallback[list[PartitionReset]], *,
                            topics: Iterable[str] | None = None, partitions: Iterable[TopicPartition] | None = None,
                            dry_run: bool = False) -> None:
        """Move the group's offsets to ``reset`` for every partition of ``topics``, the given
        ``partitions``, or (neither given) every partition it has committed:
        ``cb([PartitionReset], err)`` sorted by partition. ``dry_run`` works the targets out and
        commits nothing; otherwise the group must have no members (NON_EMPTY_GROUP)."""
        check_names("group_id", [group_id])
        if not isinstance(reset, OffsetReset):
            raise TypeError(f"kafkaev.Admin: 'reset' must be an OffsetReset, got {type(reset).__name__}")
        topic_names = None if topics is None else check_names("topics", topics)
        wanted = None if partitions is None else check_partitions("partitions", partitions)
        _Reset(self, group_id, reset, bool(dry_run), self._once(cb)).start(topic_names, wanted)


class _Reset:
    """One reset_group_offsets call, step by step: partitions, group state, commits and log
    bounds, targets, commit."""

    __slots__ = ("admin", "group_id", "reset", "dry_run", "done", "partitions", "committed", "bounds")

    def __init__(self, admin: OffsetAdmin, group_id: str, reset: OffsetReset, dry_run: bool,
                 done: ResultCallback[list[PartitionReset]]) -> None:
        self.admin = admin
        self.group_id = group_id
        self.reset = reset
        self.dry_run = dry_run
        self.done = done
        self.partitions: list[TopicPartition] = []
        self.committed: dict[TopicPartition, CommittedOffset] = {}
        self.bounds: dict[str, dict[TopicPartition, ListedOffset]] = {}

    def start(self, topics: list[str] | None, partitions: list[TopicPartition] | None) -> None:
        if partitions is not None:
            self._with_partitions(partitions)
        elif topics is not None:
            self.admin._topic_partitions(topics, self._on_topic_partitions)
        else:
            self.admin._committed(self.group_id, None, self._on_all_committed)

    def _on_topic_partitions(self, partitions: list[TopicPartition] | None, err: KafkaError | None) -> None:
        if partitions is None or err is not None:
            self.done(None, err)
        else:
            self._with_partitions(partitions)

    def _on_all_committed(self, found: dict[TopicPartition, CommittedOffset] | None, err: KafkaError | None) -> None:
        if found is None or err is not None:
            self.done(None, err)
            return
        self._with_partitions(sorted(tp for tp, c in found.items() if c.offset != NO_OFFSET))

    def _with_partitions(self, partitions: list[TopicPartition]) -> None:
        self.partitions = sorted(partitions)
        if not self.partitions:
            self.done([], None)
            return
        if self.dry_run:
            self._gather_offsets()
            return
        self.admin.describe_consumer_groups([self.group_id], self._on_group)

    def _on_group(self, found: dict[str, ConsumerGroupDescription] | None, err: KafkaError | None) -> None:
        if found is None or err is not None:
            self.done(None, err)
            return
        desc = found.get(self.group_id)
        if desc is not None and desc.error is None and desc.state not in INACTIVE_STATES:
            self.done(None, KafkaError(NON_EMPTY_GROUP, (
                f"group {self.group_id!r} is {desc.state} with {len(desc.members)} member(s): offsets can be "
                f"reset only while it has none")))
            return
        self._gather_offsets()

    def _gather_offsets(self) -> None:
        lookups = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END}
        if self.reset.kind is ResetKind.TIMESTAMP:
            lookups["timestamp"] = self.reset.value
        steps = len(lookups) + 1
        gather = Gather[None](steps, self._on_offsets)
        self.admin._committed(self.group_id, self.partitions, _store_committed(self, gather))
        for name, timestamp in lookups.items():
            self.admin._list_offsets({tp: timestamp for tp in self.partitions}, _store_bound(self, name, gather))

    def _on_offsets(self, _parts: list[None] | None, err: KafkaError | None) -> None:
        if err is not None:
            self.done(None, err)
            return
        plan = [self._plan(tp) for tp in self.partitions]
        todo = {TopicPartition(p.topic, p.partition): p.target for p in plan if p.error is None}
        if self.dry_run or not todo:
            self.done(plan, None)
            return

        def on_commit(results: dict[TopicPartition, KafkaError | None] | None, e: KafkaError | None) -> None:
            if results is None or e is not None:
                self.done(None, e)
                return
            self.done([PartitionReset(p.topic, p.partition, p.current, p.target,
                                      p.error or results.get(TopicPartition(p.topic, p.partition)))
                       for p in plan], None)

        self.admin._commit(self.group_id, todo, on_commit)

    def _plan(self, tp: TopicPartition) -> PartitionReset:
        current = self.committed.get(tp, CommittedOffset(NO_OFFSET)).offset
        low, high = self.bounds["earliest"][tp], self.bounds["latest"][tp]
        failure = low.error or high.error
        if failure is not None:
            return PartitionReset(tp.topic, tp.partition, current, NO_OFFSET, failure)
        kind = self.reset.kind
        if kind is ResetKind.EARLIEST:
            target = low.offset
        elif kind is ResetKind.LATEST:
            target = high.offset
        elif kind is ResetKind.TIMESTAMP:
            at = self.bounds["timestamp"][tp]
            if at.error is not None:
                return PartitionReset(tp.topic, tp.partition, current, NO_OFFSET, at.error)
            target = at.offset if at.offset != NO_OFFSET else high.offset  # nothing that late: the end
        elif kind is ResetKind.OFFSET:
            target = self.reset.value
        else:
            if current == NO_OFFSET:
                return PartitionReset(tp.topic, tp.partition, current, NO_OFFSET, KafkaError(
                    STATE, f"{tp.topic}[{tp.partition}]: no committed offset to shift from"))
            target = current + self.reset.value
        return PartitionReset(tp.topic, tp.partition, current, min(max(target, low.offset), high.offset))


def _store_committed(reset: _Reset, gather: Gather[None]) -> ResultCallback[dict[TopicPartition, CommittedOffset]]:
    def store(found: dict[TopicPartition, CommittedOffset] | None, err: KafkaError | None) -> None:
        if found is None or err is not None:
            gather.fail(err)
        else:
            reset.committed = found
            gather.add(None)
    return store


def _store_bound(reset: _Reset, name: str, gather: Gather[None]) -> ResultCallback[dict[TopicPartition, ListedOffset]]:
    def store(found: dict[TopicPartition, ListedOffset] | None, err: KafkaError | None) -> None:
        if found is None or err is not None:
            gather.fail(err)
        else:
            reset.bounds[name] = found
            gather.add(None)
    return store


def _committed_offsets(resp: codec.OffsetFetchResponse) -> tuple[int, dict[TopicPartition, CommittedOffset]]:
    """The answer's group-level error code and its partitions' commits."""
    topics: list[codec.OffsetFetchResponseTopics] | list[codec.OffsetFetchResponseTopic]
    if resp.groups:  # OffsetFetch v8+: per-group results
        group = resp.groups[0]
        code, topics = group.error_code, group.topics
    else:
        code, topics = resp.error_code, resp.topics
    return code, {TopicPartition(t.name, p.partition_index): CommittedOffset(
        p.committed_offset, p.committed_leader_epoch, p.metadata, error_or_none(p.error_code))
        for t in topics for p in t.partitions}
