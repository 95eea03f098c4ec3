"""The floor for round-trip latency: a minimal raw-socket Kafka client.

It sends one pre-encoded Produce v7 request (a single-record RecordBatch v2, acks=1) over a
blocking TCP socket, reads the response frame and repeats. No client library does less work per
round trip, so its latency is the broker + loopback cost every client pays.
"""

from __future__ import annotations

import time

from bench.floors.wire import (
    PRODUCE_VERSION,
    connect,
    produce_answer,
    produce_request,
    read_frame,
    record_batch,
)
from bench.measure import Section, histogram, make_value, summarize_latencies
from bench.spec import RunResult, RunSpec
from kafkaev.errors import NONE

PARTITION = 0


def roundtrip(spec: RunSpec) -> RunResult:
    sock = connect(spec.bootstrap)
    reader = sock.makefile("rb")
    batch = record_batch(make_value(spec.value_size), int(time.time() * 1000))
    warmup = max(100, spec.count // 10)
    latencies: list[float] = []
    failed = 0
    with Section() as section:
        for i in range(warmup + spec.count):
            request = produce_request(i, spec.topic, PARTITION, batch, spec.acks)
            started = time.perf_counter_ns()
            sock.sendall(request)
            response = read_frame(reader)
            elapsed_us = (time.perf_counter_ns() - started) / 1000.0
            if produce_answer(response)[2] != NONE:
                failed += 1
            elif i >= warmup:
                latencies.append(elapsed_us)
    reader.close()
    sock.close()
    return RunResult(
        records=len(latencies),
        failed=failed,
        elapsed_s=section.elapsed,
        cpu_s=section.cpu,
        latency_us=summarize_latencies(latencies),
        histogram=histogram(latencies),
        settings={"request": f"Produce v{PRODUCE_VERSION}, one pre-encoded record, TCP_NODELAY", "acks": spec.acks},
    )
