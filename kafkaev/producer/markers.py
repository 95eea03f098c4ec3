"""Transactions v2: when the previous transaction's markers are written, asked of its coordinator.

The coordinator answers EndTxn before it has written the transaction's markers, and a Produce
that asks to add a partition meanwhile is held by its leader for
``add.partitions.to.txn.retry.backoff.ms`` (20 ms by default, KAFKA-18654): the client cannot
retry it sooner. So a transaction's first batches wait. How long the markers take is the broker's
(one local broker: under 0.5 ms mostly, at times over 2), and the coordinator tells it:
DescribeTransactions answers PrepareCommit or PrepareAbort until they are written, then
CompleteCommit or CompleteAbort. ``MarkersWatch`` asks it when the next transaction's first
batch wants to go (not at EndTxn's answer: an ask that early nearly always meets a Prepare
state, and costs both processes a round trip), and again while the answer is a Prepare state.
A TxnOffsetCommit is not held: the group coordinator answers it CONCURRENT_TRANSACTIONS at once
while the markers are pending, and once it is accepted they are written (``add_accepted``).

The fixed pause it replaces stays as the bound (``MARKERS_WAIT_MAX_S``): a coordinator that
cannot be asked (a lost connection, an older broker, no DESCRIBE on the transactional id) or
that keeps answering Prepare past it lets the adds go then, as before. Nothing of this reaches
the user: an unanswered ask only leaves the bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..cluster.coordinator import CoordinatorLink
from ..errors import NONE, KafkaError
from ..protocol.codec import ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse
from ..protocol.connection import Connection

# At most this long after EndTxn's answer the first batches go, written or not: on a local 4.4
# broker, 1,000-record transactions back to back met a held add in about one in three without a
# pause (9.4-10.6 ms per transaction on average), in about one in 250 with this one (4.8-4.9 ms).
# 2 ms, as uvloop's clock counts whole milliseconds: at least one passes.
MARKERS_WAIT_MAX_S = 0.002
# The states in which the coordinator is still writing the markers of the transaction just ended.
MARKERS_PENDING_STATES = frozenset({"PrepareCommit", "PrepareAbort", "PrepareEpochFence"})


class MarkersWatch:
    """Whether the transaction last ended has its markers written (``written()``), and
    ``on_written()`` once when a coordinator's answer says so before the bound."""

    __slots__ = ("_loop", "_link", "_transactional_id", "_on_written", "_not_after", "_written",
                 "_asked_for", "_ended", "asks")

    def __init__(self, loop: asyncio.AbstractEventLoop, link: CoordinatorLink, transactional_id: str,
                 on_written: Callable[[], object]) -> None:
        self._loop = loop
        self._link = link
        self._transactional_id = transactional_id
        self._on_written = on_written
        self._not_after = 0.0  # loop time at which the adds go whatever the answers
        self._written = True  # nothing ended yet: nothing to wait for
        self._ended = 0  # EndTxn answers so far: an answer about an earlier one is stale
        # which of them was asked about: once each, again only after a Prepare answer (a failed
        # ask leaves the bound; one left unanswered by a paused coordinator holds up no later one)
        self._asked_for = -1
        self.asks = 0  # DescribeTransactions sent (its repr; the tests)

    @property
    def not_after(self) -> float:
        """Loop time past which first batches go, written or not."""
        return self._not_after

    def pending(self) -> bool:
        """The markers are not known to be written, and the bound has not passed."""
        return not self._written and self._loop.time() < self._not_after

    def add_accepted(self) -> None:
        """The coordinator accepted an add to the next transaction (its TxnOffsetCommit): it
        had the markers written. Said once, as an answer saying so is."""
        if not self._written:
            self._now_written()

    def ended(self) -> None:
        """A v2 EndTxn was answered: its markers are being written."""
        self._ended += 1
        self._written = False
        self._not_after = self._loop.time() + MARKERS_WAIT_MAX_S

    def written(self) -> bool:
        """May a first add go now? If not yet known, the coordinator is asked."""
        if self._written or self._loop.time() >= self._not_after:
            return True
        if self._asked_for != self._ended:
            self._ask()
        return False

    def _ask(self) -> None:
        ended = self._asked_for = self._ended

        def on_conn(conn: Connection | None, err: KafkaError | None) -> None:
            if conn is None or err is not None or ended != self._ended:
                return  # the bound lets the adds go
            self.asks += 1
            try:
                conn.request(ApiKey.DESCRIBE_TRANSACTIONS,
                             DescribeTransactionsRequest(transactional_ids=[self._transactional_id]),
                             lambda answer, failure: self._answered(ended, answer, failure))
            except KafkaError:  # refused before it was written (the connection is going): the bound
                pass

        self._link.get(on_conn)

    def _answered(self, ended: int, resp: object, err: KafkaError | None) -> None:
        if ended != self._ended or self._written or err is not None:
            return
        if not isinstance(resp, DescribeTransactionsResponse) or not resp.transaction_states:
            return
        state = resp.transaction_states[0]
        if state.error_code != NONE:
            return  # e.g. no DESCRIBE on the transactional id: the bound it is
        if state.transaction_state in MARKERS_PENDING_STATES:
            if self._loop.time() < self._not_after:
                self._ask()
            return
        self._now_written()

    def _now_written(self) -> None:
        self._written = True
        self._on_written()

    def __repr__(self) -> str:
        return f"<MarkersWatch written={self._written} asks={self.asks}>"
