"""The floor for ``await`` per record: what asyncio itself costs when the client costs nothing.

The asyncio produce drivers (``bench/aio_drive.py``) await each record's future: ``AWAIT_TASKS``
tasks each awaiting one record before producing the next, or windows of ``WINDOW`` futures awaited
in order. Whatever the client does, every record then costs asyncio a Future, its settling and an
``await`` of it (with a task's wake-up and step whenever the awaited one is still pending). This
floor runs the same drivers, on uvloop, over a "client" whose produce only creates a pending
Future and whose "broker" settles every pending Future at each turn of the loop, as a batch's
delivery loop does; no socket, no record. Its CPU per record is the least any asyncio client can
spend awaiting each record, so a client's figure divided by it says how much of the rest is the
client's own."""

from __future__ import annotations

import asyncio
from typing import Any

import uvloop

from bench import aio_drive
from bench.spec import RunResult, RunSpec


class SettledEachTurn:
    """Pending Futures, all settled at the next turn of the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.pending: list[asyncio.Future[None]] = []
        self.scheduled = False

    def produce(self) -> asyncio.Future[None]:
        fut = self.loop.create_future()
        self.pending.append(fut)
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self.settle)
        return fut

    def settle(self) -> None:
        self.scheduled = False
        pending, self.pending = self.pending, []
        for fut in pending:
            fut.set_result(None)

    async def flush(self) -> None:
        while self.pending:
            await asyncio.sleep(0)


async def _produce(spec: RunSpec) -> RunResult:
    client = SettledEachTurn(asyncio.get_running_loop())
    calls = aio_drive.AsyncProducerCalls(awaited=client.produce, enqueue=client.produce, enqueue_is_async=False,
                                         flush=client.flush)
    settings: dict[str, Any] = {"api": "asyncio Futures settled each loop turn (no client, no broker)",
                                "loop": f"uvloop {uvloop.__version__}"}
    return await aio_drive.produce(spec, calls, settings)


def produce(spec: RunSpec) -> RunResult:
    return uvloop.run(_produce(spec))
