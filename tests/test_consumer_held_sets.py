"""PartitionState's held record sets: what a paused partition keeps of what was fetched for it.
A held set is handed over only while the sets still run from the position to the fetch offset
under the same generation; a seek, a rewind or any other move of the position drops them all,
and the partition is fetchable again only once none is held. Real-broker test:
test_consumer_fetch.py."""

from __future__ import annotations

from kafkaev.consumer.subscription import FetchedSet, PartitionState
from kafkaev.types import TopicPartition

SET_RECORDS = 100


def paused_at(position: int) -> PartitionState:
    state = PartitionState(TopicPartition("t", 0), "t", 0)
    state.seek(position)
    state.paused = True
    return state


def hold(state: PartitionState, sets: int) -> list[FetchedSet]:
    """``sets`` record sets fetched past the fetch offset, held as the fetcher does."""
    held = []
    for _ in range(sets):
        start = state.fetch_offset
        state.fetch_offset = start + SET_RECORDS
        fetched = FetchedSet(state, b"records", None, state.generation, start, state.fetch_offset)
        state.held.append(fetched)
        held.append(fetched)
    return held


def test_held_sets_come_back_in_order_and_then_the_partition_is_fetchable() -> None:
    state = paused_at(40)
    first, second = hold(state, 2)
    state.paused = False
    assert not state.fetchable, "a partition holding records is not fetched past them"
    assert state.take_held() is first
    state.position = first.next_offset  # handed over
    assert state.take_held() is second
    state.position = second.next_offset
    assert state.take_held() is None
    assert state.fetchable and state.fetch_offset == second.next_offset


def test_a_seek_drops_what_was_held() -> None:
    state = paused_at(40)
    hold(state, 2)
    state.seek(7)
    assert state.held == [] and state.fetch_offset == 7
    assert state.take_held() is None


def test_a_rewind_drops_what_was_held() -> None:
    state = paused_at(40)
    hold(state, 1)
    state.rewind_fetch()
    assert state.held == [] and state.fetch_offset == 40


def test_sets_from_another_generation_are_dropped_and_fetching_starts_at_the_position() -> None:
    state = paused_at(40)
    hold(state, 2)
    state.generation += 1  # a reassignment, a validation or a reset in between
    assert state.take_held() is None
    assert state.held == [] and state.fetch_offset == 40


def test_sets_that_no_longer_start_at_the_position_are_dropped() -> None:
    state = paused_at(40)
    hold(state, 1)
    state.position = 45  # five of its records were handed over some other way
    assert state.take_held() is None
    assert state.held == [] and state.fetch_offset == 45


def test_sets_that_no_longer_reach_the_fetch_offset_are_dropped() -> None:
    state = paused_at(40)
    hold(state, 1)
    state.fetch_offset += SET_RECORDS  # something fetched past them without holding it
    assert state.take_held() is None
    assert state.held == [] and state.fetch_offset == 40


def test_held_sets_run_from_a_start_to_the_fetch_offset() -> None:
    state = paused_at(40)
    assert state.held_run_from(40) and not state.held_run_from(41), "none held: the start is the fetch offset"
    first, _second = hold(state, 2)
    assert state.held_run_from(first.fetch_offset)
    assert not state.held_run_from(first.fetch_offset + 1)
    state.generation += 1
    assert not state.held_run_from(first.fetch_offset)
