# Typing stubs for kafkaev.handlers.inline (the runner's common path in Cython).
from collections.abc import Callable
from typing import Any

from kafkaev.protocol.codec import Message

STOPPED_NONE: int
STOPPED_RAISED: int
STOPPED_WAITING: int
STOPPED_RETURNED: int
STOPPED_BUDGET: int

class InlineRun:
    """Why the last ``run`` stopped: ``stopped`` (a ``STOPPED_*``), and the stopping record's
    ``error``, ``pending`` (its coroutine, or what it returned) and ``waiting_on``."""

    stopped: int
    halted: bool
    error: Exception | None
    pending: Any
    waiting_on: Any

    def __init__(self) -> None: ...
    def clear(self) -> None: ...
    def run(self, handler: Callable[[Message], Any], messages: list[Message], start: int, deadline: float) -> int:
        """Call ``handler`` on ``messages[start:]`` while each finishes at once and ``deadline``
        (``time.monotonic()``) has not passed; the index of the first record that did not."""
