"""A client with no broker at all: the record's callback learns the connection failure (its
code, the addresses tried) once the metadata wait is over, not that its topic did not appear."""

from __future__ import annotations

import asyncio
import socket

import pytest

from kafkaev.client import Client
from kafkaev.errors import TRANSPORT, KafkaError

WAIT_MS = 400


@pytest.fixture
def loop(new_loop):
    return new_loop("uvloop")


def _closed_port() -> int:
    # A port nothing listens on: bound once, then released.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_record_with_no_broker_fails_with_the_connect_failure_once(loop):
    address = f"127.0.0.1:{_closed_port()}"
    errors: list[BaseException] = []
    client = Client(address, loop=loop, metadata_wait_ms=WAIT_MS, reconnect_backoff_ms=20,
                    reconnect_backoff_max_ms=100, on_error=errors.append)
    results: list[KafkaError | None] = []
    client.produce("events", None, b"v", lambda msg, err: results.append(err))

    async def settle() -> None:
        while not results:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # a second report would arrive here

    loop.run_until_complete(asyncio.wait_for(settle(), 10))
    closed: list[KafkaError | None] = []
    client.close(closed.append)
    loop.run_until_complete(asyncio.sleep(0.05))
    assert len(results) == 1
    err = results[0]
    assert err is not None and err.code == TRANSPORT, err
    assert f"no broker reachable at {address}" in str(err) and "'events'" in str(err)
