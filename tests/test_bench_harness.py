"""The benchmark machinery, end to end on one tiny scenario: not a timed test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.measure import histogram, percentile, summarize_latencies
from bench.spec import RunResult, RunSpec

ROOT = Path(__file__).resolve().parent.parent


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99.9) == 100.0
    summary = summarize_latencies(list(reversed(values)))
    assert summary["p90"] == 90.0 and summary["min"] == 1.0 and summary["max"] == 100.0
    assert sum(count for _, count in histogram(values)) == 100


def test_spec_and_result_survive_json():
    spec = RunSpec(client="confluent", kind="produce", bootstrap="127.0.0.1:9092", topic="t", acks=0)
    assert RunSpec.from_json(spec.to_json()) == spec
    result = RunResult(records=3, latency_us={"p50": 1.5}, histogram=[(8.0, 1), (float("inf"), 2)])
    assert RunResult.from_json(result.to_json()) == result


def test_harness_runs_one_scenario_and_writes_table_json_chart(kafka, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--brokers", kafka.bootstrap, "--scenarios", "produce_acks0",
         "--clients", "confluent", "--duration", "0.3", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "Fire-and-forget produce" in proc.stdout
    [json_path] = tmp_path.glob("*.json")
    assert list(tmp_path.glob("*.png"))
    document = json.loads(json_path.read_text())
    assert document["machine"]["cores"] >= 1
    confluent = document["scenarios"]["produce_acks0"]["clients"]["confluent"]
    assert confluent["errors"] == []
    [run] = confluent["runs"]
    # Every produced record is accounted for by the broker's end offsets.
    assert run["figures"]["delivered"] == run["raw"]["calls"]
    assert confluent["median"]["call_rate"] > 0
    assert confluent["settings"]["acks"] == 0
