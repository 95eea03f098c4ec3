"""Record codec micro-benchmark: records per second for 100-byte values,
kafkaev against aiokafka's Cython record codec, in the same process run.

    python bench/micro_codec.py [--records N] [--repeat R] [--codec none,gzip,...]

One function per scenario; each returns the number of records it handled.
The table reports the best of R runs per scenario and the kafkaev/aiokafka ratio.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from aiokafka.record.default_records import DefaultRecordBatchBuilder

from kafkaev._proto import RecordBatchBuilder

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
    builder = RecordBatchBuilder(codec, BATCH_SIZE)
    append = builder.append
    for timestamp, key, value in records:
        if append(timestamp, key, value, None) == -1:
            builder.build(producer_id=1, producer_epoch=0, base_sequence=0)
            builder = RecordBatchBuilder(codec, BATCH_SIZE)
            append = builder.append
            append(timestamp, key, value, None)
    builder.build(producer_id=1, producer_epoch=0, base_sequence=0)
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


# --- harness ---


def best_rate(scenario: Callable[..., int], repeat: int, *args: object) -> float:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = scenario(*args)
        best = min(best, time.perf_counter() - start)
    return count / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--codec", default=",".join(CODECS))
    args = parser.parse_args()
    records = make_records(args.records)
    print(f"{args.records} records, {VALUE_SIZE}-byte values, {KEY_SIZE}-byte keys, best of {args.repeat}")
    print(f"{'scenario':<22}{'kafkaev rec/s':>16}{'aiokafka rec/s':>16}{'ratio':>8}")
    for name in args.codec.split(","):
        codec = CODECS[name]
        ours = best_rate(encode_kafkaev, args.repeat, records, codec)
        theirs = best_rate(encode_aiokafka, args.repeat, records, codec)
        print(f"{'encode ' + name:<22}{ours:>16,.0f}{theirs:>16,.0f}{ours / theirs:>7.2f}x")


if __name__ == "__main__":
    main()
