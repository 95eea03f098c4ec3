"""``kafkaev.Runner``: consume topics and run a function on each record, at least once, in order,
with retries, a dead-letter topic and parallelism by partition or by key.

The runner holds the consumers' options until ``start()``, then makes one ``kafkaev.Client``
per ``group_id`` (a client is one group member; every consumer of that group reads through it
and it produces their dead letters), on the running loop or kafkaev's default one. Dead letters
need acks=-1: with the client options' ``acks`` at -1 (the default) the group's client sends
them; otherwise one more client, with the same options and acks=-1, sends them for all.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafkaev.config import ClientConfig
from kafkaev.error_sink import report_error
from kafkaev.errors import STATE, KafkaError
from kafkaev.runner import default_loop
from kafkaev.types import ACKS_ALL

from .membership import Membership, when_all
from .options import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MAX_UNPROCESSED,
    DEFAULT_RETRY_BACKOFF_MS,
    ConsumerOptions,
    Ordering,
    RunnerConfigError,
    check_together,
)
from .scheduler import Scheduler
from .stats import DOWN, UP, ConsumerStats, Health

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from kafkaev.client import Client
    from kafkaev.types import Brokers, ClientOptions, DoneCallback

log = logging.getLogger("kafkaev.handlers")

DEFAULT_SHUTDOWN_TIMEOUT_MS = 30000
# Client options the runner sets itself.
RUNNER_OWNED_OPTIONS = ("on_message", "on_batch", "auto_commit")


class RunnerState(enum.Enum):
    NEW = "new"  # taking consumers
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


class Runner:
    """``Runner(brokers, shutdown_timeout_ms=30000, **client_options)``: the client options
    are ``kafkaev.Client``'s (checked now), but ``on_message``, ``on_batch`` and ``auto_commit``,
    which the runner sets; ``group_id`` is the default of every consumer's."""

    def __init__(self, brokers: Brokers | None = None, *, shutdown_timeout_ms: int = DEFAULT_SHUTDOWN_TIMEOUT_MS,
                 **client_options: Unpack[ClientOptions]) -> None:
        for name in RUNNER_OWNED_OPTIONS:
            if name in client_options:
                raise RunnerConfigError(f"kafkaev.Runner: '{name}' is set by the runner (it delivers to the "
                                        "handlers and commits what they finished); leave it out")
        if isinstance(shutdown_timeout_ms, bool) or not isinstance(shutdown_timeout_ms, int) \
                or shutdown_timeout_ms < 0:
            raise RunnerConfigError(f"kafkaev.Runner: 'shutdown_timeout_ms' must be an int >= 0, "
                                    f"got {shutdown_timeout_ms!r}")
        self.config = ClientConfig.from_kwargs(brokers=brokers, **client_options)  # names a bad option now
        self._brokers = brokers
        self._client_options: dict[str, Any] = dict(client_options)
        self.shutdown_timeout_ms = shutdown_timeout_ms
        self._consumers: list[ConsumerOptions] = []
        self._schedulers: dict[str, Scheduler] = {}
        self._memberships: list[Membership] = []
        self._dead_letter_client: Client | None = None
        self._state = RunnerState.NEW
        self._stopped: asyncio.Future[None] | None = None
        self._stop_callbacks: list[DoneCallback] = []

    # --- configuration -------------------------------------------------------------------------
    def consumer(self, name: str, topics: Sequence[str], handler: Callable[[Any], Any], *,
                 group_id: str | None = None, max_retries: int = DEFAULT_MAX_RETRIES,
                 retry_backoff_ms: float = DEFAULT_RETRY_BACKOFF_MS, dead_letter_topic: str | None = None,
                 ordering: Ordering = "partition", concurrency: int = DEFAULT_CONCURRENCY,
                 max_unprocessed: int = DEFAULT_MAX_UNPROCESSED) -> None:
        """Add a consumer: ``handler(msg)`` (or ``async def``) runs on every record of ``topics``;
        raising is a failure, retried ``max_retries`` times (retry n waits
        ``retry_backoff_ms * 2**(n-1)``, at most 30 s), then sent to ``dead_letter_topic``
        (None: logged and skipped). ``ordering``: "partition" or "key"; ``concurrency``: records
        in flight at once; ``max_unprocessed``: a partition's unfinished records before it is
        paused. Raises RunnerConfigError naming the consumer and the option."""
        if self._state is not RunnerState.NEW:
            raise KafkaError(STATE, f"kafkaev.Runner.consumer({name!r}): the runner has already started")
        options = ConsumerOptions.build(
            name, topics, handler, group_id=group_id if group_id is not None else self.config.group_id,
            max_retries=max_retries, retry_backoff_ms=retry_backoff_ms, dead_letter_topic=dead_letter_topic,
            ordering=ordering, concurrency=concurrency, max_unprocessed=max_unprocessed)
        check_together([*self._consumers, options], self.config.rebalance_timeout_ms)
        self._consumers.append(options)

    # --- lifetime --------------------------------------------------------------------------------
    def start(self, cb: DoneCallback | None = None) -> None:
        """Check every consumer again, make the clients and join the groups; ``cb(None)`` once
        each client reached the cluster, or ``cb(err)`` with the first failure (the clients keep
        trying). Call it where the clients should live: before ``kafkaev.run()``, from a callback,
        or inside a coroutine (then they run on that loop)."""
        if cb is not None and not callable(cb):
            raise TypeError(f"kafkaev.Runner.start: 'cb' must be callable or None, got {type(cb).__name__}")
        if self._state is not RunnerState.NEW:
            raise KafkaError(STATE, f"kafkaev.Runner.start: the runner is {self._state.value}")
        if not self._consumers:
            raise RunnerConfigError("kafkaev.Runner.start: no consumer; add one with consumer(name, topics, handler)")
        check_together(self._consumers, self.config.rebalance_timeout_ms)
        from kafkaev.client import Client  # the compiled layers, imported when first needed

        self._state = RunnerState.RUNNING
        groups: dict[str, list[ConsumerOptions]] = {}
        for options in self._consumers:
            groups.setdefault(options.group_id, []).append(options)
        clients: list[Client] = []
        loop = self.config.loop if self.config.loop is not None else default_loop()  # as Client() picks it
        for group_id, consumers in groups.items():
            membership = Membership(group_id, rebalance_timeout_ms=self.config.rebalance_timeout_ms)
            for options in consumers:
                scheduler = Scheduler(
                    options, loop, dead_letter_backoff=self.config.retry_backoff, pause=membership.pause,
                    resume=membership.resume, on_progress=membership.progress, on_down=self._consumer_down)
                membership.add(scheduler)
                self._schedulers[options.name] = scheduler
            # One consumer in the group: records go straight to its scheduler, one call less each.
            route = membership.schedulers[0].offer_batch if len(membership.schedulers) == 1 else membership.on_batch
            client = Client(self._brokers, **{**self._client_options, "on_batch": route})
            membership.attach(client)
            clients.append(client)
            for scheduler in membership.schedulers:
                if scheduler.options.dead_letter_topic is not None:
                    scheduler.dead_letter_client = self._dead_letter_client_for(client)
            self._memberships.append(membership)
        self._stopped = loop.create_future()
        for membership in self._memberships:
            membership.start()
            log.info("kafkaev.Runner: group %r: consumers %s on %s", membership.group_id,
                     [s.name for s in membership.schedulers], sorted({t for s in membership.schedulers
                                                                     for t in s.options.topics}))
        self._connect(clients, cb)

    def _dead_letter_client_for(self, client: Client) -> Client:
        if client.config.acks == ACKS_ALL:
            return client
        if self._dead_letter_client is None:
            from kafkaev.client import Client

            self._dead_letter_client = Client(self._brokers, **{**self._client_options, "acks": ACKS_ALL})
        return self._dead_letter_client

    def _connect(self, clients: list[Client], cb: DoneCallback | None) -> None:
        left = len(clients)
        answered = False

        def connected(_md: object, err: KafkaError | None) -> None:
            nonlocal left, answered
            left -= 1
            if answered or (err is None and left):
                return
            answered = True
            if cb is not None:
                cb(err)
            elif err is not None:
                self._report(err)

        for client in clients:
            client.connect(connected)

    def stop(self, cb: DoneCallback | None = None) -> None:
        """Stop fetching, let the running handlers finish (at most ``shutdown_timeout_ms``),
        commit what finished, leave the groups and close the clients; ``cb(None)`` at the end,
        or ``cb(err)`` with the first failure. Records waiting for a retry or not started are
        not committed past: the next owner handles them."""
        if cb is not None and not callable(cb):
            raise TypeError(f"kafkaev.Runner.stop: 'cb' must be callable or None, got {type(cb).__name__}")
        if self._state is RunnerState.NEW:
            self._state = RunnerState.STOPPED
            if cb is not None:
                default_loop().call_soon(cb, None)
            return
        if cb is not None:
            self._stop_callbacks.append(cb)
        if self._state is RunnerState.STOPPED:
            self._call_stop_callbacks(None)
            return
        if self._state is RunnerState.STOPPING:
            return
        self._state = RunnerState.STOPPING
        errors: list[KafkaError] = []
        waits: list[asyncio.Future[None]] = []
        for membership in self._memberships:
            left: asyncio.Future[None] = membership.client.loop.create_future()
            waits.append(left)

            def one_left(err: KafkaError | None, left: asyncio.Future[None] = left) -> None:
                if err is not None:
                    errors.append(err)
                left.set_result(None)

            membership.leave(self.shutdown_timeout_ms / 1000.0, one_left)

        def all_left() -> None:
            if self._dead_letter_client is not None:
                self._dead_letter_client.close(lambda err: finished(err))
            else:
                finished(None)

        def finished(err: KafkaError | None) -> None:
            self._state = RunnerState.STOPPED
            first = errors[0] if errors else err
            if self._stopped is not None and not self._stopped.done():
                self._stopped.set_result(None)
            log.info("kafkaev.Runner: stopped%s", f" ({first})" if first is not None else "")
            self._call_stop_callbacks(first)

        when_all(waits, all_left)

    def _call_stop_callbacks(self, err: KafkaError | None) -> None:
        callbacks, self._stop_callbacks = self._stop_callbacks, []
        for callback in callbacks:
            try:
                callback(err)
            except Exception as exc:  # noqa: BLE001 - a user's callback bug is reported
                self._report(exc)

    async def run(self) -> None:
        """Start (unless started) and run until ``stop()`` is over, or until cancelled: then
        stop (as ``stop()`` does) before the cancellation goes on."""
        if self._state is RunnerState.NEW:
            self.start()
        stopped = self._stopped
        if stopped is None:
            return
        try:
            await asyncio.shield(stopped)
        except asyncio.CancelledError:
            self.stop()
            await stopped
            raise

    # --- counters and health ----------------------------------------------------------------------
    def stats(self, name: str) -> ConsumerStats:
        """The consumer's counters now: handled, retried, failed, dead_lettered, skipped,
        in_flight, running, lag."""
        scheduler = self._schedulers.get(name)
        if scheduler is None:
            known = [c.name for c in self._consumers]
            if name not in known:
                raise KeyError(f"kafkaev.Runner.stats: no consumer {name!r} (consumers: {known})")
            return ConsumerStats(0, 0, 0, 0, 0, 0, False, 0)  # not started yet
        c = scheduler.counters
        lag = sum(w.offsets.lag() for w in scheduler.partitions())
        return ConsumerStats(handled=c.handled, retried=c.retried, failed=c.failed, dead_lettered=c.dead_lettered,
                             skipped=c.skipped, in_flight=c.in_flight, running=c.running, lag=lag)

    def health(self) -> Health:
        """``Health("UP")`` while every consumer is running; else ``Health("DOWN", {name: why})``."""
        reasons: dict[str, str] = {}
        for options in self._consumers:
            scheduler = self._schedulers.get(options.name)
            if scheduler is None:
                reasons[options.name] = "not started"
            elif scheduler.counters.down_reason is not None:
                reasons[options.name] = scheduler.counters.down_reason
            elif not scheduler.counters.running:
                reasons[options.name] = "stopped"
        if not self._consumers:
            reasons["(runner)"] = "no consumer"
        return Health(DOWN if reasons else UP, reasons)

    # --- failures ------------------------------------------------------------------------------------
    def _consumer_down(self, scheduler: Scheduler, err: KafkaError) -> None:
        self._report(err)
        for membership in self._memberships:
            if scheduler in membership.schedulers and membership.all_down() and self._state is RunnerState.RUNNING:
                # Nothing of this group runs here any more: leave, so its partitions go to a member
                # that can handle them; what finished is committed first.
                membership.leave(self.shutdown_timeout_ms / 1000.0, self._report_if_failed)

    def _report_if_failed(self, err: KafkaError | None) -> None:
        if err is not None:
            self._report(err)

    def _report(self, exc: BaseException) -> None:
        loop = self._memberships[0].client.loop if self._memberships else default_loop()
        report_error(loop, self.config.on_error, "kafkaev.Runner", exc)
