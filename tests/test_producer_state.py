"""The producer's state objects on their own (no loop, no broker): the memory budget, and each
partition's queue with the ready set it keeps."""

from __future__ import annotations

import random

import pytest

from kafkaev.producer.core import MemoryBudget, PartitionState, ProducerBatch, ReadySet, TopicState

LIMIT = 10_000
RANDOM_STEPS = 2_000


def topic(partitions: int = 3) -> tuple[ReadySet, TopicState]:
    ready = ReadySet()
    tstate = TopicState("t", ready)
    tstate.update([(1, 0)] * partitions)
    return ready, tstate


def batch(part: PartitionState, batch_id: int, order: tuple[int, ...] | None = None) -> ProducerBatch:
    return ProducerBatch(batch_id, part, None, 0.0, 0.0, order)


# --- MemoryBudget ---------------------------------------------------------------------------------

def test_a_batch_that_does_not_fit_is_refused_and_changes_nothing():
    budget = MemoryBudget(LIMIT)
    part = topic()[1].parts[0]
    first, second = batch(part, 1), batch(part, 2)
    budget.reserve(first, 6000)
    assert not budget.can_reserve(4001) and budget.can_reserve(4000)
    with pytest.raises(OverflowError):
        budget.reserve(second, 4001)
    assert budget.reserved == 6000 and second.reserved == 0
    budget.reserve(second, 4000)  # exactly up to the limit
    assert budget.reserved == LIMIT


def test_releasing_gives_back_what_the_batch_holds_once():
    budget = MemoryBudget(LIMIT)
    b = batch(topic()[1].parts[0], 1)
    budget.reserve(b, 3000)
    budget.release(b)
    budget.release(b)  # a second release (a batch failed twice) gives nothing back
    assert budget.reserved == 0 and b.reserved == 0


def test_a_batch_reserves_once():
    budget = MemoryBudget(LIMIT)
    b = batch(topic()[1].parts[0], 1)
    budget.reserve(b, 100)
    with pytest.raises(RuntimeError):
        budget.reserve(b, 100)
    assert budget.reserved == 100


def test_rebase_and_transfer_keep_the_total_equal_to_what_batches_hold():
    budget = MemoryBudget(LIMIT)
    part = topic()[1].parts[0]
    b, half = batch(part, 1), batch(part, 1, (1, 0))
    budget.reserve(b, 4096)
    budget.rebase(b, 1200)  # built: its encoded size
    assert budget.reserved == 1200 == b.reserved
    budget.transfer(b, half)  # split: the first half takes over what the batch held
    assert (b.reserved, half.reserved, budget.reserved) == (0, 1200, 1200)
    budget.release(half)
    assert budget.reserved == 0


def test_readmitted_batches_may_pass_the_limit_nothing_else_may():
    budget = MemoryBudget(LIMIT)
    part = topic()[1].parts[0]
    budget.reserve(batch(part, 1), LIMIT)
    late = batch(part, 2)
    budget.reserve(late, 500, readmitted=True)  # its records were admitted when produced
    assert budget.reserved == LIMIT + 500
    assert not budget.hold(1) and budget.held == 0


def test_held_records_count_beside_reserved_batches():
    budget = MemoryBudget(LIMIT)
    budget.reserve(batch(topic()[1].parts[0], 1), 6000)
    assert budget.hold(3000) and budget.hold(1000)
    assert not budget.hold(1) and (budget.held, budget.records) == (4000, 2)
    budget.unhold(4000, 2)
    assert (budget.held, budget.records) == (0, 0)
    with pytest.raises(RuntimeError):
        budget.unhold(1, 0)
    with pytest.raises(RuntimeError):
        budget.unhold(0, 1)


def test_records_are_refused_at_the_record_limit_and_come_back_with_their_batch():
    budget = MemoryBudget(LIMIT, 3)
    part = topic()[1].parts[0]
    assert budget.hold(10) and budget.hold(10) and budget.hold(10)
    assert not budget.hold(10) and (budget.held, budget.records) == (30, 3)  # the bytes fit, the count does not
    assert budget.records_full() and "buffer_records (3)" in budget.refusal()
    budget.unhold(30, 3)
    assert budget.records == 0 and not budget.records_full()
    b = batch(part, 1)
    budget.reserve(b, 100)
    assert b.counted
    for _ in range(3):
        budget.count_record()  # as ProducerCore appends each record
    b.record_count = 3  # as the batch closes
    assert not budget.hold(10) and budget.records_full()
    budget.release(b)
    assert budget.records == 0 and not b.counted and budget.hold(10)
    budget.release(b)  # twice: nothing more
    assert budget.records == 1


def test_a_split_batch_passes_the_counting_of_its_records_to_its_first_half():
    budget = MemoryBudget(LIMIT, 10)
    part = topic()[1].parts[0]
    b, first, second = batch(part, 1), batch(part, 1, (1, 0)), batch(part, 1, (1, 1))
    budget.reserve(b, 100)
    budget.transfer(b, first)
    budget.reserve(second, 0, readmitted=True)  # as Accumulator.split: no bytes, its records count
    assert (b.counted, first.counted, second.counted) == (False, True, True)
    for _ in range(4):
        budget.count_record()
    first.record_count, second.record_count = 2, 2
    budget.release(b)  # the original is never released; were it, it would give back nothing
    assert (budget.reserved, budget.records) == (100, 4)
    budget.release(first)
    budget.release(second)
    assert (budget.reserved, budget.records) == (0, 0)


def test_a_bare_batch_counts_no_records_and_no_limit_means_none():
    budget = MemoryBudget(LIMIT)
    bare = batch(topic()[1].parts[0], 1)
    bare.record_count = 5  # never reserved: a test's stand-in, not counted
    budget.release(bare)
    assert budget.records == 0
    assert all(budget.hold(1) for _ in range(1000)) and not budget.records_full()
    with pytest.raises(ValueError, match="buffer_records"):
        MemoryBudget(LIMIT, -1)


def test_sizes_are_never_negative():
    budget = MemoryBudget(LIMIT)
    b = batch(topic()[1].parts[0], 1)
    for call in (lambda: budget.reserve(b, -1), lambda: budget.rebase(b, -1), lambda: budget.hold(-1)):
        with pytest.raises(ValueError):
            call()
    with pytest.raises(ValueError):
        MemoryBudget(-1)
    assert (budget.reserved, budget.held) == (0, 0)


def test_random_use_stays_within_zero_and_the_limit():
    rng = random.Random(7)
    budget = MemoryBudget(LIMIT)
    part = topic()[1].parts[0]
    holding: list[ProducerBatch] = []
    held: list[int] = []
    for i in range(RANDOM_STEPS):
        step = rng.randrange(5)
        if step == 0:
            b = batch(part, i)
            size = rng.randrange(1, LIMIT // 4)
            if budget.can_reserve(size):
                budget.reserve(b, size)
                holding.append(b)
            else:
                with pytest.raises(OverflowError):
                    budget.reserve(b, size)
        elif step == 1 and holding:
            b = holding.pop(rng.randrange(len(holding)))
            budget.release(b)
        elif step == 2 and holding:
            b = rng.choice(holding)
            budget.rebase(b, rng.randrange(0, b.reserved + 1))  # built: never above its capacity
        elif step == 3:
            size = rng.randrange(1, LIMIT // 10)
            if budget.hold(size):
                held.append(size)
        elif step == 4 and held:
            budget.unhold(held.pop(), 1)
        assert 0 <= budget.reserved <= LIMIT and budget.held >= 0
        assert budget.reserved == sum(b.reserved for b in holding) and budget.held == sum(held)
    for b in holding:
        budget.release(b)
    budget.unhold(sum(held), len(held))
    assert (budget.reserved, budget.held, budget.records) == (0, 0, 0)


# --- PartitionQueue and the ready set -------------------------------------------------------------

def test_a_partition_is_ready_while_it_has_a_batch_queued():
    ready, tstate = topic()
    part = tstate.parts[0]
    queue = part.queue
    first, second = batch(part, 1), batch(part, 2)
    assert not queue.ready and part not in ready
    queue.append(first)
    queue.append(second)
    assert queue.ready and list(ready) == [part] and queue.head is first
    assert queue.send_head() is first
    assert queue.ready and queue.in_flight == (first,) and queue.last_in_flight is first
    assert queue.send_head() is second
    assert not queue.ready and len(ready) == 0 and queue.in_flight_count == 2
    queue.answered(first)
    queue.requeue(second)  # failed retriably: back in the queue, ready again
    queue.answered(second)
    assert queue.ready and list(queue) == [second] and queue.in_flight_count == 0
    assert queue.drop_head() is second
    assert not queue.ready and len(ready) == 0


def test_the_ready_set_keeps_the_order_partitions_became_ready():
    ready, tstate = topic()
    p0, p1, p2 = tstate.parts
    for i, part in enumerate((p2, p0, p1)):
        part.queue.append(batch(part, i))
    p2.queue.append(batch(p2, 9))  # already ready: keeps its place
    assert list(ready) == [p2, p0, p1]
    p0.queue.drop_head()
    p0.queue.append(batch(p0, 10))  # ready again: now last
    assert list(ready) == [p2, p1, p0]


def test_walking_the_ready_set_while_sending_is_safe():
    ready, tstate = topic()
    for part in tstate.parts:
        part.queue.append(batch(part, part.partition))
    for part in ready:  # a snapshot: sending empties the set as it goes
        part.queue.send_head()
    assert len(ready) == 0


def test_requeue_puts_a_batch_in_sequence_order():
    _, tstate = topic()
    part = tstate.parts[0]
    batches = [batch(part, 1), batch(part, 1, (1, 0)), batch(part, 1, (1, 1)), batch(part, 2), batch(part, 3)]
    for b in (batches[3], batches[0], batches[4], batches[2], batches[1]):
        part.queue.requeue(b)
    assert list(part.queue) == batches


def test_a_queue_takes_only_its_own_partitions_batches():
    ready, tstate = topic()
    other = batch(tstate.parts[1], 1)
    for call in (tstate.parts[0].queue.append, tstate.parts[0].queue.requeue, tstate.parts[0].open_batch):
        with pytest.raises(ValueError):
            call(other)
    assert len(ready) == 0 and tstate.parts[0].batch is None


def test_an_empty_queue_has_no_head_to_send():
    _, tstate = topic()
    queue = tstate.parts[0].queue
    for call in (lambda: queue.head, queue.send_head, queue.drop_head, lambda: queue.last_in_flight):
        with pytest.raises(IndexError):
            call()


def test_one_open_batch_at_a_time():
    _, tstate = topic()
    part = tstate.parts[0]
    first, second = batch(part, 1), batch(part, 2)
    part.open_batch(first)
    with pytest.raises(RuntimeError):
        part.open_batch(second)  # it would be orphaned: never sent, its memory never released
    assert not part.close_open_batch(second) and part.batch is first
    assert part.close_open_batch(first) and part.batch is None
    assert not part.close_open_batch(first)  # closed already (it filled up meanwhile)


def test_random_queue_use_keeps_ready_iff_queued():
    rng = random.Random(11)
    ready, tstate = topic(4)
    in_flight: list[ProducerBatch] = []
    for i in range(RANDOM_STEPS):
        part = rng.choice(tstate.parts)
        queue = part.queue
        step = rng.randrange(4)
        if step == 0:
            queue.append(batch(part, i))
        elif step == 1 and len(queue):
            in_flight.append(queue.send_head())
        elif step == 2 and len(queue):
            queue.drop_head()
        elif step == 3 and in_flight:
            b = in_flight.pop(rng.randrange(len(in_flight)))
            b.part.queue.answered(b)
            if rng.random() < 0.5:
                b.part.queue.requeue(b)  # a retry
        for p in tstate.parts:
            assert (p in ready) == (len(p.queue) > 0) == p.queue.ready
        assert sum(p.queue.in_flight_count for p in tstate.parts) == len(in_flight)
