"""The command line driven as a user would: subprocesses against the real broker."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 120


def kafkaev(*args: str, stdin: str = "", brokers: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if brokers is not None:
        env["KAFKAEV_BROKERS"] = brokers
    return subprocess.run([sys.executable, "-m", "kafkaev", *args], input=stdin, capture_output=True, text=True,
                          timeout=TIMEOUT_S, env=env, cwd=ROOT)


def test_produce_lines_then_consume_them_back_with_keys_and_format(kafka, make_topic):
    topic = make_topic(partitions=2)
    lines = [f"k{i}:value {i}" for i in range(50)]
    produced = kafkaev("produce", topic, "-k", ":", "-H", "source=cli", stdin="\n".join(lines) + "\n",
                       brokers=kafka.bootstrap)
    assert produced.returncode == 0, produced.stderr
    consumed = kafkaev("consume", topic, "-o", "beginning", "-e", "-f", "%k=%v|%h\\n", brokers=kafka.bootstrap)
    assert consumed.returncode == 0, consumed.stderr
    got = consumed.stdout.splitlines()
    assert sorted(got) == sorted(f"k{i}=value {i}|source=cli" for i in range(50))
    # Same key, same partition: per-key order is kept.
    for key in ("k3", "k17"):
        assert [g for g in got if g.startswith(key + "=")] == [f"{key}=value {key[1:]}|source=cli"]


def test_consume_count_and_named_format_with_partition_and_offset(kafka, topic):
    assert kafkaev("produce", topic, "-p", "0", stdin="a\nb\nc\nd\n", brokers=kafka.bootstrap).returncode == 0
    consumed = kafkaev("consume", topic, "-o", "1", "-c", "2", "-f", "{partition}:{offset}:{value}\n",
                       brokers=kafka.bootstrap)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == ["0:1:b", "0:2:c"]


def test_topics_create_describe_list_delete(kafka):
    name = f"cli-topic-{uuid.uuid4().hex[:8]}"
    created = kafkaev("topics", "create", name, "-p", "3", "-r", "1", "-c", "retention.ms=60000",
                      brokers=kafka.bootstrap)
    assert created.returncode == 0, created.stderr
    described = kafkaev("topics", "describe", name, brokers=kafka.bootstrap)
    assert described.returncode == 0, described.stderr
    assert f"topic {name}" in described.stdout and "partitions 3" in described.stdout
    assert described.stdout.count("  partition ") == 3
    assert name in kafkaev("topics", "list", brokers=kafka.bootstrap).stdout.split()
    again = kafkaev("topics", "create", name, "-p", "1", brokers=kafka.bootstrap)
    assert again.returncode == 1 and "TOPIC_ALREADY_EXISTS" in again.stderr
    deleted = kafkaev("topics", "delete", name, brokers=kafka.bootstrap)
    assert deleted.returncode == 0, deleted.stderr
    gone = kafkaev("topics", "describe", name, brokers=kafka.bootstrap)
    assert gone.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in gone.stderr


def test_bad_flag_is_one_line_and_nonzero():
    result = kafkaev("consume", "t", "--no-such-flag")
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "--no-such-flag" in result.stderr and "Traceback" not in result.stderr


def test_bad_value_is_one_line_and_nonzero(kafka):
    result = kafkaev("consume", "t", "-o", "yesterday", brokers=kafka.bootstrap)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "kafkaev consume: --offset must be beginning, end, a number or @<timestamp ms>, got 'yesterday'"]


def test_unreachable_broker_is_one_line():
    result = kafkaev("topics", "list", brokers="127.0.0.1:1")
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
