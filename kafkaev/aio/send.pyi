# Typing stubs for kafkaev.aio.send (the asyncio client's produce methods, in C).
import asyncio
from collections.abc import Awaitable, Callable, Sized
from typing import Any

from kafkaev.types import Headers, RecordBytes, RecordMetadata

class ProducingClient:
    """The asyncio client's produce methods. ``_init_producing`` wires them to the producer;
    the subclass provides ``_produce_after_room`` (the coroutine that waits for room)."""

    def _init_producing(self, core_produce: Callable[..., None], new_future: Callable[[], asyncio.Future[Any]],
                        room_waiters: Sized) -> None: ...
    def _produce_after_room(self, topic: str, key: RecordBytes, value: RecordBytes,
                            fut: asyncio.Future[RecordMetadata], partition: int | None, headers: Headers | None,
                            timestamp_ms: int | None) -> Awaitable[RecordMetadata]: ...
    def produce(self, topic: str, key: RecordBytes, value: RecordBytes, *, partition: int | None = None,
                headers: Headers | None = None, timestamp_ms: int | None = None) -> Awaitable[RecordMetadata]:
        """Send one record; awaiting it waits for its acknowledgement (see ``kafkaev.aio.Client``)."""
    def produce_nowait(self, topic: str, key: RecordBytes, value: RecordBytes, *, partition: int | None = None,
                       headers: Headers | None = None, timestamp_ms: int | None = None,
                       ) -> asyncio.Future[RecordMetadata]:
        """Queue one record and return its Future at once (see ``kafkaev.aio.Client``)."""
