"""What every admin call shares: the connections, the routing to a broker, the once-only callback.

``AdminCore`` owns the pool and the metadata cache and knows how to reach the broker a request
belongs to: any broker, a given node, the controller, a group's or a transaction's coordinator,
each partition's leader, or every broker at once. The per-concern classes (topics, configs,
groups, ...) build on it; ``kafkaev.Admin`` is all of them together.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

from ..backoff import Backoff
from ..cluster.metadata import NO_NODE, ClusterMetadata, Metadata, topic_from_response
from ..cluster.pool import ConnectionPool, Role
from ..config import ClientConfig
from ..error_sink import report_error
from ..errors import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    LEADER_NOT_AVAILABLE,
    NONE,
    NOT_COORDINATOR,
    PROTOCOL,
    TRANSPORT,
    UNKNOWN_TOPIC_OR_PARTITION,
    KafkaError,
    error_name,
)
from ..log import enable_debug
from ..protocol import codec
from ..protocol.connection import Connection
from ..types import TopicPartition

Result = TypeVar("Result")  # what an operation hands its callback
Part = TypeVar("Part")  # one broker's share of it
PartIn = TypeVar("PartIn", contravariant=True)
Response = TypeVar("Response", bound=codec.MessageStruct)
ResultCallback = Callable[[Result | None, KafkaError | None], object]
ConnCallback = Callable[[Connection | None, KafkaError | None], object]

COORDINATOR_GROUP = 0  # FindCoordinator key_type: a group id
COORDINATOR_TRANSACTION = 1  # FindCoordinator key_type: a transactional id
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
DEFAULT_TIMEOUT_MS = 30000  # the broker-side timeout of calls that wait for the cluster
# Answers that pass once the coordinator is loaded or found again: the request goes again
# after the backoff, until request_timeout_ms has passed.
COORDINATOR_NOT_READY = frozenset({COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR})
# What ``Admin(client)`` takes from the client: how to reach and talk to its brokers. An admin
# made from a client with a 1 s connect timeout must not wait 10 s for a broker that hangs.
CLIENT_CONNECTION_OPTIONS = (
    "tls", "sasl", "client_id", "request_timeout_ms", "connect_timeout_ms", "reconnect_backoff_ms",
    "reconnect_backoff_max_ms", "retry_backoff_ms", "retry_backoff_max_ms", "metadata_max_age_ms",
    "metadata_min_refresh_ms", "debug",
)


def error_or_none(code: int, message: str | None = None) -> KafkaError | None:
    """None for NONE, else a KafkaError with the broker's message (or the code's name)."""
    return None if code == NONE else KafkaError(code, message or error_name(code))


class Once(Generic[Result]):
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


class Sink(Protocol[PartIn]):
    """Where one request's share of an operation goes: ``Gather`` or an adapter in front of one."""

    def add(self, part: PartIn) -> None: ...

    def fail(self, err: KafkaError | None) -> None: ...


class Gather(Generic[Part]):
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


def answered(kind: type[Response], done: ResultCallback[Result], build: Callable[[Response], Result],
             failure: Callable[[Response], KafkaError | None] | None = None
             ) -> Callable[[Response | None, KafkaError | None], None]:
    """The response callback of a one-request call: ``done(None, err)`` when the request failed
    or the answer says so as a whole (``failure``), else ``done(build(answer), None)``."""

    def on_response(resp: Response | None, err: KafkaError | None) -> None:
        if resp is None or err is not None:
            done(None, err)
            return
        try:
            problem = None if failure is None else failure(resp)
            result = None if problem is not None else build(resp)
        except (ValueError, TypeError, KeyError) as exc:  # a value this client cannot read
            problem = unreadable(resp, exc)
        if problem is not None:
            done(None, problem)
        else:
            done(result, None)

    return on_response


def gathered(kind: type[Response], sink: Sink[Part], build: Callable[[Response], Part]
             ) -> Callable[[Response | None, KafkaError | None], None]:
    """The response callback of one broker's share: ``sink.add(build(answer))``, or ``sink.fail``."""

    def on_response(resp: Response | None, err: KafkaError | None) -> None:
        if resp is None or err is not None:
            sink.fail(err)
            return
        try:
            part = build(resp)
        except (ValueError, TypeError, KeyError) as exc:  # a value this client cannot read
            sink.fail(unreadable(resp, exc))
            return
        sink.add(part)

    return on_response


def unreadable(resp: codec.MessageStruct, exc: Exception) -> KafkaError:
    """An answer holding what this client cannot turn into its result (an enum value newer than
    it): the call fails with that, rather than leaving its callback uncalled."""
    return KafkaError(PROTOCOL, f"{type(resp).__name__}: {exc}")


def send_request(conn: Connection, body: codec.MessageStruct, kind: type[Response],
                 cb: ResultCallback[Response], *, timeout_ms: int | None = None) -> None:
    """``conn.request`` for a generated request, its answer typed as ``kind``: the API key is the
    one the request class names, the version the negotiated one."""
    key = REQUEST_KEYS[type(body)]

    def on_response(resp: codec.MessageStruct | None, err: KafkaError | None) -> None:
        if err is not None or resp is None:
            cb(None, err or KafkaError(TRANSPORT, f"{type(body).__name__}: no answer"))
        elif not isinstance(resp, kind):
            cb(None, KafkaError(TRANSPORT, f"{type(body).__name__}: answered with {type(resp).__name__}"))
        else:
            cb(resp, None)

    conn.request(key, body, on_response, timeout_ms=timeout_ms)


def _request_keys() -> dict[type, int]:
    """Each generated request class's API key, from the schema names ("DescribeCluster")."""
    by_name = {name: key for key, name in codec.API_NAMES.items()}
    return {cls: by_name[cls.__name__[:-len("Request")]]
            for cls in (getattr(codec, f"{name}Request", None) for name in by_name) if cls is not None}


REQUEST_KEYS = _request_keys()


class AdminCore:
    """The connections of an Admin and the ways to the broker each request belongs to."""

    def __init__(self, brokers: Any = None, *, loop: asyncio.AbstractEventLoop | None = None,
                 **options: Any) -> None:
        config = getattr(brokers, "config", None)
        if isinstance(config, ClientConfig):  # Admin(client): same brokers, security and timeouts
            options = {**{name: getattr(config, name) for name in CLIENT_CONNECTION_OPTIONS}, **options}
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

    # --- callbacks ------------------------------------------------------------------------------
    def _report(self, exc: BaseException) -> None:
        """Errors with no callback of their own: connection failures the pool retries (logged,
        like the Client does) and exceptions raised by user callbacks (never silently lost)."""
        report_error(self.loop, self._on_error, "kafkaev.Admin", exc)

    def _once(self, cb: ResultCallback[Result]) -> Once[Result]:
        if not callable(cb):
            raise TypeError(f"kafkaev.Admin: 'cb' must be callable, got {type(cb).__name__}")
        return Once(cb, self._report)

    def _deadline(self) -> float:
        return self.loop.time() + self.config.request_timeout_ms / 1000.0

    def _may_retry(self, deadline: float) -> bool:
        return self.loop.time() < deadline and not self._closed

    # --- which broker ---------------------------------------------------------------------------
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

    def _on_node(self, node_id: int | None, done: ResultCallback[Any], send: Callable[[Connection], None]) -> None:
        """``send(conn)`` on a connection to ``node_id`` (None: any broker), or ``done(None, err)``
        when there is none; a KafkaError ``send`` raises reaches ``done`` too."""

        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if conn is None or err is not None:
                done(None, err)
                return
            try:
                send(conn)
            except KafkaError as exc:
                done(None, exc)

        self._connection(node_id, on_conn)

    def _on_any(self, done: ResultCallback[Any], send: Callable[[Connection], None]) -> None:
        self._on_node(None, done, send)

    def _on_controller(self, done: ResultCallback[Any], send: Callable[[Connection], None]) -> None:
        """The broker the metadata names as controller: in KRaft any broker forwards cluster
        changes to the active controller, so this is the shortest way, not the only one."""

        def on_cluster(md: ClusterMetadata | None, err: KafkaError | None) -> None:
            if err is not None or md is None:
                done(None, err)
                return
            node = md.controller_id if md.controller_id in md.brokers else None
            self._on_node(node, done, send)

        self._cluster(on_cluster)

    def _on_every_broker(self, done: ResultCallback[list[Part]],
                         send: Callable[[Connection, int, Gather[Part]], None]) -> None:
        """``send(conn, node_id, gather)`` on every broker; ``done(parts)`` once each added its part."""

        def on_cluster(md: ClusterMetadata | None, err: KafkaError | None) -> None:
            if err is not None or md is None:
                done(None, err)
                return
            gather = Gather[Part](len(md.brokers), done)
            for node_id in sorted(md.brokers):
                self._on_node(node_id, lambda _r, e: gather.fail(e), _bind_node(send, node_id, gather))

        self._cluster(on_cluster)

    def find_coordinator(self, key: str, cb: ResultCallback[int], *, key_type: int = COORDINATOR_GROUP) -> None:
        """``cb(node_id, err)``: the broker coordinating group ``key`` (``key_type`` 1: the
        transactional id ``key``). While the cluster says no coordinator is ready yet (the
        offsets topic is being created, or loaded after a move), it asks again until
        ``request_timeout_ms`` has passed."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"kafkaev.Admin: 'key' must be a non-empty string, got {key!r}")
        done = self._once(cb)
        deadline = self._deadline()
        backoff = Backoff(self.config.retry_backoff)

        def ask() -> None:
            self._on_any(done, lambda conn: conn.find_coordinator(key, on_response, key_type=key_type))

        def on_response(resp: codec.FindCoordinatorResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                done(None, err)
                return
            if resp.coordinators:  # v4+: one entry per key
                entry = resp.coordinators[0]
                code, node, message = entry.error_code, entry.node_id, entry.error_message
            else:
                code, node, message = resp.error_code, resp.node_id, resp.error_message
            if code in COORDINATOR_NOT_READY and self._may_retry(deadline):
                self.loop.call_later(backoff.next_delay_s(), ask)
                return
            failure = error_or_none(code, message)
            done(None if failure else node, failure)

        ask()

    def _on_coordinator(self, key: str, done: ResultCallback[Any], send: Callable[[Connection, int], None], *,
                        key_type: int = COORDINATOR_GROUP) -> None:
        def on_node(node_id: int | None, err: KafkaError | None) -> None:
            if err is not None or node_id is None:
                done(None, err)
                return
            self._on_node(node_id, done, lambda conn: send(conn, node_id))

        self.find_coordinator(key, on_node, key_type=key_type)

    def _coordinated(self, key: str, done: ResultCallback[Result],
                     attempt: Callable[[Connection, int, Callable[[Result | None, KafkaError | None, int], None]], None],
                     *, key_type: int = COORDINATOR_GROUP) -> None:
        """``attempt(conn, node, outcome)`` at ``key``'s coordinator; ``outcome(result, err, code)``
        with ``code`` the answer's top-level error. A coordinator that moved or is still loading
        (``COORDINATOR_NOT_READY``) is looked up again and asked again until request_timeout_ms."""
        deadline = self._deadline()
        backoff = Backoff(self.config.retry_backoff)

        def start() -> None:
            self._on_coordinator(key, done, lambda conn, node: attempt(conn, node, outcome), key_type=key_type)

        def outcome(result: Result | None, err: KafkaError | None, code: int) -> None:
            if err is None and code in COORDINATOR_NOT_READY and self._may_retry(deadline):
                self.loop.call_later(backoff.next_delay_s(), start)
                return
            done(result, err)

        start()

    def _leaders(self, partitions: Iterable[TopicPartition],
                 cb: Callable[[LeaderMap | None, KafkaError | None], object]) -> None:
        """The current leader of each partition, asked of the cluster now (a cached one may have
        moved); partitions without a leader or topic are in ``missing`` with their error."""
        wanted = list(partitions)
        topics = sorted({tp.topic for tp in wanted})

        def on_metadata(resp: codec.MetadataResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                cb(None, err)
                return
            infos = {info.name: info for info in map(topic_from_response, resp.topics)}
            result = LeaderMap()
            for tp in wanted:
                info = infos.get(tp.topic)
                if info is None or info.error_code != NONE or not 0 <= tp.partition < info.num_partitions:
                    code = info.error_code if info is not None and info.error_code else UNKNOWN_TOPIC_OR_PARTITION
                    result.missing[tp] = KafkaError(code, f"{tp.topic}[{tp.partition}]")
                    continue
                leader = info.partitions[tp.partition].leader
                if leader == NO_NODE:
                    result.missing[tp] = KafkaError(LEADER_NOT_AVAILABLE, f"{tp.topic}[{tp.partition}]")
                else:
                    result.by_leader.setdefault(leader, []).append(tp)
            cb(result, None)

        self._on_any(lambda _r, e: cb(None, e),
                     lambda conn: conn.metadata(topics, on_metadata, allow_auto_topic_creation=False))

    def _topic_partitions(self, topics: list[str],
                          cb: Callable[[list[TopicPartition] | None, KafkaError | None], object]) -> None:
        """Every partition of ``topics``; a topic the cluster does not have fails the call."""

        def on_metadata(resp: codec.MetadataResponse | None, err: KafkaError | None) -> None:
            if resp is None or err is not None:
                cb(None, err)
                return
            infos = {info.name: info for info in map(topic_from_response, resp.topics)}
            found: list[TopicPartition] = []
            for name in topics:
                info = infos.get(name)
                if info is None or info.error_code != NONE:
                    code = info.error_code if info is not None else UNKNOWN_TOPIC_OR_PARTITION
                    cb(None, KafkaError(code, f"topic {name!r}: {error_name(code)}"))
                    return
                found.extend(TopicPartition(name, p.partition) for p in info.partitions)
            cb(found, None)

        self._on_any(lambda _r, e: cb(None, e),
                     lambda conn: conn.metadata(topics, on_metadata, allow_auto_topic_creation=False))

    def _on_leaders(self, partitions: Iterable[TopicPartition], done: ResultCallback[list[Part]],
                    send: Callable[[Connection, list[TopicPartition], Gather[Part]], None],
                    missing: Callable[[dict[TopicPartition, KafkaError]], Part]) -> None:
        """``send(conn, partitions, gather)`` on each leader with its partitions; the partitions
        no leader was found for become one more part, ``missing(errors)``."""

        def on_leaders(leaders: LeaderMap | None, err: KafkaError | None) -> None:
            if leaders is None or err is not None:
                done(None, err)
                return
            gather = Gather[Part](len(leaders.by_leader) + 1, done)
            gather.add(missing(leaders.missing))
            for leader, tps in leaders.by_leader.items():
                self._on_node(leader, lambda _r, e: gather.fail(e), _bind_partitions(send, tps, gather))

        self._leaders(partitions, on_leaders)

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
        """Close every connection; later calls fail."""
        if self._closed:
            return
        self._closed = True
        self._metadata.close()
        self._pool.close()


class LeaderMap:
    """Partitions by their leader's node id, and those without a leader (or topic) by their error."""

    __slots__ = ("by_leader", "missing")

    def __init__(self) -> None:
        self.by_leader: dict[int, list[TopicPartition]] = {}
        self.missing: dict[TopicPartition, KafkaError] = {}


def _bind_node(send: Callable[[Connection, int, Gather[Part]], None], node_id: int,
               gather: Gather[Part]) -> Callable[[Connection], None]:
    return lambda conn: send(conn, node_id, gather)


def _bind_partitions(send: Callable[[Connection, list[TopicPartition], Gather[Part]], None],
                     tps: list[TopicPartition], gather: Gather[Part]) -> Callable[[Connection], None]:
    return lambda conn: send(conn, tps, gather)


# --- argument checks: raised at once, naming the argument ------------------------------------
def check_list(name: str, values: Iterable[Any], *, allow_empty: bool = False) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"kafkaev.Admin: '{name}' must be a list, got {type(values).__name__}")
    result = list(values)
    if not result and not allow_empty:
        raise ValueError(f"kafkaev.Admin: '{name}' must not be empty")
    return result


def check_names(name: str, values: Iterable[str], *, allow_empty: bool = False) -> list[str]:
    result = check_list(name, values, allow_empty=allow_empty)
    for value in result:
        if not isinstance(value, str) or not value:
            raise ValueError(f"kafkaev.Admin: '{name}' must hold non-empty strings, got {value!r}")
    return result


def check_items(name: str, values: Iterable[Any], kind: type | tuple[type, ...]) -> list[Any]:
    """A non-empty list whose every entry is a ``kind`` (a typed request spec)."""
    result = check_list(name, values)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for value in result:
        if not isinstance(value, kinds):
            expected = " or ".join(k.__name__ for k in kinds)
            raise TypeError(f"kafkaev.Admin: '{name}' entries must be {expected}, got {type(value).__name__}")
    return result


def check_partitions(name: str, values: Iterable[TopicPartition]) -> list[TopicPartition]:
    result = check_items(name, values, TopicPartition)
    if len(set(result)) != len(result):
        raise ValueError(f"kafkaev.Admin: '{name}' names a partition twice")
    return result


def check_int(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"kafkaev.Admin: '{name}' must be an int, got {type(value).__name__}")
    if not low <= value <= high:
        raise ValueError(f"kafkaev.Admin: '{name}' must be in {low}..{high}, got {value}")
    return value
