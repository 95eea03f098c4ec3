"""Cluster administration: topics, consumer groups and their lag.

``Admin`` has the client's callback style: every operation takes ``cb(result, err)`` and calls
it exactly once. ``err`` is a ``KafkaError`` for a failure of the whole operation (no broker
reachable, timeout); per-topic or per-group outcomes are inside ``result``, because one bad
topic name must not hide what happened to the others.

    admin = kafkaev.Admin("127.0.0.1:9092")
    admin.create_topics([NewTopic("orders", 6, 1)], lambda result, err: ...)

It runs on the given loop (or a new uvloop one); ``run(op, *args)`` drives the loop until the
operation finishes, for scripts and the command line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from .backoff import Backoff
from .cluster.metadata import ClusterMetadata, Metadata, TopicInfo, topic_from_response
from .cluster.pool import ConnectionPool, Role
from .config import ClientConfig
from .error_sink import report_error
from .errors import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    GROUP_ID_NOT_FOUND,
    NONE,
    NOT_COORDINATOR,
    TRANSPORT,
    UNKNOWN_TOPIC_OR_PARTITION,
    KafkaError,
    error_name,
)
from .log import enable_debug
from .protocol import codec, connection
from .protocol.connection import Connection, OffsetLookup
from .types import NO_LEADER_EPOCH, NO_OFFSET, OFFSET_END, TopicPartition

Result = TypeVar("Result")  # what an operation hands its callback
Part = TypeVar("Part")  # one broker's share of it
ResultCallback = Callable[[Result | None, KafkaError | None], object]
ConnCallback = Callable[[Connection | None, KafkaError | None], object]

COORDINATOR_GROUP = 0
DEFAULT_REPLICATION = -1  # the broker's default.replication.factor
DEFAULT_PARTITIONS = -1  # the broker's num.partitions
DEAD_STATE = "Dead"  # a group with no members and no offsets left
# Answers that pass once the coordinator is loaded or found again: the request goes again
# after the backoff, until request_timeout_ms has passed.
COORDINATOR_NOT_READY = frozenset({COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR})


class NewTopic(NamedTuple):
    name: str
    num_partitions: int = DEFAULT_PARTITIONS
    replication_factor: int = DEFAULT_REPLICATION
    config: Mapping[str, str] = {}


class GroupListing(NamedTuple):
    group_id: str
    protocol_type: str
    state: str
    group_type: str
    coordinator: int


@dataclass(slots=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartition] = field(default_factory=list)


@dataclass(slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: int
    members: list[GroupMember] = field(default_factory=list)
    error: KafkaError | None = None


class PartitionLag(NamedTuple):
    topic: str
    partition: int
    committed: int  # NO_OFFSET when the group has no committed offset for it
    end_offset: int
    lag: int  # end_offset - committed (end_offset when nothing is committed)


def _error_or_none(code: int, message: str | None = None) -> KafkaError | None:
    return None if code == NONE else KafkaError(code, message or error_name(code))


class _Once(Generic[Result]):
    """Guards a user callback: called at most once, exceptions go to the admin's on_error."""

    __slots__ = ("cb", "report", "done")

    def __init__(self, cb: ResultCallback[Result], report: Callable[[BaseException], object]) -> None:
        self.cb = cb
        self.report = report
        self.done = False

    def __call__(self, result: Result | None, err: KafkaError | None) -> None:
        if self.done:
            return
        self.done = True
        try:
            self.cb(result, err)
        except Exception as exc:  # a user callback's failure must not break the loop
            self.report(exc)


class Admin:
    """Topic and group administration over kafkaev connections."""

    def __init__(self, brokers: Any = None, *, loop: asyncio.AbstractEventLoop | None = None,
                 **options: Any) -> None:
        config = getattr(brokers, "config", None)
        if isinstance(config, ClientConfig):  # Admin(client): same brokers and security
            options = {"tls": config.tls, "sasl": config.sasl, "client_id": config.client_id,
                       "request_timeout_ms": config.request_timeout_ms, **options}
            loop = loop or getattr(brokers, "loop", None) or config.loop
            brokers = config.brokers
        if not callable(options.get("on_error", print)):
            raise TypeError("kafkaev.Admin: 'on_error' must be callable")
        self._on_error = options.pop("on_error", None)
        self.config = ClientConfig.from_kwargs(brokers=brokers, **options)
        enable_debug(self.config.debug_areas)  # debug="admin,connection" works here as on a Client
        if loop is None:
            import uvloop

            loop = uvloop.new_event_loop()
        self.loop = loop
        self._pool = ConnectionPool(self.config, loop, on_error=self._report)
        self._metadata = Metadata(self.config, loop, self._pool, on_error=self._report)
        self._closed = False

    # --- plumbing -------------------------------------------------------------------------------
    def _report(self, exc: BaseException) -> None:
        """Errors with no callback of their own: connection failures the pool retries (logged,
        like the Client does) and exceptions raised by user callbacks (never silently lost)."""
        report_error(self.loop, self._on_error, "kafkaev.Admin", exc)

    def _once(self, cb: ResultCallback[Result]) -> _Once[Result]:
        if not callable(cb):
            raise TypeError(f"kafkaev.Admin: 'cb' must be callable, got {type(cb).__name__}")
        return _Once(cb, self._report)

    def _cluster(self, cb: Callable[[ClusterMetadata | None, KafkaError | None], object]) -> None:
        if self._metadata.bootstrapped and self._metadata.current.brokers:
            cb(self._metadata.current, None)
        else:
            self._metadata.bootstrap(cb)

    def _connection(self, node_id: int | None, cb: ConnCallback) -> None:
        """A ready ADMIN connection to ``node_id`` (None: any broker)."""

        def on_cluster(md: ClusterMetadata | None, err: KafkaError | None) -> None:
            if err is not None or md is None:
                cb(None, err)
                return
            target = node_id if node_id is not None else min(md.brokers)
            self._pool.get(target, Role.ADMIN, cb)

        self._cluster(on_cluster)

    def _on_any(self, done: _Once[Result], send: Callable[[Connection], None]) -> None:
        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if conn is None or err is not None:
                done(None, err)
                return
            try:
                send(conn)
            except KafkaError as exc:
                done(None, exc)

        self._connection(None, on_conn)

    # --- topics ---------------------------------------------------------------------------------
    def list_topics(self, cb: ResultCallback[dict[str, TopicInfo]], *, internal: bool = False) -> None:
        """``cb({name: TopicInfo}, err)`` for every topic (internal ones only when asked)."""
        done = self._once(cb)

        def on_response(resp: codec.MetadataResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                done(None, err)
                return
            topics = {info.name: info for info in map(topic_from_response, resp.topics)}
            done({n: t for n, t in sorted(topics.items()) if internal or not t.is_internal}, None)

        self._on_any(done, lambda conn: conn.metadata(None, on_response, allow_auto_topic_creation=False))

    def describe_topics(self, names: Iterable[str], cb: ResultCallback[dict[str, TopicInfo]]) -> None:
        """``cb({name: TopicInfo}, err)``; a missing topic has ``error_code`` UNKNOWN_TOPIC_OR_PARTITION."""
        wanted = _names("names", names)
        done = self._once(cb)

        def on_response(resp: codec.MetadataResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                done(None, err)
                return
            done({info.name: info for info in map(topic_from_response, resp.topics)}, None)

        self._on_any(done, lambda conn: conn.metadata(wanted, on_response, allow_auto_topic_creation=False))

    def create_topics(self, topics: Iterable[NewTopic | str], cb: ResultCallback[dict[str, KafkaError | None]], *,
                      timeout_ms: int = 30000,
                      validate_only: bool = False) -> None:
        """``cb({name: KafkaError | None}, err)``: per topic, None when it was created."""
        wanted = [t if isinstance(t, NewTopic) else NewTopic(t) for t in _list("topics", topics)]
        for t in wanted:
            if not isinstance(t.name, str) or not t.name:
                raise ValueError(f"kafkaev.Admin: 'topics' holds a topic without a name: {t!r}")
        done = self._once(cb)

        def on_response(resp: codec.CreateTopicsResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                done(None, err)
                return
            done({r.name: _error_or_none(r.error_code, r.error_message) for r in resp.topics}, None)

        def send(conn: Connection) -> None:
            request = [connection.NewTopic(t.name, t.num_partitions, t.replication_factor, t.config) for t in wanted]
            conn.create_topics(request, on_response, timeout_ms=timeout_ms, validate_only=validate_only)

        self._on_any(done, send)

    def delete_topics(self, names: Iterable[str], cb: ResultCallback[dict[str, KafkaError | None]], *,
                      timeout_ms: int = 30000) -> None:
        """``cb({name: KafkaError | None}, err)``: per topic, None when it was deleted."""
        wanted = _names("names", names)
        done = self._once(cb)

        def on_response(resp: codec.DeleteTopicsResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                done(None, err)
                return
            # A name is null only in an answer to a deletion by topic id, which this does not send.
            done({r.name or "": _error_or_none(r.error_code, r.error_message) for r in resp.responses}, None)

        self._on_any(done, lambda conn: conn.delete_topics(wanted, on_response, timeout_ms=timeout_ms))

    # --- groups ---------------------------------------------------------------------------------
    def list_groups(self, cb: ResultCallback[list[GroupListing]]) -> None:
        """``cb([GroupListing], err)``: the groups of every broker (each coordinates some)."""
        done = self._once(cb)

        def on_cluster(md: ClusterMetadata | None, err: KafkaError | None) -> None:
            if err is not None or md is None:
                done(None, err)
                return

            def flatten(per_broker: list[list[GroupListing]] | None, err: KafkaError | None) -> None:
                done(None if per_broker is None else [g for listing in per_broker for g in listing], err)

            gather = _Gather[list[GroupListing]](len(md.brokers), flatten)
            for node_id in md.brokers:
                self._pool.get(node_id, Role.ADMIN, self._lister(node_id, gather))

        self._cluster(on_cluster)

    def _lister(self, node_id: int, gather: _Gather[list[GroupListing]]) -> ConnCallback:
        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            self._list_on(node_id, conn, err, gather)
        return on_conn

    def _list_on(self, node_id: int, conn: Connection | None, err: KafkaError | None,
                 gather: _Gather[list[GroupListing]]) -> None:
        if conn is None or err is not None:
            gather.fail(err)
            return

        def on_response(resp: codec.ListGroupsResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                gather.fail(err)
            elif resp.error_code != NONE:
                gather.fail(KafkaError(resp.error_code, f"ListGroups on broker {node_id}"))
            else:
                gather.add([GroupListing(g.group_id, g.protocol_type, g.group_state, g.group_type, node_id)
                            for g in resp.groups])

        conn.list_groups(on_response)

    def find_coordinator(self, group_id: str, cb: ResultCallback[int]) -> None:
        """``cb(node_id, err)``: the broker coordinating ``group_id``. While the cluster says no
        coordinator is ready yet (the offsets topic is being created, or loaded after a move),
        it asks again until ``request_timeout_ms`` has passed."""
        done = self._once(cb)
        deadline = self.loop.time() + self.config.request_timeout_ms / 1000.0
        backoff = Backoff(self.config.retry_backoff)

        def ask() -> None:
            self._on_any(done, lambda conn: conn.find_coordinator(group_id, on_response, key_type=COORDINATOR_GROUP))

        def on_response(resp: codec.FindCoordinatorResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                done(None, err)
                return
            if resp.coordinators:  # v4+: one entry per key
                entry = resp.coordinators[0]
                code, node, message = entry.error_code, entry.node_id, entry.error_message
            else:
                code, node, message = resp.error_code, resp.node_id, resp.error_message
            if code in COORDINATOR_NOT_READY and self.loop.time() < deadline and not self._closed:
                self.loop.call_later(backoff.next_delay_s(), ask)
                return
            failure = _error_or_none(code, message)
            done(None if failure else node, failure)

        ask()

    def _on_coordinator(self, group_id: str, done: _Once[Result], send: Callable[[Connection, int], None]) -> None:
        def on_node(node_id: int | None, err: KafkaError | None) -> None:
            if err is not None or node_id is None:
                done(None, err)
                return

            def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
                if conn is None or err is not None:
                    done(None, err)
                else:
                    send(conn, node_id)

            self._connection(node_id, on_conn)

        self.find_coordinator(group_id, on_node)

    def describe_groups(self, group_ids: Iterable[str], cb: ResultCallback[dict[str, GroupDescription]]) -> None:
        """``cb({group_id: GroupDescription}, err)``; a group-level error is in ``.error``."""
        wanted = _names("group_ids", group_ids)
        done = self._once(cb)

        def merge(parts: list[list[GroupDescription]] | None, err: KafkaError | None) -> None:
            done(None if parts is None else {d.group_id: d for part in parts for d in part}, err)

        gather = _Gather[list[GroupDescription]](len(wanted), merge)
        deadline = self.loop.time() + self.config.request_timeout_ms / 1000.0
        for group_id in wanted:
            self._describe_one(group_id, gather, Backoff(self.config.retry_backoff), deadline)

    def _describe_one(self, group_id: str, gather: _Gather[list[GroupDescription]], backoff: Backoff,
                      deadline: float) -> None:
        def send(conn: Connection, node_id: int) -> None:
            def on_response(resp: codec.DescribeGroupsResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None:
                    gather.fail(err)
                    return
                moved = any(g.error_code in COORDINATOR_NOT_READY for g in resp.groups)
                if moved and self.loop.time() < deadline and not self._closed:
                    self.loop.call_later(backoff.next_delay_s(), self._describe_one, group_id, gather, backoff,
                                         deadline)
                    return
                gather.add([_description(g, node_id) for g in resp.groups])

            conn.describe_groups([group_id], on_response)

        failed = _Once[object](lambda _result, e: gather.fail(e) if e else None, self._report)
        self._on_coordinator(group_id, failed, send)

    def group_lag(self, group_id: str, cb: ResultCallback[list[PartitionLag]]) -> None:
        """``cb([PartitionLag], err)`` for every partition the group has committed offsets for."""
        done = self._once(cb)

        def send(conn: Connection, _node: int) -> None:
            conn.offset_fetch(group_id, None, on_committed)

        def on_committed(resp: codec.OffsetFetchResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                done(None, err)
                return
            try:
                committed = _committed_offsets(resp, group_id)
            except KafkaError as exc:
                done(None, exc)
                return
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

        self._on_coordinator(group_id, done, send)

    def end_offsets(self, partitions: Iterable[TopicPartition], cb: ResultCallback[dict[TopicPartition, int]]) -> None:
        """``cb({TopicPartition: end offset}, err)``, asking each partition's leader."""
        self._end_offsets(_list("partitions", partitions), self._once(cb))

    def _end_offsets(self, partitions: list[TopicPartition], done: ResultCallback[dict[TopicPartition, int]]) -> None:
        topics = sorted({tp.topic for tp in partitions})

        def on_metadata(resp: codec.MetadataResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                done(None, err)
                return
            infos = {info.name: info for info in map(topic_from_response, resp.topics)}
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in partitions:
                info = infos.get(tp.topic)
                if info is None or info.error_code != NONE or tp.partition >= info.num_partitions:
                    code = info.error_code if info is not None and info.error_code else UNKNOWN_TOPIC_OR_PARTITION
                    done(None, KafkaError(code, f"{tp.topic}[{tp.partition}]"))
                    return
                by_leader.setdefault(info.partitions[tp.partition].leader, []).append(tp)

            def merge(parts: list[list[tuple[TopicPartition, int]]] | None, e: KafkaError | None) -> None:
                done(None if parts is None else {tp: off for part in parts for tp, off in part}, e)

            gather = _Gather[list[tuple[TopicPartition, int]]](len(by_leader), merge)
            for leader, tps in by_leader.items():
                self._connection(leader, self._offsets_lister(tps, gather))

        def send(conn: Connection) -> None:
            conn.metadata(topics, on_metadata, allow_auto_topic_creation=False)

        self._on_any(_Once(done, self._report), send)

    def _offsets_lister(self, tps: list[TopicPartition], gather: _Gather[list[tuple[TopicPartition, int]]]) -> ConnCallback:
        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            self._list_offsets(conn, err, tps, gather)
        return on_conn

    def _list_offsets(self, conn: Connection | None, err: KafkaError | None, tps: list[TopicPartition],
                      gather: _Gather[list[tuple[TopicPartition, int]]]) -> None:
        if conn is None or err is not None:
            gather.fail(err)
            return

        def on_response(resp: codec.ListOffsetsResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                gather.fail(err)
                return
            found = []
            for t in resp.topics:
                for p in t.partitions:
                    if p.error_code != NONE:
                        gather.fail(KafkaError(p.error_code, f"{t.name}[{p.partition_index}]"))
                        return
                    found.append((TopicPartition(t.name, p.partition_index), p.offset))
            gather.add(found)

        conn.list_offsets([OffsetLookup(tp.topic, tp.partition, OFFSET_END, NO_LEADER_EPOCH) for tp in tps], on_response)

    # --- lifetime -------------------------------------------------------------------------------
    def run(self, operation: Callable[..., None], *args: Any, **kwargs: Any) -> Any:
        """Run ``operation(*args, cb, **kwargs)`` on the admin's loop until done; return the result
        or raise its KafkaError. For scripts and the command line, not for code already on the loop."""
        future: asyncio.Future[Any] = self.loop.create_future()

        def cb(result: Any, err: KafkaError | None) -> None:
            if not future.done():
                future.set_exception(err) if err is not None else future.set_result(result)

        self.loop.call_soon(lambda: operation(*args, cb, **kwargs))
        return self.loop.run_until_complete(future)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._metadata.close()
        self._pool.close()


class _Gather(Generic[Part]):
    """Collects ``count`` partial results, then calls ``done(parts, None)``; the first failure
    wins and calls ``done(None, err)``."""

    __slots__ = ("remaining", "done", "parts", "finished")

    def __init__(self, count: int, done: Callable[[list[Part] | None, KafkaError | None], object]) -> None:
        self.remaining = count
        self.done = done
        self.parts: list[Part] = []
        self.finished = False
        if count == 0:
            self.finished = True
            done([], None)

    def add(self, part: Part) -> None:
        if self.finished:
            return
        self.parts.append(part)
        self.remaining -= 1
        if self.remaining == 0:
            self.finished = True
            self.done(self.parts, None)

    def fail(self, err: KafkaError | None) -> None:
        if self.finished:
            return
        self.finished = True
        self.done(None, err or KafkaError(TRANSPORT, "request failed"))


def _list(name: str, values: Iterable[Any]) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"kafkaev.Admin: '{name}' must be a list, got {type(values).__name__}")
    result = list(values)
    if not result:
        raise ValueError(f"kafkaev.Admin: '{name}' must not be empty")
    return result


def _names(name: str, values: Iterable[str]) -> list[str]:
    result = _list(name, values)
    for value in result:
        if not isinstance(value, str) or not value:
            raise ValueError(f"kafkaev.Admin: '{name}' must hold non-empty strings, got {value!r}")
    return result


def _description(g: codec.DescribedGroup, node_id: int) -> GroupDescription:
    from .protocol.codec import decode_consumer_protocol_assignment

    members = []
    for m in g.members:
        assignment: list[TopicPartition] = []
        if g.protocol_type == "consumer" and m.member_assignment:
            try:
                decoded = decode_consumer_protocol_assignment(m.member_assignment)
                assignment = [TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions]
            except KafkaError:
                assignment = []  # a non-standard assignor's bytes: show the member without it
        members.append(GroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, assignment))
    code = g.error_code
    if code == NONE and g.group_state == DEAD_STATE and not members and not g.protocol_type:
        # How brokers before KIP-1043 (DescribeGroups v5 and below) answer for a group they
        # never heard of; v6 says GROUP_ID_NOT_FOUND. Either way the caller sees the latter.
        code = GROUP_ID_NOT_FOUND
    message = f"group {g.group_id!r} does not exist" if code == GROUP_ID_NOT_FOUND else None
    return GroupDescription(g.group_id, g.group_state, g.protocol_type, g.protocol_data, node_id, members,
                            _error_or_none(code, message))


def _committed_offsets(resp: codec.OffsetFetchResponse, group_id: str) -> dict[TopicPartition, int]:
    topics: list[codec.OffsetFetchResponseTopics] | list[codec.OffsetFetchResponseTopic]
    if resp.groups:  # OffsetFetch v8+: per-group results
        group = resp.groups[0]
        failure = _error_or_none(group.error_code, f"OffsetFetch for group {group_id!r}")
        topics = group.topics
    else:
        failure = _error_or_none(resp.error_code, f"OffsetFetch for group {group_id!r}")
        topics = resp.topics
    if failure is not None:
        raise failure
    return {TopicPartition(t.name, p.partition_index): p.committed_offset
            for t in topics for p in t.partitions if p.committed_offset != NO_OFFSET}


__all__ = ["Admin", "GroupDescription", "GroupListing", "GroupMember", "NewTopic", "PartitionLag", "TopicInfo"]
