"""One group's member: the ``kafkaev.Client`` that reads for the consumers of one ``group_id``
(and produces their dead letters), and the commits of what they finished.

The client is subscribed to the union of its consumers' topics with auto-commit off; each
record goes to the scheduler of the consumer that reads its topic. Commits are coalesced: any
progress asks for one on the next loop turn, one commit is in flight at a time, and each sends
every partition whose committable offset moved. On revoke, the revoked partitions' running
handlers are waited for (the rebalance waits too: ``on_revoke`` returns a Future), what
finished is committed, then they are let go. A periodic ``lag()`` keeps each partition's end
for ``stats``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkaev.errors import KafkaError
from kafkaev.types import TopicPartition

from .scheduler import PartitionWork, Scheduler

if TYPE_CHECKING:
    from kafkaev.client import Client
    from kafkaev.protocol.codec import Message

log = logging.getLogger("kafkaev.handlers")

# How often the partitions' ends are asked for (stats' lag).
LAG_REFRESH_S = 1.0
# The share of rebalance_timeout_ms a revocation waits for running handlers: the rest is
# left for the last commit and the rejoin before the coordinator gives up on the member.
REVOKE_WAIT_SHARE = 0.5


class Membership:
    """Made before its client (whose ``on_batch`` is this object's), then ``attach``ed to it
    and given its consumers' schedulers (``add``)."""

    def __init__(self, group_id: str, *, rebalance_timeout_ms: int) -> None:
        self.group_id = group_id
        self.client: Client = None  # type: ignore[assignment]  # set by attach(), before any record
        self.schedulers: list[Scheduler] = []
        self._by_topic: dict[str, Scheduler] = {}
        self._revoke_wait_s = rebalance_timeout_ms * REVOKE_WAIT_SHARE / 1000.0
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._commit_asked = False
        self._commit_in_flight = False
        self._commit_again = False
        self._commit_retry: asyncio.TimerHandle | None = None
        self._commit_failures = 0
        self._lag_timer: asyncio.TimerHandle | None = None
        self._stopping = False
        self._left = False

    def attach(self, client: Client) -> None:
        self.client = client
        self._loop = client.loop

    def add(self, scheduler: Scheduler) -> None:
        self.schedulers.append(scheduler)
        for topic in scheduler.options.topics:
            self._by_topic[topic] = scheduler

    def on_batch(self, messages: list[Message]) -> None:
        if messages:
            self._by_topic[messages[0].topic].offer_batch(messages)

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Pause those of ``partitions`` still assigned (a revocation may have come first)."""
        owned = set(self.client.assignment())
        self.client.pause([tp for tp in partitions if tp in owned])

    def resume(self, partitions: list[TopicPartition]) -> None:
        owned = set(self.client.assignment())
        self.client.resume([tp for tp in partitions if tp in owned])

    def start(self) -> None:
        for scheduler in self.schedulers:
            scheduler.start()
        topics = sorted(self._by_topic)
        self.client.subscribe(topics, group_id=self.group_id, auto_commit=False, on_assign=self._assigned,
                              on_revoke=self._revoked, on_lost=self._lost)
        self._lag_timer = self._loop.call_later(LAG_REFRESH_S, self._refresh_lag)

    # --- the group's callbacks -----------------------------------------------------------------
    def _split(self, partitions: list[TopicPartition]) -> dict[Scheduler, list[TopicPartition]]:
        mine: dict[Scheduler, list[TopicPartition]] = {}
        for tp in partitions:
            scheduler = self._by_topic.get(tp.topic)
            if scheduler is not None:
                mine.setdefault(scheduler, []).append(tp)
        return mine

    def _assigned(self, partitions: list[TopicPartition]) -> None:
        for scheduler, tps in self._split(partitions).items():
            scheduler.assigned(tps)
            if not scheduler.counters.running:
                self.pause(tps)  # a consumer that is down reads nothing more
            log.info("consumer %r (group %r): assigned %s", scheduler.name, self.group_id, _names(tps))

    def _revoked(self, partitions: list[TopicPartition]) -> asyncio.Future[None] | None:
        if self._left:
            return None
        waits: list[asyncio.Future[None]] = []
        works: list[PartitionWork] = []
        for scheduler, tps in self._split(partitions).items():
            log.info("consumer %r (group %r): revoked %s", scheduler.name, self.group_id, _names(tps))
            works += [w for tp in tps if (w := scheduler.work(tp)) is not None]
            waits.append(scheduler.release(tps, wait_s=self._revoke_wait_s))
        if not works:
            return None
        done: asyncio.Future[None] = self._loop.create_future()

        def committed(_err: KafkaError | None) -> None:
            if not done.done():
                done.set_result(None)  # released, committed or not: the rebalance goes on

        def handlers_over() -> None:
            self._commit_works(works, committed)

        when_all(waits, handlers_over)
        return done

    def _lost(self, partitions: list[TopicPartition]) -> None:
        for scheduler, tps in self._split(partitions).items():
            log.warning("consumer %r (group %r): lost %s without a commit", scheduler.name, self.group_id,
                        _names(tps))
            scheduler.lose(tps)

    # --- commits -----------------------------------------------------------------------------------
    def progress(self) -> None:
        """Some record finished: commit on the next loop turn (one commit for all of that turn's)."""
        if not self._commit_asked and not self._left:
            self._commit_asked = True
            self._loop.call_soon(self._commit)

    def _commit(self) -> None:
        self._commit_asked = False
        if self._commit_in_flight:
            self._commit_again = True
            return
        works = [w for s in self.schedulers for w in s.partitions()]
        self._commit_works(works, None)

    def _commit_works(self, works: list[PartitionWork], cb: Callable[[KafkaError | None], object] | None) -> None:
        offsets: dict[TopicPartition, int] = {}
        for work in works:
            at = work.offsets.committable()
            if at > work.offsets.committed:
                offsets[work.offsets.tp] = at
        if not offsets or self._left:
            if cb is not None:
                cb(None)
            return
        self._commit_in_flight = True

        def answered(err: KafkaError | None) -> None:
            self._commit_in_flight = False
            if err is None:
                self._commit_failures = 0
                for work in works:
                    sent = offsets.get(work.offsets.tp)
                    if sent is not None and sent > work.offsets.committed:
                        work.offsets.committed = sent
            else:
                self._commit_failures += 1
                log.warning("group %r: commit of %d partition(s) failed: %s", self.group_id, len(offsets), err)
                if not self._stopping:
                    self._retry_commit()
            if cb is not None:
                cb(err)
            if self._commit_again:
                self._commit_again = False
                self.progress()

        try:
            self.client.commit(answered, offsets=offsets)
        except KafkaError as exc:  # not subscribed any more
            answered(exc)

    def _retry_commit(self) -> None:
        if self._commit_retry is not None:
            return
        delay = self.client.config.retry_backoff.delay_s(self._commit_failures - 1)

        def again() -> None:
            self._commit_retry = None
            self.progress()

        self._commit_retry = self._loop.call_later(delay, again)

    # --- lag -----------------------------------------------------------------------------------------
    def _refresh_lag(self) -> None:
        self._lag_timer = None
        if self._left:
            return

        def answered(result: dict[tuple[str, int], tuple[int, int, int]] | None, err: KafkaError | None) -> None:
            if result is not None:
                for (topic, partition), (position, end, _lag) in result.items():
                    scheduler = self._by_topic.get(topic)
                    work = scheduler.work(TopicPartition(topic, partition)) if scheduler is not None else None
                    if work is not None:
                        work.offsets.high_watermark = end
                        work.offsets.position = position
            if not self._left:
                self._lag_timer = self._loop.call_later(LAG_REFRESH_S, self._refresh_lag)

        self.client.lag(answered)

    # --- stopping ------------------------------------------------------------------------------------
    def all_down(self) -> bool:
        return not any(s.counters.running for s in self.schedulers)

    def leave(self, wait_s: float, cb: Callable[[KafkaError | None], object]) -> None:
        """Stop fetching, let running handlers finish (at most ``wait_s``), commit what finished,
        leave the group and close the client; ``cb(err)`` once."""
        if self._stopping:
            self._loop.call_soon(cb, None)
            return
        self._stopping = True
        self.client.stop()
        self.pause(self.client.assignment())
        drained = [s.stop(wait_s) for s in self.schedulers]

        def handlers_over() -> None:
            works = [w for s in self.schedulers for w in s.partitions()]
            self._commit_works(works, committed)

        def committed(err: KafkaError | None) -> None:
            self._left = True
            for handle in (self._lag_timer, self._commit_retry):
                if handle is not None:
                    handle.cancel()
            self.client.close(lambda close_err: cb(err or close_err))

        when_all(drained, handlers_over)


def when_all(futures: list[asyncio.Future[None]], then: Callable[[], object]) -> None:
    """``then()`` once every future is done (at once if they all are)."""
    pending = [f for f in futures if not f.done()]
    if not pending:
        then()
        return
    left = len(pending)

    def one_done(_f: asyncio.Future[None]) -> None:
        nonlocal left
        left -= 1
        if left == 0:
            then()

    for future in pending:
        future.add_done_callback(one_done)


def _names(partitions: list[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}[{tp.partition}]" for tp in sorted(partitions))
