"""The Java client's own perf tools, run from the test cluster's cached jars: the throughput floor.

``ProducerPerformance`` and ``ConsumerPerformance`` report their own rates; the JVM's CPU is read
from this worker's waited-for children.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
import uuid
from typing import Any

from bench.measure import child_cpu_seconds
from bench.spec import RunResult, RunSpec
from kafkaev.testing.jars import classpath, kafka_version

JVM_HEAP = "-Xmx512m"
PRODUCER_TOOL = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_TOOL = "org.apache.kafka.tools.ConsumerPerformance"
TOOL_TIMEOUT_S = 300
# "1000000 records sent, 512345.6 records/sec (48.86 MB/sec), 12.3 ms avg latency, ..."
PRODUCER_SUMMARY = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency"
)
# Producer records the Java tool sends per second of scenario time, to size its run.
EXPECTED_JAVA_RATE = 150_000


def _run_tool(args: list[str]) -> tuple[str, float, float]:
    started_cpu = child_cpu_seconds()
    started = time.perf_counter()
    proc = subprocess.run(
        ["java", JVM_HEAP, "-cp", classpath(), *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{args[0]} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc.stdout, elapsed, child_cpu_seconds() - started_cpu


def produce(spec: RunSpec) -> RunResult:
    records = max(100_000, int(spec.duration_s * EXPECTED_JAVA_RATE))
    props: dict[str, Any] = {
        "bootstrap.servers": spec.bootstrap,
        "acks": spec.acks,
        "linger.ms": 5,
        "batch.size": 131072,
        "compression.type": spec.compression,
    }
    stdout, _, cpu = _run_tool([
        PRODUCER_TOOL, "--topic", spec.topic, "--num-records", str(records), "--record-size",
        str(spec.value_size), "--throughput", "-1", "--producer-props",
        *[f"{key}={value}" for key, value in props.items()],
    ])
    match = PRODUCER_SUMMARY.findall(stdout)
    if not match:
        raise RuntimeError(f"no summary line in ProducerPerformance output: {stdout[-300:]!r}")
    sent, per_second, _mb, _latency = match[-1]
    sent_records = int(sent)
    elapsed = sent_records / float(per_second)
    return RunResult(
        records=sent_records,
        elapsed_s=elapsed,
        call_elapsed_s=elapsed,
        calls=sent_records,
        cpu_s=cpu,  # the whole JVM run, start-up and JIT included
        bytes=sent_records * spec.value_size,
        settings={**props, "tool": PRODUCER_TOOL, "kafka": kafka_version(), "jvm": JVM_HEAP},
        note="CPU includes JVM start-up",
    )


def consume(spec: RunSpec) -> RunResult:
    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as config:
        config.write("auto.offset.reset=earliest\nmax.partition.fetch.bytes=1048576\nfetch.max.bytes=52428800\n")
    stdout, _, cpu = _run_tool([
        CONSUMER_TOOL, "--bootstrap-server", spec.bootstrap, "--topic", spec.topic, "--messages",
        str(spec.count), "--group", f"bench-java-{uuid.uuid4().hex[:8]}", "--timeout", "30000",
        "--consumer.config", config.name,
    ])
    # Header: start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    #         rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    lines = [line for line in stdout.splitlines() if line.count(",") >= 9]
    if len(lines) < 2:
        raise RuntimeError(f"no result line in ConsumerPerformance output: {stdout[-300:]!r}")
    fields = [field.strip() for field in lines[-1].split(",")]
    mbytes, consumed, fetch_ms = float(fields[2]), int(fields[4]), float(fields[7])
    return RunResult(
        records=consumed,
        elapsed_s=fetch_ms / 1000.0,
        cpu_s=cpu,
        bytes=int(mbytes * 1024 * 1024),
        settings={"tool": CONSUMER_TOOL, "kafka": kafka_version(), "jvm": JVM_HEAP,
                  "timing": "fetch.time.ms (group join excluded)"},
        note="CPU includes JVM start-up",
    )
