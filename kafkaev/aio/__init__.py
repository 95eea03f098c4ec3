"""``kafkaev.aio``: the asyncio API, on the same producer, consumer and connections as
``kafkaev.Client``.

``await client.produce(...)`` and ``produce_nowait`` settle a Future from the batch's delivery
loop in C, where the callback API calls its callbacks; ``async for msg in client`` and
``getmany`` pull records the fetcher buffered (``kafkaev.consumer.buffer``); the rest are
the callback methods awaited. It runs on whatever asyncio loop is running (the default one or
uvloop), starts no thread and needs no ``kafkaev.run()``.

Files: ``client`` (the ``Client``), ``bridge`` (a callback method as an awaitable),
``send`` (produce() and produce_nowait() in C), ``pull`` (``async for`` in C), ``iteration`` (waiting for fetched records), ``room`` (awaited produce() calls waiting for
buffer room, in turn), ``admin`` (``Admin``, every callback method awaited).
"""

from kafkaev.aio.admin import Admin
from kafkaev.aio.client import DEFAULT_CLOSE_TIMEOUT_MS, Client

__all__ = ["DEFAULT_CLOSE_TIMEOUT_MS", "Admin", "Client"]
