"""The group membership state machine against a scripted coordinator: the protocol paths a real
broker produces only under races (MEMBER_ID_REQUIRED, a cooperative revoke followed by a rejoin,
expired membership, a fenced static member, a coordinator move, a commit retried across one)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace as NS
from typing import Any

import pytest

from kafkaev.cluster.metadata import ClusterMetadata, PartitionInfo, TopicInfo
from kafkaev.config import ClientConfig
from kafkaev.consumer.assignors import CooperativeStickyAssignor
from kafkaev.consumer.context import ConsumerContext
from kafkaev.consumer.group import GroupMember, GroupOptions, GroupState
from kafkaev.consumer.offsets import CommitOffset
from kafkaev.consumer.protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkaev.consumer.subscription import Phase, SubscriptionState
from kafkaev.errors import (
    FENCED_INSTANCE_ID,
    MEMBER_ID_REQUIRED,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from kafkaev.types import TopicPartition as TP

TOPIC = "t"


class FakeMetadata:
    def __init__(self, partitions: int) -> None:
        self.current = ClusterMetadata(brokers={1: NS(host="h", port=1)})
        self.current.topics[TOPIC] = TopicInfo(
            TOPIC, None, tuple(PartitionInfo(p, 1, 0, (1,), (1,), NONE) for p in range(partitions)))

    def add_topics(self, topics: Any, auto_create: bool = False) -> bool:
        return False

    def refresh(self, cb: Callable[..., Any] | None = None) -> None:
        if cb is not None:
            asyncio.get_event_loop().call_soon(cb, self.current, None)

    def request_refresh(self) -> None:
        pass

    def topic(self, name: str) -> TopicInfo | None:
        return self.current.topics.get(name)


class Coordinator:
    """Answers group requests from per-API scripts: a list of responders popped in order
    (the last one repeats)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.scripts: dict[str, list[Callable[[dict[str, Any]], Any]]] = {}
        self.node_id = 1

    def script(self, api: str, *responders: Callable[[dict[str, Any]], Any]) -> None:
        self.scripts[api] = list(responders)

    def _answer(self, api: str, cb: Callable[..., Any], **args: Any) -> None:
        self.calls.append((api, args))
        script = self.scripts.get(api)
        if not script:
            return  # never answered (a long JoinGroup)
        responder = script.pop(0) if len(script) > 1 else script[0]
        self.loop.call_soon(cb, responder(args), None)

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    # the Connection API the group uses
    def find_coordinator(self, key: str, cb: Any, *, key_type: int = 0) -> None:
        self._answer("find", cb, key=key)

    def join_group(self, group_id, member_id, protocol_type, protocols, cb, **kw) -> None:
        self._answer("join", cb, member_id=member_id, protocols=protocols, **kw)

    def sync_group(self, group_id, generation_id, member_id, assignments, cb, **kw) -> None:
        self._answer("sync", cb, generation_id=generation_id, member_id=member_id, assignments=assignments)

    def heartbeat(self, group_id, generation_id, member_id, cb, **kw) -> None:
        self._answer("heartbeat", cb, generation_id=generation_id, member_id=member_id)

    def offset_commit(self, group_id, generation_id, member_id, offsets, cb, **kw) -> None:
        self._answer("commit", cb, generation_id=generation_id, offsets=list(offsets))

    def offset_fetch(self, group_id, partitions, cb, **kw) -> None:
        self._answer("offset_fetch", cb, partitions=list(partitions))

    def leave_group(self, group_id, members, cb) -> None:
        self._answer("leave", cb, members=list(members))


class FakePool:
    def __init__(self, conn: Coordinator) -> None:
        self.conn = conn

    def get(self, node_id: int, role: Any, cb: Callable[..., Any]) -> None:
        cb(self.conn, None)

    def disconnect(self, node_id: int, role: Any) -> None:
        pass

    def address(self, node_id: int) -> Any:
        return ("h", 1)


def found(_args):
    return NS(coordinators=[NS(error_code=NONE, node_id=1, host="h", port=1)])


def joined(member: str, generation: int, leader: str, members: list[tuple[str, bytes]] = ()):
    def respond(_args):
        return NS(error_code=NONE, member_id=member, generation_id=generation, protocol_name="cooperative-sticky",
                  leader=leader, skip_assignment=False,
                  members=[NS(member_id=m, group_instance_id=None, metadata=md) for m, md in members])
    return respond


def join_error(code: int, member: str = ""):
    return lambda _a: NS(error_code=code, member_id=member, generation_id=-1, protocol_name="", leader="",
                         members=[])


def synced(partitions: list[int]):
    return lambda _a: NS(error_code=NONE, assignment=encode_assignment([TP(TOPIC, p) for p in partitions]))


def no_committed(args):
    return NS(error_code=NONE, groups=None,
              topics=[NS(name=TOPIC, partitions=[NS(partition_index=p, committed_offset=-1, committed_leader_epoch=-1,
                                                    metadata=None, error_code=NONE) for _t, p in args["partitions"]])])


def commit_refused(code: int):
    def respond(args):
        by_topic: dict[str, list[Any]] = {}
        for o in args["offsets"]:
            by_topic.setdefault(o.topic, []).append(NS(partition_index=o.partition, error_code=code))
        return NS(topics=[NS(name=t, partitions=ps) for t, ps in by_topic.items()])
    return respond


def committed_ok(args):
    by_topic: dict[str, list[Any]] = {}
    for o in args["offsets"]:
        by_topic.setdefault(o.topic, []).append(NS(partition_index=o.partition, error_code=NONE))
    return NS(topics=[NS(name=t, partitions=ps) for t, ps in by_topic.items()])


class Harness:
    def __init__(self, loop: asyncio.AbstractEventLoop, partitions: int = 4, **options: Any) -> None:
        self.loop = loop
        self.coordinator = Coordinator(loop)
        self.errors: list[BaseException] = []
        self.events: list[tuple[str, list[TP]]] = []
        config = ClientConfig(loop=loop)
        self.ctx = ConsumerContext(loop, config, FakeMetadata(partitions), FakePool(self.coordinator),  # type: ignore[arg-type]
                                   SubscriptionState(), self.errors.append)
        opts = dict(group_id="g", topics=frozenset({TOPIC}), assignors=(CooperativeStickyAssignor(),),
                    group_instance_id=None, session_timeout_ms=6000, rebalance_timeout_ms=10000,
                    heartbeat_interval_ms=50, auto_commit=True, auto_commit_interval_ms=100000,
                    on_assign=lambda p: self.events.append(("assign", p)),
                    on_revoke=lambda p: self.events.append(("revoke", p)),
                    on_lost=lambda p: self.events.append(("lost", p)))
        opts.update(options)
        self.member = GroupMember(self.ctx, GroupOptions(**opts), require_stable=False, on_partitions_changed=lambda: None)
        self.coordinator.script("find", found)
        self.coordinator.script("offset_fetch", no_committed)
        self.coordinator.script("commit", committed_ok)

    def run(self, seconds: float = 0.2) -> None:
        self.loop.run_until_complete(asyncio.sleep(seconds))


@pytest.fixture
def harness(loop):
    return lambda **kw: Harness(loop, **kw)


def test_member_id_required_then_leader_assigns_everyone(harness):
    h = harness()
    other = encode_subscription([TOPIC], [], -1, None)
    c = h.coordinator
    c.script("join", join_error(MEMBER_ID_REQUIRED, "m-1"), joined("m-1", 1, "m-1", [("m-1", b""), ("m-2", other)]))
    # The leader's own metadata is what it sent: replay it from the recorded call.
    original = c.join_group

    def join_group(group_id, member_id, protocol_type, protocols, cb, **kw):
        c.scripts["join"] = [joined("m-1", 1, "m-1", [("m-1", protocols[0].metadata), ("m-2", other)])] \
            if member_id == "m-1" else c.scripts["join"]
        original(group_id, member_id, protocol_type, protocols, cb, **kw)

    c.join_group = join_group  # type: ignore[method-assign]
    c.script("sync", synced([0, 1]))
    c.script("heartbeat", lambda _a: NS(error_code=NONE))
    h.member.start()
    h.run()
    joins = [a for n, a in c.calls if n == "join"]
    assert [j["member_id"] for j in joins[:2]] == ["", "m-1"], "rejoin at once with the member id handed out"
    sub = decode_subscription("m-1", None, joins[1]["protocols"][0].metadata)
    assert sub.topics == (TOPIC,) and sub.owned == () and sub.generation == -1
    sync = next(a for n, a in c.calls if n == "sync")
    assignment = {a.member_id: decode_assignment(a.assignment) for a in sync["assignments"]}
    assert sorted(assignment["m-1"] + assignment["m-2"]) == [TP(TOPIC, p) for p in range(4)]
    assert h.member.state is GroupState.STABLE and h.member.generation_id == 1
    assert h.events == [("assign", [TP(TOPIC, 0), TP(TOPIC, 1)])]
    # No committed offset: the partitions reset per auto_offset_reset.
    assert all(h.ctx.subscription.get(TP(TOPIC, p)).phase is Phase.AWAIT_RESET for p in (0, 1))
    assert "heartbeat" in c.names()
    assert not h.errors


def test_cooperative_rebalance_revokes_only_what_moves_then_rejoins(harness):
    h = harness()
    c = h.coordinator
    c.script("join", joined("m-1", 1, "other"), joined("m-1", 2, "other"), joined("m-1", 3, "other"))
    c.script("sync", synced([0, 1, 2, 3]), synced([0, 1]), synced([0, 1]))
    c.script("heartbeat", lambda _a: NS(error_code=NONE))
    h.member.start()
    h.run()
    for p in range(4):
        h.ctx.subscription.get(TP(TOPIC, p)).seek(100 + p, 5)
    c.script("heartbeat", lambda _a: NS(error_code=REBALANCE_IN_PROGRESS), lambda _a: NS(error_code=NONE))
    h.run(0.3)
    joins = [a for n, a in c.calls if n == "join"]
    # The second join reports the four owned partitions (and the generation they belong to).
    sub = decode_subscription("m-1", None, joins[1]["protocols"][0].metadata)
    assert sorted(sub.owned) == [TP(TOPIC, p) for p in range(4)] and sub.generation == 1
    assert ("revoke", [TP(TOPIC, 2), TP(TOPIC, 3)]) in h.events
    assert not [e for e in h.events if e[0] == "revoke" and set(e[1]) & {TP(TOPIC, 0), TP(TOPIC, 1)}]
    # The revoked partitions' positions were committed before they were released.
    commits = [a for n, a in c.calls if n == "commit"]
    assert commits and {(r.partition, r.offset, r.leader_epoch) for r in commits[0]["offsets"]} == {(2, 102, 5), (3, 103, 5)}
    # ... and the member rejoined at once so they can move (KIP-429 follow-up rebalance).
    assert len(joins) >= 3
    assert h.ctx.subscription.get(TP(TOPIC, 0)).position == 100, "kept partitions keep their position"
    assert h.member.state is GroupState.STABLE


def test_unknown_member_in_heartbeat_loses_partitions_and_rejoins_fresh(harness):
    h = harness()
    c = h.coordinator
    c.script("join", joined("m-1", 1, "other"), joined("m-9", 2, "other"))
    c.script("sync", synced([0, 1]), synced([3]))
    c.script("heartbeat", lambda _a: NS(error_code=NONE))
    h.member.start()
    h.run()
    c.script("heartbeat", lambda _a: NS(error_code=UNKNOWN_MEMBER_ID), lambda _a: NS(error_code=NONE))
    h.run(0.3)
    assert ("lost", [TP(TOPIC, 0), TP(TOPIC, 1)]) in h.events
    assert not [e for e in h.events if e[0] == "revoke"], "lost partitions are not revoked (no commit)"
    joins = [a for n, a in c.calls if n == "join"]
    assert joins[-1]["member_id"] == "" and not [n for n, _ in c.calls if n == "commit"]
    assert h.member.owned == [TP(TOPIC, 3)]


def test_fenced_static_member_is_fatal_and_reported(harness):
    h = harness(group_instance_id="pod-1")
    c = h.coordinator
    c.script("join", joined("m-1", 1, "other"))
    c.script("sync", synced([0]))
    c.script("heartbeat", lambda _a: NS(error_code=FENCED_INSTANCE_ID))
    h.member.start()
    h.run(0.3)
    assert h.member.state is GroupState.FAILED
    assert [e.code for e in h.errors] == [FENCED_INSTANCE_ID]
    assert ("lost", [TP(TOPIC, 0)]) in h.events


def test_coordinator_move_is_rediscovered_without_losing_membership(harness):
    h = harness()
    c = h.coordinator
    c.script("join", joined("m-1", 1, "other"))
    c.script("sync", synced([0]))
    c.script("heartbeat", lambda _a: NS(error_code=NOT_COORDINATOR), lambda _a: NS(error_code=NONE))
    h.member.start()
    h.run(0.4)
    assert c.names().count("find") >= 2, "NOT_COORDINATOR makes the member look the coordinator up again"
    assert h.member.state is GroupState.STABLE and h.member.generation_id == 1
    assert not [e for e in h.events if e[0] in ("lost", "revoke")]


def sent_commits(c: Coordinator) -> list[dict[int, int]]:
    return [{o.partition: o.offset for o in args["offsets"]} for name, args in c.calls if name == "commit"]


def test_a_commit_retried_after_a_coordinator_move_never_lands_after_a_newer_one(harness):
    """The failover race behind a committed offset going backwards: commit 500 meets a moving
    coordinator, commit 1000 lands while 500 waits out its backoff; 500 must not be sent again."""
    h = harness()
    c = h.coordinator
    c.script("commit", commit_refused(NOT_COORDINATOR), committed_ok)
    older: list[Any] = []
    newer: list[Any] = []
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(500)}, older.append)
    h.run(0.01)  # the refusal arrives; the retry waits retry_backoff_ms
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(1000)}, newer.append)
    h.run(0.4)
    assert sent_commits(c) == [{0: 500}, {0: 1000}]
    assert newer == [None]
    assert len(older) == 1 and older[0].code == NOT_COORDINATOR and "newer commit" in older[0].message
    assert h.member.offsets.last_committed[TP(TOPIC, 0)] == 1000


def test_a_retried_commit_keeps_the_partitions_no_newer_commit_carries(harness):
    h = harness()
    c = h.coordinator
    c.script("commit", commit_refused(NOT_COORDINATOR), committed_ok)
    older: list[Any] = []
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(500), TP(TOPIC, 1): CommitOffset(700)}, older.append)
    h.run(0.01)
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(1000)}, None)
    h.run(0.4)
    assert sent_commits(c) == [{0: 500, 1: 700}, {0: 1000}, {1: 700}]
    # Partition 1 landed, partition 0 never will from this commit: the callback says so, once.
    assert len(older) == 1 and older[0] is not None and "1 partition(s)" in older[0].message
    assert h.member.offsets.last_committed == {TP(TOPIC, 0): 1000, TP(TOPIC, 1): 700}


def test_a_commit_with_nothing_newer_is_retried_to_success(harness):
    h = harness()
    c = h.coordinator
    c.script("commit", commit_refused(NOT_COORDINATOR), committed_ok)
    done: list[Any] = []
    h.member.offsets.commit({TP(TOPIC, 2): CommitOffset(42)}, done.append)
    h.run(0.4)
    assert sent_commits(c) == [{2: 42}, {2: 42}]
    assert done == [None]
