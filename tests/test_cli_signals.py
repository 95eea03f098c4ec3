"""SIGTERM (and Ctrl-C's SIGINT) end ``kafkaev consume`` and ``kafkaev produce`` cleanly, as kcat
does: the consumer commits what it printed and leaves its group, the producer sends what it read;
both exit 0. Subprocesses against the real broker; the group's state is read back afterwards."""

from __future__ import annotations

import fcntl
import select
import signal
import struct
import subprocess
import termios
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from cli_helpers import run_cli, start_cli
from producer_helpers import read_back

RECORDS = 30
WAIT_S = 60.0
POLL_S = 0.05
SETTLE_S = 0.5  # after the input was read: the producer has queued it and blocks on stdin again
INT_SIZE = struct.Struct("i")
NEWLINE = b"\n"


def _read_lines(stream, count: int, timeout: float) -> list[bytes]:
    """``count`` lines from a child's stdout pipe, without waiting past ``timeout``."""
    got = b""
    deadline = time.monotonic() + timeout
    while got.count(NEWLINE) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"only {got.count(NEWLINE)} of {count} lines arrived: {got[-200:]!r}"
        ready, _, _ = select.select([stream], [], [], left)
        if ready:
            chunk = stream.read1(1 << 16)
            assert chunk, f"the consumer exited after {got.count(NEWLINE)} lines"
            got += chunk
    return got.splitlines()


@contextmanager
def _running(*args: str, brokers: str) -> Iterator[subprocess.Popen[bytes]]:
    child = start_cli(*args, brokers=brokers)
    try:
        yield child
    finally:  # a failed test leaves no process behind
        child.kill()
        child.wait()


def _stop_with(child: subprocess.Popen[bytes], signum: int) -> tuple[int, str]:
    """Send ``signum``; the exit status and stderr once the child is gone."""
    child.send_signal(signum)
    status = child.wait(WAIT_S)
    return status, child.stderr.read().decode()


def _committed(kafka, group: str, topic: str) -> int:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    futures = kafka.admin().list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])])
    [partition] = futures[group].result(timeout=30).topic_partitions
    return partition.offset


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_makes_a_group_consumer_commit_leave_and_exit_0(kafka, topic, signum):
    lines = b"".join(b"v%d\n" % i for i in range(RECORDS))
    assert run_cli("produce", topic, stdin=lines, brokers=kafka.bootstrap).returncode == 0
    group = f"cli-signal-{uuid.uuid4().hex[:8]}"
    with _running("consume", topic, "-G", group, "-o", "beginning", "-X", "auto_commit_interval_ms=600000",
                  brokers=kafka.bootstrap) as consumer:
        printed = _read_lines(consumer.stdout, RECORDS, WAIT_S)
        assert printed == lines.splitlines()
        status, stderr = _stop_with(consumer, signum)
    assert status == 0, stderr
    assert stderr == f"consumed {RECORDS} records\n"
    # committed on the way out (the interval commit is far off), up to the last record printed
    assert _committed(kafka, group, topic) == RECORDS
    # and it left the group at once: no member waits out its session timeout
    described = run_cli("groups", "describe", group, brokers=kafka.bootstrap)
    assert described.returncode == 0, described.stderr.decode()
    assert described.stdout.decode().startswith(f"group {group} state Empty"), described.stdout.decode()
    assert b" members 0" in described.stdout


def _unread(pipe) -> int:
    """Bytes written to ``pipe`` that its reader has not taken yet."""
    return INT_SIZE.unpack(fcntl.ioctl(pipe.fileno(), termios.FIONREAD, INT_SIZE.pack(0)))[0]


def test_sigterm_makes_produce_send_what_it_read_and_exit_0(kafka, topic):
    with _running("produce", topic, "-k", ":", brokers=kafka.bootstrap) as producer:
        producer.stdin.write(b"".join(b"k%d:v%d\n" % (i, i) for i in range(RECORDS)) + b"k-last:partial")
        producer.stdin.flush()
        deadline = time.monotonic() + WAIT_S
        while _unread(producer.stdin) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        assert _unread(producer.stdin) == 0, "the producer never read its input"
        time.sleep(SETTLE_S)
        # stdin stays open: the signal, not EOF, ends the input
        status, stderr = _stop_with(producer, signal.SIGTERM)
    assert status == 0, stderr
    assert stderr == f"produced {RECORDS + 1} records to {topic}\n"
    got = [(m.key(), m.value()) for m in read_back(kafka.bootstrap, topic, RECORDS + 1)]
    assert got == [(b"k%d" % i, b"v%d" % i) for i in range(RECORDS)] + [(b"k-last", b"partial")]
