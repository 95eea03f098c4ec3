"""Broker connections, one per (node id, role, lane), connected lazily and reconnected on demand.

Roles keep traffic with different latency profiles apart: a broker answers one socket's
requests in order, so a long-poll Fetch would hold back every Produce response queued
behind it on a shared socket.

* PRODUCE - Produce and InitProducerId (the producer's sender)
* FETCH   - Fetch (the consumer's fetcher)
* GROUP   - JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit/OffsetFetch to the coordinator
* ADMIN   - Metadata, FindCoordinator, ListOffsets, OffsetForLeaderEpoch and administrative
            requests (short answers that must not wait behind a long-poll Fetch)

A lane numbers parallel connections of one role to one broker: a broker handles one request
per connection at a time, so the producer can spread partitions over ``produce_connections``
lanes to have a broker append several partitions' batches at once. Every other role uses lane 0.

Connections are created with ``auto_reconnect=False``: the pool is the one place that backs
off a connect. It reconnects on the next ``get()`` after a failure, once the slot's backoff
(kafkaev/backoff.py: exponential, full jitter, so clients that lost the same broker do not
come back in lockstep) has run out, so a dead broker costs nothing until someone needs it again.

With ``busy_poll_us`` set, the pool's one ``BusyPoll`` goes to each connection it makes: a read
or write on any of them keeps the loop spinning for that window (DESIGN.md, "Latency breakdown").
"""

from __future__ import annotations

import asyncio
import enum
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from ..backoff import Backoff, RandomSource
from ..config import ClientConfig
from ..error_sink import report_error
from ..errors import DESTROY, STATE, KafkaError
from ..protocol.connection import BusyPoll, Connection
from ..stats.broker_totals import BrokerTotals

ConnectionFactory = Callable[[ClientConfig, asyncio.AbstractEventLoop], Connection]

ConnectCallback = Callable[[Connection | None, KafkaError | None], object]


class Role(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    GROUP = 2
    ADMIN = 3
    TXN = 4  # the transaction coordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn


class _Slot:
    """One pooled connection and the callers waiting for it to become ready."""

    __slots__ = ("node_id", "role", "lane", "conn", "waiters", "backoff", "retry_at", "retry_handle", "last_error",
                 "attempts")

    def __init__(self, node_id: int, role: Role, lane: int, backoff: Backoff) -> None:
        self.node_id = node_id
        self.role = role
        self.lane = lane
        self.conn: Connection | None = None  # a Connection that is connecting or ready
        self.waiters: list[ConnectCallback] = []
        self.backoff = backoff  # grows after each failed connect, reset on success
        self.retry_at = 0.0  # loop time before which no new connect is attempted
        self.retry_handle: asyncio.TimerHandle | None = None
        self.last_error: KafkaError | None = None  # why the last connect failed; None once one succeeds
        self.attempts = 0  # connects started (statistics: all but the first are reconnects)


@dataclass(frozen=True, slots=True)
class PooledConnection:
    """One of the pool's connections and the (node, role, lane) it serves."""

    node_id: int
    role: Role
    lane: int
    conn: Connection


def default_connection_factory(config: ClientConfig, loop: asyncio.AbstractEventLoop) -> Connection:
    from ..protocol.connection import Connection

    return Connection(
        loop,
        client_id=config.client_id,
        request_timeout_ms=config.request_timeout_ms,
        tls=config.tls,
        sasl=config.sasl,
        auto_reconnect=False,
    )


class ConnectionPool:
    """Connections per (node_id, role, lane).

    ``brokers`` maps node id -> (host, port); the metadata layer keeps it current through
    ``set_brokers``. ``on_connection_error(node_id, role, err)`` is called when a pooled
    connection fails to connect or drops (the client uses it to refresh metadata). ``rng`` is
    where the reconnect jitter comes from (a test may script it).
    """

    def __init__(
        self,
        config: ClientConfig,
        loop: asyncio.AbstractEventLoop,
        *,
        connection_factory: ConnectionFactory = default_connection_factory,
        on_connection_error: Callable[[int, Role, KafkaError], object] | None = None,
        on_error: Callable[[BaseException], object] | None = None,
        rng: RandomSource = random,
    ) -> None:
        self._config = config
        self._rng = rng
        self._loop = loop
        self._factory = connection_factory
        self._brokers: dict[int, tuple[str, int]] = {}
        self._slots: dict[tuple[int, Role, int], _Slot] = {}
        self._closed = False
        self.on_connection_error = on_connection_error
        self.on_error = on_error
        self.totals = BrokerTotals()  # statistics: the counters of connections let go
        # Shared by every connection made here, so the client spins one loop turn at a time.
        self.busy_poll = BusyPoll(loop, config.busy_poll_us) if config.busy_poll_us else None

    # --- addresses -----------------------------------------------------------------------------
    def set_brokers(self, brokers: dict[int, tuple[str, int]]) -> None:
        """Replace the known broker addresses. A node whose address changed loses its
        connections (they reconnect to the new address on the next ``get``). A node missing
        from this answer keeps its address and connections: a broker that is down for a while
        drops out of metadata, and its in-flight requests settle on their own."""
        old = self._brokers
        self._brokers = {**old, **brokers}
        for (node_id, _role, _lane), slot in list(self._slots.items()):
            if node_id in old and node_id in brokers and old[node_id] != brokers[node_id]:
                self._drop(slot, KafkaError(STATE, f"broker {node_id} moved to {brokers[node_id]}"))

    def address(self, node_id: int) -> tuple[str, int] | None:
        return self._brokers.get(node_id)

    @property
    def closed(self) -> bool:
        """close() was called: every later request fails with DESTROY."""
        return self._closed

    @property
    def node_ids(self) -> list[int]:
        return list(self._brokers)

    # --- connections ---------------------------------------------------------------------------
    def connections(self) -> list[PooledConnection]:
        """Every connection the pool holds now, with its key: for statistics (kafkaev/stats),
        counters (requests, re-authentications) and diagnostics."""
        return [PooledConnection(node_id, role, lane, slot.conn)
                for (node_id, role, lane), slot in self._slots.items() if slot.conn is not None]

    def ready(self, node_id: int, role: Role, lane: int = 0) -> Connection | None:
        """The ready connection for (node_id, role, lane), or None; never starts a connect."""
        slot = self._slots.get((node_id, role, lane))
        if slot is not None and slot.conn is not None and slot.conn.connected:
            return slot.conn
        return None

    def get(self, node_id: int, role: Role, cb: ConnectCallback, lane: int = 0) -> None:
        """``cb(conn, None)`` with a ready connection, or ``cb(None, KafkaError)`` once.

        A ready connection is handed over at once (synchronously); otherwise the callback
        waits for the connect in progress or starts one (after the backoff of a recent failure).
        """
        if self._closed:
            cb(None, KafkaError(DESTROY, "the client is closed"))
            return
        key = (node_id, role, lane)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(node_id, role, lane, Backoff(self._config.reconnect_backoff, self._rng))
        conn = slot.conn
        if conn is not None and conn.connected:
            cb(conn, None)
            return
        slot.waiters.append(cb)
        if conn is not None or slot.retry_handle is not None:
            return  # a connect is in progress or scheduled
        delay = slot.retry_at - self._loop.time()
        if delay > 0:
            slot.retry_handle = self._loop.call_later(delay, self._connect, slot)
        else:
            self._connect(slot)

    def retry_in_s(self, node_id: int, role: Role, lane: int = 0) -> float:
        """How long a caller whose ``get`` just failed should wait before asking again: what is
        left of the slot's backoff (so it does not back off a second time on top of the pool),
        and at least the backoff's floor (a node with no address fails at once, and asking again
        at once would spin)."""
        floor = self._config.reconnect_backoff.floor_ms / 1000.0
        slot = self._slots.get((node_id, role, lane))
        if slot is None:
            return floor
        return max(floor, slot.retry_at - self._loop.time())

    def connect_error(self, node_id: int, role: Role, lane: int = 0) -> KafkaError | None:
        """Why the last connect of (node_id, role, lane) failed, or None: none failed since one
        succeeded (or none was tried)."""
        slot = self._slots.get((node_id, role, lane))
        return None if slot is None else slot.last_error

    def _connect(self, slot: _Slot) -> None:
        slot.retry_handle = None
        address = self._brokers.get(slot.node_id)
        if address is None:
            slot.last_error = KafkaError(STATE, f"broker {slot.node_id} is not in the cluster metadata")
            self._fail_waiters(slot, slot.last_error)
            return
        conn = self._factory(self._config, self._loop)
        self.totals.connecting(slot.node_id, slot.attempts == 0)
        slot.attempts += 1
        conn.node_id = slot.node_id
        conn.on_error = self.on_error
        if self.busy_poll is not None:
            conn.busy_poll = self.busy_poll
        conn.on_disconnect = lambda err, s=slot, c=conn: self._on_disconnect(s, c, err)
        slot.conn = conn
        host, port = address
        conn.connect(host, port, self._config.connect_timeout_ms / 1000.0, partial(self._on_connected, slot))

    def _on_connected(self, slot: _Slot, conn: Connection, err: KafkaError | None) -> None:
        if slot.conn is not conn:
            return  # dropped meanwhile; its waiters were already answered
        if err is None:
            slot.backoff.reset()
            slot.last_error = None
            waiters, slot.waiters = slot.waiters, []
            for cb in waiters:
                self._call(cb, conn, None)
            return
        slot.conn = None
        self.totals.retire(slot.node_id, conn)
        slot.last_error = err
        slot.retry_at = self._loop.time() + slot.backoff.next_delay_s()
        self._fail_waiters(slot, err)
        self._report(slot, err)

    def _on_disconnect(self, slot: _Slot, conn: Connection, err: KafkaError | None) -> None:
        if slot.conn is conn:
            slot.conn = None
            self.totals.retire(slot.node_id, conn)
            if err is not None:
                self._report(slot, err)

    def _report(self, slot: _Slot, err: KafkaError) -> None:
        if self.on_connection_error is not None and not self._closed:
            try:
                self.on_connection_error(slot.node_id, slot.role, err)
            except Exception as exc:  # noqa: BLE001 - reported, never swallowed
                self._report_exception(exc)

    def _fail_waiters(self, slot: _Slot, err: KafkaError) -> None:
        waiters, slot.waiters = slot.waiters, []
        for cb in waiters:
            self._call(cb, None, err)

    def _call(self, cb: ConnectCallback, conn: Connection | None, err: KafkaError | None) -> None:
        try:
            cb(conn, err)
        except Exception as exc:  # noqa: BLE001 - one caller's bug must not starve the others
            self._report_exception(exc)

    def _report_exception(self, exc: BaseException) -> None:
        report_error(self._loop, self.on_error, "kafkaev", exc)

    def _drop(self, slot: _Slot, err: KafkaError) -> None:
        if slot.retry_handle is not None:
            slot.retry_handle.cancel()
            slot.retry_handle = None
        conn, slot.conn = slot.conn, None
        self._fail_waiters(slot, err)
        if conn is not None:
            self.totals.retire(slot.node_id, conn)
            conn.disconnect()

    def disconnect(self, node_id: int, role: Role, lane: int = 0) -> None:
        """Close one pooled connection (its pending requests fail with DESTROY)."""
        slot = self._slots.get((node_id, role, lane))
        if slot is not None:
            self._drop(slot, KafkaError(DESTROY, "connection closed by the client"))

    def close(self, cb: Callable[[KafkaError | None], object] | None = None) -> None:
        """Close every connection; waiting callers get DESTROY. Idempotent. ``cb(err)`` once
        every socket has sent what it still held (acks=0 produces are reported at write time,
        before the kernel took them): ``err`` is None, or the first socket's failure to."""
        if self._closed:
            if cb is not None:
                self._loop.call_soon(cb, None)
            return
        self._closed = True
        if self.busy_poll is not None:
            self.busy_poll.close()
        closing = [slot.conn for slot in self._slots.values() if slot.conn is not None]
        for slot in list(self._slots.values()):
            self._drop(slot, KafkaError(DESTROY, "the client is closed"))
        self._slots.clear()
        if cb is None:
            return
        if not closing:
            self._loop.call_soon(cb, None)
            return
        remaining = len(closing)
        first_error: list[KafkaError] = []

        def closed(err: KafkaError | None) -> None:
            nonlocal remaining
            remaining -= 1
            if err is not None:
                first_error.append(err)
            if remaining == 0:
                cb(first_error[0] if first_error else None)

        for conn in closing:
            conn.wait_closed(closed)
