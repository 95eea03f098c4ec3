"""Topics: list, describe, create and delete them, add partitions, delete records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..cluster.metadata import TopicInfo, topic_from_response
from ..errors import KafkaError
from ..protocol import codec, connection
from ..protocol.connection import Connection
from ..types import NO_OFFSET, TopicPartition
from .core import (
    DEFAULT_TIMEOUT_MS,
    INT32_MAX,
    INT64_MAX,
    AdminCore,
    Gather,
    ResultCallback,
    answered,
    check_int,
    check_items,
    check_names,
    check_partitions,
    error_or_none,
    gathered,
)

DEFAULT_REPLICATION = -1  # the broker's default.replication.factor
DEFAULT_PARTITIONS = -1  # the broker's num.partitions
HIGH_WATERMARK = -1  # delete_records: everything up to the partition's high watermark


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create; counts left at -1 take the broker's defaults."""

    name: str
    num_partitions: int = DEFAULT_PARTITIONS
    replication_factor: int = DEFAULT_REPLICATION
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """Grow ``topic`` to ``total_count`` partitions (the new total, as confluent-kafka's
    ``NewPartitions(topic, new_total_count)``)."""

    topic: str
    total_count: int

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not self.topic:
            raise ValueError(f"kafkaev.NewPartitions: 'topic' must be a non-empty string, got {self.topic!r}")
        check_int("total_count", self.total_count, 1, INT32_MAX)


@dataclass(frozen=True, slots=True)
class DeletedRecords:
    """One partition's answer to delete_records: its new low watermark, or the error."""

    low_watermark: int
    error: KafkaError | None = None


class TopicAdmin(AdminCore):
    """Topic administration."""

    def list_topics(self, cb: ResultCallback[dict[str, TopicInfo]], *, internal: bool = False) -> None:
        """``cb({name: TopicInfo}, err)`` for every topic (internal ones only when asked)."""
        done = self._once(cb)

        def listed(resp: codec.MetadataResponse) -> dict[str, TopicInfo]:
            topics = {info.name: info for info in map(topic_from_response, resp.topics)}
            return {n: t for n, t in sorted(topics.items()) if internal or not t.is_internal}

        on_response = answered(codec.MetadataResponse, done, listed)
        self._on_any(done, lambda conn: conn.metadata(None, on_response, allow_auto_topic_creation=False))

    def describe_topics(self, names: Iterable[str], cb: ResultCallback[dict[str, TopicInfo]]) -> None:
        """``cb({name: TopicInfo}, err)``; a missing topic has ``error_code`` UNKNOWN_TOPIC_OR_PARTITION."""
        wanted = check_names("names", names)
        done = self._once(cb)
        on_response = answered(codec.MetadataResponse, done, lambda resp: {
            info.name: info for info in map(topic_from_response, resp.topics)})
        self._on_any(done, lambda conn: conn.metadata(wanted, on_response, allow_auto_topic_creation=False))

    def create_topics(self, topics: Iterable[NewTopic | str], cb: ResultCallback[dict[str, KafkaError | None]], *,
                      timeout_ms: int = DEFAULT_TIMEOUT_MS, validate_only: bool = False) -> None:
        """``cb({name: KafkaError | None}, err)``: per topic, None when it was created."""
        wanted = [t if isinstance(t, NewTopic) else NewTopic(t) for t in check_items("topics", topics, (NewTopic, str))]
        for t in wanted:
            if not isinstance(t.name, str) or not t.name:
                raise ValueError(f"kafkaev.Admin: 'topics' holds a topic without a name: {t!r}")
        done = self._once(cb)
        on_response = answered(codec.CreateTopicsResponse, done, lambda resp: {
            r.name: error_or_none(r.error_code, r.error_message) for r in resp.topics})

        def send(conn: Connection) -> None:
            request = [connection.NewTopic(t.name, t.num_partitions, t.replication_factor, t.config) for t in wanted]
            conn.create_topics(request, on_response, timeout_ms=timeout_ms, validate_only=validate_only)

        self._on_controller(done, send)

    def delete_topics(self, names: Iterable[str], cb: ResultCallback[dict[str, KafkaError | None]], *,
                      timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        """``cb({name: KafkaError | None}, err)``: per topic, None when it was deleted."""
        wanted = check_names("names", names)
        done = self._once(cb)
        # A name is null only in an answer to a deletion by topic id, which this does not send.
        on_response = answered(codec.DeleteTopicsResponse, done, lambda resp: {
            r.name or "": error_or_none(r.error_code, r.error_message) for r in resp.responses})

        self._on_controller(done, lambda conn: conn.delete_topics(wanted, on_response, timeout_ms=timeout_ms))

    def create_partitions(self, new_partitions: Iterable[NewPartitions],
                          cb: ResultCallback[dict[str, KafkaError | None]], *,
                          timeout_ms: int = DEFAULT_TIMEOUT_MS, validate_only: bool = False) -> None:
        """Grow topics: ``cb({topic: KafkaError | None}, err)``, None where the topic now has
        its new total (INVALID_PARTITIONS when that is not more than it had)."""
        wanted = check_items("new_partitions", new_partitions, NewPartitions)
        totals = {p.topic: p.total_count for p in wanted}
        if len(totals) != len(wanted):
            raise ValueError("kafkaev.Admin: 'new_partitions' names a topic twice")
        check_int("timeout_ms", timeout_ms, 0, INT32_MAX)
        done = self._once(cb)
        on_response = answered(codec.CreatePartitionsResponse, done, lambda resp: {
            r.name: error_or_none(r.error_code, r.error_message) for r in resp.results})

        self._on_controller(done, lambda conn: conn.create_partitions(
            totals, on_response, timeout_ms=timeout_ms, validate_only=validate_only))

    def delete_records(self, before_offsets: Mapping[TopicPartition, int],
                       cb: ResultCallback[dict[TopicPartition, DeletedRecords]], *,
                       timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        """Delete each partition's records below its offset (``HIGH_WATERMARK``: all of them), at
        the partitions' leaders: ``cb({TopicPartition: DeletedRecords}, err)``."""
        if not isinstance(before_offsets, Mapping):
            raise TypeError(f"kafkaev.Admin: 'before_offsets' must be a mapping, got {type(before_offsets).__name__}")
        check_partitions("before_offsets", before_offsets)
        for tp, offset in before_offsets.items():
            check_int(f"before_offsets[{tp.topic}[{tp.partition}]]", offset, HIGH_WATERMARK, INT64_MAX)
        check_int("timeout_ms", timeout_ms, 0, INT32_MAX)
        offsets = dict(before_offsets)
        done = self._once(cb)

        def merge(parts: list[dict[TopicPartition, DeletedRecords]] | None, err: KafkaError | None) -> None:
            done(None if parts is None else {tp: r for part in parts for tp, r in part.items()}, err)

        def send(conn: Connection, tps: list[TopicPartition], gather: Gather[dict[TopicPartition, DeletedRecords]]
                 ) -> None:
            on_response = gathered(codec.DeleteRecordsResponse, gather, lambda resp: {
                TopicPartition(t.name, p.partition_index): DeletedRecords(p.low_watermark, error_or_none(p.error_code))
                for t in resp.topics for p in t.partitions})
            conn.delete_records({tp: offsets[tp] for tp in tps}, on_response, timeout_ms=timeout_ms)

        def unreachable(errors: dict[TopicPartition, KafkaError]) -> dict[TopicPartition, DeletedRecords]:
            return {tp: DeletedRecords(NO_OFFSET, e) for tp, e in errors.items()}

        self._on_leaders(offsets, merge, send, unreachable)
