"""The admin subcommands of the command line, driven as a user would (subprocesses against the real
broker): topics alter, groups reset-offsets and delete, configs describe and alter. ACLs need a
broker with an authorizer: their commands are tested in test_admin_acls.py, on its broker."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

from admin_helpers import FIRST_TIMESTAMP, STEP_MS, commit, eventually, fill, joined_consumer
from test_cli import kafkaev


def _committed(admin, group: str) -> dict[int, int]:
    return {tp.partition: c.offset for tp, c in admin.run(admin.list_group_offsets, group).items()}


def _plan(stdout: str) -> list[tuple[int, str, str]]:
    """(partition, current, new) rows of a reset-offsets table."""
    rows = [line.split("\t") for line in stdout.splitlines()[1:]]
    return [(int(r[2]), r[3], r[4]) for r in rows]


def test_topics_alter_partitions(kafka, admin, topic):
    dry = kafkaev("topics", "alter", topic, "-p", "3", "--dry-run", brokers=kafka.bootstrap)
    assert dry.returncode == 0, dry.stderr
    assert admin.run(admin.describe_topics, [topic])[topic].num_partitions == 1
    grown = kafkaev("topics", "alter", topic, "--partitions", "3", brokers=kafka.bootstrap)
    assert grown.returncode == 0 and grown.stdout == f"grew {topic} to 3 partitions\n", grown.stderr
    assert eventually(lambda: admin.run(admin.describe_topics, [topic])[topic].num_partitions,
                      lambda n: n == 3) == 3
    shrink = kafkaev("topics", "alter", topic, "-p", "2", brokers=kafka.bootstrap)
    assert shrink.returncode == 1 and "INVALID_PARTITIONS" in shrink.stderr
    assert len(shrink.stderr.splitlines()) == 1 and "Traceback" not in shrink.stderr
    missing = kafkaev("topics", "alter", f"no-such-{uuid.uuid4().hex[:6]}", "-p", "2", brokers=kafka.bootstrap)
    assert missing.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr
    usage = kafkaev("topics", "alter", topic, brokers=kafka.bootstrap)
    assert usage.returncode == 2 and "--partitions" in usage.stderr and "Traceback" not in usage.stderr


def test_groups_reset_offsets_each_target_dry_run_and_execute(kafka, admin, make_topic):
    topic = make_topic(partitions=2)
    fill(kafka.bootstrap, topic, 0, 10)
    fill(kafka.bootstrap, topic, 1, 4)
    group = f"cli-reset-{uuid.uuid4().hex[:8]}"
    commit(kafka.bootstrap, group, [(topic, 0, 5), (topic, 1, 2)])

    def reset(*args: str) -> list[tuple[int, str, str]]:
        done = kafkaev("groups", "reset-offsets", group, *args, brokers=kafka.bootstrap)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("GROUP\tTOPIC\tPARTITION\tCURRENT\tNEW\n")
        return _plan(done.stdout)

    assert reset("--all-topics", "--to-earliest") == [(0, "5", "0"), (1, "2", "0")]  # a dry run by default
    assert reset("--topic", topic, "--to-earliest", "--dry-run") == [(0, "5", "0"), (1, "2", "0")]
    assert _committed(admin, group) == {0: 5, 1: 2}
    assert reset("--topic", topic, "--to-latest", "--execute") == [(0, "5", "10"), (1, "2", "4")]
    assert _committed(admin, group) == {0: 10, 1: 4}
    assert reset("--all-topics", "--shift-by", "-3", "--execute") == [(0, "10", "7"), (1, "4", "1")]
    assert reset("--topic", f"{topic}:0", "--to-offset", "2", "--execute") == [(0, "7", "2")]
    assert _committed(admin, group) == {0: 2, 1: 1}
    at_3 = FIRST_TIMESTAMP + 3 * STEP_MS
    assert reset("--all-topics", "--to-timestamp", str(at_3), "--execute") == [(0, "2", "3"), (1, "1", "3")]
    iso = datetime.fromtimestamp(at_3 / 1000, tz=timezone.utc).isoformat()  # the same moment
    assert reset("--all-topics", "--to-datetime", iso, "--dry-run") == [(0, "3", "3"), (1, "3", "3")]
    assert _committed(admin, group) == {0: 3, 1: 3}


def test_groups_reset_offsets_refuses_an_active_group_and_bad_input(kafka, admin, make_topic):
    topic = make_topic(partitions=1)
    fill(kafka.bootstrap, topic, 0, 3)
    group = f"cli-active-{uuid.uuid4().hex[:8]}"
    consumer = joined_consumer(kafka.bootstrap, group, topic)
    try:
        refused = kafkaev("groups", "reset-offsets", group, "--topic", topic, "--to-earliest", "--execute",
                          brokers=kafka.bootstrap)
        assert refused.returncode == 1 and "NON_EMPTY_GROUP" in refused.stderr and "Stable" in refused.stderr
        assert "Traceback" not in refused.stderr
    finally:
        consumer.close()
    for bad in (("--topic", topic), ("--to-earliest",), ("--topic", f"{topic}:x", "--to-latest"),
                ("--topic", topic, "--to-offset", "-1"), ("--topic", topic, "--to-datetime", "soon"),
                ("--topic", topic, "--to-latest", "--execute", "--dry-run")):
        usage = kafkaev("groups", "reset-offsets", group, *bad, brokers=kafka.bootstrap)
        assert usage.returncode == 2, (bad, usage.stderr)
        assert len(usage.stderr.splitlines()) == 1 and "Traceback" not in usage.stderr
    nothing = kafkaev("groups", "reset-offsets", f"cli-none-{uuid.uuid4().hex[:6]}", "--all-topics", "--to-latest",
                      brokers=kafka.bootstrap)
    assert nothing.returncode == 1 and "no committed offsets" in nothing.stderr


def test_groups_describe_both_protocols_and_delete(kafka, admin, topic):
    group = f"cli-del-{uuid.uuid4().hex[:8]}"
    commit(kafka.bootstrap, group, [(topic, 0, 0)])
    consumer_group = f"cli-848-{uuid.uuid4().hex[:8]}"
    consumer = joined_consumer(kafka.bootstrap, consumer_group, topic, protocol="consumer")
    try:
        described = kafkaev("groups", "describe", consumer_group, brokers=kafka.bootstrap)
        assert described.returncode == 0, described.stderr
        assert described.stdout.startswith(f"group {consumer_group} state Stable type consumer assignor ")
        assert f"assigned {topic}[0]" in described.stdout
        listed = kafkaev("groups", "list", "--type", "consumer", brokers=kafka.bootstrap)
        names = [line.split("\t")[0] for line in listed.stdout.splitlines()]
        assert consumer_group in names and group not in names
        busy = kafkaev("groups", "delete", consumer_group, brokers=kafka.bootstrap)
        assert busy.returncode == 1 and "NON_EMPTY_GROUP" in busy.stderr
    finally:
        consumer.close()
    deleted = kafkaev("groups", "delete", group, brokers=kafka.bootstrap)
    assert deleted.returncode == 0 and deleted.stdout == f"deleted {group}\n", deleted.stderr
    assert admin.run(admin.list_group_offsets, group) == {}
    again = kafkaev("groups", "delete", group, brokers=kafka.bootstrap)
    assert again.returncode == 1 and "GROUP_ID_NOT_FOUND" in again.stderr


def test_configs_describe_and_alter(kafka, admin, topic):
    def configs(*args: str):
        return kafkaev("configs", *args, brokers=kafka.bootstrap)

    def described(*args: str, expect: list[str]) -> list[str]:
        return eventually(lambda: configs("describe", *args).stdout.splitlines(), lambda lines: lines == expect)

    preset = configs("describe", "--topic", topic).stdout.splitlines()  # what the harness set
    assert not any(line.startswith(("retention.ms=", "cleanup.policy=")) for line in preset)
    altered = configs("alter", "--topic", topic, "--set", "retention.ms=60000", "--append", "cleanup.policy=compact")
    assert altered.returncode == 0 and altered.stdout == f"altered topic {topic}\n", altered.stderr
    expect = sorted([*preset, "cleanup.policy=delete,compact", "retention.ms=60000"])
    assert described("--topic", topic, expect=expect) == expect
    everything = configs("describe", "--topic", topic, "--all").stdout.splitlines()
    assert "retention.ms=60000\tDYNAMIC_TOPIC_CONFIG" in everything and len(everything) > 20
    assert configs("alter", "--topic", topic, "--delete", "retention.ms", "--subtract",
                   "cleanup.policy=compact").returncode == 0
    expect = sorted([*preset, "cleanup.policy=delete"])
    assert described("--topic", topic, expect=expect) == expect
    dry = configs("alter", "--topic", topic, "--set", "retention.ms=1000", "--dry-run")
    assert dry.returncode == 0 and dry.stdout == f"would alter topic {topic}\n"
    assert configs("describe", "--topic", topic).stdout.splitlines() == expect

    [node] = [b.node_id for b in admin.run(admin.describe_cluster).brokers][:1]
    broker = configs("describe", "--broker", str(node), "--all")
    assert broker.returncode == 0 and any(line.startswith("log.dirs=") for line in broker.stdout.splitlines())
    group = configs("alter", "--group", f"cli-cfg-{uuid.uuid4().hex[:6]}", "--set",
                    "consumer.session.timeout.ms=30000")
    assert group.returncode == 0, group.stderr

    bad = configs("alter", "--topic", topic, "--set", "retention.ms=soon")
    assert bad.returncode == 1 and "INVALID_CONFIG" in bad.stderr and len(bad.stderr.splitlines()) == 1
    missing = configs("describe", "--topic", f"no-such-{uuid.uuid4().hex[:6]}")
    assert missing.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr
    assert configs("alter", "--topic", topic).returncode == 2  # nothing to change: a usage mistake
    for usage in (("describe",), ("describe", "--broker", "one"), ("alter", "--topic", topic, "--set")):
        result = configs(*usage)
        assert result.returncode == 2 and "Traceback" not in result.stderr, usage
