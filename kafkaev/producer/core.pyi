# Typing stubs for kafkaev.producer.core (the producer's per-record work in Cython).
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from kafkaev.errors import KafkaError
from kafkaev.producer.accumulator import Accumulator
from kafkaev.protocol.codec import EncodedBatch

DeliveryCallback = Callable[[Any, KafkaError | None], object]

NO_PARTITION: int  # StickyPartition.current when the next keyless record must choose
NO_SEQUENCE: int  # ProducerBatch.base_seq before its first (idempotent) send
NO_LEADER: int  # PartitionState.leader while the metadata names none
NO_EPOCH: int  # unknown leader epoch / producer epoch

# --- state (core_state.pxi) ---

class StickyPartition:
    """The sticky partition of one topic for keyless records (KIP-480)."""

    @property
    def current(self) -> int: ...
    def choose(self, num_partitions: int, available: Sequence[int]) -> int: ...
    def release(self, partition: int) -> None: ...

class ProducerBatch:
    """One RecordBatch for one partition, from its first record until it completes."""

    @property
    def id(self) -> int: ...
    @property
    def order(self) -> tuple[int, ...]: ...
    @property
    def part(self) -> PartitionState: ...
    builder: Any  # RecordBatchBuilder (or a test's stand-in); None once built
    deliveries: Deliveries
    @property
    def created(self) -> float: ...
    @property
    def deadline(self) -> float: ...
    reserved: int
    data: EncodedBatch | None
    record_count: int
    base_seq: int
    producer_epoch: int
    attempts: int
    last_error: KafkaError | None
    outcome_unknown: bool
    @property
    def split(self) -> bool: ...
    def __init__(
        self,
        batch_id: int,
        part: PartitionState,
        builder: Any,
        created: float,
        deadline: float,
        reserved: int,
        order: tuple[int, ...] | None = None,
    ) -> None: ...

class PartitionState:
    """Producer state of one topic-partition: its open batch, queued batches and sequencing."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def tstate(self) -> TopicState: ...
    batch: ProducerBatch | None
    @property
    def queue(self) -> deque[ProducerBatch]: ...
    @property
    def in_flight(self) -> deque[ProducerBatch]: ...
    leader: int
    leader_epoch: int
    next_seq: int
    retry_at: float
    retrying: bool
    def __init__(self, tstate: TopicState, partition: int) -> None: ...

class TopicState:
    """Producer state of one topic: its partitions and the sticky partition for keyless records."""

    @property
    def name(self) -> str: ...
    @property
    def parts(self) -> list[PartitionState]: ...
    @property
    def num_partitions(self) -> int: ...
    @property
    def sticky(self) -> StickyPartition: ...
    @property
    def available(self) -> list[int]: ...
    def __init__(self, name: str) -> None: ...
    def update(self, leaders: Sequence[tuple[int, int]]) -> None: ...

# --- delivery (core_delivery.pxi) ---

class Deliveries:
    """The delivery callbacks of one batch's records (only of the records that have one)."""

    def __len__(self) -> int: ...
    def add(self, cb: DeliveryCallback, offset_delta: int, timestamp: int) -> None: ...
    def split(self, first_delta: int) -> Deliveries: ...
    def complete(
        self, topic: str, partition: int, base_offset: int, log_append_time: int,
        report: Callable[[BaseException], None],
    ) -> None: ...
    def fail(self, err: KafkaError, report: Callable[[BaseException], None]) -> None: ...

# --- produce (core_produce.pxi) ---

def coerce_bytes(value: object, name: str) -> bytes | None: ...
def coerce_headers(headers: object) -> list[tuple[str, bytes | None]]: ...

class ProducerCore:
    """The per-record path of kafkaev.producer.Producer, which subclasses it."""

    @property
    def _acc(self) -> Accumulator: ...
    @property
    def _topics(self) -> dict[str, TopicState]: ...
    @property
    def _max_request_size(self) -> int: ...
    def __init__(
        self,
        accumulator: Accumulator,
        wake: Callable[[], None],
        custom_partition: Callable[[str, Any, int], int] | None,
        max_request_size: int,
        unknown_topic: Callable[..., None],
    ) -> None: ...
    def produce(
        self,
        topic: str,
        key: Any,
        value: Any,
        cb: DeliveryCallback | None = None,
        *,
        partition: int | None = None,
        headers: Any = None,
        timestamp_ms: int | None = None,
    ) -> None: ...
