"""The command line driven as a user would: subprocesses against the real broker."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from producer_helpers import read_back

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


def test_bad_value_is_one_line_and_a_usage_error(kafka):
    result = kafkaev("consume", "t", "-o", "yesterday", brokers=kafka.bootstrap)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "kafkaev consume: --offset must be beginning, end, a number, -<N>, @<ms>, s@<ms> or e@<ms>, got 'yesterday'"]


def test_unreachable_broker_is_one_line():
    for args in (("topics", "list"), ("metadata",), ("-L", "--json")):
        result = kafkaev(*args, brokers="127.0.0.1:1")
        assert result.returncode == 1, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
        assert "no broker reachable at 127.0.0.1:1" in result.stderr and result.stdout == ""


def test_groups_list_describe_lag_after_a_group_consume(kafka, topic):
    assert kafkaev("produce", topic, stdin="1\n2\n3\n4\n5\n", brokers=kafka.bootstrap).returncode == 0
    group = f"cli-group-{uuid.uuid4().hex[:8]}"
    consumed = kafkaev("consume", topic, "-G", group, "-o", "beginning", "-c", "3", brokers=kafka.bootstrap)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.splitlines() == ["1", "2", "3"]
    listed = kafkaev("groups", "list", brokers=kafka.bootstrap)
    assert listed.returncode == 0, listed.stderr
    assert group in [line.split("\t")[0] for line in listed.stdout.splitlines()]
    described = kafkaev("groups", "describe", group, brokers=kafka.bootstrap)
    assert described.returncode == 0, described.stderr
    assert described.stdout.startswith(f"group {group} state Empty")
    lag = kafkaev("groups", "lag", group, brokers=kafka.bootstrap)
    assert lag.returncode == 0, lag.stderr
    # the group committed what it printed, at least the 3 records (auto-commit on close)
    [row] = [line.split("\t") for line in lag.stdout.splitlines() if line.startswith(topic)]
    committed, end, behind = int(row[2]), int(row[3]), int(row[4])
    assert end == 5 and 3 <= committed <= 5 and behind == end - committed


def test_unknown_group_and_unknown_topic_are_one_line_errors(kafka):
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    for args in (("groups", "describe", missing), ("groups", "lag", missing), ("consume", missing, "-e"),
                 ("perf", "consume", missing, "-n", "10")):
        result = kafkaev(*args, brokers=kafka.bootstrap)
        assert result.returncode == 1, (args, result.stderr)
        [line] = result.stderr.strip().splitlines()
        assert line.startswith(f"kafkaev {args[0]}: ") and missing in line and "Traceback" not in result.stderr


def test_perf_produce_then_consume_report_rates_and_a_histogram(kafka, topic):
    # a long interval: no progress line before the report (tests/test_cli_perf.py has those)
    produced = kafkaev("perf", "produce", topic, "-n", "2000", "-s", "50", "--interval", "600", brokers=kafka.bootstrap)
    assert produced.returncode == 0, produced.stderr
    assert produced.stdout.startswith("2000 records acked in ") and "msg/s" in produced.stdout
    assert "latency us: p50 " in produced.stdout and " us " in produced.stdout.splitlines()[2]
    consumed = kafkaev("perf", "consume", topic, "-n", "2000", "--interval", "600", brokers=kafka.bootstrap)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.startswith("2000 records in ")
    too_many = kafkaev("perf", "consume", topic, "-n", "5000", brokers=kafka.bootstrap)
    assert too_many.returncode == 1 and "holds 2000 records, fewer than --count 5000" in too_many.stderr


def test_perf_e2e_receives_every_record(kafka, topic):
    result = kafkaev("perf", "e2e", topic, "-n", "500", "-r", "2000", "--interval", "600", brokers=kafka.bootstrap)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("500 of 500 records consumed at 2000 msg/s offered")


def test_produce_files_one_record_each_to_a_partition(kafka, make_topic, tmp_path):
    topic = make_topic(partitions=2)
    paths = []
    for i in range(3):
        path = tmp_path / f"f{i}.txt"
        path.write_bytes(f"file {i}\nsecond line".encode())
        paths.append(str(path))
    produced = kafkaev("produce", topic, *paths, "-p", "1", "-z", "zstd", brokers=kafka.bootstrap)
    assert produced.returncode == 0, produced.stderr
    consumed = kafkaev("consume", topic, "-o", "beginning", "-e", "-f", "%p|%v\\n--\\n", brokers=kafka.bootstrap)
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout == "".join(f"1|file {i}\nsecond line\n--\n" for i in range(3))
    after = kafkaev("produce", topic, "-p", "0", paths[0], paths[1], brokers=kafka.bootstrap)  # kcat's order
    assert after.returncode == 0 and after.stderr == f"produced 2 records to {topic}\n", after.stderr
    stray = kafkaev("produce", topic, "-p", "0", paths[0], "--bogus", brokers=kafka.bootstrap)
    assert stray.returncode == 2 and "unrecognized arguments: " in stray.stderr and "--bogus" in stray.stderr
    missing = kafkaev("produce", topic, str(tmp_path / "nope"), brokers=kafka.bootstrap)
    assert missing.returncode == 1 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr


def _broker(action: str, state: Path) -> subprocess.CompletedProcess[str]:
    return kafkaev("broker", action, "--state-file", str(state))


def test_broker_status_of_a_live_record_prints_address_pid_and_version(tmp_path):
    from kafkaev.local_broker import LocalBroker

    state = tmp_path / "broker.json"
    LocalBroker(os.getpid(), "127.0.0.1:9093", "4.4.0", str(tmp_path)).write(state)  # this process: alive
    result = _broker("status", state)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"broker running: 127.0.0.1:9093 (pid {os.getpid()}, Apache Kafka 4.4.0)\n"


def test_broker_status_and_stop_without_a_broker_are_one_line_and_exit_1(tmp_path):
    from kafkaev.local_broker import LocalBroker

    state = tmp_path / "broker.json"
    for action in ("status", "stop"):
        result = _broker(action, state)
        assert result.returncode == 1 and result.stdout == ""
        assert result.stderr == f"kafkaev broker: no broker is running (none recorded in {state})\n"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    LocalBroker(dead.pid, "127.0.0.1:9092", "4.4.0", str(tmp_path)).write(state)
    status = _broker("status", state)
    assert status.returncode == 1
    assert status.stderr == (f"kafkaev broker: no broker is running (the one recorded in {state}, "
                             f"pid {dead.pid}, has exited)\n")
    assert state.exists(), "status only reads the record"
    assert _broker("stop", state).returncode == 1
    assert not state.exists(), "stop removes a stale record"


def test_broker_start_rejects_a_bad_node_count_in_one_line(tmp_path):
    for args in (("--nodes", "0"), ("--nodes", "0", "--detach")):
        result = kafkaev("broker", "start", *args, "--state-file", str(tmp_path / "broker.json"))
        assert result.returncode == 2
        assert result.stderr == "kafkaev broker: --nodes must be >= 1, got 0\n"


# --- consume -e ends in every start position ----------------------------------------------------

FAR_FUTURE_MS = 4_000_000_000_000  # a timestamp after every record


def _printed(*args: str, brokers: str) -> list[str]:
    result = kafkaev("consume", *args, brokers=brokers)
    assert result.returncode == 0, (args, result.stderr)
    return result.stdout.splitlines()


def test_consume_exit_at_end_ends_wherever_a_partition_starts(kafka, topic):
    assert kafkaev("produce", topic, "-p", "0", stdin="a\nb\nc\n", brokers=kafka.bootstrap).returncode == 0
    b = kafka.bootstrap
    assert _printed(topic, "-o", "beginning", "-e", brokers=b) == ["a", "b", "c"]
    assert _printed(topic, "-p", "0", "-o", "1", "-e", brokers=b) == ["b", "c"]
    assert _printed(topic, "-p", "0", "-o", "3", "-e", brokers=b) == []  # at the end offset
    assert _printed(topic, "-o", "end", "-e", brokers=b) == []
    assert _printed(topic, "-o", "@0", "-e", brokers=b) == ["a", "b", "c"]
    assert _printed(topic, "-o", f"@{FAR_FUTURE_MS}", "-e", brokers=b) == []  # later than the last record
    group = f"cli-end-{uuid.uuid4().hex[:8]}"
    assert _printed(topic, "-G", group, "-o", "beginning", "-e", brokers=b) == ["a", "b", "c"]
    assert _printed(topic, "-G", group, "-e", brokers=b) == []  # the group committed the end
    assert kafkaev("produce", topic, stdin="d\n", brokers=b).returncode == 0
    assert _printed(topic, "-G", group, "-e", brokers=b) == ["d"]  # from its commit to the new end


def test_consume_exit_at_end_of_an_empty_topic_and_of_some_empty_partitions(kafka, make_topic):
    topic = make_topic(partitions=3)
    assert _printed(topic, "-o", "beginning", "-e", brokers=kafka.bootstrap) == []
    assert _printed(topic, "-G", f"cli-empty-{uuid.uuid4().hex[:8]}", "-o", "beginning", "-e",
                    brokers=kafka.bootstrap) == []
    assert kafkaev("produce", topic, "-p", "1", stdin="x\n", brokers=kafka.bootstrap).returncode == 0
    assert _printed(topic, "-o", "beginning", "-e", brokers=kafka.bootstrap) == ["x"]


def test_consume_offset_out_of_range_is_an_error_not_a_restart(kafka, topic):
    assert kafkaev("produce", topic, "-p", "0", stdin="a\nb\n", brokers=kafka.bootstrap).returncode == 0
    result = kafkaev("consume", topic, "-o", "99", "-e", brokers=kafka.bootstrap)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"kafkaev consume: --offset 99 is out of range for {topic} partition 0: it holds offsets 0 to 1, "
        "and --offset 2 (its end) waits for the next record"]
    before_time = kafkaev("consume", topic, "-o", "@-5", "-e", brokers=kafka.bootstrap)
    assert before_time.returncode == 2
    assert before_time.stderr == "kafkaev consume: --offset @<timestamp ms> must be >= 0, got '@-5'\n"


# --- consume -f is checked before consuming -------------------------------------------------------

def test_bad_format_is_one_line_before_any_record(kafka, topic):
    assert kafkaev("produce", topic, stdin="a\nb\n", brokers=kafka.bootstrap).returncode == 0
    for spec, reason in (("{nope}", "unknown field {nope}"), ("%q", "unknown placeholder '%q'"),
                         ("{offset:zz}", "Unknown format code 'z'"), ("{value", "expected '}'"),
                         ("{}", "unknown field {}"), ("%v %", "unknown placeholder '%'")):
        result = kafkaev("consume", topic, "-o", "beginning", "-f", spec, brokers=kafka.bootstrap)
        assert result.returncode == 2, (spec, result.stderr)
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("kafkaev consume: --format: ") and reason in line, (spec, line)
        assert result.stdout == ""


def test_format_with_a_percent_placeholder_keeps_braces_literal(kafka, topic):
    assert kafkaev("produce", topic, "-k", ":", stdin="k1:a\nk2:b\n", brokers=kafka.bootstrap).returncode == 0
    printed = _printed(topic, "-o", "beginning", "-e", "-f", '%k {"json": "%v", "at": %o}\\n', brokers=kafka.bootstrap)
    assert printed == ['k1 {"json": "a", "at": 0}', 'k2 {"json": "b", "at": 1}']
    printed = _printed(topic, "-o", "beginning", "-e", "-f", "{{{offset:>3}}} {key}\\n", brokers=kafka.bootstrap)
    assert printed == ["{  0} k1", "{  1} k2"]


# --- produce ------------------------------------------------------------------------------------

def test_produce_a_too_large_record_names_it_and_says_what_was_sent(kafka, topic):
    big = "x" * 2_000_000
    result = kafkaev("produce", topic, stdin=f"first\n{big}\nlast\n", brokers=kafka.bootstrap)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "kafkaev produce: line 2 (2000000 bytes) is too large to send: a record and its framing must fit in "
        "max_request_size (1048588 bytes); the record before it was sent, none after it"]
    assert _printed(topic, "-o", "beginning", "-e", brokers=kafka.bootstrap) == ["first"]
    alone = kafkaev("produce", topic, stdin=big, brokers=kafka.bootstrap)
    assert alone.returncode == 1 and alone.stderr.strip().endswith("(1048588 bytes); nothing was sent")


def test_produce_key_separator_a_line_without_it_is_a_keyless_value(kafka, topic):
    produced = kafkaev("produce", topic, "-k", ":", stdin="k1:v1\nno separator\nk3:v3:more\n:empty key\n",
                       brokers=kafka.bootstrap)
    assert produced.returncode == 0, produced.stderr
    assert produced.stderr == f"produced 4 records to {topic}\n"
    got = [(m.key(), m.value()) for m in read_back(kafka.bootstrap, topic, 4)]
    assert got == [(b"k1", b"v1"), (None, b"no separator"), (b"k3", b"v3:more"), (b"", b"empty key")]


# --- counts -------------------------------------------------------------------------------------

def test_topics_create_counts_must_be_at_least_one(kafka):
    name = f"cli-count-{uuid.uuid4().hex[:8]}"
    for flag in ("-p", "-r"):
        for value in ("-1", "0"):
            result = kafkaev("topics", "create", name, flag, value, brokers=kafka.bootstrap)
            assert result.returncode == 2, (flag, value, result.stderr)
            long_flag = "--partitions" if flag == "-p" else "--replication-factor"
            assert result.stderr == f"kafkaev topics: {long_flag} must be >= 1, got {value}\n"
    assert name not in kafkaev("topics", "list", brokers=kafka.bootstrap).stdout.split()
    created = kafkaev("topics", "create", name, brokers=kafka.bootstrap)  # the broker's defaults
    assert created.returncode == 0, created.stderr
    assert kafkaev("topics", "delete", name, brokers=kafka.bootstrap).returncode == 0


# --- kcat's flags -------------------------------------------------------------------------------

def _json_lines(*args: str, brokers: str) -> list[dict]:
    return [json.loads(line) for line in _printed(*args, "-J", brokers=brokers)]


def _one_line_error(result: subprocess.CompletedProcess[str], command: str, status: int = 1) -> str:
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"kafkaev {command}: "), line
    return line


def test_metadata_lists_brokers_topics_and_partitions_as_text_and_json_and_as_dash_L(kafka, make_topic):
    topic = make_topic(partitions=2)
    result = kafkaev("metadata", "--json", brokers=kafka.bootstrap)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    broker_ids = {b["id"] for b in doc["brokers"]}
    assert broker_ids and all(b["host"] and b["port"] > 0 for b in doc["brokers"])
    assert doc["controller_id"] in broker_ids or doc["controller_id"] == -1
    [mine] = [t for t in doc["topics"] if t["topic"] == topic]
    assert mine["error"] is None and not mine["internal"]
    assert [p["partition"] for p in mine["partitions"]] == [0, 1]
    for p in mine["partitions"]:
        assert p["leader"] in broker_ids and p["leader"] in p["replicas"] and set(p["isr"]) <= set(p["replicas"])
    # kcat's -L, before the options as kcat takes it, with -t for one topic
    text = kafkaev("-L", "-t", topic, brokers=kafka.bootstrap)
    assert text.returncode == 0, text.stderr
    assert f'topic "{topic}" with 2 partitions:' in text.stdout
    assert text.stdout.count("    partition ") == 2 and " brokers:" in text.stdout
    assert "leader " in text.stdout and "replicas: " in text.stdout and "isrs: " in text.stdout
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    line = _one_line_error(kafkaev("metadata", "-t", missing, brokers=kafka.bootstrap), "metadata")
    assert f"{missing}: UNKNOWN_TOPIC_OR_PARTITION" in line


def test_version_prints_the_package_version():
    from importlib.metadata import PackageNotFoundError, version

    import kafkaev as package

    try:
        expected = version("kafkaev")
    except PackageNotFoundError:
        expected = package.__version__
    result = kafkaev("--version")
    assert result.returncode == 0 and result.stdout == f"kafkaev {expected}\n"


def test_dash_X_sets_any_client_option_by_its_type_and_a_bad_one_is_one_line(kafka, topic):
    produced = kafkaev("produce", topic, "-X", "linger_ms=0", "-X", "idempotent=true", "-X", "client_id=cli-x",
                       stdin="a\nb\n", brokers=kafka.bootstrap)
    assert produced.returncode == 0, produced.stderr
    assert _printed(topic, "-o", "beginning", "-e", "-X", "fetch_max_wait_ms=50", "-X", "check_crcs=false",
                    "-X", "assignors=range", brokers=kafka.bootstrap) == ["a", "b"]
    for command in ("produce", "consume"):
        typo = _one_line_error(kafkaev(command, topic, "-X", "lingr_ms=1", brokers=kafka.bootstrap), command, 2)
        assert "unknown option 'lingr_ms'; did you mean 'linger_ms'?" in typo
    dotted = _one_line_error(kafkaev("produce", topic, "-X", "linger.ms=1", brokers=kafka.bootstrap), "produce", 2)
    assert "did you mean 'linger_ms'?" in dotted
    for item, reason in (("linger_ms=soon", "-X linger_ms: expected float, got 'soon'"),
                         ("idempotent=maybe", "-X idempotent: expected true or false, got 'maybe'"),
                         ("batch_size=1.5", "-X batch_size: expected int, got '1.5'"),
                         ("on_error=print", "-X on_error: this option is a Python object"),
                         ("brokers=x:1", "-X brokers: give it with -b"),
                         ("linger_ms", "-X must look like key=value, got 'linger_ms'")):
        assert reason in _one_line_error(kafkaev("produce", topic, "-X", item, brokers=kafka.bootstrap), "produce", 2)
    # the option's own check still applies to a well-typed value
    assert "batch_size" in _one_line_error(kafkaev("produce", topic, "-X", "batch_size=-5", brokers=kafka.bootstrap),
                                           "produce", 2)


def _produce_raw(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap})
    for key, value in records:
        producer.produce(topic, value, key, partition=0)
    assert producer.flush(30) == 0


def test_consume_json_records_and_dash_Z_null_versus_empty(kafka, topic):
    binary = b"\xff\x00\xfe"
    _produce_raw(kafka.bootstrap, topic, [(None, b"text \xc3\xa9"), (b"k", None), (b"", b""), (binary, binary)])
    records = _json_lines(topic, "-o", "beginning", "-e", brokers=kafka.bootstrap)
    assert [set(r) for r in records] == [{"topic", "partition", "offset", "timestamp", "key", "value", "headers"}] * 4
    assert [(r["topic"], r["partition"], r["offset"]) for r in records] == [(topic, 0, i) for i in range(4)]
    assert all(isinstance(r["timestamp"], int) and r["timestamp"] > 0 and r["headers"] == [] for r in records)
    marked = {"base64": base64.b64encode(binary).decode()}
    assert [(r["key"], r["value"]) for r in records] == [(None, "text \u00e9"), ("k", None), ("", ""), (marked, marked)]
    nulls = _printed(topic, "-o", "beginning", "-c", "3", "-Z", "-f", "[%k|%v]\\n", brokers=kafka.bootstrap)
    assert nulls == ["[NULL|text \u00e9]", "[k|NULL]", "[|]"]
    plain = _printed(topic, "-o", "beginning", "-c", "3", "-f", "[%k|%v]\\n", brokers=kafka.bootstrap)
    assert plain == ["[|text \u00e9]", "[k|]", "[|]"]
    both = kafkaev("consume", topic, "-J", "-f", "%v", brokers=kafka.bootstrap)
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_produce_repeated_headers_keep_every_value_in_order(kafka, topic):
    produced = kafkaev("produce", topic, "-H", "a=1", "-H", "b=x=y", "-H", "a=2", "-H", "empty=",
                       stdin="v\n", brokers=kafka.bootstrap)
    assert produced.returncode == 0, produced.stderr
    [record] = _json_lines(topic, "-o", "beginning", "-e", brokers=kafka.bootstrap)
    assert record["headers"] == [["a", "1"], ["b", "x=y"], ["a", "2"], ["empty", ""]]
    bad = _one_line_error(kafkaev("produce", topic, "-H", "novalue", brokers=kafka.bootstrap), "produce", 2)
    assert "--header must look like key=value, got 'novalue'" in bad


def test_consume_several_topics_in_one_command(kafka, make_topic):
    first, second = make_topic(), make_topic(partitions=2)
    assert kafkaev("produce", first, stdin="a\nb\n", brokers=kafka.bootstrap).returncode == 0
    assert kafkaev("produce", second, stdin="c\nd\ne\n", brokers=kafka.bootstrap).returncode == 0
    got = _printed(first, second, "-o", "beginning", "-e", "-f", "%t %v\\n", brokers=kafka.bootstrap)
    assert sorted(got) == sorted([f"{first} a", f"{first} b", f"{second} c", f"{second} d", f"{second} e"])
    group = f"cli-multi-{uuid.uuid4().hex[:8]}"
    grouped = _printed(first, second, "-G", group, "-o", "beginning", "-c", "5", "-f", "%t %v\\n",
                       brokers=kafka.bootstrap)
    assert sorted(grouped) == sorted(got)
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    assert missing in _one_line_error(kafkaev("consume", first, missing, "-e", brokers=kafka.bootstrap), "consume")


def test_consume_negative_offset_counts_back_from_each_partition_end(kafka, make_topic):
    topic = make_topic(partitions=2)
    assert kafkaev("produce", topic, "-p", "0", stdin="a\nb\nc\nd\n", brokers=kafka.bootstrap).returncode == 0
    assert kafkaev("produce", topic, "-p", "1", stdin="x\n", brokers=kafka.bootstrap).returncode == 0
    last_two = _printed(topic, "-o", "-2", "-e", "-f", "%p%v\\n", brokers=kafka.bootstrap)
    assert sorted(last_two) == ["0c", "0d", "1x"]  # partition 1 holds 1 record: from its first
    assert _printed(topic, "-p", "0", "-o", "-10", "-e", brokers=kafka.bootstrap) == ["a", "b", "c", "d"]


def test_consume_start_and_stop_by_timestamp_kcat_style(kafka, topic):
    for batch in ("a\nb\n", "c\nd\n", "e\n"):  # separate runs: each batch a later timestamp
        assert kafkaev("produce", topic, stdin=batch, brokers=kafka.bootstrap).returncode == 0
        time.sleep(0.01)
    stamps = {r["value"]: r["timestamp"] for r in _json_lines(topic, "-o", "beginning", "-e", brokers=kafka.bootstrap)}
    assert stamps["b"] < stamps["c"] < stamps["e"]
    since = stamps["c"]
    assert _printed(topic, "-o", f"s@{since}", "-e", brokers=kafka.bootstrap) == ["c", "d", "e"]
    assert _printed(topic, "-o", f"@{since}", "-e", brokers=kafka.bootstrap) == ["c", "d", "e"]
    # e@ stops before the first record at or after it, and exits without -e
    assert _printed(topic, "-o", "beginning", "-o", f"e@{since}", brokers=kafka.bootstrap) == ["a", "b"]
    assert _printed(topic, "-o", f"s@{since}", "-o", f"e@{stamps['e']}", brokers=kafka.bootstrap) == ["c", "d"]
    two = _one_line_error(kafkaev("consume", topic, "-o", "1", "-o", "2", brokers=kafka.bootstrap), "consume", 2)
    assert "two starts given ('1' and '2')" in two
    bad = _one_line_error(kafkaev("consume", topic, "-o", "e@soon", brokers=kafka.bootstrap), "consume", 2)
    assert "got 'e@soon'" in bad


def _readme_kcat_table() -> list[list[str]]:
    """The kafkaev column of the README's kcat table, each command as its argument list."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### kcat equivalents"):]
    commands = []
    for line in section.splitlines():
        if line.startswith("| `kcat"):
            cell = line.split("|")[2]
            commands += [shlex.split(found)[1:] for found in re.findall(r"`(kafkaev [^`]*)`", cell)]
    return commands


# The table's TLS and SASL rows name a host, files and a user: the secured listeners' own.
SECURE_PLACEHOLDERS = ("host:9093", "host:9094")


def _secure_names(secure) -> dict[str, str]:
    user = secure.sasl_plain
    return {"host:9093": secure.ssl_bootstrap, "host:9094": secure.sasl_bootstrap, "ca.pem": str(secure.ca_cert),
            "client.pem": str(secure.client_cert), "client.key": str(secure.client_key), "alice": user.username,
            "secret": user.password}


def _named(arg: str, names: dict[str, str]) -> str:
    """``arg`` with a placeholder replaced, also as the value of a key=value (-X ssl.ca.location=ca.pem)."""
    key, sep, value = arg.partition("=")
    if sep and value in names:
        return f"{key}={names[value]}"
    return names.get(arg, arg)


def test_every_kafkaev_command_of_the_readme_kcat_table_runs(kafka, make_topic, tmp_path, request):
    events, logs = make_topic(partitions=2), make_topic()
    lines = "".join(f"k{i}:v{i}\n" for i in range(20))  # enough for the table's -p 0 -o 5 -c 10
    assert kafkaev("produce", events, "-p", "0", "-k", ":", stdin=lines, brokers=kafka.bootstrap).returncode == 0
    files = {}
    for name in ("a.bin", "b.bin"):
        (tmp_path / name).write_bytes(b"\x00\x01" + name.encode())
        files[name] = str(tmp_path / name)
    commands = _readme_kcat_table()
    assert len(commands) >= 20
    secured = [args for args in commands if any(p in args for p in SECURE_PLACEHOLDERS)]
    assert len(secured) == 3
    try:
        secure_names = _secure_names(request.getfixturevalue("secure_kafka"))
    except pytest.skip.Exception:
        secure_names = None  # an external cluster: the secured rows cannot run
    for args in commands:
        names = {"events": events, "logs": logs, "grp": f"cli-kcat-{uuid.uuid4().hex[:8]}", **files}
        is_secured = args in secured
        if is_secured:
            if secure_names is None:
                continue
            names.update(secure_names)
        args = [_named(a, names) for a in args]
        if args[0] == "consume" and "-e" not in args and "-c" not in args:
            args.append("-e")  # the table's consumers follow the topic; here they stop at its end
        result = kafkaev(*args, stdin="x\n", brokers=kafka.bootstrap)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
        if is_secured:
            assert f'topic "{events}"' in result.stdout
