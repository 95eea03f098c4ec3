"""Finding the group coordinator and keeping a connection to it.

FindCoordinator goes to any broker; the answer's node is then reached through the
pool's GROUP connection. Any NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE /
COORDINATOR_LOAD_IN_PROGRESS answer, or a lost connection, forgets the coordinator
and the next request looks it up again (with backoff after a failed lookup, counted from
the failure: during a failover the group's offsets partition needs a new leader first).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kafkaev.backoff import Backoff
from kafkaev.cluster.metadata import NO_NODE, ClusterMetadata
from kafkaev.cluster.pool import Role
from kafkaev.errors import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NONE,
    NOT_COORDINATOR,
    TIMED_OUT,
    TRANSPORT,
    KafkaError,
)
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection

from .context import ConsumerContext

COORDINATOR_ERRORS = frozenset({NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS})
KEY_TYPE_GROUP = 0

ConnCallback = Callable[[Connection | None, KafkaError | None], object]


class CoordinatorLink:
    __slots__ = ("ctx", "group_id", "node_id", "_waiters", "_finding", "_backoff", "_find_after", "closed")

    def __init__(self, ctx: ConsumerContext, group_id: str) -> None:
        self.ctx = ctx
        self.group_id = group_id
        self.node_id = NO_NODE  # the coordinator, once found
        self._waiters: list[ConnCallback] = []
        self._finding = False
        self._backoff = Backoff(ctx.config.retry_backoff)  # failed lookups in a row
        self._find_after = 0.0  # loop time before which no lookup starts (after a failed one)
        self.closed = False

    def forget(self) -> None:
        """The coordinator moved or its connection broke: look it up before the next request."""
        if self.node_id >= 0:
            self.ctx.pool.disconnect(self.node_id, Role.GROUP)
        self.node_id = NO_NODE

    def close(self) -> None:
        """The member is done: forget the coordinator, and every later request fails at once."""
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
            cb(None, KafkaError(TRANSPORT, "the consumer group is closed"))
            return
        if self.node_id >= 0:
            self.ctx.pool.get(self.node_id, Role.GROUP, lambda conn, err: self._on_conn(conn, err, cb))
            return
        self._waiters.append(cb)
        if not self._finding:
            self._finding = True
            delay = self._find_after - self.ctx.loop.time()
            if delay > 0:
                self.ctx.loop.call_later(delay, self._find)
            else:
                self._find()

    def _on_conn(self, conn: Connection | None, err: KafkaError | None, cb: ConnCallback) -> None:
        if err is not None:
            self.forget()
        cb(conn, err)

    def _find(self) -> None:
        brokers = list(self.ctx.metadata.current.brokers)
        if not brokers:
            def after_refresh(_md: ClusterMetadata | None, err: KafkaError | None) -> None:
                if self.ctx.metadata.current.brokers:
                    self._find()
                else:
                    self._found(None, err or KafkaError(TRANSPORT, "no broker known to ask for the group coordinator"))

            self.ctx.metadata.refresh(after_refresh)
            return
        node = random.choice(brokers)

        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if err is not None:
                self._found(None, err)
                return
            assert conn is not None  # no error: a connection
            try:
                conn.find_coordinator(self.group_id, self._found, key_type=KEY_TYPE_GROUP)
            except KafkaError as exc:
                self._found(None, exc)

        self.ctx.pool.get(node, Role.ADMIN, on_conn)

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
                if self.ctx.pool.address(entry.node_id) is None:
                    brokers = {n: (b.host, b.port) for n, b in self.ctx.metadata.current.brokers.items()}
                    brokers[entry.node_id] = (entry.host, entry.port)
                    self.ctx.pool.set_brokers(brokers)
            else:
                err = KafkaError(entry.error_code, f"FindCoordinator for group {self.group_id!r}")
        waiters, self._waiters = self._waiters, []
        if err is not None:
            self._find_after = self.ctx.loop.time() + self._backoff.next_delay_s()
            for cb in waiters:
                cb(None, err)
            return
        assert resp is not None  # no error: an answer
        for cb in waiters:
            self.get(cb)


def retriable_group_error(err: KafkaError) -> bool:
    """Errors after which the same group request is simply tried again later."""
    return err.retriable or err.code in COORDINATOR_ERRORS or err.code == TIMED_OUT
