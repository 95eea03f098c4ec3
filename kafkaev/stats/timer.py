"""``stats_interval_ms``: ``stats_cb(ClientStats)`` every interval until the client closes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .collect import StatsCollector
from .snapshot import ClientStats

MS_PER_S = 1000.0


class StatsTimer:
    """Calls ``cb`` with a fresh snapshot every ``interval_ms``; an exception it raises goes
    to ``report`` and the timer goes on."""

    __slots__ = ("_loop", "_collector", "_cb", "_interval_s", "_report", "_handle")

    def __init__(self, loop: asyncio.AbstractEventLoop, collector: StatsCollector,
                 cb: Callable[[ClientStats], object], interval_ms: int,
                 report: Callable[[BaseException], None]) -> None:
        self._loop = loop
        self._collector = collector
        self._cb = cb
        self._interval_s = interval_ms / MS_PER_S
        self._report = report
        self._handle: asyncio.TimerHandle | None = loop.call_later(self._interval_s, self._fire)

    def _fire(self) -> None:
        self._handle = self._loop.call_later(self._interval_s, self._fire)
        try:
            self._cb(self._collector.snapshot())
        except Exception as exc:  # noqa: BLE001 - the user's callback: reported, the timer goes on
            self._report(exc)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
