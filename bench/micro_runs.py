"""The micro-benchmarks as harness runs: record codec (kafkaev vs aiokafka) and one connection's
Metadata round trip (kafkaev.Connection vs the raw-socket floor).

They reuse the functions of ``bench/micro_codec.py`` and ``bench/conn_latency.py`` so the numbers
mean the same thing as those scripts print, but run one side per worker process like every other
scenario, so the JSON carries them next to the end-to-end figures.
"""

from __future__ import annotations

import asyncio
import time

import uvloop

from bench import conn_latency, micro_codec
from bench.measure import summarize_latencies
from bench.spec import RunResult, RunSpec

SUBJECT = "kafkaev"
CODEC_REPEATS = 5  # best of: a codec run is a few hundred ms of pure CPU
CONN_WARMUP_REQUESTS = 500
PIPELINED_PER_SEQUENTIAL = 5  # pipelined requests per sequential one, as in conn_latency.py


def _codec_number(spec: RunSpec) -> int:
    try:
        return micro_codec.CODECS[spec.compression]
    except KeyError:
        raise SystemExit(f"unknown codec {spec.compression!r}") from None


def _best_cpu(run: object, *args: object) -> tuple[int, float]:
    """(records, best process CPU seconds over CODEC_REPEATS runs): CPU time, so other load on a
    shared machine does not count against whichever side ran while it peaked."""
    best = float("inf")
    count = 0
    for _ in range(CODEC_REPEATS):
        started = time.process_time()
        count = run(*args)  # type: ignore[operator]
        best = min(best, time.process_time() - started)
    return count, best


def encode(spec: RunSpec) -> RunResult:
    codec = _codec_number(spec)
    records = micro_codec.make_records(spec.count)
    run = micro_codec.encode_kafkaev if spec.client == SUBJECT else micro_codec.encode_aiokafka
    count, cpu = _best_cpu(run, records, codec)
    api = "RecordBatchBuilder.append" if spec.client == SUBJECT else "DefaultRecordBatchBuilder.append"
    return RunResult(records=count, elapsed_s=cpu, cpu_s=cpu, bytes=count * micro_codec.VALUE_SIZE,
                     settings={"api": api, "codec": spec.compression, "batch_size": micro_codec.BATCH_SIZE,
                               "key_size": micro_codec.KEY_SIZE, "repeats": CODEC_REPEATS})


def decode(spec: RunSpec) -> RunResult:
    codec = _codec_number(spec)
    record_sets = micro_codec.make_record_sets(micro_codec.make_records(spec.count), codec)
    run = micro_codec.decode_kafkaev if spec.client == SUBJECT else micro_codec.decode_aiokafka
    count, cpu = _best_cpu(run, record_sets)
    api = "read_records (CRC checked)" if spec.client == SUBJECT else "MemoryRecords + validate_crc"
    return RunResult(records=count, elapsed_s=cpu, cpu_s=cpu, bytes=count * micro_codec.VALUE_SIZE,
                     settings={"api": api, "codec": spec.compression, "set_size": micro_codec.FETCH_SET_SIZE,
                               "repeats": CODEC_REPEATS})


async def _negotiated_connection(host: str, port: int, busy_poll_us: int = 0) -> conn_latency.Connection:
    """A connected bare ``Connection`` (``conn_latency.bare_connection``), spinning with
    ``busy_poll_us``; ``conn_latency.close_connection`` ends it."""
    loop = asyncio.get_running_loop()
    conn = conn_latency.bare_connection(loop, busy_poll_us)
    ready = loop.create_future()
    conn.connect(host, port, cb=lambda _c, err: ready.done() or ready.set_result(err))
    err = await ready
    if err is not None:
        conn_latency.close_connection(conn)
        raise err
    return conn


def _metadata_issuer(spec: RunSpec) -> tuple[object, object]:
    [(_name, _key, issue, frame_of)] = [r for r in conn_latency.requests_under_test(spec.topic or None)
                                        if r[1] == conn_latency.API_METADATA]
    return issue, frame_of


async def _conn_kafkaev(spec: RunSpec, host: str, port: int) -> RunResult:
    issue, _frame_of = _metadata_issuer(spec)
    conn = await _negotiated_connection(host, port, spec.busy_poll_us)
    try:
        await conn_latency.kafkaev_sequential(conn, issue, CONN_WARMUP_REQUESTS)
        latencies = await conn_latency.kafkaev_sequential(conn, issue, spec.count)
        pipelined = spec.count * PIPELINED_PER_SEQUENTIAL
        started = time.perf_counter()
        await conn_latency.kafkaev_pipelined(conn, issue, pipelined)
        elapsed = time.perf_counter() - started
        spun_turns = conn.busy_poll.turns if conn.busy_poll is not None else 0
    finally:
        conn_latency.close_connection(conn)
    return RunResult(records=pipelined, elapsed_s=elapsed, latency_us=summarize_latencies(latencies),
                     settings={"api": "Connection.metadata([topic]) on uvloop",
                               "window": conn_latency.PIPELINE_WINDOW, "busy_poll_us": spec.busy_poll_us,
                               "busy_poll_turns": spun_turns})


async def _conn_raw(spec: RunSpec, host: str, port: int) -> RunResult:
    _issue, frame_of = _metadata_issuer(spec)
    conn = await _negotiated_connection(host, port)  # only to learn the Metadata version both speak
    frame = frame_of(conn.version_for(conn_latency.API_METADATA))
    conn.disconnect()
    raw = conn_latency.RawClient(host, port)
    try:
        raw.sequential(frame, CONN_WARMUP_REQUESTS)
        latencies = raw.sequential(frame, spec.count)
        pipelined = spec.count * PIPELINED_PER_SEQUENTIAL
        started = time.perf_counter()
        raw.pipelined(frame, pipelined)
        elapsed = time.perf_counter() - started
    finally:
        raw.close()
    return RunResult(records=pipelined, elapsed_s=elapsed, latency_us=summarize_latencies(latencies),
                     settings={"api": "blocking socket, pre-encoded Metadata frame",
                               "window": conn_latency.PIPELINE_WINDOW})


def conn(spec: RunSpec) -> RunResult:
    host, port = spec.bootstrap.split(",")[0].rsplit(":", 1)
    side = _conn_kafkaev if spec.client == SUBJECT else _conn_raw
    return uvloop.run(side(spec, host, int(port)))
