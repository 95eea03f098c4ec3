"""The cluster metadata cache: brokers, topics, partitions, leaders and leader epochs.

``Metadata`` owns every Metadata request the client sends:

* ``bootstrap(cb)`` tries each bootstrap address in turn until one answers;
* ``refresh(cb)`` / ``request_refresh()`` re-read the topics of interest, coalescing
  concurrent asks into one round (a caller that asks while a round is in flight gets the
  next round, whose request includes anything added since); after a round no broker
  answered, ``request_refresh()`` starts the next one only once the failure's backoff is over;
* a periodic refresh every ``metadata_max_age_ms``;
* ``wait_for_topic(topic, cb)`` waits, bounded in time, for a topic to appear (the
  producer's path for topics not yet known, with auto-creation where the broker allows it);
* ``update_leader`` applies a newer leader learned from a Produce/Fetch response (KIP-951)
  without a full round trip.

Producer topics are asked for with ``allow_auto_topic_creation`` (when configured); consumer
topics never are (a consumer must not create topics by looking at them).
"""

from __future__ import annotations

import asyncio
import logging
import random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from ..backoff import Backoff, BackoffPolicy
from ..config import ClientConfig
from ..error_sink import report_error
from ..errors import (
    AUTHENTICATION,
    DESTROY,
    INVALID_TOPIC_EXCEPTION,
    NONE,
    REBOOTSTRAP_REQUIRED,
    SSL,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSPORT,
    UNKNOWN_TOPIC_WAIT_TIMEOUT,
    KafkaError,
)
from ..protocol import codec
from ..protocol.connection import Connection
from ..types import NO_LEADER_EPOCH
from .pool import ConnectionFactory, ConnectionPool, Role

log = logging.getLogger("kafkaev.metadata")  # kafkaev/log.py names the areas

# A node id that names no broker: no leader during an election, no controller or coordinator known.
NO_NODE = -1
NO_LEADER = NO_NODE  # a partition's leader while the metadata names none
# Topic errors that waiting will not cure: report them to the waiters at once.
FATAL_TOPIC_ERRORS = frozenset({INVALID_TOPIC_EXCEPTION, TOPIC_AUTHORIZATION_FAILED})
# Connect failures that name the client's own setup (credentials, TLS): a round reports one of
# these rather than a later plain TRANSPORT from another address, as it is what the user must fix.
SETUP_FAILURES = frozenset({AUTHENTICATION, SSL})
# While something waits for a topic, metadata is re-read at this pace (ms), growing to the max.
TOPIC_WAIT_RETRY = BackoffPolicy(base_ms=50, max_ms=1000)


class BrokerInfo(NamedTuple):
    node_id: int
    host: str
    port: int
    rack: str | None


class PartitionInfo(NamedTuple):
    partition: int
    leader: int  # NO_LEADER during an election
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    partitions: tuple[PartitionInfo, ...]  # indexed by partition number
    error_code: int = NONE
    is_internal: bool = False

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)


@dataclass(slots=True)
class ClusterMetadata:
    cluster_id: str | None = None
    controller_id: int = NO_NODE
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)

    def leader_of(self, topic: str, partition: int) -> int:
        info = self.topics.get(topic)
        if info is None or not 0 <= partition < len(info.partitions):
            return NO_LEADER
        return info.partitions[partition].leader


def topic_from_response(t: codec.MetadataResponseTopic) -> TopicInfo:
    """A TopicInfo from one ``MetadataResponse.topics`` entry."""
    parts = sorted(
        (
            PartitionInfo(
                p.partition_index,
                p.leader_id,
                p.leader_epoch,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                p.error_code,
            )
            for p in t.partitions
        ),
        key=lambda p: p.partition,
    )
    # Partition numbers are dense from 0; the tuple index is the partition number.
    if any(p.partition != i for i, p in enumerate(parts)):
        by_index = {p.partition: p for p in parts}
        parts = [
            by_index.get(i, PartitionInfo(i, NO_LEADER, NO_LEADER_EPOCH, (), (), NONE))
            for i in range(max(by_index) + 1)
        ]
    # The zero UUID is "no id" (a broker or version without topic ids).
    topic_id = t.topic_id if t.topic_id is not None and t.topic_id.int != 0 else None
    # A name is null only in an answer to a lookup by id, which kafkaev never sends.
    name = t.name if t.name is not None else ""
    return TopicInfo(name, topic_id, tuple(parts), t.error_code, bool(t.is_internal))


def _keep_newer_leaders(old: TopicInfo, new: TopicInfo) -> TopicInfo:
    """A KIP-951 update may have told us of a leader newer than a lagging broker's metadata:
    per partition, keep whichever has the higher leader epoch."""
    parts = list(new.partitions)
    for i, p in enumerate(parts):
        if i < len(old.partitions):
            o = old.partitions[i]
            if p.leader_epoch != NO_LEADER_EPOCH and o.leader_epoch > p.leader_epoch:
                parts[i] = o
    new.partitions = tuple(parts)
    return new


class _TopicWaiter:
    __slots__ = ("cb", "timer", "since")

    def __init__(self, cb: Callable[[TopicInfo | None, KafkaError | None], object], since: float) -> None:
        self.cb = cb
        self.timer: asyncio.TimerHandle | None = None
        self.since = since  # loop time the wait began


class Metadata:
    """The client's metadata cache; ``current`` is always the latest ClusterMetadata."""

    def __init__(
        self,
        config: ClientConfig,
        loop: asyncio.AbstractEventLoop,
        pool: ConnectionPool,
        *,
        connection_factory: ConnectionFactory | None = None,
        on_error: Callable[[BaseException], object] | None = None,
    ) -> None:
        self._config = config
        self._loop = loop
        self._pool = pool
        self._factory = connection_factory
        self._on_error = on_error
        self.current = ClusterMetadata()
        self._create_topics: set[str] = set()  # producer topics: may be auto-created
        self._lookup_topics: set[str] = set()  # consumer topics: never auto-created
        # A regex subscription needs every topic's name and id: rounds then ask for all topics.
        self._all_topics = False
        self._listeners: list[Callable[[ClusterMetadata], object]] = []
        self._topic_waiters: dict[str, list[_TopicWaiter]] = {}
        self._round_waiters: list[Callable[[ClusterMetadata | None, KafkaError | None], object]] = []
        self._next_waiters: list[Callable[[ClusterMetadata | None, KafkaError | None], object]] = []
        self._in_flight = False
        self._again = False
        self._last_round = -1e9
        # Consecutive rounds no broker answered, and the loop time before which
        # request_refresh() does not start another one.
        self._round_backoff = Backoff(config.retry_backoff)
        self._failed_until = 0.0
        # The loop time of the last round a broker answered, and the failure of the last round
        # when it failed: a topic wait no broker answered during ends with that cause.
        self._last_answered = float("-inf")  # no round answered yet
        self.last_round_error: KafkaError | None = None
        self._delayed: asyncio.TimerHandle | None = None
        self._periodic: asyncio.TimerHandle | None = None
        self._round: _Round | None = None
        self._topic_retry = Backoff(TOPIC_WAIT_RETRY)
        self._closed = False
        self.bootstrapped = False

    # --- interest ------------------------------------------------------------------------------
    def add_topics(self, topics: Iterable[str], *, auto_create: bool = False) -> bool:
        """Track these topics from now on; True when any was new (the caller may refresh).
        A topic the producer uses is asked for with auto-creation even if a consumer also reads it."""
        creating = auto_create and self._config.allow_auto_topic_creation
        added = False
        for t in topics:
            if t in self._create_topics or (not creating and t in self._lookup_topics):
                continue
            if creating:
                self._lookup_topics.discard(t)
                self._create_topics.add(t)
            else:
                self._lookup_topics.add(t)
            added = True
        return added

    def remove_topics(self, topics: Iterable[str]) -> None:
        for t in topics:
            self._create_topics.discard(t)
            self._lookup_topics.discard(t)
            self.current.topics.pop(t, None)

    def track_all_topics(self, enabled: bool) -> None:
        """Ask every round for all topics (a regex subscription), or only for the named ones."""
        self._all_topics = enabled

    def add_listener(self, fn: Callable[[ClusterMetadata], object]) -> None:
        """``fn(metadata)`` after every applied refresh or leader update."""
        self._listeners.append(fn)

    # --- bootstrap -----------------------------------------------------------------------------
    def bootstrap(self, cb: Callable[[ClusterMetadata | None, KafkaError | None], object]) -> None:
        """Connect to the bootstrap brokers in turn until one answers a Metadata request;
        ``cb(metadata, None)`` then, or ``cb(None, err)`` naming every address tried, with the
        code of the cause (TRANSPORT for a refused connection, AUTHENTICATION, SSL, ...). Starts the periodic refresh."""
        self.refresh(cb)

    # --- refresh -------------------------------------------------------------------------------
    def refresh(self, cb: Callable[[ClusterMetadata | None, KafkaError | None], object] | None = None) -> None:
        """Re-read metadata now (or right after the round in flight); ``cb(metadata, err)`` once."""
        if self._closed:
            if cb is not None:
                self._call(cb, None, KafkaError(DESTROY, "the client is closed"))
            return
        if self._in_flight:
            self._again = True
            if cb is not None:
                self._next_waiters.append(cb)
            return
        if cb is not None:
            self._round_waiters.append(cb)
        self._start_round()

    def request_refresh(self) -> None:
        """Ask for a refresh soon: coalesced, at most one per ``metadata_min_refresh_ms``, and
        after a failed round not before its backoff is over (error paths call this freely, e.g.
        on every NOT_LEADER_OR_FOLLOWER or lost connection)."""
        if self._closed or self._delayed is not None:
            return
        if self._in_flight:
            self._again = True
            return
        not_before = max(self._last_round + self._config.metadata_min_refresh_ms / 1000.0, self._failed_until)
        wait = not_before - self._loop.time()
        if wait > 0:
            self._delayed = self._loop.call_later(wait, self._delayed_refresh)
        else:
            self._start_round()

    def _delayed_refresh(self) -> None:
        self._delayed = None
        self.refresh()

    def _start_round(self) -> None:
        if self._delayed is not None:
            self._delayed.cancel()
            self._delayed = None
        self._in_flight = True
        self._again = False
        self._last_round = self._loop.time()
        requests: list[tuple[list[str] | None, bool]] = []
        if self._create_topics:
            requests.append((sorted(self._create_topics), True))
        if self._all_topics:
            requests.append((None, False))
        elif self._lookup_topics or not requests:
            requests.append((sorted(self._lookup_topics), False))
        if log.isEnabledFor(logging.DEBUG):
            log.debug("metadata refresh: %s", "; ".join(
                ("create " if create else "") + ("all topics" if topics is None else ", ".join(topics) or "brokers only")
                for topics, create in requests))
        # held here: a Connection is only referenced weakly by its own pending I/O
        self._round = _Round(self, requests)
        self._round.start()

    def _finish_round(self, responses: list[codec.MetadataResponse] | None, err: KafkaError | None) -> None:
        self._in_flight = False
        self._round = None
        if responses is not None:
            self._apply(responses)
            self.bootstrapped = True
        self.last_round_error = err
        if err is not None:
            log.debug("metadata refresh failed: %s", err)
        elif log.isEnabledFor(logging.DEBUG):
            cur = self.current
            log.debug("metadata refreshed: %d brokers, controller %s, %d topics", len(cur.brokers),
                      cur.controller_id, len(cur.topics))
        if err is None:
            self._round_backoff.reset()
            self._failed_until = 0.0
            self._last_answered = self._loop.time()
        else:
            self._failed_until = self._loop.time() + self._round_backoff.next_delay_s()
        waiters, self._round_waiters = self._round_waiters, []
        for cb in waiters:
            self._call(cb, self.current if err is None else None, err)
        self._check_topic_waiters(err)
        self._schedule_periodic()
        if self._closed:
            return
        if self._next_waiters or (self._again and err is None):
            self._round_waiters, self._next_waiters = self._next_waiters, []
            self._start_round()
        elif self._again:
            # Asked for during a round no broker answered (each lost connection asks): the
            # next one waits out the failure's backoff instead of starting at once.
            self._again = False
            self.request_refresh()

    def _apply(self, responses: list[codec.MetadataResponse]) -> None:
        cur = self.current
        brokers: dict[int, BrokerInfo] = {}
        for resp in responses:
            for b in resp.brokers:
                brokers[b.node_id] = BrokerInfo(b.node_id, b.host, b.port, b.rack)
            cur.cluster_id = resp.cluster_id
            cur.controller_id = resp.controller_id
            for t in resp.topics:
                new = topic_from_response(t)
                old = cur.topics.get(new.name)
                if old is None:
                    cur.topics[new.name] = new
                elif new.error_code != NONE and old.partitions:
                    # keep routing with what we knew; the error is recorded for waiters
                    old.error_code = new.error_code
                else:
                    cur.topics[new.name] = _keep_newer_leaders(old, new)
        cur.brokers = brokers
        self._pool.set_brokers({b.node_id: (b.host, b.port) for b in brokers.values()})
        self._notify()

    def update_leader(self, topic: str, partition: int, leader: int, leader_epoch: int,
                      endpoints: Iterable[BrokerInfo] = ()) -> bool:
        """Apply a leader learned from a response (KIP-951 current_leader + node_endpoints).
        Only a strictly newer epoch is applied; returns True when the cache changed."""
        cur = self.current
        info = cur.topics.get(topic)
        if info is None or not 0 <= partition < len(info.partitions) or leader < 0:
            return False
        old = info.partitions[partition]
        if leader_epoch <= old.leader_epoch:
            return False
        changed_brokers = False
        for b in endpoints:
            if cur.brokers.get(b.node_id) != b:
                cur.brokers[b.node_id] = b
                changed_brokers = True
        if leader not in cur.brokers:
            return False  # a leader we cannot reach yet: wait for the full refresh
        if changed_brokers:
            self._pool.set_brokers({b.node_id: (b.host, b.port) for b in cur.brokers.values()})
        parts = list(info.partitions)
        parts[partition] = old._replace(leader=leader, leader_epoch=leader_epoch)
        info.partitions = tuple(parts)
        self._notify()
        return True

    def _notify(self) -> None:
        for fn in list(self._listeners):
            try:
                fn(self.current)
            except Exception as exc:  # noqa: BLE001 - reported, and the other listeners still run
                self._report(exc)

    def _schedule_periodic(self) -> None:
        if self._periodic is not None:
            self._periodic.cancel()
            self._periodic = None
        if self._config.metadata_max_age_ms > 0 and not self._closed:
            self._periodic = self._loop.call_later(self._config.metadata_max_age_ms / 1000.0, self._periodic_refresh)

    def _periodic_refresh(self) -> None:
        self._periodic = None
        self.refresh()

    # --- waiting for topics --------------------------------------------------------------------
    def topic(self, name: str) -> TopicInfo | None:
        """The topic if it is known and usable (no topic error, at least one partition)."""
        info = self.current.topics.get(name)
        if info is None or not info.partitions:
            return None
        return info

    def wait_for_topic(
        self,
        topic: str,
        cb: Callable[[TopicInfo | None, KafkaError | None], object],
        *,
        timeout_ms: int,
        auto_create: bool = True,
    ) -> None:
        """``cb(topic_info, None)`` once the topic has partitions, or ``cb(None, err)`` once:
        the topic's own fatal error (invalid name, not authorized) at once, or after
        ``timeout_ms`` UNKNOWN_TOPIC_WAIT_TIMEOUT; if no broker answered during the whole wait,
        the last round's failure instead (its code: TRANSPORT, AUTHENTICATION, SSL, ...; its
        message names the addresses tried). Metadata is re-read meanwhile."""
        info = self.topic(topic)
        if info is not None:
            self._call(cb, info, None)
            return
        if self._closed:
            self._call(cb, None, KafkaError(DESTROY, "the client is closed"))
            return
        waiter = _TopicWaiter(cb, self._loop.time())
        waiter.timer = self._loop.call_later(timeout_ms / 1000.0, self._topic_wait_timeout, topic, waiter, timeout_ms)
        self._topic_waiters.setdefault(topic, []).append(waiter)
        self._topic_retry.reset()
        self.add_topics((topic,), auto_create=auto_create)
        self.request_refresh() if self.bootstrapped else self.refresh()

    def _topic_wait_timeout(self, topic: str, waiter: _TopicWaiter, timeout_ms: int) -> None:
        waiters = self._topic_waiters.get(topic)
        if waiters is None or waiter not in waiters:
            return
        waiters.remove(waiter)
        if not waiters:
            del self._topic_waiters[topic]
        cause = self.last_round_error
        if cause is not None and self._last_answered < waiter.since:
            # No broker answered while this topic was waited for: the topic is not the problem,
            # the connection is, and the user is told which (a bad password is not a timeout).
            self._call(waiter.cb, None, KafkaError(
                cause.code, f"topic {topic!r} not in the cluster metadata after {timeout_ms} ms: "
                            f"{cause.message or cause.description}"))
            return
        info = self.current.topics.get(topic)
        detail = f" (last error {KafkaError(info.error_code).name})" if info is not None and info.error_code else ""
        self._call(waiter.cb, None, KafkaError(
            UNKNOWN_TOPIC_WAIT_TIMEOUT, f"topic {topic!r} not in the cluster metadata after {timeout_ms} ms{detail}"
        ))

    def _check_topic_waiters(self, round_err: KafkaError | None) -> None:
        if not self._topic_waiters:
            return
        for topic in list(self._topic_waiters):
            info = self.current.topics.get(topic)
            if info is not None and info.partitions:
                result: tuple[TopicInfo | None, KafkaError | None] = (info, None)
            elif info is not None and info.error_code in FATAL_TOPIC_ERRORS:
                result = (None, KafkaError(info.error_code, f"topic {topic!r}"))
            else:
                continue
            for waiter in self._topic_waiters.pop(topic):
                if waiter.timer is not None:
                    waiter.timer.cancel()
                self._call(waiter.cb, *result)
        if self._topic_waiters and not self._closed and self._delayed is None:
            # still waiting (auto-creation or an election in progress): look again soon
            self._delayed = self._loop.call_later(self._topic_retry.next_delay_s(), self._delayed_refresh)

    # --- helpers -------------------------------------------------------------------------------
    def _call(self, cb: Callable[..., object], *args: object) -> None:
        try:
            cb(*args)
        except Exception as exc:  # noqa: BLE001 - a caller's bug is reported, never swallowed
            self._report(exc)

    def _report(self, exc: BaseException) -> None:
        report_error(self._loop, self._on_error, "kafkaev", exc)

    def close(self) -> None:
        """Stop refreshing; pending waiters get DESTROY once."""
        if self._closed:
            return
        self._closed = True
        for handle in (self._delayed, self._periodic):
            if handle is not None:
                handle.cancel()
        self._delayed = self._periodic = None
        err = KafkaError(DESTROY, "the client is closed")
        for waiters in self._topic_waiters.values():
            for waiter in waiters:
                if waiter.timer is not None:
                    waiter.timer.cancel()
                self._call(waiter.cb, None, err)
        self._topic_waiters.clear()
        for cb in self._round_waiters + self._next_waiters:
            self._call(cb, None, err)
        self._round_waiters.clear()
        self._next_waiters.clear()
        if self._round is not None and self._round.conn is not None:
            # a bootstrap connection still connecting (a slow SASL exchange) is closed with the
            # client, not left to be collected after its loop is gone
            self._round.conn.disconnect()


class _Round:
    """One metadata round: its requests go to one broker; on failure the next broker is tried
    (known brokers in random order, then the bootstrap addresses)."""

    __slots__ = ("md", "requests", "targets", "responses", "tried", "cause", "reached", "conn")

    def __init__(self, md: Metadata, requests: list[tuple[list[str] | None, bool]]) -> None:
        self.md = md
        self.requests = requests
        known: list[int | tuple[str, int]] = list(md.current.brokers)
        random.shuffle(known)
        # bootstrap addresses last: they may be a load balancer or stale, but they are the way back
        self.targets: list[int | tuple[str, int]] = known + list(md._config.bootstrap)
        self.responses: list[codec.MetadataResponse] = []
        self.tried: list[str] = []
        self.cause: KafkaError | None = None  # the failure the round reports if no broker answers
        self.reached = False  # some broker took a connection (and then failed the request)
        self.conn: Connection | None = None  # the bootstrap connection in use, kept alive until it answers

    def start(self) -> None:
        self._next_target()

    def _next_target(self) -> None:
        md = self.md
        if md._closed:
            md._finish_round(None, KafkaError(DESTROY, "the client is closed"))
            return
        if not self.targets:
            md._finish_round(None, self._failure())
            return
        target = self.targets.pop(0)
        if isinstance(target, int):
            address = md._pool.address(target)
            self.tried.append(f"node {target}" + (f" {address[0]}:{address[1]}" if address else ""))
            md._pool.get(target, Role.ADMIN, self._on_pooled)
        else:
            host, port = target
            self.tried.append(f"{host}:{port}")
            factory = md._factory or _default_factory
            conn = self.conn = factory(md._config, md._loop)
            conn.on_error = md._on_error
            conn.connect(host, port, md._config.connect_timeout_ms / 1000.0, self._on_bootstrap_conn)

    def _failed(self, err: KafkaError | None) -> None:
        # The last failure is the cause, except that a credentials or TLS failure is kept over
        # a later one of another kind: that is the one the user can fix.
        if err is not None and (self.cause is None or self.cause.code not in SETUP_FAILURES):
            self.cause = err

    def _failure(self) -> KafkaError:
        """The round's error: the cause's own code (AUTHENTICATION stays AUTHENTICATION, not
        TRANSPORT), with every address tried."""
        tried = ", ".join(self.tried)
        cause = self.cause
        code = cause.code if cause is not None else TRANSPORT
        what = (f"no broker answered a Metadata request (tried {tried})" if self.reached
                else f"no broker reachable at {tried}")
        return KafkaError(code, what if cause is None else f"{what}; last error: {cause.message or cause.description}")

    def _on_pooled(self, conn: Connection | None, err: KafkaError | None) -> None:
        if conn is None or err is not None:
            self._failed(err)
            self._next_target()
            return
        self.responses = []
        self._send(conn, owned=False)

    def _on_bootstrap_conn(self, conn: Connection, err: KafkaError | None) -> None:
        if err is not None:
            self._failed(err)
            conn.disconnect()
            self._next_target()
            return
        self.responses = []
        self._send(conn, owned=True)

    def _send(self, conn: Connection, owned: bool) -> None:
        self.reached = True
        remaining = len(self.requests)
        failed: list[KafkaError] = []

        def on_response(resp: codec.MetadataResponse | None, err: KafkaError | None) -> None:
            nonlocal remaining
            remaining -= 1
            if err is None and resp is not None and resp.error_code != NONE:
                # Metadata v13+ can refuse the whole request (KIP-1102).
                err = KafkaError(resp.error_code, f"Metadata from {conn.host}:{conn.port}")
            if err is not None:
                failed.append(err)
            elif resp is not None:
                self.responses.append(resp)
            if remaining:
                return
            if owned:
                conn.disconnect()  # bootstrap connections are not pooled; the pool takes over by node id
            if failed:
                self._failed(failed[0])
                if any(e.code == REBOOTSTRAP_REQUIRED for e in failed):
                    # The brokers we know are not the cluster any more: only the bootstrap
                    # addresses are left to ask.
                    self.targets = [t for t in self.targets if not isinstance(t, int)]
                self._next_target()
            else:
                self.md._finish_round(self.responses, None)

        for topics, auto_create in self.requests:
            try:
                conn.metadata(topics, on_response, allow_auto_topic_creation=auto_create)
            except KafkaError as exc:
                self.md._loop.call_soon(on_response, None, exc)


def _default_factory(config: ClientConfig, loop: asyncio.AbstractEventLoop) -> Connection:
    from .pool import default_connection_factory

    return default_connection_factory(config, loop)
