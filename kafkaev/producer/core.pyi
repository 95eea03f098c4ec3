# Typing stubs for kafkaev.producer.core (the producer's per-record work in Cython).
import asyncio
from collections.abc import Callable, Iterator, Sequence
from enum import IntEnum
from typing import Any

from kafkaev.errors import KafkaError
from kafkaev.producer.accumulator import Accumulator
from kafkaev.protocol.codec import EncodedBatch

DeliveryCallback = Callable[[Any, KafkaError | None], object]

NO_PARTITION: int  # StickyPartition.current when the next keyless record must choose
NO_SEQUENCE: int  # ProducerBatch.base_seq before its first (idempotent) send
NO_LEADER: int  # PartitionState.leader while the metadata names none
NO_EPOCH: int  # unknown leader epoch / producer epoch

class ProducerLifecycle(IntEnum):
    OPEN = 0  # produce() appends
    CLOSING = 1  # close() is failing what was not sent: produce() raises STATE
    CLOSED = 2  # nothing left: produce() raises STATE

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
    @property
    def reserved(self) -> int: ...  # changed only by MemoryBudget
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
        order: tuple[int, ...] | None = None,
    ) -> None: ...

class PartitionState:
    """Producer state of one topic-partition: its open batch, its queue and sequencing."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def tstate(self) -> TopicState: ...
    @property
    def batch(self) -> ProducerBatch | None: ...  # the open batch
    @property
    def queue(self) -> PartitionQueue: ...
    leader: int
    leader_epoch: int
    next_seq: int
    retry_at: float
    retrying: bool
    @property
    def records_delivered(self) -> int: ...  # acknowledged by the broker (statistics)
    @property
    def bytes_delivered(self) -> int: ...
    @property
    def batches_delivered(self) -> int: ...
    def __init__(self, tstate: TopicState, partition: int, ready: ReadySet) -> None: ...
    def count_delivered(self, batch: ProducerBatch) -> None: ...
    def open_batch(self, batch: ProducerBatch) -> None: ...
    def close_open_batch(self, batch: ProducerBatch) -> bool: ...

class ReadySet:
    """The partitions that have a closed batch to send, in the order they became ready."""

    def __init__(self) -> None: ...
    def __len__(self) -> int: ...
    def __contains__(self, part: object) -> bool: ...
    def __iter__(self) -> Iterator[PartitionState]: ...  # a snapshot

class PartitionQueue:
    """One partition's closed batches: queued, and in flight; its readiness."""

    @property
    def part(self) -> PartitionState: ...
    def __init__(self, part: PartitionState, ready: ReadySet) -> None: ...
    def __len__(self) -> int: ...  # queued, not in flight
    def __iter__(self) -> Iterator[ProducerBatch]: ...
    @property
    def head(self) -> ProducerBatch: ...  # IndexError when nothing is queued
    @property
    def in_flight_count(self) -> int: ...
    @property
    def last_in_flight(self) -> ProducerBatch: ...  # IndexError when none is
    @property
    def in_flight(self) -> tuple[ProducerBatch, ...]: ...
    @property
    def ready(self) -> bool: ...
    def append(self, batch: ProducerBatch) -> None: ...
    def requeue(self, batch: ProducerBatch) -> None: ...
    def send_head(self) -> ProducerBatch: ...
    def drop_head(self) -> ProducerBatch: ...
    def answered(self, batch: ProducerBatch) -> None: ...

class MemoryBudget:
    """buffer_memory: bytes reserved by batches not yet completed, and held by records waiting
    for their topic's metadata."""

    @property
    def limit(self) -> int: ...
    @property
    def reserved(self) -> int: ...
    @property
    def held(self) -> int: ...
    def __init__(self, limit: int) -> None: ...
    def can_reserve(self, size: int) -> bool: ...
    def reserve(self, batch: ProducerBatch, size: int, readmitted: bool = False) -> None: ...
    def rebase(self, batch: ProducerBatch, size: int) -> None: ...
    def transfer(self, source: ProducerBatch, target: ProducerBatch) -> None: ...
    def release(self, batch: ProducerBatch) -> None: ...
    def hold(self, size: int) -> bool: ...
    def unhold(self, size: int) -> None: ...

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
    def __init__(self, name: str, ready: ReadySet) -> None: ...
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

def settle(cb: object, meta: Any, err: BaseException | None,
           report: Callable[[BaseException], object]) -> None:
    """Hand one record's outcome to its callback ``cb(meta, err)``, or set it on an
    ``asyncio.Future`` not done yet; what a callback raises goes to ``report``."""

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
    @property
    def lifecycle(self) -> ProducerLifecycle: ...
    def _start_closing(self) -> bool: ...
    def _finish_closing(self) -> None: ...
    def set_admission(self, admit: Callable[[PartitionState, bool], object] | None) -> None: ...
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
        cb: DeliveryCallback | asyncio.Future[Any] | None = None,  # a Future gets the outcome set
        *,
        partition: int | None = None,
        headers: Any = None,
        timestamp_ms: int | None = None,
    ) -> None: ...
    def readmit(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        cb: DeliveryCallback | None,
        partition: int | None,
        headers: list[tuple[str, bytes | None]] | None,
        timestamp_ms: int,
    ) -> None: ...
