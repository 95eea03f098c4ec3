"""Transactions (KIP-664): list them on every broker, describe them at their coordinators, and
describe the producers writing to partitions (at the partitions' leaders)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..errors import NONE, KafkaError
from ..protocol import codec
from ..protocol.connection import Connection
from ..types import TopicPartition
from .core import (
    COORDINATOR_TRANSACTION,
    INT64_MAX,
    AdminCore,
    Gather,
    ResultCallback,
    check_int,
    check_names,
    check_partitions,
    error_or_none,
    gathered,
    send_request,
)

ANY_DURATION = -1  # ListTransactions: no minimum running time


@dataclass(frozen=True, slots=True, order=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str  # "Ongoing", "PrepareCommit", "CompleteCommit", "Empty", ...
    coordinator: int


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int  # -1 when no transaction is running
    partitions: tuple[TopicPartition, ...]
    coordinator: int
    error: KafkaError | None = None


@dataclass(frozen=True, slots=True)
class ProducerState:
    """A producer with state on a partition: its last sequence and, inside a transaction, the
    offset the open transaction started at (-1: none open)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionProducers:
    producers: tuple[ProducerState, ...] = ()
    error: KafkaError | None = None


class TransactionAdmin(AdminCore):
    """Transaction and producer-state inspection."""

    def list_transactions(self, cb: ResultCallback[list[TransactionListing]], *, states: Iterable[str] = (),
                          producer_ids: Iterable[int] = (), min_duration_ms: int = ANY_DURATION) -> None:
        """``cb([TransactionListing], err)`` from every broker (each coordinates some), only those in
        ``states``, of ``producer_ids`` or running at least ``min_duration_ms`` when given."""
        state_filter = check_names("states", states, allow_empty=True)
        ids = [check_int("producer_ids", p, 0, INT64_MAX) for p in producer_ids]
        check_int("min_duration_ms", min_duration_ms, ANY_DURATION, INT64_MAX)
        done = self._once(cb)

        def flatten(parts: list[list[TransactionListing]] | None, err: KafkaError | None) -> None:
            done(None if parts is None else sorted(t for part in parts for t in part), err)

        def send(conn: Connection, node_id: int, gather: Gather[list[TransactionListing]]) -> None:
            def on_response(resp: codec.ListTransactionsResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None:
                    gather.fail(err)
                elif resp.error_code != NONE:
                    gather.fail(KafkaError(resp.error_code, f"ListTransactions on broker {node_id}"))
                else:
                    gather.add([TransactionListing(t.transactional_id, t.producer_id, t.transaction_state, node_id)
                                for t in resp.transaction_states])

            body = codec.ListTransactionsRequest(state_filters=state_filter, producer_id_filters=ids,
                                                 duration_filter=min_duration_ms, transactional_id_pattern=None)
            send_request(conn, body, codec.ListTransactionsResponse, on_response)

        self._on_every_broker(flatten, send)

    def describe_transactions(self, transactional_ids: Iterable[str],
                              cb: ResultCallback[dict[str, TransactionDescription]]) -> None:
        """``cb({transactional_id: TransactionDescription}, err)``, each asked of its coordinator."""
        wanted = check_names("transactional_ids", transactional_ids)
        done = self._once(cb)

        def merge(parts: list[TransactionDescription] | None, err: KafkaError | None) -> None:
            done(None if parts is None else {d.transactional_id: d for d in parts}, err)

        gather = Gather[TransactionDescription](len(wanted), merge)
        for transactional_id in wanted:
            self._describe_transaction(transactional_id, gather)

    def _describe_transaction(self, transactional_id: str, gather: Gather[TransactionDescription]) -> None:
        def attempt(conn: Connection, node_id: int,
                    outcome: Callable[[TransactionDescription | None, KafkaError | None, int], None]) -> None:
            def on_response(resp: codec.DescribeTransactionsResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None or not resp.transaction_states:
                    outcome(None, err, NONE)
                    return
                s = resp.transaction_states[0]
                partitions = tuple(sorted(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions))
                outcome(TransactionDescription(s.transactional_id, s.transaction_state, s.producer_id,
                                               s.producer_epoch, s.transaction_timeout_ms,
                                               s.transaction_start_time_ms, partitions, node_id,
                                               error_or_none(s.error_code)), None, s.error_code)

            send_request(conn, codec.DescribeTransactionsRequest(transactional_ids=[transactional_id]),
                         codec.DescribeTransactionsResponse, on_response)

        def finish(desc: TransactionDescription | None, err: KafkaError | None) -> None:
            if desc is None:
                gather.fail(err)
            else:
                gather.add(desc)

        self._coordinated(transactional_id, finish, attempt, key_type=COORDINATOR_TRANSACTION)

    def describe_producers(self, partitions: Iterable[TopicPartition],
                           cb: ResultCallback[dict[TopicPartition, PartitionProducers]]) -> None:
        """``cb({TopicPartition: PartitionProducers}, err)``: the active producers of each
        partition, as its leader knows them."""
        wanted = check_partitions("partitions", partitions)
        done = self._once(cb)

        def merge(parts: list[dict[TopicPartition, PartitionProducers]] | None, err: KafkaError | None) -> None:
            done(None if parts is None else {tp: p for part in parts for tp, p in part.items()}, err)

        def send(conn: Connection, tps: list[TopicPartition], gather: Gather[dict[TopicPartition, PartitionProducers]]
                 ) -> None:
            by_topic: dict[str, list[int]] = {}
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append(tp.partition)

            on_response = gathered(codec.DescribeProducersResponse, gather, lambda resp: {
                TopicPartition(t.name, p.partition_index): PartitionProducers(
                    tuple(ProducerState(s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
                                        s.coordinator_epoch, s.current_txn_start_offset) for s in p.active_producers),
                    error_or_none(p.error_code, p.error_message)) for t in resp.topics for p in t.partitions})
            body = codec.DescribeProducersRequest(topics=[codec.TopicRequest(name=topic, partition_indexes=parts)
                                                          for topic, parts in by_topic.items()])
            send_request(conn, body, codec.DescribeProducersResponse, on_response)

        def unreachable(errors: dict[TopicPartition, KafkaError]) -> dict[TopicPartition, PartitionProducers]:
            return {tp: PartitionProducers(error=e) for tp, e in errors.items()}

        self._on_leaders(wanted, merge, send, unreachable)
