"""KIP-227 fetch session bookkeeping: full first, then only changes, forgotten partitions,
reset on errors, and a recreated topic restarting the session."""

from __future__ import annotations

import uuid

from kafkaev.consumer.fetch_session import INITIAL_EPOCH, NO_SESSION_ID, FetchParams, FetchSession
from kafkaev.types import TopicPartition as TP

A, B, C = TP("t", 0), TP("t", 1), TP("u", 0)


def params(offset: int, topic_id=None) -> FetchParams:
    return FetchParams(offset, 1 << 20, 3, topic_id, 2)


def test_first_request_is_full_and_opens_a_session():
    s = FetchSession()
    plan = s.plan({A: params(0), B: params(5)})
    assert (plan.full, plan.session_id, plan.epoch) == (True, NO_SESSION_ID, INITIAL_EPOCH)
    assert set(plan.send) == {A, B} and plan.forgotten == []
    s.completed(plan, 77)
    assert (s.session_id, s.epoch) == (77, 1)


def test_incremental_requests_carry_only_changes_and_forgotten_partitions():
    s = FetchSession()
    s.completed(s.plan({A: params(0), B: params(5)}), 77)
    # A advanced, B unchanged, C new
    plan = s.plan({A: params(10), B: params(5), C: params(0)})
    assert not plan.full and (plan.session_id, plan.epoch) == (77, 1)
    assert plan.send == {A: params(10), C: params(0)}
    s.completed(plan, 77)
    assert s.epoch == 2
    # B paused: forgotten; nothing else changed
    plan = s.plan({A: params(10), C: params(0)})
    assert plan.send == {} and plan.forgotten == [B]
    s.completed(plan, 77)
    assert B not in s.held and s.epoch == 3
    [gone] = plan.request_forgotten({})
    assert (gone.topic, gone.partitions, gone.topic_id) == ("t", [1], None)


def test_reset_makes_the_next_request_full():
    s = FetchSession()
    s.completed(s.plan({A: params(0)}), 9)
    s.reset()
    plan = s.plan({A: params(4)})
    assert plan.full and plan.session_id == NO_SESSION_ID and plan.epoch == INITIAL_EPOCH


def test_a_recreated_topic_starts_a_new_session():
    s = FetchSession()
    old, new = uuid.uuid4(), uuid.uuid4()
    s.completed(s.plan({A: params(0, old)}), 9)
    plan = s.plan({A: params(0, new)})
    assert plan.full and plan.send == {A: params(0, new)}
    [position] = plan.request_partitions()
    assert (position.topic, position.partition, position.offset, position.max_bytes, position.current_leader_epoch,
            position.topic_id, position.last_fetched_epoch) == ("t", 0, 0, 1 << 20, 3, new, 2)
