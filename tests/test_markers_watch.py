"""MarkersWatch: a v2 transaction's first batches wait until its coordinator says the previous
transaction's markers are written (DescribeTransactions) or accepts the transaction's
TxnOffsetCommit, or until the bound. The coordinator
is a stand-in here: the real one's answers are timing, which tests/test_transactions_offsets.py
checks against a broker."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkaev.errors import TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSPORT, KafkaError
from kafkaev.producer.markers import MARKERS_WAIT_MAX_S, MarkersWatch
from kafkaev.protocol.codec import ApiKey, DescribeTransactionsResponse
from kafkaev.protocol.codec import DescribeTransactionsResponseTransactionState as TransactionState

TXN_ID = "eos-1"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def time(self) -> float:
        return self.now


class Coordinator:
    """The link and its connection: requests are kept until the test answers them."""

    def __init__(self) -> None:
        self.asked: list[Callable[[Any, KafkaError | None], None]] = []
        self.link_error: KafkaError | None = None

    def get(self, cb: Callable[[Any, KafkaError | None], None]) -> None:
        cb(None, self.link_error) if self.link_error else cb(self, None)

    def request(self, api_key: int, body: Any, cb: Callable[[Any, KafkaError | None], None]) -> None:
        assert api_key == ApiKey.DESCRIBE_TRANSACTIONS and body.transactional_ids == [TXN_ID]
        self.asked.append(cb)

    def answer(self, state: str, error_code: int = 0) -> None:
        self.asked.pop(0)(DescribeTransactionsResponse(transaction_states=[TransactionState(
            error_code=error_code, transactional_id=TXN_ID, transaction_state=state)]), None)


def make() -> tuple[MarkersWatch, Clock, Coordinator, list[int]]:
    clock, coordinator, told = Clock(), Coordinator(), []
    watch = MarkersWatch(clock, coordinator, TXN_ID, lambda: told.append(1))  # type: ignore[arg-type]
    return watch, clock, coordinator, told


def test_nothing_ended_nothing_to_wait_for():
    watch, _clock, coordinator, _told = make()
    assert watch.written() and not coordinator.asked


def test_adds_wait_while_the_coordinator_prepares_and_go_once_it_completes():
    watch, _clock, coordinator, told = make()
    watch.ended()
    assert not coordinator.asked  # not yet: asked this early, the coordinator is still preparing
    assert not watch.written() and len(coordinator.asked) == 1  # the first add wants to go: asked
    assert not watch.written() and len(coordinator.asked) == 1  # one at a time
    coordinator.answer("PrepareCommit")
    assert len(coordinator.asked) == 1 and not told  # asked again at once
    coordinator.answer("CompleteCommit")
    assert told == [1] and watch.written() and watch.asks == 2 and not coordinator.asked


def test_without_an_answer_the_bound_lets_them_go():
    watch, clock, coordinator, told = make()
    watch.ended()
    assert not watch.written()
    clock.now += MARKERS_WAIT_MAX_S
    assert watch.written() and not told
    coordinator.answer("PrepareCommit")  # past the bound: not asked again
    assert not coordinator.asked


def test_a_refused_ask_is_not_repeated_and_leaves_the_bound():
    watch, clock, coordinator, told = make()
    watch.ended()
    assert not watch.written()
    coordinator.answer("", TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    assert not watch.written() and not coordinator.asked and not told
    clock.now += MARKERS_WAIT_MAX_S
    assert watch.written()


def test_no_coordinator_leaves_the_bound():
    watch, clock, coordinator, told = make()
    coordinator.link_error = KafkaError(TRANSPORT, "down")
    watch.ended()
    assert not watch.written() and not watch.written()
    assert watch.asks == 0 and not told
    clock.now += MARKERS_WAIT_MAX_S
    assert watch.written()


def test_an_answer_about_an_earlier_transaction_is_stale():
    """A paused coordinator answers late: the next transaction's ask goes all the same, and the
    late answer says nothing about it."""
    watch, clock, coordinator, told = make()
    watch.ended()
    assert not watch.written()
    clock.now += MARKERS_WAIT_MAX_S
    assert watch.written()
    watch.ended()
    assert not watch.written() and len(coordinator.asked) == 2
    coordinator.answer("CompleteCommit")  # the first transaction's
    assert not told and not watch.written()
    coordinator.answer("CompleteCommit")
    assert told == [1] and watch.written()


def test_an_accepted_offset_commit_says_the_markers_are_written():
    """The group coordinator accepts a TxnOffsetCommit of the next transaction only once the
    previous markers are written: the first batches waiting for an ask's answer go then, once."""
    watch, clock, coordinator, told = make()
    watch.ended()
    assert watch.pending()  # within the bound, not known written: the offset commit retries at once
    assert not watch.written() and len(coordinator.asked) == 1
    watch.add_accepted()
    assert told == [1] and watch.written() and not watch.pending()
    watch.add_accepted()
    coordinator.answer("CompleteCommit")  # the ask's late answer tells nothing new
    assert told == [1]


def test_past_the_bound_nothing_is_pending():
    watch, clock, _coordinator, told = make()
    watch.ended()
    clock.now += MARKERS_WAIT_MAX_S
    assert not watch.pending() and not told
