# Typing stubs for kafkaev.consumer.buffer (fetched records waiting to be pulled, in Cython).
from collections.abc import Callable
from typing import Any

from kafkaev.errors import KafkaError
from kafkaev.protocol.codec import Message
from kafkaev.types import TopicPartition

MESSAGE_OBJECT_ALLOWANCE: int

class BufferedRecords:
    """One partition's records from one Fetch answer, handed out from ``index`` on."""

    state: Any  # the PartitionState
    generation: int
    messages: list[Message]
    next_offset: int
    next_epoch: int
    error: KafkaError | None
    size: int
    index: int

    def __init__(self, state: Any, generation: int, messages: list[Message], next_offset: int, next_epoch: int,
                 error: KafkaError | None, size: int, index: int = 0) -> None: ...

class RecordBuffer:
    """The record sets fetched and not yet handed out, oldest first, and their size."""

    limit: int
    @property
    def size(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def full(self) -> bool: ...
    def __init__(self, subscription: Any, limit: int, on_settled: Callable[[BufferedRecords], None],
                 on_room: Callable[[], None]) -> None: ...
    def ready(self) -> bool: ...
    def put(self, records: BufferedRecords) -> None: ...
    def when_records(self, cb: Callable[[], object]) -> None: ...
    def forget_waiter(self, cb: Callable[[], object]) -> None: ...
    def take_one(self) -> Message | None: ...
    def take(self, max_records: int) -> dict[TopicPartition, list[Message]]: ...
    def drop(self, state: Any) -> None: ...
    def close(self) -> None: ...
