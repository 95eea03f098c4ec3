"""What the consumer reads: assigned partitions, their positions and their phase.

One ``PartitionState`` per assigned partition. A fetch response is applied only
when the state object it was issued for is still the assigned one and its
position has not moved since (a seek, a reset or a revocation in between makes
the response stale, and its records are dropped rather than delivered twice or
out of order).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from kafkaev.consumer.delivery import note_interruption
from kafkaev.types import NO_LEADER_EPOCH, NO_OFFSET, OFFSET_BEGINNING, OFFSET_END, TopicPartition

if TYPE_CHECKING:
    from kafkaev.consumer.buffer import BufferedRecords
    from kafkaev.protocol.codec import AbortedTransaction, FetchedRecords


class Phase(enum.IntEnum):
    """What a partition waits for before it can be fetched."""

    FETCHING = 0  # position known and valid: fetch from it
    AWAIT_COMMITTED = 1  # group member: the committed offset is being looked up
    AWAIT_RESET = 2  # position is OFFSET_BEGINNING/OFFSET_END or a timestamp: ListOffsets pending
    AWAIT_VALIDATION = 3  # leader changed: OffsetForLeaderEpoch checks the position (KIP-320)
    FAILED = 4  # reported to on_error; waits for a seek, a reassignment or the topic to come back


class ResetKind(enum.IntEnum):
    EARLIEST = OFFSET_BEGINNING
    LATEST = OFFSET_END
    TIMESTAMP = 0


class FetchedSet(NamedTuple):
    """One partition's record set from a Fetch answer, not decoded yet: handed over once the
    next Fetch (from ``next_offset``) is out, or held while the partition is paused. Or the
    rest of a set whose delivery a pause cut short, decoded: ``decoded.messages[start:]``."""

    state: PartitionState
    records: bytes | memoryview  # a view of the answer; a held set's own copy
    aborted_transactions: list[AbortedTransaction] | None
    generation: int
    fetch_offset: int  # what the records were fetched from; for a rest, its first record's
    next_offset: int
    decoded: FetchedRecords | None = None
    start: int = 0  # in decoded.messages: the first record not handed over yet


@dataclass(slots=True, eq=False)
class PartitionState:
    tp: TopicPartition
    topic: str
    partition: int
    position: int = NO_OFFSET  # next offset to deliver (what commit() sends)
    # Where the next Fetch starts: ahead of position while a fetched response is being
    # delivered (the next Fetch is already out), equal to it otherwise.
    fetch_offset: int = NO_OFFSET
    position_epoch: int = NO_LEADER_EPOCH  # leader epoch of the last delivered record's batch, none before the first
    # Leader epoch of the batch that ends right before fetch_offset: the Fetch's
    # LastFetchedEpoch, so the leader can say when its log diverged from it (KIP-320).
    fetch_epoch: int = NO_LEADER_EPOCH
    phase: Phase = Phase.AWAIT_RESET
    reset_kind: ResetKind = ResetKind.EARLIEST
    reset_timestamp: int = 0
    paused: bool = False
    in_flight: bool = False  # a Fetch or a position request covering it is outstanding
    high_watermark: int = NO_OFFSET
    last_stable_offset: int = NO_OFFSET
    log_start_offset: int = NO_OFFSET
    # Bumped whenever the position is set from outside the fetch loop (seek, reset,
    # validation); a response issued under another generation is stale.
    generation: int = 0
    # Delivery stops mid-response when the callback paused/seeked this partition.
    interrupted: bool = False
    # Record sets that arrived while the partition was paused, and the rest of the one a pause
    # cut short, in offset order from position to fetch_offset: handed over on resume instead
    # of being fetched again (KAFKA-7548's rule).
    held: list[FetchedSet] = field(default_factory=list)
    # With a RecordBuffer (kafkaev.aio): the decoded sets a puller had not taken when the
    # partition was paused, out of the buffer until resume; held sets follow them.
    set_aside: list[BufferedRecords] = field(default_factory=list)
    # Validation was started by OFFSET_OUT_OF_RANGE: without truncation, reset next.
    reset_after_validation: bool = False
    # Loop time before which a failed reset/validation is not tried again (backoff), and
    # how many failed in a row since the position was last settled.
    retry_at: float = 0.0
    position_failures: int = 0
    # Called once when the position is next settled (FETCHING), failed, or unassigned.
    waiters: list[Callable[[PartitionState, BaseException | None], object]] = field(default_factory=list)
    # Statistics (kafkaev/stats), since the partition was assigned: records handed to a
    # callback, and Fetch answers with records for it and their bytes (counted once per answer).
    records_delivered: int = 0
    fetches: int = 0
    bytes_fetched: int = 0

    def notify(self, err: BaseException | None = None) -> None:
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            waiter(self, err)

    def resume_fetching(self) -> None:
        """The position checked out (validation): fetch from it."""
        self.phase = Phase.FETCHING
        self.position_failures = 0
        self.notify()

    def back_off_until(self, retry_at: float) -> None:
        """A reset or validation failed: not tried again before loop time ``retry_at``."""
        self.retry_at = retry_at
        self.position_failures += 1

    @property
    def fetchable(self) -> bool:
        return (self.phase is Phase.FETCHING and not self.paused and not self.in_flight and not self.held
                and not self.set_aside)

    def held_bytes(self) -> int:
        """Bytes of the record sets it holds for a resume or the loop's next turn: as fetched
        (a set cut short whole), a set-aside ``kafkaev.aio`` one as ``max_buffered_bytes``
        counts it."""
        held = sum(len(s.records) if s.decoded is None else s.decoded.bytes_read for s in self.held)
        return held + sum(records.size for records in self.set_aside)

    def held_run_from(self, start: int) -> bool:
        """The held sets (if any) still run from ``start`` to the fetch offset under this
        generation: nothing was fetched past them, or moved, since they were held."""
        if not self.held:
            return start == self.fetch_offset
        return (self.held[0].generation == self.generation and self.held[0].fetch_offset == start
                and self.held[-1].next_offset == self.fetch_offset)

    def take_held(self) -> FetchedSet | None:
        """The next held record set, if it still follows the position under this generation;
        otherwise (a seek, reset or validation since) every held set is dropped and fetching
        starts again from the position."""
        if not self.held:
            return None
        if not self.held_run_from(self.position):
            self.rewind_fetch()
            return None
        return self.held.pop(0)

    def seek(self, offset: int, epoch: int = NO_LEADER_EPOCH) -> None:
        """Set an absolute position (>= 0)."""
        self.position = offset
        self.fetch_offset = offset
        self.held.clear()
        self.set_aside.clear()
        self.position_epoch = epoch
        self.fetch_epoch = epoch
        self.retry_at = 0.0
        self.position_failures = 0
        self.phase = Phase.FETCHING
        self.generation += 1
        self.interrupt()
        self.notify()

    def interrupt(self) -> None:
        """Stop a delivery of this partition's records in progress after the current one."""
        self.interrupted = True
        note_interruption()

    def rewind_fetch(self) -> None:
        """Fetch again from the position: what was fetched past it is dropped."""
        self.fetch_offset = self.position
        self.fetch_epoch = self.position_epoch
        self.held.clear()
        self.set_aside.clear()

    def request_reset(self, kind: ResetKind, timestamp: int = 0) -> None:
        self.reset_kind = kind
        self.reset_timestamp = timestamp
        self.retry_at = 0.0
        self.position_failures = 0
        self.phase = Phase.AWAIT_RESET
        self.generation += 1
        self.interrupt()

    def request_validation(self, *, out_of_range: bool = False) -> bool:
        """Check the position against the leader's log before fetching on; False when
        there is nothing to check it with (no leader epoch known for the position)."""
        if self.phase is not Phase.FETCHING or self.position_epoch == NO_LEADER_EPOCH:
            return False
        self.phase = Phase.AWAIT_VALIDATION
        self.reset_after_validation = out_of_range
        self.generation += 1
        return True

    def fail(self) -> None:
        self.phase = Phase.FAILED
        self.generation += 1
        self.notify()


class SubscriptionState:
    """The assigned partitions, in assignment order."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: dict[TopicPartition, PartitionState] = {}

    def __len__(self) -> int:
        return len(self._parts)

    def __iter__(self) -> Iterator[PartitionState]:
        return iter(list(self._parts.values()))

    def __contains__(self, tp: object) -> bool:
        return tp in self._parts

    def get(self, tp: TopicPartition) -> PartitionState | None:
        return self._parts.get(tp)

    def partitions(self) -> list[TopicPartition]:
        return list(self._parts)

    def topics(self) -> set[str]:
        return {tp.topic for tp in self._parts}

    def add(self, tp: TopicPartition) -> PartitionState:
        state = self._parts.get(tp)
        if state is None:
            state = PartitionState(tp, tp.topic, tp.partition)
            self._parts[tp] = state
        return state

    def remove(self, tps: Iterable[TopicPartition]) -> list[PartitionState]:
        removed = []
        for tp in tps:
            state = self._parts.pop(tp, None)
            if state is not None:
                # An in-flight response for it must not be applied.
                state.generation += 1
                state.interrupt()
                removed.append(state)
                state.notify()
        return removed

    def clear(self) -> list[PartitionState]:
        return self.remove(list(self._parts))
