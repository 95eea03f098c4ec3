"""The scripts in examples/ run against the test broker, as a user would run them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def _run(kafka, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH: the checkout's kafkaev, not whichever one is installed (an editable install may be
    # another worktree's), as tests/test_cli.py does.
    env = {**os.environ, "KAFKAEV_BROKERS": kafka.bootstrap, "PYTHONPATH": str(ROOT)}
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
    assert "grown to 6 partitions: True" in proc.stdout
    assert "retention.ms set: True" in proc.stdout
    assert "cleanup.policy: delete DEFAULT_CONFIG" in proc.stdout
    assert "deleted: True" in proc.stdout


EOS_PARTITIONS = 3
EOS_RECORDS = 600
EOS_MAX_RECORDS = 50


def test_eos_pipeline_stops_on_sigterm_then_resumes_exactly_once(kafka, make_topic):
    """A SIGTERM commits the open transaction and leaves; a second run with the same transactional
    id goes on from the committed offsets to the input's end, each input's output once, in order."""
    from eos_helpers import (
        PipelineArgs,
        PipelineProcess,
        assert_exactly_once,
        committed_offsets,
        end_offsets,
        fill_input,
        read_partitions,
    )

    from examples.eos_pipeline import transform

    input_topic, output_topic = make_topic(partitions=EOS_PARTITIONS), make_topic(partitions=EOS_PARTITIONS)
    fill_input(kafka.bootstrap, input_topic, EOS_PARTITIONS, EOS_RECORDS)
    args = PipelineArgs(kafka.bootstrap, input_topic, output_topic, f"{input_topic}-group", f"{input_topic}-txn",
                        max_records=EOS_MAX_RECORDS)
    first = PipelineProcess(args, exit_at_end=False)
    while (line := first.next_line(120)) is not None and line.event != "committed":
        pass
    first.proc.send_signal(signal.SIGTERM)
    assert first.wait(120) == 0, first.stderr
    events = [line.event for line in first.lines_so_far()]
    assert events[0] == "ready" and events[-1] == "done" and "aborted" not in events, events
    committed_first = sum(line.records for line in first.seen if line.event == "committed")
    assert first.seen[-1].records == committed_first > 0
    assert all(line.records <= EOS_MAX_RECORDS for line in first.seen if line.event == "committed")

    second = PipelineProcess(args)
    assert second.wait(120) == 0, second.stderr
    committed_second = sum(line.records for line in second.lines_so_far() if line.event == "committed")
    assert committed_first + committed_second == EOS_RECORDS, (first.seen, second.seen)
    inputs = read_partitions(kafka.bootstrap, input_topic, EOS_PARTITIONS, read_committed=False)
    assert_exactly_once(inputs, read_partitions(kafka.bootstrap, output_topic, EOS_PARTITIONS), transform)
    assert committed_offsets(kafka.bootstrap, args.group, input_topic, EOS_PARTITIONS) == \
        end_offsets(kafka.bootstrap, input_topic, EOS_PARTITIONS)


def test_aio_produce_then_consume(kafka, topic):
    proc = _run(kafka, "aio_produce_consume.py", topic, f"{topic}-aio", "5")
    assert f"acknowledged at {topic}[0] @ 0" in proc.stdout
    lines = [line for line in proc.stdout.splitlines() if line.startswith(f"{topic}[0] @ ")]
    assert [line.split(":")[0] for line in lines] == [f"{topic}[0] @ {i}" for i in range(5)]
