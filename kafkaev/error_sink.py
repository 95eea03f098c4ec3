"""The one way kafkaev reports an error that has no callback of its own.

Two kinds of error land here: the client's own conditions that it retries or has already
reported (a ``KafkaError``, such as a broker refusing connections), and exceptions raised by
user callbacks. Both go to the ``on_error`` handler when there is one. Without one, a
``KafkaError`` is logged (as librdkafka does without an error callback) and any other exception
goes to the loop's exception handler: an exception raised by user code never vanishes, and
neither does one raised by ``on_error`` itself.

The log is rate-limited, the handler is not: a client with no broker fails a connect about once
a second, and each failure is the same line. The first of a kind is logged, then at most one
per ``LOG_REPEAT_INTERVAL_S``, saying how many were left out meanwhile. A kind is one source
(``kafkaev.Connection host:port`` names its address) and one error text.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from kafkaev.errors import KafkaError

logger = logging.getLogger("kafkaev")

ErrorHandler = Callable[[BaseException], object]

# The same error from the same source is logged at most once per this many seconds.
LOG_REPEAT_INTERVAL_S = 10.0
# Kinds remembered at most: an error text with a changing part (an offset) must not grow the
# table without bound; past this, kinds not logged for an interval are forgotten.
LOG_LIMITER_MAX_KINDS = 1024


class _Kind:
    __slots__ = ("written_at", "left_out")

    def __init__(self, written_at: float) -> None:
        self.written_at = written_at  # clock time of the last line written
        self.left_out = 0  # lines of this kind not written since


class LogRateLimiter:
    """Decides which repeats of a log line are written: ``admit(kind)`` is None for a line to
    leave out, else how many of that kind were left out since the last one written."""

    __slots__ = ("interval_s", "clock", "max_kinds", "_kinds")

    def __init__(self, interval_s: float = LOG_REPEAT_INTERVAL_S, clock: Callable[[], float] = time.monotonic,
                 max_kinds: int = LOG_LIMITER_MAX_KINDS) -> None:
        self.interval_s = interval_s
        self.clock = clock  # injectable: tests move time without sleeping
        self.max_kinds = max_kinds
        self._kinds: dict[tuple[str, str], _Kind] = {}

    def admit(self, kind: tuple[str, str]) -> int | None:
        now = self.clock()
        entry = self._kinds.get(kind)
        if entry is None:
            if len(self._kinds) >= self.max_kinds:
                self._forget_quiet(now)
            self._kinds[kind] = _Kind(now)
            return 0
        if now - entry.written_at < self.interval_s:
            entry.left_out += 1
            return None
        left_out, entry.written_at, entry.left_out = entry.left_out, now, 0
        return left_out

    def _forget_quiet(self, now: float) -> None:
        quiet = [kind for kind, entry in self._kinds.items() if now - entry.written_at >= self.interval_s]
        for kind in quiet:
            del self._kinds[kind]
        if len(self._kinds) >= self.max_kinds:
            self._kinds.clear()  # a flood of distinct lines: start over rather than grow


# The limiter of the default log (module state: one process logs to one place).
log_limiter = LogRateLimiter()


def report_error(loop: asyncio.AbstractEventLoop, handler: ErrorHandler | None, source: str,
                 exc: BaseException) -> None:
    """Hand ``exc`` to ``handler``; without one, log a ``KafkaError`` and pass anything else to
    the loop's exception handler. ``source`` names the reporter in the log and the handler's
    context. Logged repeats are rate-limited (``log_limiter``); the handler gets every error.
    An interrupt is re-raised: it is the user's, not a callback's failure."""
    if isinstance(exc, (KeyboardInterrupt, SystemExit)):
        raise exc
    if handler is not None:
        try:
            handler(exc)
        except Exception as raised:  # noqa: BLE001 - on_error's own bug is reported, not lost
            loop.call_exception_handler({"message": f"{source}: on_error raised", "exception": raised})
        return
    if isinstance(exc, KafkaError):
        left_out = log_limiter.admit((source, str(exc)))
        if left_out is None:
            return
        if left_out:
            logger.warning("%s: %s (%d more like it since the last one were not logged)", source, exc, left_out)
        else:
            logger.warning("%s: %s", source, exc)
        return
    loop.call_exception_handler({"message": f"{source}: exception in a callback", "exception": exc})

