"""Finding a coordinator (a group's or a transactional id's) and keeping a connection to it.

FindCoordinator (key type 0 for a group, 1 for a transactional id) goes to any broker; the
answer's node is then reached through the pool's connection of the link's role (GROUP for
the consumer group, TXN for the transaction coordinator). Any NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS answer, or a lost connection,
forgets the coordinator and the next request looks it up again (with backoff after a failed
lookup, counted from the failure: during a failover the coordinator's partition of
``__consumer_offsets`` or ``__transaction_state`` needs a new leader first).
"""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Callable

from kafkaev.backoff import Backoff
from kafkaev.cluster.metadata import NO_NODE, ClusterMetadata, Metadata
from kafkaev.cluster.pool import ConnectionPool, Role
from kafkaev.config import ClientConfig
from kafkaev.errors import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NONE,
    NOT_COORDINATOR,
    TRANSPORT,
    KafkaError,
)
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection

COORDINATOR_ERRORS = frozenset({NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS})


class CoordinatorType(enum.IntEnum):
    """FindCoordinator's key_type: what the key names."""

    GROUP = 0
    TRANSACTION = 1


ConnCallback = Callable[[Connection | None, KafkaError | None], object]


class CoordinatorLink:
    """The coordinator of one key (a group id or a transactional id) and the way to it."""

    __slots__ = ("config", "loop", "metadata", "pool", "key", "key_type", "role", "node_id", "_waiters",
                 "_finding", "_backoff", "_find_after", "closed")

    def __init__(self, config: ClientConfig, loop: asyncio.AbstractEventLoop, metadata: Metadata,
                 pool: ConnectionPool, key: str, key_type: CoordinatorType, role: Role) -> None:
        self.config = config
        self.loop = loop
        self.metadata = metadata
        self.pool = pool
        self.key = key
        self.key_type = key_type
        self.role = role  # the pool's connection role to the coordinator
        self.node_id = NO_NODE  # the coordinator, once found
        self._waiters: list[ConnCallback] = []
        self._finding = False
        self._backoff = Backoff(config.retry_backoff)  # failed lookups in a row
        self._find_after = 0.0  # loop time before which no lookup starts (after a failed one)
        self.closed = False

    @property
    def what(self) -> str:
        """The key as messages name it: "group 'g'" or "transactional id 't'"."""
        kind = "group" if self.key_type is CoordinatorType.GROUP else "transactional id"
        return f"{kind} {self.key!r}"

    def forget(self) -> None:
        """The coordinator moved or its connection broke: look it up before the next request."""
        if self.node_id >= 0:
            self.pool.disconnect(self.node_id, self.role)
        self.node_id = NO_NODE

    @property
    def usable(self) -> bool:
        """Neither this link nor the pool under it is closed: a request may be tried again."""
        return not self.closed and not self.pool.closed

    def close(self) -> None:
        """The owner is done: forget the coordinator, and every later request fails at once."""
        self.forget()
        self.closed = True

    def on_error_code(self, code: int) -> bool:
        """True (and the coordinator is forgotten) when ``code`` says it moved or is loading."""
        if code in COORDINATOR_ERRORS:
            self.forget()
            return True
        return False

    def get(self, cb: ConnCallback) -> None:
        """``cb(conn, None)`` with a ready connection to the coordinator, or ``cb(None, err)``."""
        if self.closed:
            cb(None, KafkaError(TRANSPORT, f"the coordinator link of {self.what} is closed"))
            return
        if self.node_id >= 0:
            self.pool.get(self.node_id, self.role, lambda conn, err: self._on_conn(conn, err, cb))
            return
        self._waiters.append(cb)
        if not self._finding:
            self._finding = True
            delay = self._find_after - self.loop.time()
            if delay > 0:
                self.loop.call_later(delay, self._find)
            else:
                self._find()

    def send(self, request: Callable[[Connection], object], fail: Callable[[KafkaError], object]) -> None:
        """``request(conn)`` with a ready connection to the coordinator; ``fail(err)``, once, when
        there is none or the connection refuses the request before writing it."""
        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if err is not None:
                fail(err)
                return
            assert conn is not None  # no error: a connection
            try:
                request(conn)
            except KafkaError as exc:
                fail(exc)

        self.get(on_conn)

    def _on_conn(self, conn: Connection | None, err: KafkaError | None, cb: ConnCallback) -> None:
        if err is not None:
            self.forget()
        cb(conn, err)

    def _find(self) -> None:
        brokers = list(self.metadata.current.brokers)
        if not brokers:
            def after_refresh(_md: ClusterMetadata | None, err: KafkaError | None) -> None:
                if self.metadata.current.brokers:
                    self._find()
                else:
                    self._found(None, err or KafkaError(
                        TRANSPORT, f"no broker known to ask for the coordinator of {self.what}"))

            self.metadata.refresh(after_refresh)
            return
        node = random.choice(brokers)

        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if err is not None:
                self._found(None, err)
                return
            assert conn is not None  # no error: a connection
            try:
                conn.find_coordinator(self.key, self._found, key_type=int(self.key_type))
            except KafkaError as exc:
                self._found(None, exc)

        self.pool.get(node, Role.ADMIN, on_conn)

    def _found(self, resp: codec.FindCoordinatorResponse | None, err: KafkaError | None) -> None:
        self._finding = False
        if err is None:
            assert resp is not None  # no error: an answer
            coordinators = getattr(resp, "coordinators", None)
            entry = coordinators[0] if coordinators else resp
            if entry.error_code == NONE:
                self.node_id = entry.node_id
                self._backoff.reset()
                self._find_after = 0.0
                # The coordinator may be a broker this client has not seen in metadata yet.
                if self.pool.address(entry.node_id) is None:
                    brokers = {n: (b.host, b.port) for n, b in self.metadata.current.brokers.items()}
                    brokers[entry.node_id] = (entry.host, entry.port)
                    self.pool.set_brokers(brokers)
            else:
                err = KafkaError(entry.error_code, f"FindCoordinator for {self.what}")
        waiters, self._waiters = self._waiters, []
        if err is not None:
            self._find_after = self.loop.time() + self._backoff.next_delay_s()
            for cb in waiters:
                cb(None, err)
            return
        assert resp is not None  # no error: an answer
        for cb in waiters:
            self.get(cb)

