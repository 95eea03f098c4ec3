"""The consumer group protocol (KIP-848) on the real broker.

A mixed group of kafkaev, confluent-kafka (``group.protocol=consumer``) and Java
(``VerifiableConsumer --group-protocol consumer``) members on one topic: after each join, leave
and SIGKILL every partition is owned by exactly one member, only moved partitions are revoked,
no record is lost and no commit goes backwards. Static membership: a member restarted with its
instance id gets its partitions back and nobody else's assignment changes. The classic-only
options are refused under "consumer".
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import uuid
from typing import Any

import confluent_kafka
import pytest
from consumer_helpers import (
    KafkaevMember,
    PeerMember,
    Received,
    close,
    connect,
    crash,
    fill,
    parse,
    run_until,
    set_group_session,
    settled,
    sleep,
)

import kafkaev
from kafkaev.consumer.membership import GroupState
from kafkaev.testing import jars
from kafkaev.types import TopicPartition

PARTITIONS = 24
# The group's session on the broker (group.consumer.session.timeout.ms, set per group): how long a
# killed member's partitions wait before they move.
SESSION_MS = 6000
RECORDS = int(os.environ.get("KAFKAEV_KIP848_RECORDS", "1000000"))
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"


class Member(KafkaevMember):
    """A kafkaev consumer-protocol member (auto-commit every 200 ms)."""

    def __init__(self, loop: Any, bootstrap: str, topic: str, group: str, *, client_rack: str | None = None,
                 **options: Any) -> None:
        super().__init__(loop, bootstrap, topic, group, group_protocol="consumer", auto_commit_interval_ms=200,
                         client_options={} if client_rack is None else {"client_rack": client_rack}, **options)


class JavaMember:
    """The Java client's VerifiableConsumer (--group-protocol consumer), its JSON events read on a thread."""

    def __init__(self, cluster: Any, topic: str, group: str, received: dict[TopicPartition, set[int]]) -> None:
        self.owned: set[TopicPartition] = set()
        self.revoked: list[TopicPartition] = []
        self.received = received
        self.lock = threading.Lock()
        self.process = subprocess.Popen(
            ["java", "-cp", jars.classpath(cluster.version), VERIFIABLE_CONSUMER, "--bootstrap-server",
             cluster.bootstrap, "--topic", topic, "--group-id", group, "--group-protocol", "consumer",
             "--reset-policy", "earliest", "--verbose"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            name = event.get("name")
            with self.lock:
                if name == "partitions_assigned":
                    self.owned.update(TopicPartition(p["topic"], p["partition"]) for p in event["partitions"])
                elif name in ("partitions_revoked", "partitions_lost"):
                    gone = [TopicPartition(p["topic"], p["partition"]) for p in event["partitions"]]
                    self.revoked.extend(gone)
                    self.owned.difference_update(gone)
                elif name == "record_data":
                    tp = TopicPartition(event["topic"], event["partition"])
                    self.received.setdefault(tp, set()).add(event["offset"])

    def snapshot(self) -> set[TopicPartition]:
        with self.lock:
            return set(self.owned)

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def committed(cluster: Any, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets, read by confluent-kafka (the oracle)."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    try:
        parts = consumer.committed([confluent_kafka.TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        consumer.close()
    return {p.partition: p.offset for p in parts}


# --- options --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("option,value", [("assignors", ("range",)), ("session_timeout_ms", 10000),
                                          ("heartbeat_interval_ms", 1000)])
def test_classic_only_options_are_refused_under_consumer(option, value, loop):
    client = kafkaev.Client("127.0.0.1:1", loop=loop, on_message=lambda m: None)
    with pytest.raises(ValueError, match=option):
        client.subscribe(["t"], group_id="g", group_protocol="consumer", **{option: value})
    with pytest.raises(ValueError, match=option):
        kafkaev.Client("127.0.0.1:1", loop=loop, group_protocol="consumer", **{option: value})


def test_remote_assignor_needs_the_consumer_protocol(loop):
    client = kafkaev.Client("127.0.0.1:1", loop=loop, on_message=lambda m: None)
    with pytest.raises(ValueError, match="remote_assignor"):
        client.subscribe(["t"], group_id="g", remote_assignor="range")
    with pytest.raises(ValueError, match="group_protocol"):
        client.subscribe(["t"], group_id="g", group_protocol="next")


# --- the mixed group ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_mixed_group_moves_only_what_it_must_and_loses_nothing(kafka, make_topic, loop):
    topic = make_topic(partitions=PARTITIONS)
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    set_group_session(kafka, group, SESSION_MS)
    per_partition = RECORDS // PARTITIONS
    fill(kafka.bootstrap, topic, PARTITIONS, per_partition)
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    java_received: dict[TopicPartition, set[int]] = {}
    members: list[Any] = []
    watched: list[Any] = []  # members whose ownership the invariant covers (the live ones)
    commits_seen: dict[int, int] = {}

    def owners() -> list[set[TopicPartition]]:
        return [m.snapshot() for m in watched]

    def check_commits_forward() -> None:
        for partition, offset in committed(kafka, group, topic).items():
            assert offset >= commits_seen.get(partition, -1001), (partition, offset, commits_seen)
            commits_seen[partition] = offset

    def join(member: Any, what: str) -> None:
        before = owners()
        for m in watched:
            m.revoked.clear()
        members.append(member)
        watched.append(member)
        run_until(loop, lambda: settled(owners(), everything), 90, what)
        sleep(loop, 1.0)
        assert settled(owners(), everything), what
        # Only what moved was revoked: each earlier member revoked exactly what it gave up.
        for m, had in zip(watched, before, strict=False):
            assert set(m.revoked) == had - m.snapshot(), (
                what, type(m).__name__, sorted(tp.partition for tp in had), sorted(tp.partition for tp in m.snapshot()),
                sorted(tp.partition for tp in m.revoked), [tp.partition for tp in getattr(m, "lost", [])],
                [m.received.errors[:3] for m in watched if isinstance(m, Member)])
        check_commits_forward()

    try:
        join(Member(loop, kafka.bootstrap, topic, group), "the first kafkaev member")
        join(Member(loop, kafka.bootstrap, topic, group), "a second kafkaev member")
        join(PeerMember(kafka.bootstrap, topic, group, "consumer", **{"auto.commit.interval.ms": 200}),
             "the confluent-kafka member")
        join(JavaMember(kafka, topic, group, java_received), "the Java member")
        join(Member(loop, kafka.bootstrap, topic, group), "a third kafkaev member")

        # A kafkaev member leaves (epoch -1): its partitions go to the others.
        leaving = members[1]
        close(loop, leaving.client)
        watched.remove(leaving)
        run_until(loop, lambda: settled(owners(), everything), 90, "the group after a leave")

        # A kafkaev member dies (no leave, no commit): after the session its partitions move.
        killed = members[0]
        crash(loop, killed.client)
        watched.remove(killed)
        run_until(loop, lambda: settled(owners(), everything), 90, "the group after a SIGKILL")
        check_commits_forward()

        # Every record was read by some member: none lost.
        def all_read() -> bool:
            seen: dict[TopicPartition, set[int]] = {tp: set(o) for tp, o in java_received.items()}
            for m in members:
                if isinstance(m, PeerMember):
                    for tp, read in m.offsets_read().items():
                        seen.setdefault(tp, set()).update(read)
                if isinstance(m, Member):
                    for (t, p), offsets in m.received.offsets.items():
                        seen.setdefault(TopicPartition(t, p), set()).update(offsets)
            return all(len(seen.get(tp, ())) == per_partition for tp in everything)

        run_until(loop, all_read, 300, "every record to be consumed")
        for m in members:
            if isinstance(m, Member):
                assert not m.received.errors, m.received.errors
                assert m.lost == [], "a member that was not fenced lost partitions"
                for (_t, p), values in m.received.values.items():
                    assert all(parse(v)[0] == p for v in values)
        run_until(loop, lambda: all(o >= per_partition for o in committed(kafka, group, topic).values()), 60,
                  "the group to commit the end of every partition")
        check_commits_forward()
    finally:
        for m in members:
            if isinstance(m, Member):
                crash(loop, m.client)
            else:
                m.close()


# --- static membership ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_static_member_restarted_within_the_session_gets_its_partitions_back(kafka, make_topic, loop):
    topic = make_topic(partitions=PARTITIONS)
    group = f"kip848-static-{uuid.uuid4().hex[:8]}"
    set_group_session(kafka, group, 20000)
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    members = [Member(loop, kafka.bootstrap, topic, group, group_instance_id=f"static-{i}") for i in range(3)]
    try:
        run_until(loop, lambda: settled([m.snapshot() for m in members], everything), 90, "three static members")
        sleep(loop, 1.0)
        before = [m.snapshot() for m in members]
        metadata = members[0].client.group_metadata()
        assert metadata.group_id == group and metadata.group_instance_id == "static-0"
        assert metadata.generation_id > 0 and metadata.member_id

        # Member 0 leaves as a static member (epoch -2) and comes back with the same instance id.
        close(loop, members[0].client)
        sleep(loop, 1.0)
        assert [m.snapshot() for m in members[1:]] == before[1:], "others gained partitions while it was away"
        members[0] = Member(loop, kafka.bootstrap, topic, group, group_instance_id="static-0")
        run_until(loop, lambda: members[0].snapshot() == before[0], 60, "the restarted member's partitions")
        sleep(loop, 1.5)
        assert [m.snapshot() for m in members] == before
        assert all(not m.revoked for m in members[1:]), "another member's assignment changed"
    finally:
        for m in members:
            crash(loop, m.client)


@pytest.mark.slow
def test_a_second_process_with_a_live_instance_id_is_refused(kafka, make_topic, loop):
    topic = make_topic(partitions=2)
    group = f"kip848-unreleased-{uuid.uuid4().hex[:8]}"
    first = Member(loop, kafka.bootstrap, topic, group, group_instance_id="only-one")
    second = None
    try:
        run_until(loop, lambda: len(first.snapshot()) == 2, 60, "the first member's assignment")
        second = Member(loop, kafka.bootstrap, topic, group, group_instance_id="only-one")
        run_until(loop, lambda: bool(second.received.errors), 30, "the second member's error")
        assert second.received.errors[0].code == kafkaev.errors.UNRELEASED_INSTANCE_ID
        assert second.client._consumer.group_state() is GroupState.FAILED
        assert first.snapshot() == {TopicPartition(topic, 0), TopicPartition(topic, 1)}
    finally:
        crash(loop, first.client)
        if second is not None:
            crash(loop, second.client)


# --- regex subscriptions -------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_topic_created_after_subscribing_to_a_pattern_is_consumed(protocol, kafka, make_topic, loop):
    prefix = f"rx{uuid.uuid4().hex[:8]}"
    first = kafka.create_topic(f"{prefix}.one", partitions=2)
    kafka.create_topic(f"other{prefix}.no", partitions=1)  # does not match: never assigned
    received = Received()
    owned: set[TopicPartition] = set()
    client = connect(loop, kafka.bootstrap, on_batch=received.on_batch, on_error=received.on_error,
                     metadata_max_age_ms=500)
    client.subscribe(pattern=rf"{prefix}\..*", group_id=f"{prefix}-{protocol}", group_protocol=protocol,
                     on_assign=owned.update, on_revoke=owned.difference_update)
    try:
        fill(kafka.bootstrap, first, 2, 10)
        run_until(loop, lambda: received.count == 20, 60, "the records of the topic matching from the start")
        second = kafka.create_topic(f"{prefix}.two", partitions=3)
        fill(kafka.bootstrap, second, 3, 10)
        run_until(loop, lambda: received.count == 50, 90, "the records of the topic created after subscribing")
        assert {t for t, _p in received.offsets} == {first, second}
        assert owned == {TopicPartition(first, p) for p in range(2)} | {TopicPartition(second, p) for p in range(3)}
        assert not received.errors, received.errors
    finally:
        close(loop, client)


@pytest.mark.slow
def test_a_second_subscribe_changes_the_topics_and_keeps_the_protocol(kafka, make_topic, loop):
    first, second = make_topic(partitions=2), make_topic(partitions=3)
    member = Member(loop, kafka.bootstrap, first, f"resub-{uuid.uuid4().hex[:8]}")
    try:
        run_until(loop, lambda: len(member.snapshot()) == 2, 60, "the first topic's partitions")
        member.client.subscribe([first, second], group_id=member.client._consumer.group.group_id)
        wanted = {TopicPartition(first, p) for p in range(2)} | {TopicPartition(second, p) for p in range(3)}
        run_until(loop, lambda: member.snapshot() == wanted, 60, "both topics' partitions")
        assert member.client._consumer.group_protocol == "consumer" and member.revoked == []
    finally:
        close(loop, member.client)
