"""The scripts in examples/ run against the test broker, as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _run(kafka, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KAFKAEV_BROKERS": kafka.bootstrap}
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_produce_then_consume_in_a_group(kafka, topic):
    produced = _run(kafka, "produce.py", topic, "5")
    assert len(produced.stdout.splitlines()) == 5
    consumed = _run(kafka, "consume_group.py", topic, f"{topic}-group", "5")
    lines = [line for line in consumed.stdout.splitlines() if f"{topic}[0] @ " in line]
    assert [line.split(":")[0] for line in lines] == [f"{topic}[0] @ {i}" for i in range(5)]
    # the group committed one past the last record: a second run starts there
    produced = _run(kafka, "produce.py", topic, "1")
    again = _run(kafka, "consume_group.py", topic, f"{topic}-group", "1")
    assert f"{topic}[0] @ 5:" in again.stdout


def test_admin(kafka):
    name = f"example-admin-{os.getpid()}"
    proc = _run(kafka, "admin.py", name)
    assert f"{name} ->" in proc.stdout
    assert "deleted: True" in proc.stdout


def test_aio_produce_then_consume(kafka, topic):
    proc = _run(kafka, "aio_produce_consume.py", topic, f"{topic}-aio", "5")
    assert f"acknowledged at {topic}[0] @ 0" in proc.stdout
    lines = [line for line in proc.stdout.splitlines() if line.startswith(f"{topic}[0] @ ")]
    assert [line.split(":")[0] for line in lines] == [f"{topic}[0] @ {i}" for i in range(5)]
