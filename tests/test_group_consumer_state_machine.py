"""The KIP-848 member against a scripted coordinator (a FakeCluster node, real Connections on
loopback sockets): the orders and error paths a real broker shows only under races. Revocation is
committed before it is acknowledged; fencing is on_lost without a commit and a rejoin at epoch 0
with the same member id; a topic id not in the metadata yet is waited for; the request after an
error is complete again; a static member leaves with epoch -2; a commit answered
STALE_MEMBER_EPOCH is retried with the newer epoch. Heartbeats are an interval apart from send to send;
a committed offset from the leader's current epoch is fetched without a KIP-320 validation."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from fake_broker import Delay, ErrorAnswer, FakeCluster, ReceivedRequest, in_turn

from kafkaev.cluster.metadata import Metadata
from kafkaev.cluster.pool import ConnectionPool
from kafkaev.config import ClientConfig
from kafkaev.consumer.context import ConsumerContext
from kafkaev.consumer.group_consumer import ConsumerGroupMember
from kafkaev.consumer.membership import GroupOptions, GroupState, TopicSelection
from kafkaev.consumer.subscription import Phase, SubscriptionState
from kafkaev.errors import (
    FENCED_MEMBER_EPOCH,
    NONE,
    NOT_COORDINATOR,
    STALE_MEMBER_EPOCH,
    UNRELEASED_INSTANCE_ID,
)
from kafkaev.protocol import codec
from kafkaev.protocol.codec import ApiKey
from kafkaev.types import TopicPartition as TP

TOPIC = "t"
INTERVAL_MS = 50


def answer(epoch: int, partitions: dict[uuid.UUID, list[int]] | None, code: int = NONE):
    """A heartbeat answer: the member's epoch and (None: unchanged) its target assignment."""
    def respond(req: ReceivedRequest) -> Any:
        assignment = None if partitions is None else codec.Assignment(topic_partitions=[
            codec.ConsumerGroupHeartbeatResponseTopicPartitions(topic_id=t, partitions=p)
            for t, p in partitions.items()])
        return codec.ConsumerGroupHeartbeatResponse(
            error_code=code, member_id=req.body.member_id, member_epoch=epoch,
            heartbeat_interval_ms=INTERVAL_MS, assignment=assignment)
    return respond


def refused(code: int):
    return lambda _req: codec.ConsumerGroupHeartbeatResponse(error_code=code, member_epoch=-1,
                                                             heartbeat_interval_ms=INTERVAL_MS)


def commit_answer(code: int):
    def respond(req: ReceivedRequest) -> Any:
        return codec.OffsetCommitResponse(topics=[codec.OffsetCommitResponseTopic(name=t.name, partitions=[
            codec.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions]) for t in req.body.topics])
    return respond


class Harness:
    """A ConsumerGroupMember with a real pool and metadata; its coordinator is node 1 of a
    FakeCluster, whose ConsumerGroupHeartbeat answers each test scripts."""

    def __init__(self, loop: asyncio.AbstractEventLoop, cluster: FakeCluster, partitions: int = 4,
                 **options: Any) -> None:
        self.loop = loop
        self.cluster = cluster
        self.topic_id = cluster.create_topic(TOPIC, partitions).topic_id
        self.errors: list[BaseException] = []
        self.events: list[tuple[str, list[TP]]] = []
        config = ClientConfig(brokers=cluster.bootstrap, loop=loop)
        pool = ConnectionPool(config, loop)
        self.metadata = Metadata(config, loop, pool)
        self.ctx = ConsumerContext(loop, config, self.metadata, pool, SubscriptionState(), self.errors.append)
        opts = dict(group_id="g", selection=TopicSelection(frozenset({TOPIC})), assignors=(),
                    group_instance_id=None, session_timeout_ms=45000, rebalance_timeout_ms=10000,
                    heartbeat_interval_ms=3000, auto_commit=True, auto_commit_interval_ms=100000,
                    on_assign=lambda p: self.events.append(("assign", p)),
                    on_revoke=lambda p: self.events.append(("revoke", p)),
                    on_lost=lambda p: self.events.append(("lost", p)), client_rack="az-1")
        opts.update(options)
        self.member = ConsumerGroupMember(self.ctx, GroupOptions(**opts), require_stable=False,
                                          on_partitions_changed=lambda: None)
        self.metadata.add_listener(lambda _md: self.member.on_metadata())  # as the Consumer does

    def run_until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
        async def wait() -> None:
            while not predicate():
                await asyncio.sleep(0.002)
        self.loop.run_until_complete(asyncio.wait_for(wait(), timeout))

    def heartbeats(self) -> list[Any]:
        return [r.body for r in self.cluster.requests_of(ApiKey.CONSUMER_GROUP_HEARTBEAT)]

    def acked(self) -> list[set[int]]:
        """The partitions each heartbeat said the member owns (those that said so)."""
        return [{p for t in hb.topic_partitions for p in t.partitions} for hb in self.heartbeats()
                if hb.topic_partitions is not None]

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.member.owned}


@pytest.fixture
def harness(loop, fake_cluster):
    return lambda **kw: Harness(loop, fake_cluster(1), **kw)


def test_join_sends_everything_then_only_what_changed(harness):
    h = harness(remote_assignor="range")
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(answer(1, {h.topic_id: [0, 1]}), answer(1, None)))
    h.member.start()
    h.run_until(lambda: len(h.heartbeats()) >= 4)
    join, ack, *later = h.heartbeats()
    assert join.member_epoch == 0 and join.member_id == h.member.member_id
    assert join.subscribed_topic_names == [TOPIC] and join.server_assignor == "range" and join.rack_id == "az-1"
    assert join.rebalance_timeout_ms == 10000 and join.topic_partitions == []
    # The acknowledgement: the new epoch and what is owned now; nothing else repeated.
    assert ack.member_epoch == 1 and {p for t in ack.topic_partitions for p in t.partitions} == {0, 1}
    assert ack.subscribed_topic_names is None and ack.rack_id is None and ack.server_assignor is None
    assert all(hb.topic_partitions is None and hb.subscribed_topic_names is None for hb in later)
    assert h.events == [("assign", [TP(TOPIC, 0), TP(TOPIC, 1)])]
    assert h.member.state is GroupState.STABLE and not h.errors


def test_a_revocation_is_committed_before_it_is_acknowledged(harness):
    h = harness()
    hold: list[Any] = []
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT,
                     in_turn(answer(1, {h.topic_id: [0, 1, 2, 3]}), answer(1, None), answer(1, {h.topic_id: [0, 1]}),
                             answer(2, None)))
    h.member.start()
    h.run_until(lambda: h.owned() == {0, 1, 2, 3})
    for p in range(4):
        h.ctx.subscription.get(TP(TOPIC, p)).seek(100 + p, 5)
    # The commit of the revoked partitions is held until the test lets it through.
    h.cluster.script(ApiKey.OFFSET_COMMIT, lambda req: hold.append(req) or None, times=1)
    h.run_until(lambda: h.owned() == {0, 1})
    assert ("revoke", [TP(TOPIC, 2), TP(TOPIC, 3)]) in h.events
    commits = h.cluster.requests_of(ApiKey.OFFSET_COMMIT)
    assert {(p.partition_index, p.committed_offset) for t in commits[0].body.topics for p in t.partitions} \
        == {(2, 102), (3, 103)}
    assert commits[0].body.generation_id_or_member_epoch == 1 and commits[0].body.member_id == h.member.member_id
    h.run_until(lambda: {0, 1} in h.acked())
    acks = h.acked()
    assert acks.index({0, 1}) > acks.index({0, 1, 2, 3}), "the revocation was acknowledged after its commit"
    assert not [e for e in h.events if e[0] == "revoke" and {tp.partition for tp in e[1]} & {0, 1}]


def test_fenced_member_loses_its_partitions_and_rejoins_at_epoch_0_with_its_id(harness):
    h = harness()
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(
        answer(3, {h.topic_id: [0, 1]}), answer(3, None), refused(FENCED_MEMBER_EPOCH), answer(5, {h.topic_id: [2]}),
        answer(5, None)))
    h.member.start()
    h.run_until(lambda: h.owned() == {0, 1})
    member_id = h.member.member_id
    h.run_until(lambda: h.owned() == {2} and h.member.member_epoch == 5)
    assert ("lost", [TP(TOPIC, 0), TP(TOPIC, 1)]) in h.events
    assert not [e for e in h.events if e[0] == "revoke"], "fenced: on_lost, not on_revoke"
    assert not h.cluster.requests_of(ApiKey.OFFSET_COMMIT), "fenced: nothing committed"
    rejoin = h.heartbeats()[3]
    assert rejoin.member_epoch == 0 and rejoin.member_id == member_id and rejoin.topic_partitions == []
    assert rejoin.subscribed_topic_names == [TOPIC]


def test_an_assigned_topic_missing_from_the_metadata_is_waited_for(harness):
    h = harness()
    later_id = uuid.uuid4()
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(
        answer(1, {h.topic_id: [0], later_id: [0, 1]}), answer(1, None)))
    h.member.start()
    h.run_until(lambda: h.owned() == {0})
    assert {0} in h.acked(), "the known topic's partitions go ahead"
    h.cluster.create_topic("late", 2, topic_id=later_id)
    h.member.set_selection(TopicSelection(frozenset({TOPIC, "late"})))
    h.run_until(lambda: TP("late", 1) in h.member.owned)
    assert set(h.member.owned) == {TP(TOPIC, 0), TP("late", 0), TP("late", 1)}

    def last_ack() -> set[tuple[uuid.UUID, tuple[int, ...]]]:
        said = [hb for hb in h.heartbeats() if hb.topic_partitions is not None][-1]
        return {(t.topic_id, tuple(t.partitions)) for t in said.topic_partitions}

    # The acknowledgement goes out in a later turn than the taking: it may still be on its way.
    h.run_until(lambda: len(last_ack()) == 2)
    assert last_ack() == {(h.topic_id, (0,)), (later_id, (0, 1))}


def test_a_heartbeat_cut_off_when_a_commit_finds_the_coordinator_moved_is_retried(harness):
    """A commit answered NOT_COORDINATOR makes the link forget the coordinator, which closes the
    shared connection under the heartbeat queued behind it (DESTROY): that heartbeat is sent
    again to the coordinator found anew, and neither the member nor on_error hears of it."""
    h = harness()
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(answer(1, {h.topic_id: [0, 1]}), answer(1, None)))
    h.member.start()
    h.run_until(lambda: h.owned() == {0, 1})
    h.ctx.subscription.get(TP(TOPIC, 0)).seek(10, 1)
    # Heartbeats every INTERVAL_MS queue behind this commit on the coordinator's connection.
    h.cluster.script(ApiKey.OFFSET_COMMIT, Delay(6 * INTERVAL_MS / 1000, ErrorAnswer(NOT_COORDINATOR)), times=1)
    committed: list[Any] = []
    h.member.commit_positions(None, committed.append, only_advanced=False)
    h.run_until(lambda: committed)
    beats = len(h.heartbeats())
    h.run_until(lambda: len(h.heartbeats()) >= beats + 3)
    assert committed == [None], "the commit went to the coordinator found again"
    assert len(h.cluster.requests_of(ApiKey.FIND_COORDINATOR)) >= 2
    assert h.member.state is GroupState.STABLE and not h.errors, h.errors
    assert h.owned() == {0, 1} and not [e for e in h.events if e[0] in ("lost", "revoke")]


def test_the_heartbeat_after_an_error_is_complete_again(harness):
    h = harness()
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(
        answer(1, {h.topic_id: [0]}), answer(1, None), refused(NOT_COORDINATOR), answer(1, None)))
    h.member.start()
    h.run_until(lambda: len(h.heartbeats()) >= 5)
    after = h.heartbeats()[3]
    assert after.member_epoch == 1 and after.subscribed_topic_names == [TOPIC] and after.rack_id == "az-1"
    assert {p for t in after.topic_partitions for p in t.partitions} == {0}
    assert h.owned() == {0} and not [e for e in h.events if e[0] in ("lost", "revoke")]


def test_static_member_leaves_with_epoch_minus_2_after_committing(harness, loop):
    h = harness(group_instance_id="static-a")
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(answer(4, {h.topic_id: [0, 1]}), answer(4, None)))
    h.member.start()
    h.run_until(lambda: h.owned() == {0, 1})
    h.ctx.subscription.get(TP(TOPIC, 0)).seek(7, 0)
    done: list[Any] = []
    h.member.leave(done.append)
    h.run_until(lambda: bool(done))
    assert done == [None]
    leave = h.heartbeats()[-1]
    assert leave.member_epoch == -2 and leave.instance_id == "static-a"
    commits = h.cluster.requests_of(ApiKey.OFFSET_COMMIT)
    assert commits and commits[-1].body.topics[0].partitions[0].committed_offset == 7
    assert ("revoke", [TP(TOPIC, 0), TP(TOPIC, 1)]) in h.events
    assert h.member.state is GroupState.CLOSED


def test_dynamic_member_leaves_with_epoch_minus_1(harness):
    h = harness(auto_commit=False)
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(answer(2, {h.topic_id: [0]}), answer(2, None)))
    h.member.start()
    h.run_until(lambda: h.owned() == {0})
    done: list[Any] = []
    h.member.leave(done.append)
    h.run_until(lambda: bool(done))
    assert h.heartbeats()[-1].member_epoch == -1
    assert not h.cluster.requests_of(ApiKey.OFFSET_COMMIT)


def test_unreleased_instance_id_is_fatal_and_reported_once(harness):
    h = harness(group_instance_id="taken")
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, refused(UNRELEASED_INSTANCE_ID))
    h.member.start()
    h.run_until(lambda: h.member.state is GroupState.FAILED)
    h.loop.run_until_complete(asyncio.sleep(0.2))
    assert [e.code for e in h.errors] == [UNRELEASED_INSTANCE_ID]
    assert len(h.heartbeats()) == 1


def test_a_commit_with_a_stale_epoch_is_retried_with_the_new_one(harness):
    h = harness()
    epoch = [1]  # what the coordinator's heartbeat answers say
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(
        answer(1, {h.topic_id: [0]}), lambda req: answer(epoch[0], None)(req)))
    h.member.start()
    h.run_until(lambda: h.owned() == {0})
    h.ctx.subscription.get(TP(TOPIC, 0)).seek(42, 0)

    def coordinator(req: ReceivedRequest) -> Any:
        # The coordinator refuses a commit from an epoch older than the member's current one.
        stale = req.body.generation_id_or_member_epoch < epoch[0]
        return commit_answer(STALE_MEMBER_EPOCH if stale else NONE)(req)

    h.cluster.script(ApiKey.OFFSET_COMMIT, coordinator)
    epoch[0] = 2  # the group moved on; the member hears of it on its next heartbeat
    done: list[Any] = []
    h.member.commit_positions(None, done.append, only_advanced=False)
    h.run_until(lambda: bool(done))
    assert done == [None]
    commits = [c.body.generation_id_or_member_epoch for c in h.cluster.requests_of(ApiKey.OFFSET_COMMIT)]
    assert commits[0] == 1 and commits[-1] == 2 and h.member.member_epoch == 2, commits


def test_heartbeats_are_an_interval_apart_from_send_to_send(harness):
    """The broker's interval separates the heartbeats' sends: a slow answer does not stretch it."""
    interval_s, answer_delay_s = 0.4, 0.3
    h = harness()

    def slow(req: ReceivedRequest) -> Any:
        resp = answer(1, None)(req)
        resp.heartbeat_interval_ms = int(interval_s * 1000)
        return Delay(answer_delay_s, resp)

    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(answer(1, {h.topic_id: [0]}), answer(1, None), slow))
    h.member.start()
    h.run_until(lambda: len(h.heartbeats()) >= 6, timeout=20)
    sent = [r.received_at for r in h.cluster.requests_of(ApiKey.CONSUMER_GROUP_HEARTBEAT)]
    periods = [later - earlier for earlier, later in zip(sent[3:], sent[4:], strict=False)]
    # Counted from each answer the period would be interval + answer delay (0.7 s).
    assert all(interval_s - 0.05 <= p < interval_s + answer_delay_s / 2 for p in periods), periods
    assert not h.errors


def test_a_committed_offset_of_the_leaders_current_epoch_is_fetched_without_validation(harness):
    """KIP-320 validation only for a committed offset from another leader epoch than the current one."""
    h = harness()
    h.cluster.move_leader(TOPIC, 1, 1)  # the same node leads partition 1 in a newer epoch
    for partition, offset in ((0, 5), (1, 7)):
        h.cluster.committed[("g", TOPIC, partition)] = offset
        h.cluster.committed_epochs[("g", TOPIC, partition)] = 0  # partition 0's current epoch
    h.cluster.script(ApiKey.CONSUMER_GROUP_HEARTBEAT, in_turn(answer(1, {h.topic_id: [0, 1]}), answer(1, None)))
    h.member.start()

    def state(partition: int) -> Any:
        return h.ctx.subscription.get(TP(TOPIC, partition))

    h.run_until(lambda: h.owned() == {0, 1} and all(state(p).phase is not Phase.AWAIT_COMMITTED for p in (0, 1)))
    assert (state(0).phase, state(0).position, state(0).position_epoch) == (Phase.FETCHING, 5, 0)
    assert (state(1).phase, state(1).position, state(1).position_epoch) == (Phase.AWAIT_VALIDATION, 7, 0)
    assert not h.errors
