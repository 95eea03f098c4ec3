"""Online migration between the group protocols (Kafka 4.x lets a group hold classic and
consumer-protocol members at once): a group of kafkaev and confluent-kafka members moves from
"classic" to "consumer" one member at a time and back, while a producer writes. Nothing is lost,
and a record is read twice only if it lies in what a member had read and not committed when it
moved: at each move the member's read position and the group's commit, read at once after it left,
bound the records a later owner may read again, record by record."""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import confluent_kafka
import pytest
from consumer_helpers import (
    KafkaevMember,
    PeerMember,
    call,
    close,
    crash,
    run_until,
    set_group_session,
    settled,
    sleep,
)

from kafkaev.admin import Admin
from kafkaev.types import TopicPartition

PARTITIONS = 12
PRODUCE_EVERY_S = 0.002
# The group's commits are read right after a member left, before the group has handed its
# partitions on (the next owner's first commit is an auto-commit interval later still).
COMMIT_READ_TIMEOUT_S = 10
# Where a partition with no commit is read from (auto.offset.reset "earliest" on a new topic).
FIRST_OFFSET = 0


class Producer:
    """confluent-kafka writing numbered records to every partition until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                                  "enable.idempotence": True})
        self.topic = topic
        self.stop = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.producer.produce(self.topic, value=b"%d" % self.sent, partition=self.sent % PARTITIONS)
            self.sent += 1
            self.producer.poll(0)
            time.sleep(PRODUCE_EVERY_S)
        assert self.producer.flush(30) == 0

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(60)


# The classic members' session and heartbeat; consumer-protocol members take them from the group.
CLASSIC_SESSION_MS = 6000
CLASSIC_HEARTBEAT_MS = 500


def kafkaev_member(loop: Any, bootstrap: str, topic: str, group: str, protocol: str) -> KafkaevMember:
    # Classic members offer what the confluent-kafka ones do (range): in a group the broker
    # has moved to the consumer protocol, a classic member that also offered
    # cooperative-sticky had its SyncGroup refused with INCONSISTENT_GROUP_PROTOCOL.
    extra: dict[str, Any] = {"session_timeout_ms": CLASSIC_SESSION_MS, "heartbeat_interval_ms": CLASSIC_HEARTBEAT_MS,
                             "assignors": ("range",)} if protocol == "classic" else {}
    return KafkaevMember(loop, bootstrap, topic, group, group_protocol=protocol, auto_commit_interval_ms=200, **extra)


def peer_member(bootstrap: str, topic: str, group: str, protocol: str) -> PeerMember:
    config: dict[str, Any] = {"auto.commit.interval.ms": 200}
    if protocol == "classic":
        # With librdkafka on cooperative-sticky the broker refused the upgrade as a custom
        # assignor's (KAFKA-18134: no assignor user data is carried over); with range it accepts it.
        config.update({"partition.assignment.strategy": "range", "session.timeout.ms": CLASSIC_SESSION_MS,
                       "heartbeat.interval.ms": CLASSIC_HEARTBEAT_MS})
    return PeerMember(bootstrap, topic, group, protocol, **config)


@dataclass(frozen=True, slots=True)
class Uncommitted:
    """What a member had read of one partition past the group's commit when it moved: the
    records at offsets [committed, read_end), which the partition's next owner reads again."""

    partition: int
    committed: int
    read_end: int

    def holds(self, offset: int) -> bool:
        return self.committed <= offset < self.read_end


def offsets_read(member: KafkaevMember | PeerMember) -> dict[int, list[int]]:
    """Every offset ``member`` delivered to the application, per partition, in delivery order."""
    source = member.received.offsets if isinstance(member, KafkaevMember) else member.offsets_read()
    return {key[1]: list(values) for key, values in source.items()}


def uncommitted_at_move(loop: Any, admin: Admin, group: str, member: KafkaevMember | PeerMember,
                        owned: set[TopicPartition]) -> list[Uncommitted]:
    """Called right after ``member`` left: per partition it owned, the group's commit (which its
    leaving made) against one past the last record it read."""
    read = offsets_read(member)
    committed = call(loop, lambda cb: admin.list_group_offsets(group, cb, partitions=sorted(owned)),
                     COMMIT_READ_TIMEOUT_S)
    found, err = committed
    assert err is None, err
    windows = []
    for tp in owned:
        if not read.get(tp.partition):
            continue
        read_end = max(read[tp.partition]) + 1
        commit = found[tp].offset
        # A commit past what the member read is a next owner's: this one came too late to tell.
        assert commit <= read_end, (tp, commit, read_end)
        windows.append(Uncommitted(tp.partition, max(commit, FIRST_OFFSET), read_end))
    return windows


def unexplained_rereads(reads: Counter[tuple[int, int]], windows: list[Uncommitted]) -> list[tuple[int, int, int]]:
    """(partition, offset, times read) of every record read more often than once plus the
    number of moves that left it uncommitted."""
    extra = []
    for (partition, offset), times in sorted(reads.items()):
        allowed = 1 + sum(1 for w in windows if w.partition == partition and w.holds(offset))
        if times > allowed:
            extra.append((partition, offset, times))
    return extra


def read_spans(offsets: list[int]) -> list[tuple[int, int]]:
    """``offsets`` in delivery order as runs of consecutive offsets (first, last): a re-read
    shows as a run starting below the end of the one before."""
    spans: list[list[int]] = []
    for offset in offsets:
        if spans and offset == spans[-1][1] + 1:
            spans[-1][1] = offset
        else:
            spans.append([offset, offset])
    return [(first, last) for first, last in spans]


def protocol_of(member: KafkaevMember | PeerMember) -> str:
    if isinstance(member, PeerMember):
        return member.protocol
    return member.client._consumer.group_protocol


@pytest.mark.slow
def test_online_migration_classic_to_consumer_and_back(kafka, make_topic, loop):
    topic = make_topic(partitions=PARTITIONS)
    group = f"migrate-{uuid.uuid4().hex[:8]}"
    everything = {TopicPartition(topic, p) for p in range(PARTITIONS)}
    producer = Producer(kafka.bootstrap, topic)
    retired: list[Any] = []
    windows: list[Uncommitted] = []
    admin = Admin(kafka.bootstrap, loop=loop)
    members: list[Any] = [kafkaev_member(loop, kafka.bootstrap, topic, group, "classic"),
                          kafkaev_member(loop, kafka.bootstrap, topic, group, "classic"),
                          peer_member(kafka.bootstrap, topic, group, "classic")]
    try:
        run_until(loop, lambda: settled([m.snapshot() for m in members], everything), 60, "the classic group")
        set_group_session(kafka, group, CLASSIC_SESSION_MS)  # the group exists now; consumer members' session
        call(loop, lambda cb: admin.list_group_offsets(group, cb), COMMIT_READ_TIMEOUT_S)  # its coordinator, found once
        for target in ("consumer", "classic"):
            for index in range(len(members)):
                old = members[index]
                owned = old.snapshot()
                if isinstance(old, KafkaevMember):
                    close(loop, old.client)
                else:
                    old.close()
                windows.extend(uncommitted_at_move(loop, admin, group, old, owned))
                if isinstance(old, KafkaevMember):
                    members[index] = kafkaev_member(loop, kafka.bootstrap, topic, group, target)
                else:
                    members[index] = peer_member(kafka.bootstrap, topic, group, target)
                retired.append(old)
                try:
                    run_until(loop, lambda: settled([m.snapshot() for m in members], everything), 90,
                              f"the group after member {index} moved to {target}")
                except AssertionError as exc:
                    state = [(type(m).__name__, protocol_of(m), sorted(tp.partition for tp in m.snapshot()),
                              m.received.errors[:3] if isinstance(m, KafkaevMember) else None) for m in members]
                    raise AssertionError(f"{exc}: {state}") from None
                sleep(loop, 0.5)
        producer.finish()
        def read_by_all() -> dict[int, list[int]]:
            offsets: dict[int, list[int]] = {}
            for m in retired + members:
                for partition, values in offsets_read(m).items():
                    offsets.setdefault(partition, []).extend(values)
            return offsets

        watermark = confluent_kafka.Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": "wm"})
        try:
            ends = {p: watermark.get_watermark_offsets(confluent_kafka.TopicPartition(topic, p), timeout=10)[1]
                    for p in range(PARTITIONS)}
        finally:
            watermark.close()
        assert sum(ends.values()) == producer.sent

        def complete() -> bool:
            seen = read_by_all()
            return all(set(seen.get(p, ())) >= set(range(ends[p])) for p in range(PARTITIONS))

        run_until(loop, complete, 120, "every record written during the migration")
        reads = Counter((p, offset) for p, offsets in read_by_all().items() for offset in offsets)
        # Graceful moves commit what was read before letting go; a record read again must lie in
        # what one of them read past that commit, once per such move.
        extra = unexplained_rereads(reads, windows)
        rereads = sum(times - 1 for times in reads.values())
        if extra:
            who = [(type(m).__name__, {p: read_spans(v) for p, v in sorted(offsets_read(m).items())
                                       if p in {e[0] for e in extra}}) for m in retired + members]
            raise AssertionError(f"{len(extra)} records read again outside what a move left uncommitted "
                                 f"(of {rereads} re-reads): {extra[:20]}; windows {windows}; read by {who}")
        for m in retired + members:
            if isinstance(m, KafkaevMember):
                assert not m.received.errors, m.received.errors
    finally:
        producer.stop.set()
        admin.close()
        for m in members:
            if isinstance(m, KafkaevMember):
                crash(loop, m.client)
            else:
                m.close()
