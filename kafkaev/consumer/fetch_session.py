"""Incremental fetch sessions (KIP-227), one per leader connection.

The first Fetch to a broker is a full request with session id 0 and epoch 0,
asking the broker to open a session. Afterwards each request carries the
session id and the next epoch, and lists only partitions that were added or
whose fetch parameters changed (offset, max bytes, leader epochs, topic id);
partitions the consumer stopped fetching are listed as forgotten. The broker
keeps the rest at the parameters it last saw. Any error or lost connection
throws the session away and the next request is full again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkaev.protocol.connection import FetchPosition, ForgottenPartitions
from kafkaev.types import TopicPartition

NO_SESSION_ID = 0
INITIAL_EPOCH = 0  # with session id 0: "open a session"
MAX_EPOCH = 2**31 - 1


class FetchParams(NamedTuple):
    """What the broker needs to fetch one partition."""

    offset: int
    max_bytes: int
    current_leader_epoch: int
    topic_id: uuid.UUID | None  # None when the metadata has no id
    last_fetched_epoch: int  # leader epoch of the batch before offset, NO_LEADER_EPOCH when unknown


@dataclass(slots=True)
class FetchPlan:
    """One request's worth of session bookkeeping."""

    session_id: int
    epoch: int
    full: bool
    send: dict[TopicPartition, FetchParams]  # partitions listed in the request
    forgotten: list[TopicPartition]

    def request_partitions(self) -> list[FetchPosition]:
        """The ``fetch_multi`` partitions."""
        return [FetchPosition(tp.topic, tp.partition, p.offset, max_bytes=p.max_bytes,
                              current_leader_epoch=p.current_leader_epoch, last_fetched_epoch=p.last_fetched_epoch,
                              topic_id=p.topic_id) for tp, p in self.send.items()]

    def request_forgotten(self, topic_ids: dict[str, uuid.UUID]) -> list[ForgottenPartitions]:
        """The ``fetch_multi`` forgotten entries, one per topic."""
        by_topic: dict[str, list[int]] = {}
        for tp in self.forgotten:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return [ForgottenPartitions(topic, parts, topic_ids.get(topic)) for topic, parts in by_topic.items()]


@dataclass(slots=True)
class FetchSession:
    session_id: int = NO_SESSION_ID
    epoch: int = INITIAL_EPOCH
    # What the broker's session holds, as of the last successful response.
    held: dict[TopicPartition, FetchParams] = field(default_factory=dict)
    # Topic ids of the held partitions' topics, for forgotten entries in v13+.
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)

    def plan(self, wanted: dict[TopicPartition, FetchParams]) -> FetchPlan:
        if self.session_id == NO_SESSION_ID:
            return FetchPlan(NO_SESSION_ID, INITIAL_EPOCH, True, dict(wanted), [])
        send = {tp: p for tp, p in wanted.items() if self.held.get(tp) != p}
        for tp, p in send.items():
            old = self.held.get(tp)
            if old is not None and old.topic_id != p.topic_id:
                # The topic was recreated. The broker applies forgotten entries after
                # updates, so the old incarnation cannot be swapped in one incremental
                # request: start a new session.
                self.reset()
                return FetchPlan(NO_SESSION_ID, INITIAL_EPOCH, True, dict(wanted), [])
        forgotten = [tp for tp in self.held if tp not in wanted]
        return FetchPlan(self.session_id, self.epoch, False, send, forgotten)

    def completed(self, plan: FetchPlan, response_session_id: int) -> None:
        """The broker accepted ``plan``."""
        if plan.full:
            self.held = dict(plan.send)
            self.session_id = response_session_id
            self.epoch = 1
        else:
            for tp in plan.forgotten:
                self.held.pop(tp, None)
            self.held.update(plan.send)
            self.epoch = 1 if self.epoch >= MAX_EPOCH else self.epoch + 1
        for tp, p in plan.send.items():
            if p.topic_id is not None:
                self.topic_ids[tp.topic] = p.topic_id

    def reset(self) -> None:
        """Forget the session: the next request is a full one."""
        self.session_id = NO_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.held.clear()
