"""``python -m bench.micro_batches``: what one batch's bookkeeping costs, without a broker.

Over many partitions a batch carries a record or two, so what a batch costs beside its records
sets the producer's speed there. This times that part alone, warm and in process: records
produced into each of ``--partitions`` partitions (``--records`` each, so that many per batch),
every batch closed, built and taken off its queue as the sender would, then answered and
completed (delivery callbacks included). No connection, no request, no event loop turning: the
sender's round, the Produce request and its answer are not in it.

It prints microseconds per batch (the whole cycle, and the completion alone) and per record,
the best of ``--runs`` runs of ``--rounds`` rounds each.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

from kafkaev.config import ClientConfig
from kafkaev.producer.accumulator import Accumulator
from kafkaev.producer.core import ProducerBatch, ProducerCore

TOPIC = "micro"
VALUE_SIZE = 100
LEADER = 1
LEADER_EPOCH = 0
NO_LOG_APPEND_TIME = -1
WARM_UP_ROUNDS = 3
US_PER_S = 1e6


@dataclass(frozen=True, slots=True)
class Timing:
    """One run: microseconds per batch for the whole cycle and for the completion alone."""

    batch_us: float
    completion_us: float


def _delivered(meta: object, err: object) -> None:
    """Every record's delivery callback: nothing to do, as a fire-and-forget producer's."""


def _raise(exc: BaseException) -> None:
    raise exc


def _unknown_topic(*record: object) -> None:
    raise AssertionError(f"the topic is known before the first record: {record[0]!r}")


class Cycle:
    """One producer's accumulator and core, without a sender: the batches' whole life, by hand."""

    def __init__(self, partitions: int, records: int) -> None:
        self._loop = asyncio.new_event_loop()
        config = ClientConfig(linger_ms=5)
        self._acc = Accumulator(config, self._loop, lambda: None)
        self._acc.add_topic(TOPIC).update([(LEADER, LEADER_EPOCH)] * partitions)
        self._core = ProducerCore(self._acc, lambda: None, None, config.max_request_size, _unknown_topic)
        self._partitions = partitions
        self._records = records
        self._value = b"x" * VALUE_SIZE

    def close(self) -> None:
        self._loop.close()

    def round(self) -> float:
        """Produce, close, build and send every partition's batch, then complete them all;
        the seconds the completions took."""
        produce = self._core.produce
        for p in range(self._partitions):
            for _ in range(self._records):
                produce(TOPIC, None, self._value, _delivered, partition=p)
        acc = self._acc
        acc.close_all()
        sent: list[ProducerBatch] = []
        for part in acc.topics[TOPIC].parts:
            batch = part.queue.head
            builder = batch.builder
            assert builder is not None  # open until it completes
            batch.data = builder.finish()
            acc.budget.rebase(batch, len(batch.data))
            part.queue.send_head()
            sent.append(batch)
        started = time.perf_counter()
        complete = acc.batches.complete
        for batch in sent:
            complete(batch, 0, NO_LOG_APPEND_TIME, _raise)
        return time.perf_counter() - started


def measure(partitions: int, records: int, rounds: int) -> Timing:
    cycle = Cycle(partitions, records)
    try:
        for _ in range(WARM_UP_ROUNDS):
            cycle.round()
        completing = 0.0
        started = time.perf_counter()
        for _ in range(rounds):
            completing += cycle.round()
        elapsed = time.perf_counter() - started
    finally:
        cycle.close()
    batches = rounds * partitions
    return Timing(US_PER_S * elapsed / batches, US_PER_S * completing / batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1000, help="batches per round (default 1000)")
    parser.add_argument("--records", type=int, default=1, help="records per batch (default 1)")
    parser.add_argument("--rounds", type=int, default=20, help="rounds per run (default 20)")
    parser.add_argument("--runs", type=int, default=3, help="runs; the best is printed (default 3)")
    args = parser.parse_args()
    best = min((measure(args.partitions, args.records, args.rounds) for _ in range(args.runs)),
               key=lambda t: t.batch_us)
    print(f"{args.partitions} partitions, {args.records} record(s) a batch: {best.batch_us:.2f} us a batch "
          f"(completion {best.completion_us:.2f}), {best.batch_us / args.records:.3f} us a record")


if __name__ == "__main__":
    main()
