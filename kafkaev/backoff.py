"""The one backoff every retry in the client uses: exponential, capped, with full jitter.

``BackoffPolicy`` is the shape (from the options: ``reconnect_backoff_ms``/``_max_ms`` for
connects, ``retry_backoff_ms``/``_max_ms`` for requests); ``Backoff`` is one target's state
(a pooled connection, a group's joins, a partition's reset, a commit), counting the failures
since its last success. The n-th consecutive failure waits a delay drawn uniformly from
``[floor, min(max, base * 2**n)]`` (AWS's "full jitter"): clients that lost the same broker
at the same moment come back spread over the whole window instead of in lockstep, and the
window still doubles while the failures go on. ``RetryTimer`` brings back an owner of many
targets (a producer's partitions, a consumer's positions) at the earliest of their retry times.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

# Full jitter alone can draw a delay near 0: the retry then asks a broker that has just said
# no (or a port that has just refused) again at once, and a run of such draws is a busy loop.
# A fifth of the base keeps every retry a real pause; the first window still spreads 80% of it.
FLOOR_FRACTION = 0.2
# The floor for a 0 ms base (a valid option): call_later(0) would re-run a failure that
# happens at once (a refused local connect) on every loop turn.
MIN_DELAY_MS = 1.0
# 2**n stops growing here: far past any cap, and a long outage's count cannot overflow a float.
MAX_EXPONENT = 30


class RandomSource(Protocol):
    """Where the jitter comes from: the ``random`` module, or a test's scripted stand-in."""

    def uniform(self, a: float, b: float) -> float: ...


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    base_ms: float  # the window of the first retry
    max_ms: float  # the window stops doubling here

    def __post_init__(self) -> None:
        if not 0 <= self.base_ms <= self.max_ms:
            raise ValueError(f"backoff needs 0 <= base_ms <= max_ms, got {self.base_ms} and {self.max_ms}")

    @property
    def floor_ms(self) -> float:
        """No retry comes sooner than this after a failure."""
        return max(MIN_DELAY_MS, self.base_ms * FLOOR_FRACTION)

    def ceiling_ms(self, failures: int) -> float:
        """The top of the window after ``failures`` earlier consecutive failures (0 for the first)."""
        return min(self.max_ms, self.base_ms * 2.0 ** min(failures, MAX_EXPONENT))

    def delay_s(self, failures: int, rng: RandomSource = random) -> float:
        """The wait before the next try, ``failures`` consecutive failures before this one."""
        floor = self.floor_ms
        return rng.uniform(floor, max(floor, self.ceiling_ms(failures))) / 1000.0


class Backoff:
    """One target's backoff: each ``next_delay_s()`` is the wait after one more failure, and
    ``reset()`` (on success) makes the next failure wait a first-retry delay again."""

    __slots__ = ("policy", "_rng", "_failures")

    def __init__(self, policy: BackoffPolicy, rng: RandomSource = random) -> None:
        self.policy = policy
        self._rng = rng
        self._failures = 0

    @property
    def failures(self) -> int:
        """Consecutive failures since the last ``reset()``."""
        return self._failures

    def next_delay_s(self) -> float:
        """One more failure: how long to wait before trying again (seconds)."""
        delay = self.policy.delay_s(self._failures, self._rng)
        self._failures += 1
        return delay

    def reset(self) -> None:
        self._failures = 0


class RetryTimer:
    """One timer for many targets backing off: ``callback()`` runs at the earliest time asked
    for. A later ask is covered by that call, which must look at every target and ask again
    for those still waiting (a timer may also run a little early)."""

    __slots__ = ("_loop", "_callback", "_handle", "_at")

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
        self._loop = loop
        self._callback = callback
        self._handle: asyncio.TimerHandle | None = None
        self._at = 0.0  # loop time the armed timer fires at

    def arm_at(self, when: float) -> None:
        if self._handle is not None:
            if self._at <= when:
                return
            self._handle.cancel()
        self._at = when
        self._handle = self._loop.call_at(when, self._fire)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self._handle = None
        self._callback()
