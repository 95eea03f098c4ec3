# Typing stubs for kafkaev.consumer.delivery (the consumer's per-record work in Cython).
import asyncio
from collections.abc import Callable

from kafkaev.consumer.subscription import PartitionState
from kafkaev.protocol.codec import Message

def note_interruption() -> None:
    """A partition's delivery must stop after the current record (pause, seek, reset, revoke)."""

def note_stop(loop: asyncio.AbstractEventLoop) -> None:
    """``kafkaev.stop()`` was called for ``loop``: its deliveries stop after the current record."""

def clear_stop(loop: asyncio.AbstractEventLoop) -> None:
    """``loop`` is being turned again: deliveries on it go on."""

def stop_requested(loop: asyncio.AbstractEventLoop) -> bool:
    """True between ``note_stop(loop)`` and ``clear_stop(loop)``."""

class DeliveryCursor:
    """One consumer's delivery in progress: the partition, its records, the one being handed over."""

    loop: asyncio.AbstractEventLoop

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None: ...
    def begin(self, state: PartitionState, messages: list[Message], index: int) -> None: ...
    def end(self) -> None: ...
    def delivered(self, state: PartitionState) -> tuple[int, int] | None:
        """``(position, leader epoch)`` of ``state`` counting what the delivery in progress handed
        over, the running record included; None when none of its records is being delivered."""

def deliver_each(
    on_message: Callable[[Message], object],
    messages: list[Message],
    start: int,
    state: PartitionState,
    report: Callable[[BaseException], object],
    cursor: DeliveryCursor,
) -> int:
    """Call ``on_message(msg)`` for each record of ``messages[start:]`` in order; returns the
    index after the last record handed over: ``len(messages)``, or less when the callback
    interrupted ``state`` or stopped the loop before the last record."""
