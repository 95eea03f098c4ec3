"""Consumer groups on the real broker: a mixed group of kafkaev and confluent-kafka members
under cooperative-sticky, auto-commit with a member killed mid-stream, the coordinator's
broker killed on the three-node cluster, and commit metadata strings."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import confluent_kafka
import confluent_kafka.admin
import pytest
from consumer_helpers import (
    KafkaevMember,
    PeerMember,
    call,
    close,
    fill,
    parse,
    run_until,
    settled,
    sleep,
)

import kafkaev
from kafkaev.types import TopicPartition

SESSION_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_MS = 500


class Member(KafkaevMember):
    """A kafkaev classic member, cooperative-sticky unless told otherwise."""

    def __init__(self, loop: Any, bootstrap: str, topic: str, group: str, **options: Any) -> None:
        options = {"session_timeout_ms": SESSION_MS, "heartbeat_interval_ms": HEARTBEAT_MS,
                   "assignors": ("cooperative-sticky",), **options}
        super().__init__(loop, bootstrap, topic, group, **options)


def cooperative_peer(bootstrap: str, topic: str, group: str) -> PeerMember:
    """A librdkafka member under the classic protocol with cooperative-sticky."""
    return PeerMember(bootstrap, topic, group, "classic", **{
        "partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": SESSION_MS,
        "heartbeat.interval.ms": HEARTBEAT_MS})


@pytest.mark.compat
@pytest.mark.slow
def test_mixed_cooperative_group_keeps_partitions_in_place(kafka, make_topic, loop):
    topic = make_topic(partitions=12)
    group = f"mixed-{uuid.uuid4().hex[:8]}"
    everything = {TopicPartition(topic, p) for p in range(12)}
    members = [Member(loop, kafka.bootstrap, topic, group)]
    confluent = cooperative_peer(kafka.bootstrap, topic, group)
    try:
        def owners() -> list[set[TopicPartition]]:
            return [m.owned for m in members] + [confluent.snapshot()]

        for count in (2, 3):
            run_until(loop, lambda: settled(owners(), everything), 60, f"{count} members to settle")
            members.append(Member(loop, kafka.bootstrap, topic, group))
        run_until(loop, lambda: settled(owners(), everything), 60, "4 members to settle")

        # The fourth member joins: partitions that stay with their owner are never revoked.
        before = [set(m.owned) for m in members] + [confluent.snapshot()]
        for m in members:
            m.revoked.clear()
        confluent.revoked.clear()
        members.append(Member(loop, kafka.bootstrap, topic, group))
        run_until(loop, lambda: settled(owners(), everything), 60, "5 members to settle")
        sleep(loop, 2 * HEARTBEAT_MS / 1000)
        assert settled(owners(), everything)
        after = [set(m.owned) for m in members[:-1]] + [confluent.snapshot()]
        revocations = [m.revoked for m in members[:-1]] + [confluent.revoked]
        for old, new, revoked in zip(before, after, revocations, strict=True):
            kept = old & new
            assert not kept & set(revoked), f"partitions that stayed were revoked: {kept & set(revoked)}"
            assert set(revoked) == old - new, "exactly the partitions that moved are revoked"
            assert new <= old, "an existing member only gives partitions away when one joins"
        assert len(members[-1].owned) >= 2  # the newcomer got its share

        # Members leave one by one; after each leave everything is owned exactly once again.
        while len(members) > 1:
            leaving = members.pop(0)
            close(loop, leaving.client)
            run_until(loop, lambda: settled(owners(), everything), 60, "the group to settle")
        for m in members:
            assert not m.received.errors, m.received.errors
    finally:
        confluent.close()
        for m in members:
            close(loop, m.client)


class CommitWatch:
    """Samples the group's committed offsets from another thread and records any step back."""

    # librdkafka can keep asking a coordinator that died; after this many failed lookups in a
    # row the watcher starts over with a fresh consumer (a fresh FindCoordinator).
    FAILURES_BEFORE_RECONNECT = 3

    def __init__(self, bootstrap: str, topic: str, group: str, partitions: int) -> None:
        self.config = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
        self.admin = confluent_kafka.Consumer(self.config)
        self.parts = [confluent_kafka.TopicPartition(topic, p) for p in range(partitions)]
        self.highest: dict[int, int] = {}
        self.backwards: list[tuple[int, int, int]] = []
        self.samples = 0
        self.failures = 0
        self.reconnects = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        failed_in_a_row = 0
        while not self.stop.is_set():
            try:
                committed = self.admin.committed(self.parts, timeout=5)
            except confluent_kafka.KafkaException:
                self.failures += 1
                failed_in_a_row += 1
                if failed_in_a_row >= self.FAILURES_BEFORE_RECONNECT:
                    self.admin.close()
                    self.admin = confluent_kafka.Consumer(self.config)
                    self.reconnects += 1
                    failed_in_a_row = 0
                time.sleep(0.1)
                continue
            failed_in_a_row = 0
            for tp in committed:
                if tp.offset < 0:
                    continue
                prior = self.highest.get(tp.partition, -1)
                if tp.offset < prior:
                    self.backwards.append((tp.partition, prior, tp.offset))
                self.highest[tp.partition] = max(prior, tp.offset)
            self.samples += 1
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.admin.close()


def test_auto_commit_with_a_member_killed_mid_stream_loses_nothing(kafka, make_topic, loop):
    topic = make_topic(partitions=6)
    per_partition = 3000
    group = f"killed-{uuid.uuid4().hex[:8]}"
    writer = threading.Thread(target=fill, args=(kafka.bootstrap, topic, 6, per_partition))
    writer.start()
    watch = CommitWatch(kafka.bootstrap, topic, group, 6)
    members = [Member(loop, kafka.bootstrap, topic, group, auto_commit_interval_ms=200) for _ in range(3)]
    try:
        run_until(loop, lambda: sum(m.received.count for m in members) > 2000, 60, "consumption to start")
        victim = members[0]
        victim.client._consumer.abandon()  # a crash: no commit, no LeaveGroup
        seen_by_victim = {(k, o) for k, offs in victim.received.offsets.items() for o in offs}
        writer.join(60)

        def all_seen() -> bool:
            seen = set(seen_by_victim)
            for m in members[1:]:
                seen.update((k, o) for k, offs in m.received.offsets.items() for o in offs)
            return len(seen) >= 6 * per_partition

        run_until(loop, all_seen, SESSION_MS / 1000 + 60, "every record to be processed by someone")
        for m in members[1:]:
            for (_t, p), values in m.received.values.items():
                assert all(parse(v)[0] == p for v in values), "a record was delivered for the wrong partition"
        # Let the survivors' auto-commit catch up, then every committed offset is the end.
        run_until(loop, lambda: all(watch.highest.get(p) == per_partition for p in range(6)), 30,
                  "committed offsets to reach the end")
        assert watch.samples > 10
        assert not watch.backwards, f"committed offsets went backwards: {watch.backwards}"
        for m in members[1:]:
            assert not [e for e in m.received.errors], m.received.errors
    finally:
        watch.close()
        for m in members[1:]:
            close(loop, m.client)
        members[0].client.close()


GROUP_SESSION_3NODE_MS = 10000


def run_committed(loop: Any, client: Any, topic: str, partitions: int = 4) -> Any:
    """What a member reads back as committed (for a failure message): {partition: offset} or the error."""
    future = loop.create_future()
    client.committed([(topic, p) for p in range(partitions)],
                     lambda result, err: future.done() or future.set_result(err if err is not None else result))
    try:
        return loop.run_until_complete(asyncio.wait_for(future, 10))
    except asyncio.TimeoutError:
        return "no answer within 10 s"


@pytest.mark.slow
def test_group_recovers_when_the_coordinator_broker_dies(kafka3, loop):
    topic = kafka3.create_topic(kafka3.unique_topic_name("coordinator-kill"), partitions=4)
    group = f"coord-{uuid.uuid4().hex[:8]}"
    fill(kafka3.bootstrap, topic, 4, 500)
    members = [Member(loop, kafka3.bootstrap, topic, group, auto_commit_interval_ms=200,
                      session_timeout_ms=GROUP_SESSION_3NODE_MS) for _ in range(2)]
    killed = None
    watch = None
    try:
        run_until(loop, lambda: sum(m.received.count for m in members) >= 2000, 60, "the first records")
        described = kafka3.admin().describe_consumer_groups([group])[group].result(timeout=10)
        killed = described.coordinator.id
        survivors = [n for n in kafka3.running_nodes() if n != killed]
        watch_bootstrap = ",".join(kafka3.node(n).bootstrap for n in survivors)
        kafka3.kill(killed)
        killed_at = time.monotonic()
        watch = CommitWatch(watch_bootstrap, topic, group, 4)
        fill(watch_bootstrap, topic, 4, 500)  # more records while the group fails over

        def complete() -> bool:
            seen = set()
            for m in members:
                seen.update((k, o) for k, offs in m.received.offsets.items() for o in offs)
            return len(seen) >= 4000

        run_until(loop, complete, 60, "every record after the coordinator died")
        try:
            run_until(loop, lambda: all(watch.highest.get(p) == 1000 for p in range(4)), 60,
                      "commits to reach the end through the new coordinator")
        except AssertionError as exc:
            mine = [run_committed(loop, m.client, topic) for m in members]
            raise AssertionError(
                f"{exc}: the watcher saw {watch.highest} ({watch.samples} samples, {watch.failures} failed, "
                f"{watch.reconnects} reconnects); the members read {mine} and reported {[m.received.errors for m in members]}"
            ) from None
        recovered_after = time.monotonic() - killed_at
        assert not watch.backwards, watch.backwards
        assert recovered_after < 60
        # Recovery within the session timeout: no member lost its partitions to expiry.
        assert not [m.lost for m in members if m.lost], [m.lost for m in members]
        # The commits can reach the end while a cooperative round that moved a partition is still
        # between its revoke and its assign: ownership is checked once the group has settled.
        everything = {TopicPartition(topic, p) for p in range(4)}

        def one_owner_each() -> bool:
            owners = [m.owned for m in members]
            return set().union(*owners) == everything and sum(len(o) for o in owners) == len(everything)

        try:
            run_until(loop, one_owner_each, GROUP_SESSION_3NODE_MS / 1000, "one owner per partition")
        except AssertionError as exc:
            owned = [sorted(p.partition for p in m.owned) for m in members]
            raise AssertionError(f"{exc}: the members own {owned}") from None
    finally:
        if watch is not None:
            watch.close()
        for m in members:
            m.client.close()
        sleep(loop, 0.5)
        if killed is not None:
            kafka3.restart(killed)


def test_partition_count_change_and_static_member_rejoin(kafka, make_topic, loop):
    """More partitions seen in metadata trigger a rebalance that hands them out; a static member
    that restarts with its group_instance_id gets its partitions back without a LeaveGroup."""
    topic = make_topic(partitions=2)
    group = f"grow-{uuid.uuid4().hex[:8]}"
    everything = {TopicPartition(topic, p) for p in range(2)}
    first = Member(loop, kafka.bootstrap, topic, group, group_instance_id="pod-a")
    second = Member(loop, kafka.bootstrap, topic, group, group_instance_id="pod-b")
    try:
        run_until(loop, lambda: settled([first.owned, second.owned], everything), 30, "two static members")
        first.client._consumer.ctx.metadata.refresh()  # the client notices new partitions on refresh
        kafka.admin().create_partitions([confluent_kafka.admin.NewPartitions(topic, 4)])[topic].result(timeout=10)
        everything = {TopicPartition(topic, p) for p in range(4)}

        def grown() -> bool:
            for m in (first, second):
                m.client._consumer.ctx.metadata.request_refresh()
            return settled([first.owned, second.owned], everything)

        run_until(loop, grown, 30, "the new partitions to be assigned")
        before = set(second.owned)
        close(loop, second.client)  # static: no LeaveGroup, the coordinator keeps its slot
        sleep(loop, 1.0)
        assert first.owned == everything - before, "a static member's partitions wait for it"
        second = Member(loop, kafka.bootstrap, topic, group, group_instance_id="pod-b")
        run_until(loop, lambda: second.owned == before, 30, "the static member to get its partitions back")
        assert not first.revoked or not set(first.revoked) & (everything - before)
    finally:
        close(loop, first.client)
        close(loop, second.client)


def test_eager_range_group_revokes_everything_before_rejoining(kafka, make_topic, loop):
    topic = make_topic(partitions=6)
    group = f"eager-{uuid.uuid4().hex[:8]}"
    everything = {TopicPartition(topic, p) for p in range(6)}
    first = Member(loop, kafka.bootstrap, topic, group, assignors=("range",))
    members = [first]
    try:
        run_until(loop, lambda: first.owned == everything, 30, "the first member to own everything")
        members.append(Member(loop, kafka.bootstrap, topic, group, assignors=("range",)))
        run_until(loop, lambda: settled([m.owned for m in members], everything), 30, "two range members")
        # Eager: the first member gave up every partition before the join, then got its range back.
        assert sorted(first.revoked) == sorted(everything)
        low, high = {TopicPartition(topic, p) for p in range(3)}, {TopicPartition(topic, p) for p in range(3, 6)}
        assert {frozenset(first.owned), frozenset(members[1].owned)} == {frozenset(low), frozenset(high)}, \
            "range: contiguous halves by member order"
        assert not members[1].revoked
    finally:
        for m in members:
            close(loop, m.client)


@pytest.mark.compat
def test_commit_stores_a_metadata_string_that_kafkaev_and_confluent_kafka_read_back(kafka, make_topic, loop):
    topic = make_topic(partitions=2)
    group = f"meta-{uuid.uuid4().hex[:8]}"
    fill(kafka.bootstrap, topic, 2, 20)
    member = Member(loop, kafka.bootstrap, topic, group, auto_commit=False)
    try:
        run_until(loop, lambda: len(member.owned) == 2, 30, "the assignment")
        with pytest.raises(TypeError, match=r"metadata for .*\[0\] must be a str or None, got bytes"):
            member.client.commit(None, {(topic, 0): kafkaev.OffsetAndMetadata(3, b"raw")})
        with pytest.raises(ValueError, match=r"leader_epoch for .*\[1\] must be an int >= -1"):
            member.client.commit(None, {(topic, 1): kafkaev.OffsetAndMetadata(3, None, -5)})
        (err,) = call(loop, lambda cb: member.client.commit(cb, {
            (topic, 0): kafkaev.OffsetAndMetadata(7, "checkpoint é"),
            (topic, 1): 11,
        }))
        assert err is None
        result, err = call(loop, lambda cb: member.client.committed([(topic, 0), (topic, 1)], cb, metadata=True))
        assert err is None
        assert result[TopicPartition(topic, 0)][:2] == (7, "checkpoint é")
        assert result[TopicPartition(topic, 1)].offset == 11
        assert not result[TopicPartition(topic, 1)].metadata  # none given: the broker stores ""
        plain, err = call(loop, lambda cb: member.client.committed([(topic, 0)], cb))
        assert plain == {TopicPartition(topic, 0): 7}
        # A Java-compatible client sees the same string. confluent-kafka's binding copies it as a
        # NUL-terminated C string (strdup), not by its size, and its own commits store the NUL
        # too: once in a while a byte of whatever followed in its memory came after the string
        # (CI saw 'checkpoint éU'). kafkaev's committed() above read the stored bytes exactly,
        # so the peer's string is held to its start.
        peer = confluent_kafka.Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group})
        try:
            (seen,) = peer.committed([confluent_kafka.TopicPartition(topic, 0)], timeout=10)
        finally:
            peer.close()
        assert seen.offset == 7 and seen.metadata.startswith("checkpoint é"), seen
    finally:
        close(loop, member.client)
