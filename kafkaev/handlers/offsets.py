"""What a handler consumer may commit for one partition: the lowest offset not yet finished.

Records enter in offset order (``admit``) and finish in any order (``finish``: handled,
dead-lettered or skipped). The committable offset is the oldest unfinished record's, or one
past the last admitted once everything finished, so a commit never passes a record that is
still running, waiting for a retry or being dead-lettered, whatever ran in parallel after it.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from kafkaev.types import NO_OFFSET, TopicPartition

if TYPE_CHECKING:
    from kafkaev.protocol.codec import Message


class PartitionOffsets:
    """One assigned partition's admitted-but-unfinished offsets; owned by its consumer's scheduler."""

    __slots__ = ("tp", "_unfinished", "_finished_early", "_next", "committed", "high_watermark", "position")

    def __init__(self, tp: TopicPartition) -> None:
        self.tp = tp
        self._unfinished: deque[int] = deque()  # admitted, in offset order, oldest first
        self._finished_early: set[int] = set()  # finished while an older one had not
        self._next = NO_OFFSET  # one past the last admitted offset
        self.committed = NO_OFFSET  # the last offset a commit was accepted for
        # The partition's end and the client's fetch position, as last asked (for lag).
        self.high_watermark = NO_OFFSET
        self.position = NO_OFFSET

    def admit(self, offset: int) -> None:
        self._unfinished.append(offset)
        self._next = offset + 1

    def admit_finished(self, offset: int) -> None:
        """A record handled as soon as it came: ``admit`` and ``finish`` in one step."""
        if self._unfinished:
            self._unfinished.append(offset)
            self._finished_early.add(offset)
        self._next = offset + 1

    def admit_finished_batch(self, messages: list[Message], start: int, stop: int) -> None:
        """``messages[start:stop]``, in offset order, handled as soon as they came (the batch
        path): one step for all of them while nothing older is unfinished."""
        if not self._unfinished:
            self._next = messages[stop - 1].offset + 1
            return
        for i in range(start, stop):
            self.admit_finished(messages[i].offset)

    def finish(self, offset: int) -> None:
        unfinished = self._unfinished
        if unfinished and unfinished[0] == offset:
            unfinished.popleft()
            early = self._finished_early
            while unfinished and unfinished[0] in early:
                early.discard(unfinished.popleft())
        else:
            self._finished_early.add(offset)

    @property
    def unfinished(self) -> int:
        """Records admitted and not finished: queued, running, waiting for a retry or dead-lettering."""
        return len(self._unfinished) - len(self._finished_early)

    def committable(self) -> int:
        """The offset to commit: the oldest unfinished record, else one past the last admitted
        (NO_OFFSET before the first record)."""
        return self._unfinished[0] if self._unfinished else self._next

    def lag(self) -> int:
        """Records from the committable offset (before the first record: the fetch position) to
        the partition's end, 0 while either is unknown."""
        position = self.committable()
        if position < 0:
            position = self.position
        if position < 0 or self.high_watermark < 0:
            return 0
        return max(self.high_watermark - position, 0)
