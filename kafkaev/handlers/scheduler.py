"""One handler consumer's work: which record runs next, its retries, its dead letter, and what
may be committed.

Records are queued in lanes: one lane per partition (``ordering="partition"``) or per key
within a topic (``ordering="key"``; a record without a key goes to its partition's lane). A
lane runs one record at a time, in offset order, and up to ``concurrency`` lanes run at once.
A record waiting for its retry keeps its lane (so its partition or key waits) but gives its
slot back, so other lanes go on. Each partition's ``PartitionOffsets`` says what may be
committed: the lowest offset not finished. A partition whose unfinished records pass
``max_unprocessed`` is paused, and resumed once half of them are done.

Records come one partition's batch at a time (the client's ``on_batch``). While a batch's
lane is idle and a slot free, its records run inline in C (``inline.InlineRun``: a sync
handler, or a coroutine's first step) and the partition's offsets and counters move once per
batch; the first record that does not finish at once (it raised, or it waits) and the rest
of the batch take the per-record way: lanes, jobs, tasks. Past the loop turn's budget the
rest of a batch is held, unadmitted, for the next turn (``HeldBatch``), and so is it past
``max_unprocessed`` until half of the unfinished records are done.

The scheduler owns its counters (``stats.Counters``) and tells its membership when there is
something new to commit (``on_progress``) and when it stopped on its own (``on_down``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any

from kafkaev.backoff import BackoffPolicy
from kafkaev.errors import STATE, KafkaError
from kafkaev.types import TopicPartition

from .calls import go_on, resume, start_call
from .dead_letter import DeadLetterSend, dead_letter_headers
from .inline import STOPPED_BUDGET, STOPPED_RAISED, STOPPED_WAITING, InlineRun
from .offsets import PartitionOffsets
from .options import ConsumerOptions
from .stats import Counters

if TYPE_CHECKING:
    from kafkaev.client import Client
    from kafkaev.protocol.codec import Message

log = logging.getLogger("kafkaev.handlers")

# Handler calls run inline (sync ones, and async ones until they first wait) for at most this
# long per loop turn; the rest of a batch is held, not admitted, for the next turn. Commits go
# out only between turns (a connection flushes its requests when the turn ends), so a SIGKILL
# re-handles about one turn's records plus what ran during the commit's round trip: the
# budget trades crash duplicates for throughput. Measured (DESIGN.md, "Handlers run inline"):
# 20 ms re-handled 4-6K records a crash where 0.5 s re-handled all of a killed run's (~24K),
# and kept the no-op handler at 2.8-4.3x confluent-kafka's msg/s (0.5 s: 4.1x; 10 ms: 2.8-3x).
INLINE_TURN_BUDGET_S = 0.02
# A partition holding this many delivered batches not yet admitted (reading outruns handling)
# is paused, and resumed once it holds at most HELD_BATCHES_RESUME: its next Fetch is then
# answered while the batch left is handled, and at most this many batches (each up to
# max_partition_fetch_bytes) wait decoded in memory.
HELD_BATCHES_PAUSE = 3
HELD_BATCHES_RESUME = 1


class Lane:
    """Records that must run one after another: a partition's, or a key's."""

    __slots__ = ("key", "queue", "busy", "ready")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self.queue: deque[Job] = deque()  # admitted, not started
        self.busy = False  # one of its records started and is not finished
        self.ready = False  # in the scheduler's ready queue


class PartitionWork:
    """An assigned partition as its consumer sees it: its offsets, the records of it holding
    a slot now, and why it is paused (each reason set and cleared by the scheduler)."""

    __slots__ = ("offsets", "active", "paused", "backlogged", "yielded", "crowded", "released", "held")

    def __init__(self, tp: TopicPartition) -> None:
        self.offsets = PartitionOffsets(tp)
        self.active = 0  # records of it running a handler or sending a dead letter
        self.paused = False  # as the client was last told
        self.backlogged = False  # past max_unprocessed unfinished records, until half are done
        self.yielded = False  # delivered past the loop turn's budget: the rest is taken next turn
        self.crowded = False  # HELD_BATCHES_PAUSE batches held, until at most HELD_BATCHES_RESUME are
        self.released = False  # revoked, lost or stopped: late outcomes change nothing
        # Delivered records not admitted yet, in offset order: put off to the next turn
        # (yielded) or until half of the unfinished ones are done (backlogged).
        self.held: deque[HeldBatch] = deque()


class HeldBatch:
    """The rest of a delivered batch, from ``start``: nothing of it is admitted, so nothing is
    committed past its first record while it waits."""

    __slots__ = ("messages", "start")

    def __init__(self, messages: list[Message], start: int) -> None:
        self.messages = messages
        self.start = start


class Job:
    """One record between its admission and its end (handled, dead-lettered, skipped)."""

    __slots__ = ("msg", "work", "lane", "attempts", "timer", "send")

    def __init__(self, msg: Message, work: PartitionWork, lane: Lane) -> None:
        self.msg = msg
        self.work = work
        self.lane = lane
        self.attempts = 0  # handler calls made
        self.timer: asyncio.TimerHandle | None = None  # the wait before its next retry
        self.send: DeadLetterSend | None = None

    def stop_waiting(self) -> bool:
        """Cancel its retry wait or its dead letter; True when a dead letter (holding a slot) was."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        sending, self.send = self.send, None
        if sending is None:
            return False
        sending.cancel()
        return True


class Scheduler:
    def __init__(self, options: ConsumerOptions, loop: asyncio.AbstractEventLoop, *,
                 dead_letter_backoff: BackoffPolicy,
                 pause: Callable[[list[TopicPartition]], object], resume: Callable[[list[TopicPartition]], object],
                 on_progress: Callable[[], object], on_down: Callable[[Scheduler, KafkaError], object]) -> None:
        self.options = options
        self.name = options.name
        self.loop = loop
        self.counters = Counters()
        # Who sends this consumer's dead letters: set by the runner once the clients exist.
        self.dead_letter_client: Client | None = None
        self._dead_letter_backoff = dead_letter_backoff
        self._pause = pause
        self._resume = resume
        self._on_progress = on_progress
        self._on_down = on_down
        self._works: dict[TopicPartition, PartitionWork] = {}
        self._lanes: dict[Hashable, Lane] = {}
        self._ready: deque[Lane] = deque()  # lanes with a record to start, oldest first
        self._retry_due: deque[Job] = deque()  # retries whose wait is over, before any new record
        self._waiting: set[Job] = set()  # waiting for a retry, or with a dead letter under way
        self._active = 0  # slots taken: handler calls and dead letters in flight
        self._accepting = False
        self._pumping = False
        self._turn_deadline = 0.0  # while handlers ran inline this loop turn: when the turn's budget ends
        self._yielded: list[PartitionWork] = []  # their held records are taken next turn
        self._inline = InlineRun()
        self._drained: list[tuple[set[PartitionWork], asyncio.Future[None]]] = []
        self._by_key = options.ordering == "key"
        self._handler = options.handler
        self._concurrency = options.concurrency
        self._resume_below = options.max_unprocessed // 2

    # --- the membership's calls ---------------------------------------------------------------
    def start(self) -> None:
        self._accepting = True
        self.counters.running = True

    def assigned(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._works[tp] = PartitionWork(tp)

    def partitions(self) -> list[PartitionWork]:
        return list(self._works.values())

    def work(self, tp: TopicPartition) -> PartitionWork | None:
        return self._works.get(tp)

    def offer_batch(self, messages: list[Message]) -> None:
        """One partition's records delivered by the client (``on_batch``), in offset order."""
        if not messages:
            return
        first = messages[0]
        work = self._works.get((first.topic, first.partition))  # type: ignore[call-overload]  # a tuple equals its TopicPartition
        if work is None or not self._accepting:
            return  # not ours any more (revoked, stopping): not admitted, so never committed past
        if work.held:
            work.held.append(HeldBatch(messages, 0))  # behind its records put off
            if len(work.held) >= HELD_BATCHES_PAUSE and not work.crowded:
                work.crowded = True
                self._update_pause(work)
            return
        stop = self._take(work, messages, 0)
        if stop < len(messages):
            work.held.append(HeldBatch(messages, stop))

    def _take_held(self, work: PartitionWork) -> None:
        """Take the records ``work`` put off, oldest first, until they are all admitted or it
        has to put some off again; then tell the client whether it stays paused."""
        held = work.held
        while held and not work.backlogged and self._works.get(work.offsets.tp) is work:
            batch = held[0]
            batch.start = self._take(work, batch.messages, batch.start)
            if batch.start < len(batch.messages):
                break
            held.popleft()
        if len(held) <= HELD_BATCHES_RESUME:
            work.crowded = False
        self._update_pause(work)

    def _take(self, work: PartitionWork, messages: list[Message], start: int) -> int:
        """Run ``messages[start:]`` inline while they may and do finish at once, the others one
        record at a time; returns where it stopped: ``len(messages)``, or the first record put
        off because the turn's budget is spent or the partition is backlogged (it is paused)."""
        count = len(messages)
        inline = self._inline
        while start < count:
            if not self._may_run_inline(work):
                for i in range(start, count):
                    self._offer_one(messages[i], work)
                    if work.yielded or work.backlogged or not self._accepting:
                        return i + 1  # paused after it: the rest waits, not admitted
                return count
            if not self._turn_deadline:
                self._start_turn_budget()
            elif time.monotonic() > self._turn_deadline:
                self._yield(work)
                return start
            counters = self.counters
            counters.in_flight += 1  # the one record running inline at any moment of the run
            try:
                stop = inline.run(self._handler, messages, start, self._turn_deadline)
            finally:
                counters.in_flight -= 1
            if stop > start:
                counters.handled += stop - start
                work.offsets.admit_finished_batch(messages, start, stop)
                self._on_progress()
            if stop == count:
                return count
            stopped = inline.stopped
            if stopped == STOPPED_BUDGET:
                self._yield(work)
                return stop
            error, pending, waiting_on = inline.error, inline.pending, inline.waiting_on
            inline.clear()
            msg = messages[stop]
            key = self._key_of(msg, work)
            self._take_slot(work)
            if stopped == STOPPED_RAISED and error is not None:
                self._failed_at_once(msg, work, key, error)
            elif stopped == STOPPED_WAITING:
                self._went_on(msg, work, key, resume(pending, waiting_on, self.loop))
            else:  # it returned a value: an awaitable, or nothing that matters
                try:
                    went_on = go_on(pending, self.loop)
                except Exception as exc:  # noqa: BLE001 - a failing awaitable is a failed attempt
                    self._failed_at_once(msg, work, key, exc)
                else:
                    self._went_on(msg, work, key, went_on)
            start = stop + 1
        return count

    def _may_run_inline(self, work: PartitionWork) -> bool:
        """Whether the next records of ``work`` may run at once, with no lane: nothing of their
        lane (by key: of any lane) waits, no retry is due and a slot is free."""
        if not self._accepting or self._active >= self._concurrency or self._ready or self._retry_due:
            return False
        return not self._lanes if self._by_key else work.offsets.tp not in self._lanes

    def _yield(self, work: PartitionWork) -> None:
        """The turn's budget is spent: what ``work`` has not admitted is taken next turn. It is
        not paused (a pause would throw away the Fetch under way for it): only batches piling
        up behind held records pause it (``crowded``)."""
        if not work.yielded:
            work.yielded = True
            self._yielded.append(work)

    def _key_of(self, msg: Message, work: PartitionWork) -> Hashable:
        return (msg.topic, msg.key) if self._by_key and msg.key is not None else work.offsets.tp

    def _offer_one(self, msg: Message, work: PartitionWork) -> None:
        """One record taken the per-record way: run now if nothing of its lane waits and a slot
        is free, else queue it in its lane."""
        if not self._accepting or self._works.get(work.offsets.tp) is not work:
            return  # stopped or given up meanwhile: not admitted, so never committed past
        key = self._key_of(msg, work)
        lane = self._lanes.get(key)
        deadline = self._turn_deadline
        over_budget = bool(deadline) and time.monotonic() > deadline
        if lane is None and not over_budget and self._active < self._concurrency and not self._ready \
                and not self._retry_due:
            self._run_at_once(msg, work, key)
            return
        offsets = work.offsets
        offsets.admit(msg.offset)
        if lane is None:
            lane = self._lanes[key] = Lane(key)
        lane.queue.append(Job(msg, work, lane))
        if not lane.busy and not lane.ready:
            lane.ready = True
            self._ready.append(lane)
        if over_budget:
            self._yield(work)
        if offsets.unfinished > self.options.max_unprocessed and not work.backlogged:
            work.backlogged = True
            self._update_pause(work)
        self._pump()

    def _run_at_once(self, msg: Message, work: PartitionWork, key: Hashable) -> None:
        self._take_slot(work)
        try:
            result = self._handler(msg)
            pending = None if result is None else go_on(result, self.loop)
        except Exception as exc:  # noqa: BLE001 - a raising handler is a failed attempt
            self._failed_at_once(msg, work, key, exc)
            return
        self._went_on(msg, work, key, pending)

    def _failed_at_once(self, msg: Message, work: PartitionWork, key: Hashable, exc: BaseException) -> None:
        """A record run at once (its slot taken) raised: it takes its lane to be retried."""
        self.counters.in_flight -= 1
        self._failed(self._job_of(msg, work, key), exc)

    def _went_on(self, msg: Message, work: PartitionWork, key: Hashable,
                 pending: asyncio.Future[Any] | None) -> None:
        """A record run at once (its slot taken) returned: it finished, or its task runs on."""
        if pending is not None:
            job = self._job_of(msg, work, key)
            pending.add_done_callback(lambda done: self._task_done(job, done))
            return
        counters = self.counters
        counters.in_flight -= 1
        self._active -= 1
        work.active -= 1
        if not self._turn_deadline:
            self._start_turn_budget()
        counters.handled += 1
        work.offsets.admit_finished(msg.offset)
        self._on_progress()

    def _job_of(self, msg: Message, work: PartitionWork, key: Hashable) -> Job:
        """A record started at once that needs its lane after all (it failed, or it waits)."""
        work.offsets.admit(msg.offset)
        lane = self._lanes[key] = Lane(key)
        lane.busy = True
        job = Job(msg, work, lane)
        job.attempts = 1
        return job

    def _update_pause(self, work: PartitionWork) -> None:
        """Tell the client when a partition's reasons to be paused come or go."""
        hold = work.backlogged or work.crowded or not self._accepting
        if hold and not work.paused:
            work.paused = True
            self._pause([work.offsets.tp])
        elif not hold and work.paused and self._works.get(work.offsets.tp) is work:
            work.paused = False
            self._resume([work.offsets.tp])

    def release(self, partitions: Iterable[TopicPartition], *, wait_s: float) -> asyncio.Future[None]:
        """Give partitions up (revoked): drop their queued records and retries now; the Future
        is done once the records of them holding a slot finished, or after ``wait_s``. Their
        offsets stay readable (``PartitionWork.offsets``) for the last commit."""
        works = {w for tp in partitions if (w := self._works.pop(tp, None)) is not None}
        self._drop(works)
        return self._drain(works, wait_s)

    def lose(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions already someone else's: drop everything of them, commit nothing."""
        works = {w for tp in partitions if (w := self._works.pop(tp, None)) is not None}
        self._drop(works)
        for work in works:
            work.released = True

    def stop(self, wait_s: float) -> asyncio.Future[None]:
        """Stop taking records and retrying; done once the handlers running now finished, or
        after ``wait_s``. The partitions stay assigned for the last commit."""
        self._accepting = False
        self.counters.running = False
        works = set(self._works.values())
        self._drop(works)
        return self._drain(works, wait_s, release=False)

    # --- running records --------------------------------------------------------------------------
    def _pump(self) -> None:
        """Start records while slots are free: due retries first, then lanes in the order they
        became ready. A sync handler finishes inside ``_run``; the loop goes on from here rather
        than recursing, however long a lane's queue is."""
        if self._pumping:
            return
        self._pumping = True
        try:
            concurrency = self.options.concurrency
            while self._active < concurrency:
                if self._turn_deadline and time.monotonic() > self._turn_deadline:
                    break  # the turn's budget is spent: _next_turn goes on
                if self._retry_due:
                    job = self._retry_due.popleft()
                elif self._ready:
                    lane = self._ready.popleft()
                    lane.ready = False
                    if lane.busy or not lane.queue:
                        continue
                    job = lane.queue.popleft()
                    lane.busy = True
                else:
                    break
                self._run(job)
        finally:
            self._pumping = False

    def _run(self, job: Job) -> None:
        self._take_slot(job.work)
        job.attempts += 1
        try:
            pending = start_call(self.options.handler, job.msg, self.loop)
        except Exception as exc:  # noqa: BLE001 - a raising handler is a failed attempt
            self.counters.in_flight -= 1
            self._failed(job, exc)
            return
        if pending is not None:
            pending.add_done_callback(lambda done: self._task_done(job, done))
            return
        self.counters.in_flight -= 1
        if not self._turn_deadline:
            self._start_turn_budget()
        self._handled(job)

    def _take_slot(self, work: PartitionWork) -> None:
        self._active += 1
        work.active += 1
        self.counters.in_flight += 1

    def _start_turn_budget(self) -> None:
        """The first handler call run inline this loop turn starts its budget."""
        self._turn_deadline = time.monotonic() + INLINE_TURN_BUDGET_S
        self.loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self._turn_deadline = 0.0
        yielded, self._yielded = self._yielded, []
        for work in yielded:
            work.yielded = False
        for work in yielded:
            self._take_held(work)  # a backlogged one's wait for half of its unfinished records to be done
        self._pump()

    def _task_done(self, job: Job, task: asyncio.Future[Any]) -> None:
        self.counters.in_flight -= 1
        if task.cancelled():
            self._failed(job, asyncio.CancelledError(f"the handler's task for {self._where(job)} was cancelled"))
            return
        exc = task.exception()
        if exc is None:
            self._handled(job)
        else:
            self._failed(job, exc)

    def _handled(self, job: Job) -> None:
        self.counters.handled += 1
        self._finish(job)

    def _failed(self, job: Job, exc: BaseException) -> None:
        work = job.work
        retries = self.options.max_retries
        given_up = self._works.get(work.offsets.tp) is not work
        if given_up or not self._accepting:
            # Given up or stopping: the record stays unfinished, so no commit passes it.
            log.warning("consumer %r: handler failed on %s (attempt %d): %s; not retried: %s", self.name,
                        self._where(job), job.attempts, exc, "partition given up" if given_up else "stopping")
            self._give_slot_back(job)
            self._free_lane(job.lane)
            self._wake_drained()
            self._pump()
            return
        if job.attempts <= retries:
            self.counters.retried += 1
            delay_ms = self.options.retry.delay_ms(job.attempts)
            log.warning("consumer %r: handler failed on %s (attempt %d of %d): %s; retrying in %.0f ms", self.name,
                        self._where(job), job.attempts, retries + 1, exc, delay_ms)
            self._give_slot_back(job)
            self._waiting.add(job)
            job.timer = self.loop.call_later(delay_ms / 1000.0, self._retry, job)
            self._wake_drained()
            self._pump()
            return
        self.counters.failed += 1
        topic = self.options.dead_letter_topic
        if topic is None or self.dead_letter_client is None:
            self.counters.skipped += 1
            log.error("consumer %r: handler failed on %s (attempt %d, no retries left): %s; skipped", self.name,
                      self._where(job), job.attempts, exc)
            self._finish(job)
            return
        log.error("consumer %r: handler failed on %s (attempt %d, no retries left): %s; sending it to %r",
                  self.name, self._where(job), job.attempts, exc, topic)
        self._waiting.add(job)
        job.send = DeadLetterSend(
            self.dead_letter_client, topic, job.msg, dead_letter_headers(self.name, job.msg, job.attempts, exc),
            self._dead_letter_backoff, lambda err: self._dead_lettered(job, err),
            lambda err, delay: log.warning("consumer %r: dead letter of %s to %r failed: %s; again in %.0f ms",
                                           self.name, self._where(job), topic, err, delay * 1000.0))
        job.send.send()  # keeps the slot until acknowledged: the lane and the slot wait for it

    def _retry(self, job: Job) -> None:
        job.timer = None
        self._waiting.discard(job)
        if self._works.get(job.work.offsets.tp) is not job.work or not self._accepting:
            self._free_lane(job.lane)
            return
        self._retry_due.append(job)
        self._pump()

    def _dead_lettered(self, job: Job, err: BaseException | None) -> None:
        self._waiting.discard(job)
        job.send = None
        if err is None:
            self.counters.dead_lettered += 1
            self._finish(job)
            return
        # Rejected for good: stop this consumer, commit nothing past the record.
        self._give_slot_back(job)
        reason = (f"dead-letter topic {self.options.dead_letter_topic!r} rejected the record from "
                  f"{self._where(job)}: {err}")
        self._go_down(reason, err)

    def _go_down(self, reason: str, err: BaseException) -> None:
        log.error("consumer %r stopped: %s; nothing is committed past that record", self.name, reason)
        counters = self.counters
        counters.running = False
        counters.down_reason = reason
        self._accepting = False
        works = list(self._works.values())
        self._drop(set(works))
        for work in works:
            self._update_pause(work)  # not accepting: every partition stays paused
        code = err.code if isinstance(err, KafkaError) else STATE
        failure = KafkaError(code, f"kafkaev.Runner: consumer {self.name!r} stopped: {reason}")
        self._on_down(self, failure)
        self._on_progress()  # what finished before it is still committed

    def _finish(self, job: Job) -> None:
        work = job.work
        self._give_slot_back(job)
        if not work.released:
            offsets = work.offsets
            offsets.finish(job.msg.offset)
            if work.backlogged and offsets.unfinished <= self._resume_below:
                work.backlogged = False
                if work.held:
                    self.loop.call_soon(self._take_held, work)  # from a turn of its own, not from inside _pump
                else:
                    self._update_pause(work)
            self._on_progress()
        self._free_lane(job.lane)
        self._wake_drained()
        self._pump()

    def _free_lane(self, lane: Lane) -> None:
        lane.busy = False
        if lane.queue:
            if not lane.ready:
                lane.ready = True
                self._ready.append(lane)
        elif not lane.ready and self._lanes.get(lane.key) is lane:
            del self._lanes[lane.key]  # keys come and go: keep only lanes with work

    def _give_slot_back(self, job: Job) -> None:
        self._active -= 1
        job.work.active -= 1

    # --- giving partitions up ---------------------------------------------------------------------
    def _drop(self, works: set[PartitionWork]) -> None:
        """Forget the queued records and pending retries of ``works`` (never started again)."""
        if not works:
            return
        self._inline.halted = True  # a batch running inline now stops after its current record
        for work in works:
            work.held.clear()
        for lane in list(self._lanes.values()):
            if lane.queue and lane.queue[0].work in works or any(j.work in works for j in lane.queue):
                lane.queue = deque(j for j in lane.queue if j.work not in works)
        self._retry_due = deque(j for j in self._retry_due if j.work not in works)
        for job in [j for j in self._waiting if j.work in works]:
            self._waiting.discard(job)
            if job.stop_waiting():
                self._give_slot_back(job)  # the dead letter held a slot
            job.lane.busy = False  # its record is never started again
        for lane in list(self._lanes.values()):
            if not lane.busy and not lane.queue and not lane.ready:
                del self._lanes[lane.key]
            elif lane.queue and not lane.busy and not lane.ready:
                lane.ready = True
                self._ready.append(lane)

    def _drain(self, works: set[PartitionWork], wait_s: float, *, release: bool = True) -> asyncio.Future[None]:
        future: asyncio.Future[None] = self.loop.create_future()
        pending = {w for w in works if w.active > 0}

        def over() -> None:
            if not future.done():
                future.set_result(None)
            if release:
                for work in works:
                    work.released = True

        if not pending:
            over()
            return future
        timer = self.loop.call_later(wait_s, over)
        future.add_done_callback(lambda _f: timer.cancel())
        self._drained.append((pending, future))
        future.add_done_callback(lambda _f: over())
        return future

    def _wake_drained(self) -> None:
        if not self._drained:
            return
        still = []
        for pending, future in self._drained:
            if future.done():
                continue
            if any(w.active > 0 for w in pending):
                still.append((pending, future))
            else:
                future.set_result(None)
        self._drained = still

    @staticmethod
    def _where(job: Job) -> str:
        msg = job.msg
        return f"{msg.topic}[{msg.partition}]@{msg.offset}"
