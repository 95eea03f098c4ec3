"""``kafkaev perf``'s progress and figures, against the real broker: the live line under a
pseudo-terminal (redrawn in place), plain lines into a pipe, and ``--json``'s raw figures."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import time

from cli_helpers import one_line_error, run_cli, start_cli

WAIT_S = 120.0
# paced so that the run lasts about 1.5 s: several progress intervals of 0.2 s
COUNT = "3000"
RATE = "2000"
INTERVAL = "0.2"
LIVE_LINE = re.compile(r"\r\x1b\[K([\d,]+)/3,000 records  ([\d,]+) msg/s  ([\d.]+) MB/s  p50 ([\d,]+) us  "
                       r"p99 ([\d,]+) us  ([\d,.]+) s left")
PLAIN_LINE = re.compile(r"^([\d,]+)/3,000 records  [\d,]+ msg/s  [\d.]+ MB/s(  p50 [\d,]+ us  p99 [\d,]+ us)?  "
                        r"([\d,.]+ s left|time left unknown)$")


def _run_under_a_terminal(*args: str, brokers: str) -> tuple[int, str]:
    """Run ``kafkaev args...`` with stdout on a pseudo-terminal; its exit status and all it wrote there."""
    controller, terminal = pty.openpty()
    try:
        child = start_cli(*args, brokers=brokers, stdin=None, stdout=terminal)
        os.close(terminal)
        terminal = -1
        output = b""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(controller, 1 << 16)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
            elif child.poll() is not None:
                break
        status = child.wait(WAIT_S)
        stderr = child.stderr.read().decode()
        assert status == 0, stderr
        return status, output.decode()
    finally:
        os.close(controller)
        if terminal >= 0:
            os.close(terminal)


def test_perf_produce_draws_a_live_progress_line_on_a_terminal(kafka, topic):
    _status, output = _run_under_a_terminal("perf", "produce", topic, "-n", COUNT, "-r", RATE, "-s", "100",
                                            "--interval", INTERVAL, brokers=kafka.bootstrap)
    lines = LIVE_LINE.findall(output)
    assert len(lines) >= 3, output
    done = [int(d.replace(",", "")) for d, *_ in lines]
    assert done == sorted(done) and 0 < done[-1] <= 3000
    rates = [int(r.replace(",", "")) for _d, r, *_ in lines]
    assert any(500 <= r <= 4000 for r in rates), rates  # paced at 2000/s
    for _d, _r, mb, p50, p99, _left in lines:
        assert float(mb) > 0 and int(p50.replace(",", "")) <= int(p99.replace(",", ""))
    # redrawn in place: no progress line ends with a newline; the report replaces the last one
    assert "left\n" not in output.replace("\r\n", "\n")
    report = output[output.rindex("\r\x1b[K") + len("\r\x1b[K"):]
    assert report.startswith("3000 records acked in ") and "latency us: p50 " in report


def test_perf_prints_plain_progress_lines_into_a_pipe_and_json_figures(kafka, topic):
    b = kafka.bootstrap
    piped = run_cli("perf", "produce", topic, "-n", COUNT, "-r", RATE, "--interval", INTERVAL, brokers=b)
    assert piped.returncode == 0, piped.stderr.decode()
    text = piped.stdout.decode()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    progress = [line for line in lines if PLAIN_LINE.match(line)]
    assert len(progress) >= 3, text
    assert lines[len(progress)].startswith("3000 records acked in "), text  # progress first, then the report

    produced = run_cli("perf", "produce", topic, "-n", "500", "-s", "64", "--json", "--interval", INTERVAL,
                       brokers=b)
    assert produced.returncode == 0, produced.stderr.decode()
    figures = json.loads(produced.stdout)
    assert (figures["mode"], figures["topic"], figures["records"], figures["bytes"]) == ("produce", topic, 500, 32000)
    assert figures["failures"] == 0 and figures["value_size"] == 64 and figures["latency_samples"] == 500
    assert figures["elapsed_s"] > 0 and figures["cpu_s"] >= 0
    assert abs(figures["records_per_s"] - 500 / figures["elapsed_s"]) < 1e-6 * figures["records_per_s"] + 1e-9
    latency = figures["latency_us"]
    assert list(latency) == ["p50", "p90", "p99", "p99.9", "max"]
    assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["p99.9"] <= latency["max"]

    consumed = run_cli("perf", "consume", topic, "-n", "3500", "--json", brokers=b)
    assert consumed.returncode == 0, consumed.stderr.decode()
    figures = json.loads(consumed.stdout)
    assert (figures["mode"], figures["records"], figures["bytes"]) == ("consume", 3500, 3000 * 100 + 500 * 64)
    assert figures["latency_us"] is None and figures["latency_samples"] == 0

    e2e = run_cli("perf", "e2e", topic, "-n", "300", "-r", "1000", "--json", brokers=b)
    assert e2e.returncode == 0, e2e.stderr.decode()
    figures = json.loads(e2e.stdout)
    assert (figures["mode"], figures["records"], figures["offered_rate"], figures["latency_samples"]) == (
        "e2e", 300, 1000, 300)


def test_perf_usage_mistakes_exit_2(kafka, topic):
    for mode, args, reason in (("produce", ("-n", "0"), "--count must be >= 1, got 0"),
                               ("consume", ("--interval", "0"), "--interval must be > 0"),
                               ("produce", ("-s", "-5"), "--size must be >= 0, got -5"),
                               ("produce", ("-r", "-1"), "--rate must be >= 0"),
                               ("e2e", ("-s", "4"), "--size must be >= 8 for e2e")):
        line = one_line_error(run_cli("perf", mode, topic, *args, brokers=kafka.bootstrap), "perf", status=2)
        assert reason in line


def test_perf_and_produce_wait_for_buffer_room_instead_of_failing(kafka, topic):
    # A buffer far smaller than what the commands produce: the first records fill it while the
    # topic's metadata is still on its way, the later ones while batches wait for their answers.
    b = kafka.bootstrap
    small = ("-X", "buffer_memory=65536", "-X", "buffer_records=50")
    produced = run_cli("perf", "produce", topic, "-n", "2000", "-s", "1000", "--json", *small, brokers=b)
    assert produced.returncode == 0, produced.stderr.decode()
    assert json.loads(produced.stdout)["records"] == 2000
    e2e = run_cli("perf", "e2e", topic, "-n", "300", "-r", "100000", "--json", *small, brokers=b)
    assert e2e.returncode == 0, e2e.stderr.decode()
    assert json.loads(e2e.stdout)["records"] == 300
    lines = b"".join(b"%d:" % i + b"x" * 3000 + b"\n" for i in range(200))
    piped = run_cli("produce", topic, *small, stdin=lines, brokers=b)
    assert piped.returncode == 0, piped.stderr.decode()
    assert "produced 200 records" in piped.stderr.decode()


def test_perf_says_at_once_when_a_record_can_never_fit_the_buffer(kafka, topic):
    line = one_line_error(run_cli("perf", "produce", topic, "-n", "10", "-s", "20000", "-X", "buffer_memory=16384",
                                  brokers=kafka.bootstrap), "perf")
    assert "MESSAGE_TOO_LARGE" in line and "more than all of it (16384)" in line
