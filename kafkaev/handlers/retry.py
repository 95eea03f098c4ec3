"""The handler retries' schedule: retry ``n`` (1-based) waits ``retry_backoff_ms * 2**(n-1)``,
capped at 30 s, without jitter: a handler's retries are one record's own, not many clients
coming back at one broker, and the sum of the waits (the retry budget) must be known up front
to be checked against the rebalance timeout. (Producing a dead letter retries on the client's
shared ``kafkaev.backoff`` policy instead.)
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_RETRY_DELAY_MS = 30000.0
# 2**n stops growing here: 2**20 times any base > 0 ms is past the cap already.
MAX_EXPONENT = 20


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    base_ms: float  # the first retry's wait

    def delay_ms(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1 for the first)."""
        return min(MAX_RETRY_DELAY_MS, self.base_ms * 2.0 ** min(retry - 1, MAX_EXPONENT))

    def budget_ms(self, retries: int) -> float:
        """The sum of the waits of ``retries`` retries (once a wait reaches the cap, every later
        one is the cap: counted by multiplication, so a huge ``max_retries`` costs nothing)."""
        total = 0.0
        for n in range(1, retries + 1):
            delay = self.delay_ms(n)
            if delay >= MAX_RETRY_DELAY_MS:
                return total + (retries - n + 1) * MAX_RETRY_DELAY_MS
            total += delay
        return total
