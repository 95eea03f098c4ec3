"""A handler consumer's counters and health, and the snapshots the runner hands out.

``Counters`` is owned by the consumer's scheduler, which counts each event once where it
happens; ``ConsumerStats`` and ``Health`` are immutable copies a caller may keep.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UP = "UP"
DOWN = "DOWN"


class Counters:
    """Live counts for one consumer."""

    __slots__ = ("handled", "retried", "failed", "dead_lettered", "skipped", "in_flight", "running", "down_reason")

    def __init__(self) -> None:
        self.handled = 0  # handler calls that succeeded (each record once)
        self.retried = 0  # retries scheduled after a failed call
        self.failed = 0  # records whose every attempt failed (then dead-lettered, skipped or stopped on)
        self.dead_lettered = 0  # failed records the dead-letter topic acknowledged
        self.skipped = 0  # failed records logged and passed over (no dead-letter topic)
        self.in_flight = 0  # handler calls running now
        self.running = False  # started and not stopped or down
        self.down_reason: str | None = None  # why the consumer stopped on its own


@dataclass(frozen=True, slots=True)
class ConsumerStats:
    """``Runner.stats(name)``: one consumer's counters at the moment of the call.

    ``lag`` is the records between each assigned partition's committable offset and its end
    (the end as asked of the leaders at most ``LAG_REFRESH_S`` ago)."""

    handled: int
    retried: int
    failed: int
    dead_lettered: int
    skipped: int
    in_flight: int
    running: bool
    lag: int


@dataclass(frozen=True, slots=True)
class Health:
    """``Runner.health()``: ``status`` is ``"UP"`` while every consumer is running, else
    ``"DOWN"``; ``reasons`` names each consumer that is down, with why."""

    status: str
    reasons: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.status == UP

    def __str__(self) -> str:
        if not self.reasons:
            return self.status
        return self.status + ": " + "; ".join(f"{name}: {why}" for name, why in sorted(self.reasons.items()))
