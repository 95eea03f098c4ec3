"""kafkaev.consumer.delivery.deliver_each: the C loop that hands fetched records to ``on_message``,
from a start index. It stops after the record whose callback interrupted the partition being
delivered, and only then, returning the index after that record; a raising callback is reported
and delivery goes on. Real-broker tests of pause and seek
from a callback: test_consumer_fetch.py."""

from __future__ import annotations

from typing import Any

import pytest

from kafkaev.consumer.delivery import DeliveryCursor, clear_stop, deliver_each, note_stop
from kafkaev.consumer.subscription import PartitionState
from kafkaev.protocol.codec import Message
from kafkaev.types import TopicPartition


def state(partition: int = 0) -> PartitionState:
    return PartitionState(TopicPartition("t", partition), "t", partition)


def cursor(loop: object | None = None) -> DeliveryCursor:
    return DeliveryCursor(loop if loop is not None else object())  # type: ignore[arg-type]


def messages(count: int) -> list[Message]:
    return [Message("t", 0, offset, None, b"v%d" % offset) for offset in range(count)]


def test_every_record_is_handed_over_in_order_and_the_end_is_returned() -> None:
    seen: list[int] = []
    stop = deliver_each(lambda m: seen.append(m.offset), messages(5), 0, state(), _never_reported, cursor())
    assert seen == [0, 1, 2, 3, 4]
    assert stop == 5


def test_delivery_starts_at_the_start_index() -> None:
    seen: list[int] = []
    assert deliver_each(lambda m: seen.append(m.offset), messages(5), 3, state(), _never_reported, cursor()) == 5
    assert seen == [3, 4]
    assert deliver_each(lambda m: seen.append(m.offset), messages(5), 5, state(), _never_reported, cursor()) == 5
    assert seen == [3, 4], "nothing past the end"


def test_a_start_index_outside_the_records_is_refused() -> None:
    for start in (-1, 6):
        with pytest.raises(ValueError, match="'start'"):
            deliver_each(lambda m: None, messages(5), start, state(), _never_reported, cursor())


def test_a_raising_callback_is_reported_once_per_record_and_delivery_goes_on() -> None:
    reported: list[BaseException] = []
    seen: list[int] = []

    def on_message(msg: Any) -> None:
        seen.append(msg.offset)
        if msg.offset % 2:
            raise ValueError(msg.offset)

    assert deliver_each(on_message, messages(5), 0, state(), reported.append, cursor()) == 5
    assert seen == [0, 1, 2, 3, 4]
    assert [exc.args for exc in reported] == [(1,), (3,)]


def test_interrupting_the_partition_stops_after_the_current_record() -> None:
    delivering = state()
    seen: list[int] = []

    def on_message(msg: Any) -> None:
        seen.append(msg.offset)
        if msg.offset == 2:
            delivering.interrupt()

    assert deliver_each(on_message, messages(5), 0, delivering, _never_reported, cursor()) == 3
    assert seen == [0, 1, 2]
    delivering.interrupted = False
    assert deliver_each(on_message, messages(5), 3, delivering, _never_reported, cursor()) == 5, "goes on from 3"
    assert seen == [0, 1, 2, 3, 4]


def test_a_raising_callback_that_interrupted_still_stops_delivery() -> None:
    delivering = state()
    reported: list[BaseException] = []

    def on_message(msg: Any) -> None:
        delivering.interrupt()
        raise RuntimeError("after pausing")

    assert deliver_each(on_message, messages(3), 0, delivering, reported.append, cursor()) == 1
    assert len(reported) == 1


def test_interrupting_another_partition_does_not_stop_this_one() -> None:
    other = state(1)
    seen: list[int] = []

    def on_message(msg: Any) -> None:
        seen.append(msg.offset)
        other.interrupt()  # e.g. pausing a different partition from this callback

    assert deliver_each(on_message, messages(4), 0, state(), _never_reported, cursor()) == 4
    assert seen == [0, 1, 2, 3]


def test_seek_and_pause_of_the_delivering_partition_interrupt_it() -> None:
    for interrupt in (lambda s: s.seek(10), lambda s: s.request_reset(s.reset_kind)):
        delivering = state()
        delivering.interrupted = False
        stop = deliver_each(lambda m, s=delivering, f=interrupt: f(s) if m.offset == 1 else None,
                            messages(4), 0, delivering, _never_reported, cursor())
        assert stop == 2


def test_the_cursor_counts_the_running_record_and_forgets_the_delivery_after_it() -> None:
    delivering, other = state(), state(1)
    delivering.position, delivering.position_epoch = 0, -1
    track = cursor()
    seen: list[tuple[int, int] | None] = []

    def on_message(msg: Message) -> None:
        seen.append(track.delivered(delivering))
        assert track.delivered(other) is None
        if msg.offset == 2:
            delivering.seek(7)  # a seek's position stands, the cursor no longer applies
            seen.append(track.delivered(delivering))

    deliver_each(on_message, messages(4), 0, delivering, _never_reported, track)
    assert seen[:4] == [(1, -1), (2, -1), (3, -1), None]
    assert track.delivered(delivering) is None, "after the delivery the position stands"


def test_stop_for_the_cursors_loop_stops_after_the_current_record() -> None:
    loop, elsewhere = object(), object()

    def on_message(msg: Message) -> None:
        if msg.offset == 1:
            note_stop(elsewhere)  # type: ignore[arg-type]
        if msg.offset == 2:
            note_stop(loop)  # type: ignore[arg-type]

    try:
        stop = deliver_each(on_message, messages(5), 0, state(), _never_reported, cursor(loop))
    finally:
        clear_stop(loop)  # type: ignore[arg-type]
        clear_stop(elsewhere)  # type: ignore[arg-type]
    assert stop == 3


def _never_reported(exc: BaseException) -> None:
    raise AssertionError(f"reported {exc!r}")
