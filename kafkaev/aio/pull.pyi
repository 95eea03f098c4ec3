# Typing stubs for kafkaev.aio.pull (``async for`` over the record buffer, in C).
import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from kafkaev.consumer.buffer import RecordBuffer
from kafkaev.protocol.codec import Message

class Taken:
    """A record already taken: ``await`` gives it at once (once)."""

    def __await__(self) -> Generator[Any, None, Message]: ...

class MessageIterator:
    """``async for msg in client``: records in order per partition, until the client closes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, buffer: RecordBuffer,
                 next_record: Callable[[asyncio.AbstractEventLoop, RecordBuffer], Awaitable[Message]]) -> None: ...
    def __aiter__(self) -> MessageIterator: ...
    def __anext__(self) -> Awaitable[Message]: ...
