"""What one benchmark subprocess is asked to do, and what it reports back.

The orchestrator serialises a ``RunSpec`` to JSON on the worker's command line; the worker
prints one ``RESULT_PREFIX`` line holding a ``RunResult`` as JSON. Everything else a client
library prints (librdkafka and the JVM are chatty) is ignored.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

RESULT_PREFIX = "BENCH-RESULT "
# Bytes a producer may hold unacknowledged, the same for every client that has such a limit:
# a client allowed to queue more than the broker absorbs in a run only measures its queue.
PRODUCE_BUFFER_BYTES = 256 * 1024 * 1024
# Records a producer may hold unacknowledged, likewise the same for every client that has such a
# limit (librdkafka's queue.buffering.max.messages, kafkaev's buffer_records).
PRODUCE_BUFFER_RECORDS = 2_000_000
# How long a producer loop whose buffer is full waits for acknowledgements before it tries again.
BUFFER_FULL_WAIT_S = 0.001
# The defaults scenarios' one setting aligned across clients: kafkaev's default linger, and the
# linger.ms every throughput comparison uses.
DEFAULTS_LINGER_MS = 5
# The e2e producer loops sleep this long between two rounds of producing what is due. One
# millisecond for every client: uvloop's timers count whole milliseconds and run a shorter
# delay at once, so an event-loop client asked to wait 0.2 ms spins instead, taking a core the
# broker needs while the threaded clients sleep.
E2E_TICK_S = 0.001

# Scenario kinds: the client modules implement one function per kind.
KIND_PRODUCE = "produce"  # as fast as possible for duration_s, then flush
KIND_ROUNDTRIP = "roundtrip"  # produce one, wait for the ack, repeat
KIND_E2E = "e2e"  # produce at a fixed rate, consume in the same process
KIND_CONSUME = "consume"  # read `count` records from a pre-filled topic
KIND_HANDLE = "handle"  # as a group member, run a no-op handler on `count` records, committing each batch
KIND_REBALANCE = "rebalance"  # a group while a member joins and leaves: the longest pause (bench/rebalance.py)
KIND_TXN_PRODUCE = "txn_produce"  # as fast as possible for duration_s in transactions of `txn_records`, then commit
KIND_EOS = "eos"  # consume `source_topic` in a group, transform, produce to `topic` in transactions of
#                   at most `txn_records` input records with their offsets, until `count` are committed
# Micro-benchmarks (bench/micro_runs.py), one side per process like the rest:
KIND_ENCODE = "encode"  # build RecordBatches of `count` records with codec `compression`
KIND_DECODE = "decode"  # read `count` records back from fetch-sized record sets
KIND_CONN = "conn"  # `count` sequential Metadata round trips on one connection, then pipelined ones
MICRO_KINDS = (KIND_ENCODE, KIND_DECODE, KIND_CONN)

CONSUME_PER_MESSAGE = "message"
CONSUME_BATCH = "batch"
# handle: the handler is a plain function, or a coroutine function each record's call is awaited
HANDLE_SYNC = "sync"
HANDLE_ASYNC = "async"

# The asyncio scenarios' modes (bench/aio_drive.py): produce awaited per record or in windows,
# consume with `async for` or a batch call.
PRODUCE_AWAIT = "await"
PRODUCE_WINDOW = "window"
CONSUME_ASYNC_FOR = "async_for"
CONSUME_GETMANY = "getmany"


@dataclass(slots=True)
class RunSpec:
    client: str
    kind: str
    bootstrap: str
    topic: str
    value_size: int = 100
    acks: int = 1
    compression: str = "none"
    duration_s: float = 2.0  # produce: measured section length
    warmup_s: float = 0.5  # produce/e2e: untimed traffic first (connections, JIT, allocators)
    count: int = 0  # roundtrip: round trips; consume: records to read
    rate: int = 0  # e2e: offered messages per second
    mode: str = CONSUME_BATCH  # consume: per-message or batch delivery; the asyncio scenarios' modes
    partitions: int = 1
    group_protocol: str = "classic"  # rebalance: "classic" or "consumer" (KIP-848)
    assignor: str = ""  # rebalance under "classic": the one assignor the members offer
    stats_interval_ms: int = 0  # kafkaev: statistics collected (stats_cb this often) or, at 0, not
    txn_records: int = 0  # txn_produce: records per transaction; eos: input records per transaction, at most
    source_topic: str = ""  # eos: the pre-filled input topic (`topic` is the output)
    # produce: each client at its own defaults, only linger_ms aligned (DEFAULTS_LINGER_MS), instead
    # of the throughput settings each client's module chooses
    defaults: bool = False
    keys: int = 0  # produce: records carry this many distinct keys in turn (every partition busy); 0: no key
    # produce: the linger every client gets in place of DEFAULTS_LINGER_MS (the asyncio closed loops)
    linger_ms: int | None = None
    # roundtrip/e2e/conn, kafkaev: its busy_poll_us (the loop spins this long after each socket read or
    # write instead of sleeping); 0: off, the client's default
    busy_poll_us: int = 0

    @property
    def throughput_linger_ms(self) -> int:
        """The linger of a client module's throughput settings."""
        return DEFAULTS_LINGER_MS if self.linger_ms is None else self.linger_ms

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        return cls(**json.loads(text))


@dataclass(slots=True)
class RunResult:
    """Raw figures of one measured section; derived rates are computed by the orchestrator."""

    records: int = 0  # acked (produce), consumed (consume), round trips or e2e samples
    failed: int = 0  # records whose delivery report carried an error
    elapsed_s: float = 0.0  # wall time of the measured section, flush included
    call_elapsed_s: float = 0.0  # produce: wall time of the produce() calls alone
    calls: int = 0  # produce: produce() calls made in the measured section
    warmup_records: int = 0  # produce: records sent (and flushed) before the measured section
    cpu_s: float = 0.0  # user+sys of the whole client process (all threads) in the measured section
    bytes: int = 0  # value bytes moved in the measured section
    latency_us: dict[str, float] = field(default_factory=dict)  # percentile name -> microseconds
    histogram: list[tuple[float, int]] = field(default_factory=list)  # (upper bound us, count)
    settings: dict[str, Any] = field(default_factory=dict)  # the client configuration used
    peak_rss_kb: int = 0  # the worker process's peak resident set (or its largest child's, the JVM's)
    stalls: int = 0  # e2e: runs of records in a row, all late (bench.measure.stalls)
    stalled_records: int = 0  # e2e: the records in those runs
    note: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RunResult:
        data = json.loads(text)
        data["histogram"] = [tuple(pair) for pair in data.get("histogram", [])]
        return cls(**data)
