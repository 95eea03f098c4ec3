"""kafkaev.error_sink.report_error: where an error with no callback of its own goes."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kafkaev import error_sink
from kafkaev.error_sink import report_error
from kafkaev.errors import NETWORK_EXCEPTION, TRANSPORT, KafkaError


class LoopHandlerRecorder:
    """Stands in for a loop's exception handler: report_error only calls this method."""

    def __init__(self) -> None:
        self.contexts: list[dict[str, Any]] = []

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        self.contexts.append(context)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    # Every test its own limiter, on a clock the test moves: no wall-clock sleeps, and no
    # line left out because an earlier test logged it.
    fake = FakeClock()
    monkeypatch.setattr(error_sink, "log_limiter", error_sink.LogRateLimiter(clock=fake))
    return fake


def test_the_handler_gets_every_error_and_nothing_else_does(caplog):
    loop = LoopHandlerRecorder()
    seen: list[BaseException] = []
    broker_down, user_bug = KafkaError(NETWORK_EXCEPTION, "refused"), ValueError("bug")
    with caplog.at_level(logging.WARNING, logger="kafkaev"):
        report_error(loop, seen.append, "kafkaev", broker_down)
        report_error(loop, seen.append, "kafkaev", user_bug)
    assert seen == [broker_down, user_bug]
    assert loop.contexts == [] and caplog.records == []


def test_without_a_handler_a_kafka_error_is_logged_and_an_exception_reaches_the_loop(caplog):
    loop = LoopHandlerRecorder()
    user_bug = ValueError("bug")
    with caplog.at_level(logging.WARNING, logger="kafkaev"):
        report_error(loop, None, "kafkaev.Admin", KafkaError(NETWORK_EXCEPTION, "refused"))
        report_error(loop, None, "kafkaev.Admin", user_bug)
    assert [r.getMessage() for r in caplog.records] == ["kafkaev.Admin: NETWORK_EXCEPTION (13): refused"]
    assert [c["exception"] for c in loop.contexts] == [user_bug]
    assert loop.contexts[0]["message"] == "kafkaev.Admin: exception in a callback"


def test_a_handler_that_raises_is_reported_to_the_loop_once():
    loop = LoopHandlerRecorder()
    raised = RuntimeError("on_error has a bug")

    def handler(exc: BaseException) -> None:
        raise raised

    report_error(loop, handler, "kafkaev", ValueError("first"))
    assert [c["exception"] for c in loop.contexts] == [raised]
    assert loop.contexts[0]["message"] == "kafkaev: on_error raised"


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt(), SystemExit(3)])
def test_an_interrupt_is_raised_again_not_reported(interrupt):
    loop = LoopHandlerRecorder()
    seen: list[BaseException] = []
    with pytest.raises(type(interrupt)):
        report_error(loop, seen.append, "kafkaev", interrupt)
    assert seen == [] and loop.contexts == []


def test_repeated_errors_are_logged_once_per_interval_with_a_count(caplog, clock):
    loop = LoopHandlerRecorder()
    refused = KafkaError(TRANSPORT, "cannot connect to 127.0.0.1:9092: refused")
    source = "kafkaev.Connection 127.0.0.1:9092"
    with caplog.at_level(logging.WARNING, logger="kafkaev"):
        for _ in range(60):  # a minute of reconnects, one a second
            report_error(loop, None, source, refused)
            clock.now += 1.0
    lines = [r.getMessage() for r in caplog.records]
    per_interval = int(error_sink.LOG_REPEAT_INTERVAL_S)
    assert len(lines) == 60 // per_interval
    assert lines[0] == f"{source}: {refused}"
    assert lines[1] == f"{source}: {refused} ({per_interval - 1} more like it since the last one were not logged)"


def test_the_limit_is_per_source_and_error(caplog, clock):
    loop = LoopHandlerRecorder()
    with caplog.at_level(logging.WARNING, logger="kafkaev"):
        for _ in range(3):
            report_error(loop, None, "kafkaev.Connection a:1", KafkaError(TRANSPORT, "cannot connect to a:1"))
            report_error(loop, None, "kafkaev.Connection b:2", KafkaError(TRANSPORT, "cannot connect to b:2"))
            report_error(loop, None, "kafkaev.Connection a:1", KafkaError(NETWORK_EXCEPTION, "reset"))
    assert [r.getMessage() for r in caplog.records] == [
        "kafkaev.Connection a:1: TRANSPORT (-195): cannot connect to a:1",
        "kafkaev.Connection b:2: TRANSPORT (-195): cannot connect to b:2",
        "kafkaev.Connection a:1: NETWORK_EXCEPTION (13): reset",
    ]


def test_a_quiet_kind_is_logged_again_without_a_count(caplog, clock):
    loop = LoopHandlerRecorder()
    err = KafkaError(TRANSPORT, "cannot connect to a:1")
    with caplog.at_level(logging.WARNING, logger="kafkaev"):
        report_error(loop, None, "kafkaev", err)
        clock.now += error_sink.LOG_REPEAT_INTERVAL_S
        report_error(loop, None, "kafkaev", err)
    assert [r.getMessage() for r in caplog.records] == [f"kafkaev: {err}"] * 2


def test_on_error_gets_every_repeat(clock):
    loop = LoopHandlerRecorder()
    seen: list[BaseException] = []
    err = KafkaError(TRANSPORT, "cannot connect to a:1")
    for _ in range(50):
        report_error(loop, seen.append, "kafkaev", err)
    assert seen == [err] * 50


def test_the_limiter_forgets_quiet_kinds_past_its_size(clock):
    limiter = error_sink.LogRateLimiter(clock=clock, max_kinds=4)
    for i in range(4):
        assert limiter.admit(("s", f"offset {i}")) == 0
    clock.now += limiter.interval_s
    assert limiter.admit(("s", "offset 4")) == 0  # the four quiet ones are forgotten
    assert len(limiter._kinds) == 1
    assert limiter.admit(("s", "offset 4")) is None  # still limited itself
