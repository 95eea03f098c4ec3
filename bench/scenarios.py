"""The benchmark scenarios: what runs, for which clients, and which figures each reports."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from bench.spec import (
    CONSUME_ASYNC_FOR,
    CONSUME_BATCH,
    CONSUME_GETMANY,
    CONSUME_PER_MESSAGE,
    DEFAULTS_LINGER_MS,
    HANDLE_ASYNC,
    HANDLE_SYNC,
    KIND_CONN,
    KIND_CONSUME,
    KIND_DECODE,
    KIND_E2E,
    KIND_ENCODE,
    KIND_EOS,
    KIND_HANDLE,
    KIND_PRODUCE,
    KIND_REBALANCE,
    KIND_ROUNDTRIP,
    KIND_TXN_PRODUCE,
    PRODUCE_AWAIT,
    PRODUCE_WINDOW,
)

PEERS = ("confluent", "aiokafka", "kafka-python")
SUBJECT = "kafkaev"
# The asyncio scenarios' subject, against aiokafka and confluent_kafka.aio on the same loop, with
# kafkaev's callback API in the same run for the CPU-per-record ratio.
AIO_SUBJECT = "kafkaev-aio"
AIO_PEERS = ("aiokafka", "confluent-aio")
# The asyncio produce scenarios are closed loops: the next records are produced only once the
# awaited ones are acknowledged, so nothing arrives during a linger and a 5 ms linger bounded every
# client at about 1,000 records per 5 ms plus a round trip (kafkaev.aio sat at that bound). Every
# client, kafkaev's callback API in the same scenario included, gets this linger there instead.
AIO_PRODUCE_LINGER_MS = 0
# What awaiting each record, or a window of them, costs asyncio itself (bench/floors/await_step.py),
# beside aio_produce_await and aio_produce_window.
ASYNCIO_FLOOR = "asyncio-floor"
VALUE_SIZES = (10, 100, 1000, 10000)
CODECS = ("gzip", "snappy", "lz4", "zstd")
STATS_INTERVAL_MS = 100  # the statistics scenarios' stats_interval_ms
E2E_RATE = 10_000  # the "e2e" scenario's offered rate; E2E_RATES adds one scenario per other rate
E2E_RATES = (1_000, E2E_RATE, 100_000)
TXN_SIZES = (1000, 10_000)  # records per transaction of the transactional produce scenarios
# Input records per transaction of the EOS pipeline, at most: the crash-tested pipeline's size
# (examples/eos_pipeline.py's default).
EOS_TXN_RECORDS = 500
TXN_CLIENTS = (SUBJECT, "confluent", "aiokafka")  # the clients with transactions
# The defaults scenarios: every client as it comes, only linger_ms aligned (DEFAULTS_LINGER_MS).
DEFAULTS_CLIENTS = (SUBJECT, "confluent", "aiokafka")
DEFAULTS_SIZES = (100, 1000, 10_000)
# ... and on a topic this wide, with keyed records spread over every partition: what a large
# default batch size costs in memory when each partition has a batch open.
MANY_PARTITIONS = 1000
MANY_PARTITIONS_KEYS = 10 * MANY_PARTITIONS


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    unit: str
    higher_is_better: bool


MSGS_PER_S = Metric("msgs_per_s", "msg/s", True)
MB_PER_S = Metric("mb_per_s", "MB/s", True)
CPU_US_PER_RECORD = Metric("cpu_us_per_record", "us CPU/record", False)
CALL_RATE = Metric("call_rate", "calls/s", True)
DELIVERED_PER_S = Metric("delivered_per_s", "delivered msg/s", True)
RECORDS_PER_S = Metric("records_per_s", "records/s CPU", True)
NS_PER_RECORD = Metric("ns_per_record", "ns CPU/record", False)
REQUESTS_PER_S = Metric("requests_per_s", "pipelined req/s", True)
# Every scenario reports it: the worker process's peak resident set (bench/worker.py).
PEAK_RSS_MB = Metric("peak_rss_mb", "MiB peak RSS", False)
PAUSE_METRICS = (Metric("max_pause", "us", False), Metric("median_pause", "us", False))
REBALANCE_PARTITIONS = 48
REBALANCE_RATE = 5_000
LATENCY_METRICS = tuple(Metric(name, "us", False) for name in ("p50", "p90", "p99", "p99.9"))
# The client process's CPU time over the measured section's wall time: 1.0 is a core kept busy.
CPU_CORES = Metric("cpu_cores", "cores busy", False)
# Stalls in an e2e run (bench.measure.stalls): whether its p99.9 and max are one event.
STALLS = Metric("stalls", "stalls", False)
STALLED_RECORDS = Metric("stalled_records", "records in stalls", False)
E2E_METRICS = (*LATENCY_METRICS, Metric("max", "us", False), CPU_CORES, STALLS, STALLED_RECORDS)
# kafkaev's busy_poll_us in its "kafkaev[busy_poll]" column of the latency scenarios: a few
# round trips, so the loop still spins when a Fetch answer comes a millisecond after the write.
LATENCY_BUSY_POLL_US = 1000


def e2e_scenario_name(rate: int) -> str:
    return "e2e" if rate == E2E_RATE else f"e2e_{rate}"


@dataclass(frozen=True, slots=True)
class Entry:
    """One column of a scenario: a client, possibly in a particular delivery mode."""

    label: str
    client: str
    overrides: dict[str, Any] = field(default_factory=dict)

    @property
    def is_floor(self) -> bool:
        return self.client in ("java", "raw-socket", ASYNCIO_FLOOR)

    @property
    def uses_broker(self) -> bool:
        """False for the asyncio floor, which sends nothing (no landed records to count)."""
        return self.client != ASYNCIO_FLOOR


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    title: str
    kind: str
    entries: tuple[Entry, ...]
    metrics: tuple[Metric, ...]
    params: dict[str, Any] = field(default_factory=dict)  # RunSpec fields shared by every entry
    group: str = ""  # "size" / "codec" scenarios are plotted together
    baseline: str = ""  # an entry label: every other entry's ratio to it, from the same run, is reported too
    subject: str = SUBJECT  # the client the ratios are taken for

    def is_subject(self, entry: Entry) -> bool:
        return entry.client == self.subject

    def entry(self, label: str) -> Entry:
        return next(e for e in self.entries if e.label == label)


def _entries(*clients: str) -> tuple[Entry, ...]:
    return tuple(Entry(client, client) for client in clients)


# kafkaev with its loop spinning instead of sleeping between socket events: the latency it buys
# and the core it costs, beside kafkaev at its default in the same run.
BUSY_POLL_ENTRY = Entry("kafkaev[busy_poll]", SUBJECT, {"busy_poll_us": LATENCY_BUSY_POLL_US})


def all_scenarios(*, quick: bool) -> list[Scenario]:
    """Every scenario of a run; quick mode trims the sweeps, never the core comparisons."""
    clients = (SUBJECT, *PEERS)
    sweep_clients = (SUBJECT, "confluent", "aiokafka") if quick else clients
    codecs = ("lz4", "zstd") if quick else CODECS
    produce_metrics = (MSGS_PER_S, MB_PER_S, CPU_US_PER_RECORD)
    latency_entries = (*_entries(SUBJECT), BUSY_POLL_ENTRY, *_entries(*PEERS, "raw-socket"))
    scenarios = [
        Scenario("produce_acks1", "Pipelined produce, acks=1, 100-byte values", KIND_PRODUCE,
                 _entries(*clients, "java", "raw-socket"), produce_metrics, {"acks": 1, "value_size": 100},
                 group="size"),
        Scenario("produce_acks0", "Fire-and-forget produce, acks=0, 100-byte values", KIND_PRODUCE,
                 _entries(*clients), (CALL_RATE, DELIVERED_PER_S, CPU_US_PER_RECORD), {"acks": 0, "value_size": 100}),
        Scenario("roundtrip", "Sequential round trip (produce one, wait for the ack), linger 0", KIND_ROUNDTRIP,
                 latency_entries, (*LATENCY_METRICS, CPU_CORES),
                 {"acks": 1, "value_size": 100}),
        *(Scenario(e2e_scenario_name(rate), f"End-to-end latency at {rate:,} msg/s offered, produce to consumer "
                   "callback", KIND_E2E, latency_entries,
                   E2E_METRICS, {"acks": 1, "value_size": 100, "rate": rate}, group="e2e") for rate in E2E_RATES),
        Scenario("consume", "Consume 100-byte records from a pre-filled topic", KIND_CONSUME,
                 (Entry("kafkaev[on_message]", SUBJECT, {"mode": CONSUME_PER_MESSAGE}),
                  Entry("kafkaev[on_batch]", SUBJECT, {"mode": CONSUME_BATCH}),
                  *_entries(*PEERS, "java")),
                 produce_metrics, {"value_size": 100}),
        Scenario("handle", "Handle 100-byte records as a group member: a no-op handler on each, a commit after "
                 "each batch handled", KIND_HANDLE,
                 (Entry("kafkaev[sync]", SUBJECT, {"mode": HANDLE_SYNC}),
                  Entry("kafkaev[async]", SUBJECT, {"mode": HANDLE_ASYNC}),
                  Entry("confluent[sync]", "confluent", {"mode": HANDLE_SYNC}),
                  Entry("aiokafka[sync]", "aiokafka", {"mode": HANDLE_SYNC}),
                  Entry("aiokafka[async]", "aiokafka", {"mode": HANDLE_ASYNC})),
                 produce_metrics, {"value_size": 100}),
    ]
    scenarios.append(Scenario(
        "rebalance", f"A 4-member group on {REBALANCE_PARTITIONS} partitions, a fifth joins then leaves: the "
        f"longest time a partition delivers nothing at {REBALANCE_RATE:,} msg/s", KIND_REBALANCE,
        (Entry("kafkaev[classic-eager]", SUBJECT, {"assignor": "range"}),
         Entry("kafkaev[classic-cooperative]", SUBJECT, {"assignor": "cooperative-sticky"}),
         Entry("kafkaev[consumer]", SUBJECT, {"group_protocol": "consumer"}),
         Entry("confluent[classic-cooperative]", "confluent", {"assignor": "cooperative-sticky"}),
         Entry("confluent[consumer]", "confluent", {"group_protocol": "consumer"})),
        PAUSE_METRICS, {"partitions": REBALANCE_PARTITIONS, "rate": REBALANCE_RATE, "value_size": 100}))
    # Statistics on against off, kafkaev alone, alternating within the run: the ratio of CPU per
    # record is the cost of counting (a snapshot every STATS_INTERVAL_MS, more often than needed).
    stats_entries = (Entry("kafkaev[stats-off]", SUBJECT), Entry("kafkaev[stats-on]", SUBJECT,
                                                               {"stats_interval_ms": STATS_INTERVAL_MS}))
    scenarios += [
        Scenario("produce_stats", "Pipelined produce, acks=1, 100-byte values: statistics on vs off", KIND_PRODUCE,
                 stats_entries, produce_metrics, {"acks": 1, "value_size": 100}, baseline="kafkaev[stats-off]"),
        Scenario("consume_stats", "Consume 100-byte records (on_message): statistics on vs off", KIND_CONSUME,
                 tuple(Entry(e.label, e.client, {**e.overrides, "mode": CONSUME_PER_MESSAGE}) for e in stats_entries),
                 produce_metrics, {"value_size": 100}, baseline="kafkaev[stats-off]"),
    ]
    for size in TXN_SIZES:
        scenarios.append(Scenario(
            f"txn_produce_{size}", f"Transactional produce, 100-byte values, {size:,} records per transaction",
            KIND_TXN_PRODUCE, _entries(*TXN_CLIENTS), produce_metrics, {"value_size": 100, "txn_records": size},
            group="txn"))
    scenarios.append(Scenario(
        "eos_pipeline", f"Exactly-once consume-transform-produce, 100-byte records, transactions of at most "
        f"{EOS_TXN_RECORDS} input records with their offsets", KIND_EOS, _entries(*TXN_CLIENTS), produce_metrics,
        {"value_size": 100, "txn_records": EOS_TXN_RECORDS}, group="txn"))
    micro_codecs = ("none", "lz4") if quick else ("none", *CODECS)
    for codec in micro_codecs:
        for kind, verb in ((KIND_ENCODE, "Encode"), (KIND_DECODE, "Decode")):
            scenarios.append(Scenario(
                f"{kind}_{codec}", f"{verb} RecordBatch v2, 100-byte values, {codec} (codec only, CPU time)", kind,
                _entries(SUBJECT, "aiokafka"), (RECORDS_PER_S, NS_PER_RECORD), {"compression": codec},
                group="micro"))
    scenarios.append(Scenario(
        "conn_metadata", "One connection: sequential Metadata round trip, then 1000 pipelined", KIND_CONN,
        (*_entries(SUBJECT), BUSY_POLL_ENTRY, *_entries("raw-socket")), (*LATENCY_METRICS[:3], REQUESTS_PER_S), {},
        group="micro"))
    for size in VALUE_SIZES:
        if size != 100:
            scenarios.append(Scenario(
                f"produce_acks1_{size}B", f"Pipelined produce, acks=1, {size}-byte values", KIND_PRODUCE,
                _entries(*sweep_clients, "raw-socket"), produce_metrics, {"acks": 1, "value_size": size},
                group="size"))
    for codec in codecs:
        scenarios.append(Scenario(
            f"produce_{codec}", f"Pipelined produce, acks=1, 100-byte values, {codec}", KIND_PRODUCE,
            _entries(*sweep_clients), produce_metrics, {"acks": 1, "value_size": 100, "compression": codec},
            group="codec"))
    scenarios += _aio_scenarios(produce_metrics)
    scenarios += _defaults_scenarios(produce_metrics)
    return [replace(s, metrics=(*s.metrics, PEAK_RSS_MB)) for s in scenarios]


def _defaults_scenarios(metrics: tuple[Metric, ...]) -> list[Scenario]:
    """Each client at its own defaults (acks, batch size, buffers, connections), linger aligned."""
    scenarios = [
        Scenario(f"defaults_{size}B", f"At each client's defaults, linger_ms={DEFAULTS_LINGER_MS}: pipelined produce, "
                 f"{size}-byte values", KIND_PRODUCE, _entries(*DEFAULTS_CLIENTS), metrics,
                 {"value_size": size, "defaults": True}, group="defaults")
        for size in DEFAULTS_SIZES
    ]
    scenarios.append(Scenario(
        f"defaults_{MANY_PARTITIONS}p", f"At each client's defaults, linger_ms={DEFAULTS_LINGER_MS}: pipelined produce "
        f"to {MANY_PARTITIONS:,} partitions, 100-byte values, {MANY_PARTITIONS_KEYS:,} keys in turn", KIND_PRODUCE,
        _entries(*DEFAULTS_CLIENTS), metrics,
        {"value_size": 100, "defaults": True, "partitions": MANY_PARTITIONS, "keys": MANY_PARTITIONS_KEYS},
        group="defaults"))
    return scenarios


def _aio_scenarios(metrics: tuple[Metric, ...]) -> list[Scenario]:
    """kafkaev.aio against the asyncio peers, each in the scenario's mode, and kafkaev's callback API."""

    def entries(mode: str, callback_entry: Entry) -> tuple[Entry, ...]:
        return (*(Entry(f"{client}[{mode}]", client, {"mode": mode}) for client in (AIO_SUBJECT, *AIO_PEERS)),
                callback_entry)

    callback_produce = Entry("kafkaev[callback]", SUBJECT)
    return [
        Scenario("aio_produce_await", "asyncio: produce awaiting each record's ack (1000 tasks), acks=1, 100-byte values",
                 KIND_PRODUCE, (*entries(PRODUCE_AWAIT, callback_produce),
                                Entry(f"{ASYNCIO_FLOOR}[{PRODUCE_AWAIT}]", ASYNCIO_FLOOR, {"mode": PRODUCE_AWAIT})),
                 metrics, {"acks": 1, "value_size": 100, "linger_ms": AIO_PRODUCE_LINGER_MS},
                 group="aio", subject=AIO_SUBJECT),
        Scenario("aio_produce_window", "asyncio: produce in windows of 1000 futures, acks=1, 100-byte values",
                 KIND_PRODUCE, (*entries(PRODUCE_WINDOW, callback_produce),
                                Entry(f"{ASYNCIO_FLOOR}[{PRODUCE_WINDOW}]", ASYNCIO_FLOOR, {"mode": PRODUCE_WINDOW})),
                 metrics,
                 {"acks": 1, "value_size": 100, "linger_ms": AIO_PRODUCE_LINGER_MS},
                 group="aio", subject=AIO_SUBJECT),
        Scenario("aio_consume_async_for", "asyncio: consume with async for, 100-byte records", KIND_CONSUME,
                 entries(CONSUME_ASYNC_FOR, Entry("kafkaev[on_message]", SUBJECT, {"mode": CONSUME_PER_MESSAGE})),
                 metrics, {"value_size": 100}, group="aio", subject=AIO_SUBJECT),
        Scenario("aio_consume_getmany", "asyncio: consume with a batch call (getmany, consume), 100-byte records",
                 KIND_CONSUME, entries(CONSUME_GETMANY, Entry("kafkaev[on_batch]", SUBJECT, {"mode": CONSUME_BATCH})),
                 metrics, {"value_size": 100}, group="aio", subject=AIO_SUBJECT),
    ]
