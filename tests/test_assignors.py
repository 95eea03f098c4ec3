"""Unit tests of the partition assignors: Java-compatible placement, balance and KIP-429 stickiness."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaev.consumer.assignors import (
    CooperativeStickyAssignor,
    MemberSubscription,
    RangeAssignor,
    RoundRobinAssignor,
    make_assignors,
    member_generation,
    valid_ownership,
)
from kafkaev.types import TopicPartition as TP


def members(*ids: str, topics=("t",), **kw) -> list[MemberSubscription]:
    return [MemberSubscription(member_id=i, topics=tuple(topics), **kw) for i in ids]


def test_range_matches_java_layout():
    # Java RangeAssignor: 7 partitions over 3 members -> 3, 2, 2 in member order, per topic.
    result = RangeAssignor().assign({"t": 7, "u": 2}, members("c", "a", "b", topics=("t", "u")))
    assert result.of("a") == [TP("t", 0), TP("t", 1), TP("t", 2), TP("u", 0)]
    assert result.of("b") == [TP("t", 3), TP("t", 4), TP("u", 1)]
    assert result.of("c") == [TP("t", 5), TP("t", 6)]


def test_range_orders_static_members_first():
    group = [
        MemberSubscription("a", ("t",)),
        MemberSubscription("z", ("t",), group_instance_id="i1"),
    ]
    result = RangeAssignor().assign({"t": 2}, group)
    assert result.of("z") == [TP("t", 0)]
    assert result.of("a") == [TP("t", 1)]


def test_roundrobin_deals_sorted_partitions_over_subscribers():
    group = [MemberSubscription("a", ("t", "u")), MemberSubscription("b", ("u",))]
    result = RoundRobinAssignor().assign({"t": 2, "u": 3}, group)
    # t-0 a, t-1 a (b not subscribed), u-0 b, u-1 a, u-2 b
    assert result.of("a") == [TP("t", 0), TP("t", 1), TP("u", 1)]
    assert result.of("b") == [TP("u", 0), TP("u", 2)]


def test_cooperative_first_assignment_is_balanced_and_complete():
    result = CooperativeStickyAssignor().assign({"t": 12}, members("a", "b", "c"))
    owned = sorted(tp for parts in result.partitions.values() for tp in parts)
    assert owned == [TP("t", p) for p in range(12)]
    assert sorted(len(p) for p in result.partitions.values()) == [4, 4, 4]


def test_cooperative_new_member_only_moved_partitions_are_withheld():
    assignor = CooperativeStickyAssignor()
    first = assignor.assign({"t": 12}, members("a", "b", "c"))
    group = [
        MemberSubscription(m, ("t",), owned=tuple(first.of(m)), generation=1) for m in ("a", "b", "c")
    ] + [MemberSubscription("d", ("t",))]
    second = assignor.assign({"t": 12}, group)
    for m in ("a", "b", "c"):
        # What a member keeps is a subset of what it had: nothing new is handed to it,
        # and it gives up exactly one partition for the newcomer.
        assert set(second.of(m)) <= set(first.of(m))
        assert len(second.of(m)) == 3
    # The revoked partitions are not given to d yet: their owners must release them first.
    assert second.of("d") == []
    # After the owners rejoin without the revoked partitions, d gets all three.
    group = [
        MemberSubscription(m, ("t",), owned=tuple(second.of(m)), generation=2) for m in ("a", "b", "c")
    ] + [MemberSubscription("d", ("t",), generation=2)]
    third = assignor.assign({"t": 12}, group)
    for m in ("a", "b", "c"):
        assert third.of(m) == second.of(m)
    assert len(third.of("d")) == 3
    assert sorted(tp for p in third.partitions.values() for tp in p) == [TP("t", p) for p in range(12)]


def test_cooperative_member_leaving_hands_its_partitions_out_without_moving_others():
    assignor = CooperativeStickyAssignor()
    first = assignor.assign({"t": 12}, members("a", "b", "c", "d"))
    group = [MemberSubscription(m, ("t",), owned=tuple(first.of(m)), generation=3) for m in ("a", "b", "c")]
    second = assignor.assign({"t": 12}, group)
    for m in ("a", "b", "c"):
        assert set(first.of(m)) <= set(second.of(m))
        assert len(second.of(m)) == 4


def test_higher_generation_claim_wins_and_equal_claims_cancel():
    group = [
        MemberSubscription("a", ("t",), owned=(TP("t", 0), TP("t", 1)), generation=4),
        MemberSubscription("b", ("t",), owned=(TP("t", 0),), generation=5),
        MemberSubscription("c", ("t",), owned=(TP("t", 1),), generation=4),
        MemberSubscription("d", ("t",), owned=(TP("t", 9), TP("x", 0))),  # out of range / unsubscribed
    ]
    owner = valid_ownership({"t": 4}, group)
    assert owner == {TP("t", 0): "b"}


def test_generation_from_user_data_for_old_subscriptions():
    a = CooperativeStickyAssignor()
    m = MemberSubscription("a", ("t",), user_data=a.user_data(7))
    assert member_generation(m) == 7
    assert member_generation(MemberSubscription("a", ("t",), generation=3, user_data=a.user_data(7))) == 3


def test_make_assignors_rejects_bad_names():
    assert [a.name for a in make_assignors(("cooperative-sticky", "range"))] == ["cooperative-sticky", "range"]
    with pytest.raises(ValueError, match="assignors"):
        make_assignors("range")
    with pytest.raises(ValueError, match="sticky-ish"):
        make_assignors(["sticky-ish"])
    with pytest.raises(ValueError, match="duplicate"):
        make_assignors(["range", "range"])


@settings(max_examples=150, deadline=None)
@given(
    partitions=st.integers(min_value=0, max_value=40),
    member_count=st.integers(min_value=1, max_value=7),
    rounds=st.lists(st.sampled_from(["join", "leave", "none"]), min_size=1, max_size=6),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_cooperative_rounds_never_move_a_partition_directly(partitions, member_count, rounds, seed):
    """Over any sequence of joins and leaves: no partition is assigned to two members,
    a partition never goes straight from one owner to another, and once the group
    settles the assignment is complete and balanced."""
    rnd = random.Random(seed)
    assignor = CooperativeStickyAssignor()
    counts = {"t": partitions}
    owned: dict[str, list[TP]] = {f"m{i}": [] for i in range(member_count)}
    next_id = member_count
    generation = 0
    for event in rounds:
        if event == "join":
            owned[f"m{next_id}"] = []
            next_id += 1
        elif event == "leave" and len(owned) > 1:
            del owned[rnd.choice(sorted(owned))]
        # Rejoin until nothing is withheld (KIP-429 follow-up rebalances).
        for _ in range(3):
            generation += 1
            group = [MemberSubscription(m, ("t",), owned=tuple(p), generation=generation - 1) for m, p in owned.items()]
            result = assignor.assign(counts, group)
            seen: set[TP] = set()
            for m, parts in result.partitions.items():
                assert not seen & set(parts)
                seen |= set(parts)
                for tp in parts:
                    for other, had in owned.items():
                        assert other == m or tp not in had, f"{tp} moved directly from {other} to {m}"
            owned = {m: list(result.of(m)) for m in owned}
        assert sorted(tp for p in owned.values() for tp in p) == [TP("t", p) for p in range(partitions)]
        loads = [len(p) for p in owned.values()]
        assert max(loads) - min(loads) <= 1


# --- KIP-881: rack-aware assignment -----------------------------------------------------------------
def _racked(*specs: tuple[str, str], topics=("t",)) -> list[MemberSubscription]:
    return [MemberSubscription(member_id=m, topics=tuple(topics), rack=rack) for m, rack in specs]


def _one_replica_each(count: int, racks: tuple[str, ...]) -> dict[TP, frozenset[str]]:
    """Partition p's only replica in racks[p % len(racks)]."""
    return {TP("t", p): frozenset({racks[p % len(racks)]}) for p in range(count)}


def test_rack_aware_range_gives_each_member_partitions_in_its_rack():
    racks = _one_replica_each(6, ("r1", "r2", "r3"))
    got = RangeAssignor().assign_with_racks({"t": 6}, _racked(("a", "r1"), ("b", "r2"), ("c", "r3")), racks)
    for member, rack in (("a", "r1"), ("b", "r2"), ("c", "r3")):
        assert len(got.of(member)) == 2
        assert all(rack in racks[tp] for tp in got.of(member)), (member, got.of(member))
    # Without racks on the members it is the plain range layout.
    plain = RangeAssignor().assign_with_racks({"t": 6}, _racked(("a", None), ("b", None), ("c", None)), racks)
    assert plain.of("a") == [TP("t", 0), TP("t", 1)]


def test_rack_aware_range_keeps_the_shares_when_racks_are_uneven():
    racks = _one_replica_each(5, ("r1",))  # every replica in r1: only "a" can be local
    got = RangeAssignor().assign_with_racks({"t": 5}, _racked(("a", "r1"), ("b", "r2")), racks)
    assert sorted(len(got.of(m)) for m in "ab") == [2, 3]
    assert sorted(got.of("a") + got.of("b")) == [TP("t", p) for p in range(5)]


def test_rack_aware_cooperative_sticky_places_new_partitions_in_their_rack():
    racks = _one_replica_each(6, ("r1", "r2", "r3"))
    got = CooperativeStickyAssignor().assign_with_racks(
        {"t": 6}, _racked(("a", "r1"), ("b", "r2"), ("c", "r3")), racks)
    for member, rack in (("a", "r1"), ("b", "r2"), ("c", "r3")):
        assert len(got.of(member)) == 2 and all(rack in racks[tp] for tp in got.of(member))
