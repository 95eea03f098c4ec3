"""kafkaev.error_sink.report_error: where an error with no callback of its own goes."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kafkaev.error_sink import report_error
from kafkaev.errors import NETWORK_EXCEPTION, KafkaError


class LoopHandlerRecorder:
    """Stands in for a loop's exception handler: report_error only calls this method."""

    def __init__(self) -> None:
        self.contexts: list[dict[str, Any]] = []

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        self.contexts.append(context)


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
