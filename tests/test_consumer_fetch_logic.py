"""Fetcher policy against a scripted broker: the next Fetch is out before a response's records
are handed over, a partition's records are decoded only when its turn comes, a set of control
records only moves the position, and a corrupt batch stops its own partition alone, after the
batches before it, once and reported. Real-broker tests: test_consumer_fetch.py.
"""

from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace as NS
from typing import Any

import pytest

from kafkaev.cluster.metadata import Metadata
from kafkaev.cluster.pool import ConnectionPool
from kafkaev.config import ClientConfig
from kafkaev.consumer import Consumer
from kafkaev.errors import OFFSET_OUT_OF_RANGE, PROTOCOL, REQUEST_TIMED_OUT, KafkaError
from kafkaev.protocol.codec import RecordBatchBuilder, crc32c
from kafkaev.protocol.connection import FetchPosition, OffsetLookup
from kafkaev.types import TopicPartition

TOPIC = "t"
NODE = 1
PORT = 9001
TS = 1_700_000_000_000
ATTR_CONTROL_TRANSACTIONAL = 0x30
ATTRIBUTES_AT = 21  # RecordBatch v2: Attributes (Int16), where the CRC-32C coverage starts
CRC_AT = 17
LAST_OFFSET_DELTA_AT = 23


def batch(base_offset: int, count: int, *, tag: bytes = b"v", leader_epoch: int = -1) -> bytes:
    builder = RecordBatchBuilder(0)
    for i in range(count):
        builder.append(TS + i, None, b"%s%d" % (tag, base_offset + i), None)
    return builder.build(base_offset=base_offset, partition_leader_epoch=leader_epoch)


def control_batch(base_offset: int) -> bytes:
    """A COMMIT marker: a transactional control batch (its CRC recomputed after the flags)."""
    builder = RecordBatchBuilder(0)
    builder.append(TS, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0), None)
    raw = bytearray(builder.build(base_offset=base_offset, producer_id=7, producer_epoch=0, base_sequence=-1,
                                  transactional=True))
    (attributes,) = struct.unpack_from(">h", raw, ATTRIBUTES_AT)
    struct.pack_into(">h", raw, ATTRIBUTES_AT, attributes | ATTR_CONTROL_TRANSACTIONAL)
    struct.pack_into(">I", raw, CRC_AT, crc32c(bytes(raw[ATTRIBUTES_AT:])))
    return bytes(raw)


def corrupt(raw: bytes) -> bytes:
    damaged = bytearray(raw)
    damaged[-1] ^= 0xFF  # inside the last record's value: only the CRC can tell
    return bytes(damaged)


def next_offset_of(raw: bytes) -> int:
    base, last_delta = struct.unpack_from(">q", raw)[0], struct.unpack_from(">i", raw, LAST_OFFSET_DELTA_AT)[0]
    return base + last_delta + 1


class ScriptedBroker:
    """One node leading every partition of TOPIC; each partition's log is a list of encoded
    batches. A Fetch gets every batch at or past the requested offset; a Fetch with nothing to
    return is held (a long poll that outlasts the test)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, logs: dict[int, list[bytes]]) -> None:
        self.loop = loop
        self.logs = logs
        self.fetches: list[dict[int, int]] = []  # each request's {partition: offset}
        self.last_fetched_epochs: list[dict[int, int]] = []  # each request's {partition: LastFetchedEpoch}
        self.diverging: dict[int, Any] = {}  # partition -> EpochEndOffset for its next answer
        self.held: list[tuple[list[FetchPosition], Any]] = []
        self.list_offsets_refusals: list[int] = []  # error codes for the next ListOffsets, in turn
        self.list_offsets_sent: list[tuple[float, list[int]]] = []  # (loop time, partitions) per request

    def factory(self, config: ClientConfig, loop: asyncio.AbstractEventLoop) -> FakeConn:
        return FakeConn(self)

    def metadata_response(self, topics: Any) -> Any:
        partitions = [NS(partition_index=p, leader_id=NODE, leader_epoch=0, replica_nodes=[NODE], isr_nodes=[NODE],
                         error_code=0) for p in sorted(self.logs)]
        return NS(error_code=0, brokers=[NS(node_id=NODE, host="127.0.0.1", port=PORT, rack=None)], cluster_id="c",
                  controller_id=NODE,
                  topics=[NS(name=TOPIC, topic_id=None, is_internal=False, error_code=0, partitions=partitions)])

    def fetch(self, partitions: list[FetchPosition], cb: Any, *, again: bool = False) -> None:
        offsets = {row.partition: row.offset for row in partitions}
        if not again:
            self.fetches.append(offsets)
            self.last_fetched_epochs.append({row.partition: row.last_fetched_epoch for row in partitions})
        rows = []
        for p, offset in offsets.items():
            log = self.logs[p]
            diverging = self.diverging.pop(p, None)
            records = b"" if diverging else b"".join(raw for raw in log if next_offset_of(raw) > offset)
            end = next_offset_of(log[-1]) if log else 0
            rows.append(NS(partition_index=p, error_code=0, high_watermark=end, last_stable_offset=end,
                           log_start_offset=0, aborted_transactions=None, current_leader=None,
                           diverging_epoch=diverging, records=records))
        if not any(row.records or row.diverging_epoch for row in rows):
            self.held.append((partitions, cb))
            return
        response = NS(error_code=0, session_id=0, node_endpoints=[],
                      responses=[NS(topic=TOPIC, topic_id=None, partitions=rows)])
        self.loop.call_soon(cb, response, None)


    def list_offsets(self, partitions: list[OffsetLookup], cb: Any) -> None:
        """The earliest offset (0) of each partition, or the next scripted refusal for all."""
        self.list_offsets_sent.append((self.loop.time(), sorted(row.partition for row in partitions)))
        code = self.list_offsets_refusals.pop(0) if self.list_offsets_refusals else 0
        rows = [NS(partition_index=row.partition, error_code=code, offset=-1 if code else 0, timestamp=-1, leader_epoch=0)
                for row in partitions]
        self.loop.call_soon(cb, NS(topics=[NS(name=TOPIC, partitions=rows)]), None)

    def answer_held(self) -> None:
        """Answer the held long polls again, as the log now stands."""
        held, self.held = self.held, []
        for partitions, cb in held:
            self.fetch(partitions, cb, again=True)


class FakeConn:
    def __init__(self, broker: ScriptedBroker) -> None:
        self.broker = broker
        self.connected = False
        self.writable = True
        self.node_id = -1
        self.on_error = self.on_disconnect = self.on_writable = None

    def connect(self, host: str, port: int, timeout: float, cb: Any) -> None:
        self.connected = True
        self.broker.loop.call_soon(cb, self, None)

    def disconnect(self) -> None:
        self.connected = False

    def metadata(self, topics: Any, cb: Any, *, allow_auto_topic_creation: bool = True) -> None:
        self.broker.loop.call_soon(cb, self.broker.metadata_response(topics), None)

    def fetch_multi(self, partitions: list[FetchPosition], cb: Any, **_options: Any) -> None:
        self.broker.fetch(partitions, cb)

    def list_offsets(self, partitions: list[OffsetLookup], cb: Any, *, isolation_level: int = 0) -> None:
        self.broker.list_offsets(partitions, cb)


@pytest.fixture
def loop(new_loop):
    return new_loop("asyncio")  # guarded (conftest.py); these tests do not depend on the loop kind


def consumer_for(loop: asyncio.AbstractEventLoop, broker: ScriptedBroker, **handlers: Any) -> tuple[Consumer, list]:
    config = ClientConfig(brokers=f"127.0.0.1:{PORT}", **handlers)
    errors: list[BaseException] = []
    pool = ConnectionPool(config, loop, connection_factory=broker.factory)
    metadata = Metadata(config, loop, pool, connection_factory=broker.factory)
    return Consumer(config, loop, metadata, pool, errors.append), errors


def run_until(loop: asyncio.AbstractEventLoop, predicate: Any, timeout: float = 5.0) -> None:
    async def wait() -> None:
        while not predicate():
            await asyncio.sleep(0.002)
    loop.run_until_complete(asyncio.wait_for(wait(), timeout))


def test_next_fetch_is_out_before_the_records_are_handed_over(loop):
    broker = ScriptedBroker(loop, {0: [batch(0, 3), batch(3, 2)], 1: [batch(0, 4)]})
    seen: list[tuple[int, list[int], int]] = []  # (partition, offsets, fetches sent so far)

    def on_batch(messages: list[Any]) -> None:
        seen.append((messages[0].partition, [m.offset for m in messages], len(broker.fetches)))

    consumer, errors = consumer_for(loop, broker, on_batch=on_batch)
    consumer.assign([(TOPIC, 0, 0), (TOPIC, 1, 0)])
    consumer.start()
    run_until(loop, lambda: len(seen) == 2)
    assert sorted((p, offsets) for p, offsets, _ in seen) == [(0, [0, 1, 2, 3, 4]), (1, [0, 1, 2, 3])]
    # Both partitions' next offsets were sent before either partition's records were delivered.
    assert all(sent == 2 for _, _, sent in seen)
    assert broker.fetches == [{0: 0, 1: 0}, {0: 5, 1: 4}]
    assert errors == []
    consumer.close()


def test_a_corrupt_batch_stops_its_partition_alone_after_the_good_ones_and_is_reported_once(loop):
    broker = ScriptedBroker(loop, {0: [batch(0, 3), corrupt(batch(3, 3)), batch(6, 2)], 1: [batch(0, 2)]})
    delivered: list[tuple[int, int]] = []
    consumer, errors = consumer_for(loop, broker, on_message=lambda m: delivered.append((m.partition, m.offset)))
    consumer.assign([(TOPIC, 0, 0), (TOPIC, 1, 0)])
    consumer.start()
    run_until(loop, lambda: errors and len(delivered) >= 5)
    # Let every Fetch already sent past the corrupt set be answered and dropped.
    run_until(loop, lambda: len(broker.held) == 1)
    # The batch before the corrupt one is delivered, as the Java consumer does; nothing after.
    assert sorted(delivered) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    [err] = errors
    assert isinstance(err, KafkaError) and err.code == PROTOCOL
    assert "t[0] at offset 3" in str(err) and "CRC" in str(err)
    assert (consumer.position(TOPIC, 0), consumer.position(TOPIC, 1)) == (-1, 2)  # -1: failed
    failed = consumer.ctx.subscription.get(TopicPartition(TOPIC, 0))
    assert (failed.position, failed.fetch_offset) == (3, 3)  # stopped at the corrupt batch
    # The Fetch that went out past the corrupt set (offset 8) was stale once the set failed;
    # partition 0 is not fetched again until seek/reassignment.
    assert [f.get(0) for f in broker.fetches] == [0, 8]
    consumer.close()


def test_a_set_of_control_records_only_moves_the_position(loop):
    broker = ScriptedBroker(loop, {0: [batch(0, 2), control_batch(2), batch(3, 1)]})
    batches: list[list[int]] = []
    consumer, errors = consumer_for(loop, broker, on_batch=lambda ms: batches.append([m.offset for m in ms]))
    consumer.assign([(TOPIC, 0, 2)])  # the marker, then one record
    consumer.start()
    run_until(loop, lambda: batches)
    assert batches == [[3]] and consumer.position(TOPIC, 0) == 4
    consumer.close()
    broker.logs[0] = [control_batch(0)]
    consumer, errors = consumer_for(loop, broker, on_batch=lambda ms: batches.append([m.offset for m in ms]))
    consumer.assign([(TOPIC, 0, 0)])
    consumer.start()
    run_until(loop, lambda: consumer.position(TOPIC, 0) == 1)
    assert batches == [[3]] and errors == []  # nothing delivered, the position stepped over the marker
    consumer.close()


def test_fetches_carry_the_last_fetched_epoch_and_a_diverging_log_is_rewound(loop):
    """KIP-320: each Fetch names the leader epoch of the last batch fetched; a leader whose
    log was truncated below that answers diverging_epoch, and the consumer resumes at its end."""
    broker = ScriptedBroker(loop, {0: [batch(0, 3, leader_epoch=1), batch(3, 3, leader_epoch=2)]})
    delivered: list[tuple[int, bytes]] = []
    consumer, errors = consumer_for(loop, broker, on_message=lambda m: delivered.append((m.offset, m.value)))
    consumer.assign([(TOPIC, 0, 0)])
    consumer.start()
    run_until(loop, lambda: len(delivered) == 6 and len(broker.held) == 1)
    assert [f[0] for f in broker.fetches] == [0, 6]
    assert [e[0] for e in broker.last_fetched_epochs] == [-1, 2]
    # An unclean leader change: epoch 2 never happened on the new leader, whose epoch 1 ends at 3.
    broker.logs[0] = [batch(0, 3, leader_epoch=1), batch(3, 1, tag=b"new", leader_epoch=3)]
    broker.diverging[0] = NS(epoch=1, end_offset=3)
    broker.answer_held()
    run_until(loop, lambda: len(delivered) == 7)
    assert delivered[-1] == (3, b"new3")
    [err] = errors
    assert err.code == OFFSET_OUT_OF_RANGE and "truncated below position 6" in str(err)
    assert [f[0] for f in broker.fetches][-2:] == [3, 4] and broker.last_fetched_epochs[-2][0] == 1
    assert broker.last_fetched_epochs[-1][0] == 3
    consumer.close()


def test_a_refused_reset_is_retried_after_a_growing_backoff_with_its_partitions_together(loop):
    """ListOffsets refused twice: both partitions wait out one backoff and go again in one
    request (the resolver's own timer brings them back: nothing else kicks while no partition
    can fetch), each wait at least the floor; then they fetch from the answer."""
    broker = ScriptedBroker(loop, {0: [batch(0, 2)], 1: [batch(0, 3)]})
    broker.list_offsets_refusals = [REQUEST_TIMED_OUT, REQUEST_TIMED_OUT]
    delivered: list[tuple[int, int]] = []
    consumer, errors = consumer_for(loop, broker, on_message=lambda m: delivered.append((m.partition, m.offset)),
                                    retry_backoff_ms=20, retry_backoff_max_ms=40)
    consumer.assign([(TOPIC, 0), (TOPIC, 1)])
    consumer.start()
    run_until(loop, lambda: len(delivered) == 5)
    assert sorted(delivered) == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]
    assert [partitions for _t, partitions in broker.list_offsets_sent] == [[0, 1]] * 3
    times = [t for t, _p in broker.list_offsets_sent]
    floor_s = consumer.config.retry_backoff.floor_ms / 1000
    assert all(b - a >= floor_s - 0.002 for a, b in zip(times, times[1:], strict=False))
    assert [e.code for e in errors] == [REQUEST_TIMED_OUT] * 4  # each partition's failure, reported
    failures = [consumer.ctx.subscription.get(TopicPartition(TOPIC, p)).position_failures for p in (0, 1)]
    assert failures == [0, 0], "a settled position starts its backoff over"
    consumer.close()
