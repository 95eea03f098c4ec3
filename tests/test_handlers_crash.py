"""At least once under crashes: a process running kafkaev.Runner is SIGKILLed three times while
it handles 100,000 records, and restarted each time. Every record is handled at least once;
each crash's duplicates are exactly the records it had handled past the group's committed
offset (handled, their commit not yet accepted: what was in flight), and nothing else repeats."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

from consumer_helpers import fill
from handlers_helpers import committed

PARTITIONS = 4
TOTAL = 100_000
KILLS = 3
WORKER = Path(__file__).with_name("handlers_crash_worker.py")
ROOT = WORKER.parent.parent


def read_lines(path: Path) -> list[tuple[int, int]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines():
        partition, offset = line.split()
        out.append((int(partition), int(offset)))
    return out


def spawn(bootstrap: str, topic: str, group: str, output: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(WORKER), bootstrap, topic, group, str(output)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for(check, timeout: float, what: str, worker: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if worker.poll() is not None:
            raise AssertionError(f"the worker exited ({worker.returncode}) waiting for {what}: "
                                 f"{worker.stderr.read().decode()[-3000:] if worker.stderr else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.005)


def test_every_record_is_handled_at_least_once_across_three_sigkills(kafka, make_topic, tmp_path):
    topic = make_topic(partitions=PARTITIONS)
    fill(kafka.bootstrap, topic, PARTITIONS, TOTAL // PARTITIONS)
    group = f"crash-{uuid.uuid4().hex[:8]}"
    output = tmp_path / "handled.txt"
    expected_duplicates = 0
    handled_before = 0
    for kill in range(KILLS):
        worker = spawn(kafka.bootstrap, topic, group, output)
        # Kill once this run has handled a fair share more, so each crash lands mid-stream.
        target = handled_before + TOTAL // (KILLS + 2)
        wait_for(lambda target=target: output.exists() and output.stat().st_size // 8 >= target, 180,
                 f"crash {kill + 1}", worker)
        worker.send_signal(signal.SIGKILL)
        worker.wait(30)
        lines = read_lines(output)
        assert len(lines) < TOTAL + expected_duplicates, "killed before the end, as the test means to"
        # What the restart will handle again: this run's records at or past the committed offsets.
        at = committed(kafka.bootstrap, group, topic, PARTITIONS)
        this_run = lines[handled_before:]
        expected_duplicates += sum(1 for p, o in this_run if o >= at[p] >= 0 or at[p] < 0)
        handled_before = len(lines)
    worker = spawn(kafka.bootstrap, topic, group, output)
    wait_for(lambda: len(set(read_lines(output))) >= TOTAL, 300, "every record", worker)
    wait_for(lambda: committed(kafka.bootstrap, group, topic, PARTITIONS) == dict.fromkeys(
        range(PARTITIONS), TOTAL // PARTITIONS), 60, "the commits to reach the end", worker)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0, worker.stderr.read().decode()[-3000:] if worker.stderr else ""
    lines = read_lines(output)
    counts = Counter(lines)
    assert set(counts) == {(p, o) for p in range(PARTITIONS) for o in range(TOTAL // PARTITIONS)}, \
        "every record handled at least once"
    duplicates = len(lines) - TOTAL
    assert duplicates == expected_duplicates, (
        f"{duplicates} records were handled twice; the crashes left {expected_duplicates} handled past the "
        "committed offsets")
    assert max(counts.values()) <= KILLS + 1
    print(f"{duplicates} duplicates over {KILLS} crashes")
