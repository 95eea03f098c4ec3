"""A small asyncio Kafka "broker" for faults a real one will not produce on demand.

It decodes every request frame with kafkaev's own codecs, answers ApiVersions and Metadata like a
real broker would (so a Connection becomes ready), and lets a test script the reply to any later
request: a normal answer, bytes of its choosing (truncated, garbage, a wrong correlation id, a huge
size prefix), silence, or a close.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from kafkaev.protocol import codec

API_METADATA = 3
API_API_VERSIONS = 18
UNSUPPORTED_VERSION = 35
SIZE_PREFIX = struct.Struct(">i")


@dataclass(slots=True)
class FakeRequest:
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    body: object


@dataclass(slots=True)
class Reply:
    """What the fake broker does with one request: write ``data`` (may be empty), then close the
    connection if ``close`` is set; ``stall`` stops reading and answering altogether."""

    data: bytes = b""
    close: bool = False
    stall: bool = False


Responder = Callable[[FakeRequest], Reply]


def api_versions_body(max_api_versions: int | None = None) -> object:
    keys = []
    for api_key, (low, high) in sorted(codec.SUPPORTED_VERSIONS.items()):
        if api_key == API_API_VERSIONS and max_api_versions is not None:
            high = max_api_versions
        keys.append(codec.ApiVersion(api_key=api_key, min_version=low, max_version=high))
    return codec.ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)


def normal_reply(req: FakeRequest) -> Reply:
    """A well-formed answer to ApiVersions or Metadata (an empty cluster)."""
    if req.api_key == API_API_VERSIONS:
        body = api_versions_body()
    elif req.api_key == API_METADATA:
        body = codec.MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="fake", controller_id=-1,
                                       topics=[])
    else:
        raise AssertionError(f"fake broker: no normal reply for api key {req.api_key}")
    return Reply(codec.encode_response_frame(req.api_key, req.version, req.correlation_id, body))


@dataclass
class FakeBroker:
    """Serve on 127.0.0.1:<port>. ``responder`` decides each reply (default: normal_reply)."""

    responder: Responder = normal_reply
    requests: list[FakeRequest] = field(default_factory=list)
    connections: int = 0
    port: int = 0
    _server: asyncio.AbstractServer | None = None
    _writers: list[asyncio.StreamWriter] = field(default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    closed_by_peer: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        for writer in self._writers:
            writer.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def __aenter__(self) -> FakeBroker:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.append(task)
        try:
            while True:
                (size,) = SIZE_PREFIX.unpack(await reader.readexactly(SIZE_PREFIX.size))
                payload = await reader.readexactly(size)
                req = FakeRequest(*codec.decode_request_frame(payload))
                self.requests.append(req)
                reply = self.responder(req)
                if reply.data:
                    writer.write(reply.data)
                    await writer.drain()
                if reply.close:
                    writer.close()
                    return
                if reply.stall:
                    await asyncio.Event().wait()  # until the server is stopped
        except (asyncio.IncompleteReadError, ConnectionError):
            self.closed_by_peer.set()
        except asyncio.CancelledError:
            # stop(): end quietly, so that asyncio's stream callback finds no exception to report.
            return
        finally:
            writer.close()


def reply_frame(req: FakeRequest, body: object, *, correlation_id: int | None = None) -> bytes:
    cid = req.correlation_id if correlation_id is None else correlation_id
    return codec.encode_response_frame(req.api_key, req.version, cid, body)


def unsupported_api_versions_v0(req: FakeRequest, max_version: int) -> bytes:
    """An ApiVersions UNSUPPORTED_VERSION answer in the v0 layout (what a broker sends when it does not
    know the request's version), listing only ApiVersions 0..max_version."""
    body = codec.ApiVersionsResponse(
        error_code=UNSUPPORTED_VERSION,
        api_keys=[codec.ApiVersion(api_key=API_API_VERSIONS, min_version=0, max_version=max_version)])
    return codec.encode_response_frame(API_API_VERSIONS, 0, req.correlation_id, body)
