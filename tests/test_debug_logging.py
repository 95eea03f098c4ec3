"""The area loggers and the ``debug`` option: ``debug="group"`` shows a rebalance's JoinGroup,
SyncGroup and Heartbeat records and nothing at DEBUG from any other area, without touching
the user's logging configuration; rebalances at INFO, lost connections at WARNING."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from conn_support import call, run, split_bootstrap
from conn_support import connect as conn_connect
from consumer_helpers import Received, close, connect, run_until

import kafkaev
from kafkaev.log import AREAS, enable_debug, logger_of, parse_debug
from kafkaev.protocol import codec
from kafkaev.protocol.codec import ApiKey
from kafkaev.protocol.connection import Connection

SESSION_MS = 6000  # the broker's group.min.session.timeout.ms
HEARTBEAT_MS = 300


class Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def messages(self, name: str, level: int) -> list[str]:
        return [r.getMessage() for r in self.records if r.name == name and r.levelno == level]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """A handler on the ``kafkaev`` logger (the user's config); area levels restored after."""
    root = logging.getLogger("kafkaev")
    saved = {area: logger_of(area).level for area in AREAS}
    saved_handlers = {area: list(logger_of(area).handlers) for area in AREAS}
    handler = Recorder()
    root.addHandler(handler)
    yield handler
    root.removeHandler(handler)
    for area in AREAS:
        logger_of(area).setLevel(saved[area])
        logger_of(area).handlers[:] = saved_handlers[area]


def test_debug_group_shows_the_rebalance_and_nothing_else(uv: asyncio.AbstractEventLoop, kafka: Any,
                                                          make_topic: Any, recorder: Recorder) -> None:
    topic = make_topic(partitions=2)
    root_level = logging.getLogger().level
    received = Received()
    client = connect(uv, kafka.bootstrap, debug="group", on_message=received.on_message,
                     on_error=received.on_error)
    client.produce(topic, None, b"x")
    client.flush()
    client.subscribe([topic], group_id=f"debug-{topic}", session_timeout_ms=SESSION_MS,
                     heartbeat_interval_ms=HEARTBEAT_MS)
    run_until(uv, lambda: received.count == 1, 30, "the record")
    run_until(uv, lambda: any(m.startswith(f"group 'debug-{topic}': Heartbeat answered NONE")
                              for m in recorder.messages("kafkaev.group", logging.DEBUG)), 10, "a heartbeat")
    close(uv, client)
    group_debug = recorder.messages("kafkaev.group", logging.DEBUG)
    for step in ("JoinGroup to", "JoinGroup answered NONE", "SyncGroup generation", "SyncGroup answered NONE",
                 "Heartbeat generation", "Heartbeat answered NONE", "LeaveGroup"):
        assert any(step in m for m in group_debug), (step, group_debug)
    infos = recorder.messages("kafkaev.group", logging.INFO)
    assert any("rebalancing" in m for m in infos) and any("stable after" in m for m in infos), infos
    others = [r for r in recorder.records if r.levelno == logging.DEBUG and r.name != "kafkaev.group"]
    assert others == [], [(r.name, r.getMessage()) for r in others]
    # The user's configuration is untouched: the root's level, and no handler added anywhere.
    assert logging.getLogger().level == root_level
    assert all(not logger_of(area).handlers for area in AREAS)
    assert logging.getLogger("kafkaev").level == logging.NOTSET


def test_a_handler_is_added_only_when_none_would_see_the_records(monkeypatch: pytest.MonkeyPatch) -> None:
    area = logger_of("metadata")
    saved_level, saved_handlers = area.level, list(area.handlers)
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    monkeypatch.setattr(logging.getLogger("kafkaev"), "handlers", [])
    try:
        enable_debug(("metadata",))
        assert area.level == logging.DEBUG and len(area.handlers) == 1
        enable_debug(("metadata",))
        assert len(area.handlers) == 1, "a second client must not add a second handler"
        assert logger_of("group").level == logging.NOTSET
    finally:
        area.setLevel(saved_level)
        area.handlers[:] = saved_handlers


def test_debug_option_names_its_areas() -> None:
    assert parse_debug("metadata, group") == ("group", "metadata")
    assert parse_debug("all") == AREAS
    assert parse_debug(None) == ()
    with pytest.raises(ValueError, match="'debug' names unknown areas \\['grup'\\]"):
        kafkaev.Client("127.0.0.1:1", debug="grup")
    with pytest.raises(TypeError, match="'debug'"):
        kafkaev.Client("127.0.0.1:1", debug=3)  # type: ignore[arg-type]


def test_a_lost_connection_is_a_warning_naming_the_broker_and_reason(uv: asyncio.AbstractEventLoop, kafka: Any,
                                                                      recorder: Recorder) -> None:
    """Through a proxy that hangs up once the connection is ready: the broker went away."""
    host, port = split_bootstrap(kafka.bootstrap)
    accepted: list[asyncio.StreamWriter] = []

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        up_reader, up_writer = await asyncio.open_connection(host, port)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    server = uv.run_until_complete(asyncio.start_server(relay, "127.0.0.1", 0))
    proxy_port = server.sockets[0].getsockname()[1]
    conn = Connection(uv)
    errors: list[BaseException] = []
    conn.on_error = errors.append
    assert run(uv, conn_connect(conn, f"127.0.0.1:{proxy_port}")) is None
    accepted[0].transport.abort()
    run_until(uv, lambda: bool(recorder.messages("kafkaev.connection", logging.WARNING)), 10, "the warning")
    (line,) = recorder.messages("kafkaev.connection", logging.WARNING)
    assert line.startswith(f"lost the connection to 127.0.0.1:{proxy_port} (node ")
    assert "lost: " in line, line
    assert len(errors) == 1 and str(errors[0]) in line  # the same reason on_error got
    server.close()
    conn.disconnect()


THROTTLE_MS = 250


def test_a_throttled_answer_is_counted_and_logged_at_info(loop: asyncio.AbstractEventLoop, fake_cluster: Any,
                                                           recorder: Recorder) -> None:
    """A broker over a quota answers with a throttle time (the fake answers with one)."""
    logger_of("connection").setLevel(logging.INFO)  # the user's choice; the fixture restores it
    cluster = fake_cluster(1)
    cluster.script(ApiKey.HEARTBEAT, codec.HeartbeatResponse(error_code=0, throttle_time_ms=THROTTLE_MS))
    conn = Connection(loop)
    conn.node_id = 1
    assert run(loop, conn_connect(conn, cluster.bootstrap)) is None
    for _ in range(2):
        response, err = run(loop, call(conn.heartbeat, "g", 1, "m"))
        assert err is None and response.throttle_time_ms == THROTTLE_MS
    assert conn.throttle_time_ms == 2 * THROTTLE_MS and conn.throttled_responses == 2
    assert sum(conn.rtt_histogram()) == conn.responses_received == 3  # ApiVersions and two heartbeats
    lines = recorder.messages("kafkaev.connection", logging.INFO)
    assert len(lines) == 2 and all(f"(node 1) held a Heartbeat response back {THROTTLE_MS} ms" in m for m in lines)
    conn.disconnect()
