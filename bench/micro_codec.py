"""Record codec micro-benchmark: records per second for 100-byte values,
kafkaev against aiokafka's Cython record codec, in the same process run.

    python bench/micro_codec.py [--records N] [--repeat R] [--codec none,gzip,...]

One function per scenario; each returns the number of records it handled.
The table reports the best of R runs per scenario and the kafkaev/aiokafka ratio.
Runs are timed in process CPU time, so other load on a shared machine does not
count against whichever client happened to run while it peaked.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords

from kafkaev.protocol.codec import RecordBatchBuilder, read_records

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
VALUE_SIZE = 100
KEY_SIZE = 16
BATCH_SIZE = 16384  # the Java producer's default batch.size
BASE_TIMESTAMP = 1_700_000_000_000


def make_records(count: int) -> list[tuple[int, bytes, bytes]]:
    """Distinct, mildly compressible keys and values, as real payloads tend to be."""
    rng_bytes = os.urandom(count * 8)
    records = []
    for i in range(count):
        noise = rng_bytes[i * 8 : i * 8 + 8].hex()
        value = (f"{i:012d}-{noise}-" * 8).encode()[:VALUE_SIZE]
        records.append((BASE_TIMESTAMP + i // 100, f"user-{i % 5000:011d}".encode(), value))
    return records


# --- encode scenarios ---


def encode_kafkaev(records: list[tuple[int, bytes, bytes]], codec: int) -> int:
    """The producer's own path: ``append`` per record, ``finish`` per batch, the builder reused."""
    builder = RecordBatchBuilder(codec, BATCH_SIZE)
    append = builder.append
    for timestamp, key, value in records:
        if append(timestamp, key, value, None) == -1:
            builder.finish(producer_id=1, producer_epoch=0, base_sequence=0)
            append(timestamp, key, value, None)
    builder.finish(producer_id=1, producer_epoch=0, base_sequence=0)
    return len(records)


def encode_aiokafka(records: list[tuple[int, bytes, bytes]], codec: int) -> int:
    def new_builder() -> DefaultRecordBatchBuilder:
        return DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=0,
            producer_id=1, producer_epoch=0, base_sequence=0, batch_size=BATCH_SIZE,
        )  # fmt: skip

    builder = new_builder()
    offset = 0
    for timestamp, key, value in records:
        if builder.append(offset, timestamp=timestamp, key=key, value=value, headers=[]) is None:
            builder.build()
            builder = new_builder()
            offset = 0
            builder.append(offset, timestamp=timestamp, key=key, value=value, headers=[])
        offset += 1
    builder.build()
    return len(records)


class _NoOpBuilder:
    def append(self, timestamp: int, key: bytes, value: bytes, headers: object) -> int:
        return 0


def python_call_floor(records: list[tuple[int, bytes, bytes]], codec: int) -> int:
    """The loop and one 4-argument method call per record, doing nothing: the
    cost every Python-driven encoder pays before encoding a byte."""
    append = _NoOpBuilder().append
    for timestamp, key, value in records:
        if append(timestamp, key, value, None) == -1:
            break
    return len(records)


# --- decode scenarios ---

FETCH_SET_SIZE = 1 << 20  # a partition's share of a Fetch response (max.partition.fetch.bytes)


def make_record_sets(records: list[tuple[int, bytes, bytes]], codec: int) -> list[bytes]:
    """Record sets as a broker returns them: 16 KiB batches with consecutive offsets,
    grouped into sets of at most FETCH_SET_SIZE. Built with aiokafka's encoder, so neither
    decoder reads its own writer's output."""

    def new_builder() -> DefaultRecordBatchBuilder:
        return DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=0,
            producer_id=1, producer_epoch=0, base_sequence=0, batch_size=BATCH_SIZE,
        )  # fmt: skip

    batches: list[bytes] = []
    builder, delta, base_offset = new_builder(), 0, 0
    for timestamp, key, value in records:
        if builder.append(delta, timestamp=timestamp, key=key, value=value, headers=[]) is None:
            batches.append(base_offset.to_bytes(8, "big") + bytes(builder.build())[8:])
            builder, base_offset, delta = new_builder(), base_offset + delta, 0
            builder.append(delta, timestamp=timestamp, key=key, value=value, headers=[])
        delta += 1
    batches.append(base_offset.to_bytes(8, "big") + bytes(builder.build())[8:])
    sets, current = [], b""
    for batch in batches:
        if current and len(current) + len(batch) > FETCH_SET_SIZE:
            sets.append(current)
            current = b""
        current += batch
    sets.append(current)
    return sets


def decode_kafkaev(record_sets: list[bytes]) -> int:
    count = 0
    for record_set in record_sets:
        count += len(read_records("bench", 0, record_set, 0).messages)  # CRCs checked
    return count


def decode_aiokafka(record_sets: list[bytes]) -> int:
    """aiokafka's consumer path minus its ConsumerRecord wrapping: CRC check, then
    every record materialized with its key, value and headers."""
    count = 0
    for record_set in record_sets:
        records = MemoryRecords(record_set)
        messages = []
        while records.has_next():
            batch = records.next_batch()
            if not batch.validate_crc():
                raise ValueError("CRC mismatch")
            for record in batch:
                messages.append((record.offset, record.timestamp, record.key, record.value, record.headers))
        count += len(messages)
    return count


# --- harness ---


def best_rate(scenario: Callable[..., int], repeat: int, *args: object) -> float:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.process_time()
        count = scenario(*args)
        best = min(best, time.process_time() - start)
    return count / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--codec", default=",".join(CODECS))
    args = parser.parse_args()
    records = make_records(args.records)
    print(f"{args.records} records, {VALUE_SIZE}-byte values, {KEY_SIZE}-byte keys, best of {args.repeat}")
    floor_ns = 1e9 / best_rate(python_call_floor, args.repeat * 2, records, 0)
    print(
        f"Python loop + call floor (a no-op append): {floor_ns:.0f} ns/record, included in every encode figure"
    )
    print(
        f"{'scenario':<16}{'kafkaev rec/s':>15}{'aiokafka rec/s':>16}{'ratio':>8}{'kafkaev ns':>12}{'aiokafka ns':>13}"
    )
    for name in args.codec.split(","):
        codec = CODECS[name]
        ours = best_rate(encode_kafkaev, args.repeat, records, codec)
        theirs = best_rate(encode_aiokafka, args.repeat, records, codec)
        print(
            f"{'encode ' + name:<16}{ours:>15,.0f}{theirs:>16,.0f}{ours / theirs:>7.2f}x"
            f"{1e9 / ours:>12.0f}{1e9 / theirs:>13.0f}"
        )
    for name in args.codec.split(","):
        record_sets = make_record_sets(records, CODECS[name])
        ours = best_rate(decode_kafkaev, args.repeat, record_sets)
        theirs = best_rate(decode_aiokafka, args.repeat, record_sets)
        print(
            f"{'decode ' + name:<16}{ours:>15,.0f}{theirs:>16,.0f}{ours / theirs:>7.2f}x"
            f"{1e9 / ours:>12.0f}{1e9 / theirs:>13.0f}"
        )


if __name__ == "__main__":
    main()
