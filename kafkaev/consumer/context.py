"""What the consumer's parts share: the loop, the options, the cluster view and the error sink."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafkaev.cluster.metadata import NO_LEADER, Metadata
from kafkaev.cluster.pool import ConnectionPool
from kafkaev.config import ClientConfig
from kafkaev.errors import (
    FENCED_LEADER_EPOCH,
    INCONSISTENT_TOPIC_ID,
    KAFKA_STORAGE_ERROR,
    LEADER_NOT_AVAILABLE,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    OFFSET_NOT_AVAILABLE,
    REPLICA_NOT_AVAILABLE,
    UNKNOWN_LEADER_EPOCH,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from kafkaev.types import NO_LEADER_EPOCH

from .buffer import RecordBuffer
from .delivery import DeliveryCursor
from .subscription import PartitionState, SubscriptionState

# Metadata answers that mean "this topic does not exist (any more)".
MISSING_TOPIC_ERRORS = frozenset({UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID})
# Partition errors cured by fresh metadata (a new leader, a new epoch, the topic appearing).
STALE_METADATA_ERRORS = frozenset({
    NOT_LEADER_OR_FOLLOWER,
    LEADER_NOT_AVAILABLE,
    FENCED_LEADER_EPOCH,
    UNKNOWN_LEADER_EPOCH,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNKNOWN_TOPIC_ID,
    INCONSISTENT_TOPIC_ID,
    KAFKA_STORAGE_ERROR,
    REPLICA_NOT_AVAILABLE,
    OFFSET_NOT_AVAILABLE,
})


@dataclass(slots=True)
class ConsumerContext:
    loop: asyncio.AbstractEventLoop
    config: ClientConfig
    metadata: Metadata
    pool: ConnectionPool
    subscription: SubscriptionState
    report: Callable[[BaseException], None]  # to the client's on_error (or the loop's handler)
    auto_offset_reset: str = "earliest"  # "earliest" | "latest" | "error"; subscribe() may change it
    # The delivery in progress, if any: what commit() and position() count as handed over.
    delivery: DeliveryCursor = field(init=False)
    # With kafkaev.aio (Fetcher.use_buffer): the records pulled one by one and not yet written
    # through to state.position count too.
    pulled: RecordBuffer | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.delivery = DeliveryCursor(self.loop)

    def delivered(self, state: PartitionState) -> tuple[int, int]:
        """(position, leader epoch) of ``state`` counting every record handed to a callback so
        far, the one whose callback is running included (``state.position`` only moves once
        the callback returns for the whole set), or pulled by ``async for`` from the record set
        it is taking from (written through at the set's end)."""
        current = self.delivery.delivered(state)
        if current is None and self.pulled is not None:
            current = self.pulled.delivered(state)
        return (state.position, state.position_epoch) if current is None else current

    def leader(self, topic: str, partition: int) -> tuple[int, int]:
        """(leader node id, leader epoch) from the cache; NO_LEADER when unknown."""
        info = self.metadata.current.topics.get(topic)
        if info is None or not 0 <= partition < len(info.partitions):
            return NO_LEADER, NO_LEADER_EPOCH
        p = info.partitions[partition]
        return p.leader, p.leader_epoch

    def topic_id(self, topic: str) -> uuid.UUID | None:
        info = self.metadata.current.topics.get(topic)
        return None if info is None else info.topic_id

    def topic_missing(self, topic: str, partition: int | None = None) -> bool:
        """True when the latest metadata says the topic (or partition) does not exist."""
        info = self.metadata.current.topics.get(topic)
        if info is None:
            return False  # not looked up yet
        if info.error_code in MISSING_TOPIC_ERRORS:
            return True
        if info.error_code == NONE and partition is not None and partition >= len(info.partitions):
            return True
        return False

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a user callback and return what it returned; what it raises goes to on_error
        (then None is returned) and nothing else is skipped."""
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - a user's bug is reported, never swallowed
            self.report(exc)
            return None
