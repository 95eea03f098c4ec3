"""The group membership state machine against a scripted coordinator (a FakeCluster node, real
Connections on loopback sockets): the protocol paths a real broker produces only under races (MEMBER_ID_REQUIRED, a cooperative revoke followed by a rejoin,
expired membership, a fenced static member, a coordinator move, a commit retried across one)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from fake_broker import Delay, FakeCluster, ReceivedRequest, in_turn

from kafkaev.cluster.metadata import Metadata
from kafkaev.cluster.pool import ConnectionPool
from kafkaev.config import ClientConfig
from kafkaev.consumer.assignors import CooperativeStickyAssignor, RangeAssignor
from kafkaev.consumer.context import ConsumerContext
from kafkaev.consumer.group import GroupMember, GroupOptions, GroupState
from kafkaev.consumer.membership import TopicSelection
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
    ILLEGAL_GENERATION,
    MEMBER_ID_REQUIRED,
    NONE,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from kafkaev.protocol import codec
from kafkaev.protocol.codec import ApiKey
from kafkaev.types import TopicPartition as TP

TOPIC = "t"


# Scripted answers: each takes the ReceivedRequest, returns the generated response object.
def joined(member: str, generation: int, leader: str, members: Sequence[tuple[str, bytes]] = (),
           protocol: str = "cooperative-sticky"):
    def respond(_req: ReceivedRequest) -> Any:
        return codec.JoinGroupResponse(
            error_code=NONE, member_id=member, generation_id=generation, protocol_type="consumer",
            protocol_name=protocol, leader=leader, skip_assignment=False,
            members=[codec.JoinGroupResponseMember(member_id=m, group_instance_id=None, metadata=md)
                     for m, md in members])
    return respond


def join_error(code: int, member: str = ""):
    return lambda _req: codec.JoinGroupResponse(error_code=code, member_id=member, generation_id=-1,
                                                protocol_type="consumer", protocol_name="", leader="", members=[])


def synced(partitions: list[int], protocol: str = "cooperative-sticky"):
    return lambda _req: codec.SyncGroupResponse(error_code=NONE, protocol_type="consumer",
                                                protocol_name=protocol,
                                                assignment=encode_assignment([TP(TOPIC, p) for p in partitions]))


def heartbeat(code: int):
    return lambda _req: codec.HeartbeatResponse(error_code=code)


def commit_answered(code: int):
    def respond(req: ReceivedRequest) -> Any:
        return codec.OffsetCommitResponse(topics=[codec.OffsetCommitResponseTopic(name=t.name, partitions=[
            codec.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions]) for t in req.body.topics])
    return respond


def commit_refused(code: int):
    return commit_answered(code)


committed_ok = commit_answered(NONE)


class Harness:
    """A GroupMember with a real pool and metadata, its coordinator node 1 of a FakeCluster that
    answers FindCoordinator, OffsetFetch (nothing committed), Heartbeat and OffsetCommit by
    default; JoinGroup and SyncGroup are scripted per test."""

    def __init__(self, loop: asyncio.AbstractEventLoop, cluster: FakeCluster, partitions: int = 4,
                 **options: Any) -> None:
        self.loop = loop
        self.cluster = cluster
        cluster.create_topic(TOPIC, partitions)
        self.errors: list[BaseException] = []
        self.events: list[tuple[str, list[TP]]] = []
        config = ClientConfig(brokers=cluster.bootstrap, loop=loop)
        pool = ConnectionPool(config, loop)
        metadata = Metadata(config, loop, pool)
        metadata.add_topics([TOPIC], auto_create=False)
        metadata.refresh()
        self.run_until(lambda: metadata.topic(TOPIC) is not None)
        self.ctx = ConsumerContext(loop, config, metadata, pool, SubscriptionState(), self.errors.append)
        opts = dict(group_id="g", selection=TopicSelection(frozenset({TOPIC})), assignors=(CooperativeStickyAssignor(),),
                    group_instance_id=None, session_timeout_ms=6000, rebalance_timeout_ms=10000,
                    heartbeat_interval_ms=50, auto_commit=True, auto_commit_interval_ms=100000,
                    on_assign=lambda p: self.events.append(("assign", p)),
                    on_revoke=lambda p: self.events.append(("revoke", p)),
                    on_lost=lambda p: self.events.append(("lost", p)))
        opts.update(options)
        self.member = GroupMember(self.ctx, GroupOptions(**opts), require_stable=False, on_partitions_changed=lambda: None)

    def run(self, seconds: float = 0.2) -> None:
        self.loop.run_until_complete(asyncio.sleep(seconds))

    def run_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        async def wait() -> None:
            while not predicate():
                await asyncio.sleep(0.002)
        self.loop.run_until_complete(asyncio.wait_for(wait(), timeout))

    def asked(self, api_key: int) -> list[Any]:
        """The bodies of the ``api_key`` requests the coordinator received."""
        return [r.body for r in self.cluster.requests_of(api_key)]

    @property
    def stable(self) -> bool:
        return self.member.state is GroupState.STABLE


@pytest.fixture
def harness(loop, fake_cluster):
    return lambda **kw: Harness(loop, fake_cluster(1), **kw)


def test_member_id_required_then_leader_assigns_everyone(harness):
    h = harness()
    other = encode_subscription([TOPIC], [], -1, None)

    def join(req: ReceivedRequest) -> Any:
        if req.body.member_id == "":
            return join_error(MEMBER_ID_REQUIRED, "m-1")(req)
        # The leader's own metadata is what it sent: replayed from the request.
        return joined("m-1", 1, "m-1", [("m-1", req.body.protocols[0].metadata), ("m-2", other)])(req)

    h.cluster.script(ApiKey.JOIN_GROUP, join)
    h.cluster.script(ApiKey.SYNC_GROUP, synced([0, 1]))
    h.member.start()
    h.run_until(lambda: h.stable and h.asked(ApiKey.HEARTBEAT))
    joins = h.asked(ApiKey.JOIN_GROUP)
    assert [j.member_id for j in joins[:2]] == ["", "m-1"], "rejoin at once with the member id handed out"
    sub = decode_subscription("m-1", None, joins[1].protocols[0].metadata)
    assert sub.topics == (TOPIC,) and sub.owned == () and sub.generation == -1
    sync = h.asked(ApiKey.SYNC_GROUP)[0]
    assignment = {a.member_id: decode_assignment(a.assignment) for a in sync.assignments}
    assert sorted(assignment["m-1"] + assignment["m-2"]) == [TP(TOPIC, p) for p in range(4)]
    assert h.member.state is GroupState.STABLE and h.member.generation_id == 1
    assert h.events == [("assign", [TP(TOPIC, 0), TP(TOPIC, 1)])]
    # No committed offset: the partitions reset per auto_offset_reset.
    assert all(h.ctx.subscription.get(TP(TOPIC, p)).phase is Phase.AWAIT_RESET for p in (0, 1))
    assert not h.errors


def test_cooperative_rebalance_revokes_only_what_moves_then_rejoins(harness):
    h = harness()
    h.cluster.script(ApiKey.JOIN_GROUP, in_turn(joined("m-1", 1, "other"), joined("m-1", 2, "other"),
                                                joined("m-1", 3, "other")))
    h.cluster.script(ApiKey.SYNC_GROUP, in_turn(synced([0, 1, 2, 3]), synced([0, 1]), synced([0, 1])))
    h.member.start()
    h.run_until(lambda: h.stable and h.member.generation_id == 1)
    for p in range(4):
        h.ctx.subscription.get(TP(TOPIC, p)).seek(100 + p, 5)
    h.cluster.script(ApiKey.HEARTBEAT, in_turn(heartbeat(REBALANCE_IN_PROGRESS), heartbeat(NONE)))
    h.run_until(lambda: h.stable and h.member.generation_id == 3)
    joins = h.asked(ApiKey.JOIN_GROUP)
    # The second join reports the four owned partitions (and the generation they belong to).
    sub = decode_subscription("m-1", None, joins[1].protocols[0].metadata)
    assert sorted(sub.owned) == [TP(TOPIC, p) for p in range(4)] and sub.generation == 1
    assert ("revoke", [TP(TOPIC, 2), TP(TOPIC, 3)]) in h.events
    assert not [e for e in h.events if e[0] == "revoke" and set(e[1]) & {TP(TOPIC, 0), TP(TOPIC, 1)}]
    # The revoked partitions' positions were committed before they were released.
    commits = h.asked(ApiKey.OFFSET_COMMIT)
    assert commits and {(p.partition_index, p.committed_offset, p.committed_leader_epoch)
                        for t in commits[0].topics for p in t.partitions} == {(2, 102, 5), (3, 103, 5)}
    # ... and the member rejoined at once so they can move (KIP-429 follow-up rebalance).
    assert len(joins) >= 3
    assert h.ctx.subscription.get(TP(TOPIC, 0)).position == 100, "kept partitions keep their position"
    assert h.member.state is GroupState.STABLE


# Long enough for the test to look at the member while the eager revocation's commit is unanswered.
COMMIT_ANSWER_DELAY_S = 0.3


def test_an_eager_rebalance_revokes_in_the_turn_its_commit_goes_out(harness):
    """Eager: the positions are committed and every partition revoked in one turn, and the rejoin
    waits for the commit's answer. Revoked only once the commit was answered, a partition went
    on delivering meanwhile, and the next owner read those records again."""
    h = harness(assignors=(RangeAssignor(),))
    h.cluster.script(ApiKey.JOIN_GROUP, in_turn(joined("m-1", 1, "other", protocol="range"),
                                                joined("m-1", 2, "other", protocol="range")))
    h.cluster.script(ApiKey.SYNC_GROUP, in_turn(synced([0, 1, 2, 3], "range"), synced([0, 1], "range")))
    h.member.start()
    h.run_until(lambda: h.stable and h.member.generation_id == 1)
    for p in range(4):
        h.ctx.subscription.get(TP(TOPIC, p)).seek(100 + p, 5)
    h.cluster.script(ApiKey.OFFSET_COMMIT, Delay(COMMIT_ANSWER_DELAY_S))
    h.cluster.script(ApiKey.HEARTBEAT, in_turn(heartbeat(REBALANCE_IN_PROGRESS), heartbeat(NONE)))
    h.run_until(lambda: bool(h.asked(ApiKey.OFFSET_COMMIT)))
    everything = [TP(TOPIC, p) for p in range(4)]
    assert ("revoke", everything) in h.events, "revoked while the commit is on its way"
    assert all(h.ctx.subscription.get(tp) is None for tp in everything), "nothing left to deliver"
    assert len(h.asked(ApiKey.JOIN_GROUP)) == 1, "the rejoin waits for the commit's answer"
    h.run_until(lambda: h.stable and h.member.generation_id == 2)
    commits = h.asked(ApiKey.OFFSET_COMMIT)
    assert {(p.partition_index, p.committed_offset, p.committed_leader_epoch)
            for t in commits[0].topics for p in t.partitions} == {(p, 100 + p, 5) for p in range(4)}
    assert ("assign", [TP(TOPIC, 0), TP(TOPIC, 1)]) in h.events
    assert not h.errors


def test_unknown_member_in_heartbeat_loses_partitions_and_rejoins_fresh(harness):
    h = harness()
    h.cluster.script(ApiKey.JOIN_GROUP, in_turn(joined("m-1", 1, "other"), joined("m-9", 2, "other")))
    h.cluster.script(ApiKey.SYNC_GROUP, in_turn(synced([0, 1]), synced([3])))
    h.member.start()
    h.run_until(lambda: h.stable and h.member.generation_id == 1)
    h.cluster.script(ApiKey.HEARTBEAT, in_turn(heartbeat(UNKNOWN_MEMBER_ID), heartbeat(NONE)))
    h.run_until(lambda: h.stable and h.member.generation_id == 2)
    assert ("lost", [TP(TOPIC, 0), TP(TOPIC, 1)]) in h.events
    assert not [e for e in h.events if e[0] == "revoke"], "lost partitions are not revoked (no commit)"
    joins = h.asked(ApiKey.JOIN_GROUP)
    assert joins[-1].member_id == "" and not h.asked(ApiKey.OFFSET_COMMIT)
    assert h.member.owned == [TP(TOPIC, 3)]


def test_fenced_static_member_is_fatal_and_reported(harness):
    h = harness(group_instance_id="pod-1")
    h.cluster.script(ApiKey.JOIN_GROUP, joined("m-1", 1, "other"))
    h.cluster.script(ApiKey.SYNC_GROUP, synced([0]))
    h.cluster.script(ApiKey.HEARTBEAT, heartbeat(FENCED_INSTANCE_ID))
    h.member.start()
    h.run_until(lambda: h.member.state is GroupState.FAILED)
    h.run(0.1)  # nothing more is reported
    assert h.member.state is GroupState.FAILED
    assert [e.code for e in h.errors] == [FENCED_INSTANCE_ID]
    assert ("lost", [TP(TOPIC, 0)]) in h.events


def test_coordinator_move_is_rediscovered_without_losing_membership(harness):
    h = harness()
    h.cluster.script(ApiKey.JOIN_GROUP, joined("m-1", 1, "other"))
    h.cluster.script(ApiKey.SYNC_GROUP, synced([0]))
    h.cluster.script(ApiKey.HEARTBEAT, in_turn(heartbeat(NOT_COORDINATOR), heartbeat(NONE)))
    h.member.start()
    # NOT_COORDINATOR makes the member look the coordinator up again, then heartbeat on.
    h.run_until(lambda: len(h.asked(ApiKey.FIND_COORDINATOR)) >= 2 and len(h.asked(ApiKey.HEARTBEAT)) >= 3)
    assert h.member.state is GroupState.STABLE and h.member.generation_id == 1
    assert not [e for e in h.events if e[0] in ("lost", "revoke")]


def sent_commits(h: Harness) -> list[dict[int, int]]:
    return [{p.partition_index: p.committed_offset for t in body.topics for p in t.partitions}
            for body in h.asked(ApiKey.OFFSET_COMMIT)]


def first_commit_answered(h: Harness) -> None:
    """Until the coordinator has answered the first commit, and a moment for the member to read it
    (the retry then waits at least the backoff's floor, retry_backoff_ms / 5)."""
    h.run_until(lambda: h.cluster.requests_of(ApiKey.OFFSET_COMMIT)
                and h.cluster.requests_of(ApiKey.OFFSET_COMMIT)[0].answered_at is not None)
    h.run(0.005)


def test_a_commit_retried_after_a_coordinator_move_never_lands_after_a_newer_one(harness):
    """The failover race behind a committed offset going backwards: commit 500 meets a moving
    coordinator, commit 1000 lands while 500 waits out its backoff; 500 must not be sent again."""
    h = harness()
    h.cluster.script(ApiKey.OFFSET_COMMIT, in_turn(commit_refused(NOT_COORDINATOR), committed_ok))
    older: list[Any] = []
    newer: list[Any] = []
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(500)}, older.append)
    first_commit_answered(h)  # the refusal arrives; the retry waits retry_backoff_ms
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(1000)}, newer.append)
    h.run_until(lambda: older and newer)
    h.run(0.3)  # past the older commit's backoff: it is not sent again
    assert sent_commits(h) == [{0: 500}, {0: 1000}]
    assert newer == [None]
    assert len(older) == 1 and older[0].code == NOT_COORDINATOR and "newer commit" in older[0].message
    assert h.member.offsets.last_committed[TP(TOPIC, 0)] == 1000


def test_a_retried_commit_keeps_the_partitions_no_newer_commit_carries(harness):
    h = harness()
    h.cluster.script(ApiKey.OFFSET_COMMIT, in_turn(commit_refused(NOT_COORDINATOR), committed_ok))
    older: list[Any] = []
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(500), TP(TOPIC, 1): CommitOffset(700)}, older.append)
    first_commit_answered(h)
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(1000)}, None)
    h.run_until(lambda: older and len(sent_commits(h)) == 3)
    h.run(0.3)
    assert sent_commits(h) == [{0: 500, 1: 700}, {0: 1000}, {1: 700}]
    # Partition 1 landed, partition 0 never will from this commit: the callback says so, once.
    assert len(older) == 1 and older[0] is not None and "1 partition(s)" in older[0].message
    assert h.member.offsets.last_committed == {TP(TOPIC, 0): 1000, TP(TOPIC, 1): 700}


def test_a_commit_with_nothing_newer_is_retried_to_success(harness):
    h = harness()
    h.cluster.script(ApiKey.OFFSET_COMMIT, in_turn(commit_refused(NOT_COORDINATOR), committed_ok))
    done: list[Any] = []
    h.member.offsets.commit({TP(TOPIC, 2): CommitOffset(42)}, done.append)
    h.run_until(lambda: done)
    h.run(0.3)
    assert sent_commits(h) == [{2: 42}, {2: 42}]
    assert done == [None]


def test_on_revoke_returning_a_future_holds_the_rejoin_until_it_is_done(harness):
    """A handler runner finishing the revoked partitions' records: the follow-up rejoin waits for
    on_revoke's Future (the generation its commits use stays current), heartbeats go on."""
    releases: list[asyncio.Future[None]] = []

    def on_revoke(partitions):
        h.events.append(("revoke", partitions))
        releases.append(h.loop.create_future())
        return releases[-1]

    h = harness(on_revoke=on_revoke)
    h.cluster.script(ApiKey.JOIN_GROUP, in_turn(joined("m-1", 1, "other"), joined("m-1", 2, "other"),
                                                joined("m-1", 3, "other")))
    h.cluster.script(ApiKey.SYNC_GROUP, in_turn(synced([0, 1, 2, 3]), synced([0, 1]), synced([0, 1])))
    h.member.start()
    h.run_until(lambda: h.stable and h.member.generation_id == 1)
    h.cluster.script(ApiKey.HEARTBEAT, in_turn(heartbeat(REBALANCE_IN_PROGRESS), heartbeat(NONE)))
    h.run_until(lambda: bool(releases))
    beats = len(h.asked(ApiKey.HEARTBEAT))
    h.run(0.3)
    assert len(h.asked(ApiKey.JOIN_GROUP)) == 2, "no rejoin while on_revoke's Future runs"
    assert h.stable and h.member.generation_id == 2
    assert len(h.asked(ApiKey.HEARTBEAT)) > beats, "heartbeats go on meanwhile"
    releases[0].set_result(None)
    h.run_until(lambda: h.stable and h.member.generation_id == 3)
    assert len(h.asked(ApiKey.JOIN_GROUP)) == 3
    assert not h.errors


def test_a_commit_refused_under_an_older_generation_keeps_the_current_one(harness):
    h = harness()
    h.cluster.script(ApiKey.JOIN_GROUP, joined("m-1", 1, "other"))
    h.cluster.script(ApiKey.SYNC_GROUP, synced([0, 1]))
    h.member.start()
    h.run_until(lambda: h.stable and h.member.generation_id == 1)

    def refused_after_a_rejoin(req: ReceivedRequest) -> Any:
        h.member.generation = 2  # the member rejoined while this commit was on its way
        return commit_refused(ILLEGAL_GENERATION)(req)

    h.cluster.script(ApiKey.OFFSET_COMMIT, refused_after_a_rejoin)
    answers: list[object] = []
    h.member.offsets.commit({TP(TOPIC, 0): CommitOffset(5, -1, None)}, answers.append)
    h.run_until(lambda: bool(answers))
    assert len(answers) == 1 and answers[0] is not None, "the commit itself failed"
    assert not [e for e in h.events if e[0] == "lost"], "generation 2's partitions are kept"
    assert h.member.generation_id == 2 and h.member.owned == [TP(TOPIC, 0), TP(TOPIC, 1)]


def test_a_generation_lost_while_syncing_rejoins(harness):
    h = harness()
    h.cluster.script(ApiKey.JOIN_GROUP, in_turn(joined("m-1", 1, "other"), joined("m-1", 2, "other")))

    def sync_after_a_refused_commit(req: ReceivedRequest) -> Any:
        if len(h.asked(ApiKey.SYNC_GROUP)) == 1:
            h.member.membership_lost(ILLEGAL_GENERATION)  # a commit's answer, while syncing
        return synced([0, 1])(req)

    h.cluster.script(ApiKey.SYNC_GROUP, sync_after_a_refused_commit)
    h.member.start()
    h.run_until(lambda: h.stable and h.member.generation_id == 2)
    assert len(h.asked(ApiKey.JOIN_GROUP)) == 2, "the stale SyncGroup answer led to a new join"
    assert h.member.owned == [TP(TOPIC, 0), TP(TOPIC, 1)]


def test_the_leader_assigns_from_its_metadata_and_refreshes_only_for_a_topic_it_lacks(harness):
    """The subscribed topics in the metadata already: SyncGroup follows JoinGroup without a Metadata
    request. A topic only another member subscribes to is looked up first, and assigned."""
    h = harness()
    h.cluster.create_topic("other", 2)

    def join(req: ReceivedRequest) -> Any:
        generation = len(h.asked(ApiKey.JOIN_GROUP))
        peer = encode_subscription([TOPIC] if generation == 1 else [TOPIC, "other"], [], -1, None)
        return joined("m-1", generation, "m-1", [("m-1", req.body.protocols[0].metadata), ("m-2", peer)])(req)

    h.cluster.script(ApiKey.JOIN_GROUP, join)
    h.cluster.script(ApiKey.SYNC_GROUP, synced([0, 1]))
    h.member.start()
    h.run_until(lambda: h.stable)

    def metadata_between_join_and_sync(generation: int) -> list[ReceivedRequest]:
        """The Metadata requests read after that generation's JoinGroup and before its SyncGroup."""
        order = h.cluster.requests  # in the order the fake read them (loop times may tie)
        joins = [i for i, r in enumerate(order) if r.api_key == ApiKey.JOIN_GROUP]
        syncs = [i for i, r in enumerate(order) if r.api_key == ApiKey.SYNC_GROUP]
        return [r for r in order[joins[generation - 1]:syncs[generation - 1]] if r.api_key == ApiKey.METADATA]

    assert metadata_between_join_and_sync(1) == []
    h.member.request_rejoin()  # the peer now subscribes to "other" too
    h.run_until(lambda: h.stable and len(h.asked(ApiKey.SYNC_GROUP)) == 2)
    assert [r.body.topics is not None and "other" in {t.name for t in r.body.topics}
            for r in metadata_between_join_and_sync(2)] == [True]
    sync = h.asked(ApiKey.SYNC_GROUP)[1]
    assigned = {tp for a in sync.assignments for tp in decode_assignment(a.assignment)}
    assert assigned == {TP(TOPIC, p) for p in range(4)} | {TP("other", 0), TP("other", 1)}
    assert not h.errors
