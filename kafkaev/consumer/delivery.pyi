# Typing stubs for kafkaev.consumer.delivery (the consumer's per-record work in Cython).
from collections.abc import Callable
from typing import Any

def note_interruption() -> None:
    """A partition's delivery must stop after the current record (pause, seek, reset, revoke)."""

def deliver_each(
    on_message: Callable[[Any], object],
    messages: list[Any],
    state: Any,
    report: Callable[[BaseException], object],
) -> Any:
    """Call ``on_message(msg)`` for each record in order; returns the last record handed over
    when the callback interrupted ``state``, else None."""
