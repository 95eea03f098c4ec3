"""kafkaev.Connection against a fake broker that misbehaves in ways a real one will not on demand:
truncated frames, a wrong correlation id, a 2 GB size prefix, garbage, a stall, an old ApiVersions.
Each must end in a clean connection error, every pending callback failed exactly once, memory
bounded and the process alive."""

from __future__ import annotations

import asyncio
import gc
import random
import struct
import tracemalloc

import pytest
from conn_support import Recorder, call, connect
from fake_broker import (
    API_API_VERSIONS,
    API_METADATA,
    FakeBroker,
    FakeRequest,
    Reply,
    api_versions_body,
    normal_reply,
    reply_frame,
    unsupported_api_versions_v0,
)

from kafkaev import errors
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection, ProducePartition

PENDING = 20
API_FETCH = 1
# Memory the connection may allocate while a fault is handled; a 2 GB size prefix honoured would
# blow far past it.
MEMORY_BOUND = 8 * 1024 * 1024


def run(loop, coro):
    return loop.run_until_complete(coro)


def metadata_body() -> object:
    return codec.MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="fake", controller_id=-1, topics=[])


def on_nth_metadata(n: int, fault):
    """A responder that answers normally until the n-th Metadata request, then applies ``fault``."""
    seen = {"metadata": 0}

    def respond(req: FakeRequest) -> Reply:
        if req.api_key == API_METADATA:
            seen["metadata"] += 1
            if seen["metadata"] == n:
                return fault(req)
            if seen["metadata"] > n:
                return Reply(stall=True)
        return normal_reply(req)

    return respond


def truncated(req: FakeRequest) -> Reply:
    frame = reply_frame(req, metadata_body())
    return Reply(frame[: len(frame) // 2], close=True)


def wrong_correlation_id(req: FakeRequest) -> Reply:
    return Reply(reply_frame(req, metadata_body(), correlation_id=req.correlation_id + 1000))


def huge_size_prefix(req: FakeRequest) -> Reply:
    return Reply(b"\x7f\xff\xff\xff" + b"\0" * 64)


def negative_size_prefix(req: FakeRequest) -> Reply:
    return Reply(b"\x80\x00\x00\x00" + b"\0" * 64)


def garbage_small_frame(req: FakeRequest) -> Reply:
    # A plausible 16-byte frame of random bytes: its "correlation id" cannot match.
    return Reply(b"\x00\x00\x00\x10" + random.Random(7).randbytes(1 << 16))


def garbage_claiming_500mb(req: FakeRequest) -> Reply:
    # A size prefix within max_response_size, then far fewer bytes: only the timeout can end it, and
    # the connection must not have reserved the 500 MB the prefix claims.
    return Reply(struct.pack(">i", 500 << 20) + random.Random(8).randbytes(1 << 20))


FAULTS = {
    "truncated-then-close": (truncated, errors.TRANSPORT),
    "wrong-correlation-id": (wrong_correlation_id, errors.PROTOCOL),
    "2GB-size-prefix": (huge_size_prefix, errors.PROTOCOL),
    "negative-size-prefix": (negative_size_prefix, errors.PROTOCOL),
    "garbage-small-frame": (garbage_small_frame, errors.PROTOCOL),
    "garbage-claiming-500MB": (garbage_claiming_500mb, errors.TIMED_OUT),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_fault_fails_connection_and_every_pending_once(loop, fault):
    make_reply, expected_code = FAULTS[fault]

    async def main():
        broker = await FakeBroker(on_nth_metadata(1, make_reply)).start()
        try:
            conn = Connection(loop, request_timeout_ms=2000)
            seen_errors: list[object] = []
            disconnects: list[object] = []
            conn.on_error = seen_errors.append
            conn.on_disconnect = disconnects.append
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            tracemalloc.start()
            rec = Recorder(PENDING, loop)
            for i in range(PENDING):
                conn.metadata(None, rec.cb(i))
            await asyncio.wait_for(rec.all_done, 10)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            await asyncio.sleep(0.1)
            rec.assert_each_once()
            codes = [e.code if e is not None else None for _, _, e in sorted(rec.results, key=lambda x: x[0])]
            assert codes[0] == expected_code, codes
            assert set(codes[1:]) <= {expected_code, errors.TRANSPORT}
            assert None not in codes
            assert conn.state == "disconnected"
            assert len(disconnects) == 1 and len(seen_errors) == 1
            assert peak < MEMORY_BOUND, f"peak {peak} bytes while handling {fault}"
            # The process (and the loop) carry on: a new connection to a healthy broker works.
            healthy = await FakeBroker().start()
            try:
                fresh = Connection(loop)
                assert await connect(fresh, f"127.0.0.1:{healthy.port}") is None
                _, err = await call(fresh.metadata, None)
                assert err is None
                fresh.disconnect()
            finally:
                await healthy.stop()
        finally:
            await broker.stop()

    run(loop, main())


def test_stalled_broker_times_out(loop):
    async def main():
        broker = await FakeBroker(on_nth_metadata(1, lambda req: Reply(stall=True))).start()
        try:
            conn = Connection(loop, request_timeout_ms=300)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            rec = Recorder(3, loop)
            for i in range(3):
                conn.metadata(None, rec.cb(i))
            await asyncio.wait_for(rec.all_done, 5)
            rec.assert_each_once()
            assert {e.code for _, _, e in rec.results} == {errors.TIMED_OUT}
            assert conn.state == "disconnected"
        finally:
            await broker.stop()

    run(loop, main())


def test_stalled_handshake_hits_connect_timeout(loop):
    async def main():
        broker = await FakeBroker(lambda req: Reply(stall=True)).start()
        try:
            conn = Connection(loop)
            err = await connect(conn, f"127.0.0.1:{broker.port}", timeout=0.5)
            assert err is not None and err.code == errors.TIMED_OUT
            assert "ApiVersions" in str(err)
        finally:
            await broker.stop()

    run(loop, main())


def test_api_versions_fallback_on_unsupported_version(loop):
    asked: list[int] = []

    def respond(req: FakeRequest) -> Reply:
        if req.api_key == API_API_VERSIONS:
            asked.append(req.version)
            if req.version > 2:
                return Reply(unsupported_api_versions_v0(req, 2))
            return Reply(reply_frame(req, api_versions_body(max_api_versions=2)))
        return normal_reply(req)

    async def main():
        broker = await FakeBroker(respond).start()
        try:
            conn = Connection(loop)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            assert asked == [codec.SUPPORTED_VERSIONS[API_API_VERSIONS][1], 2]
            assert conn.version_for(API_API_VERSIONS) == 2
            _, err = await call(conn.metadata, None)
            assert err is None
            conn.disconnect()
        finally:
            await broker.stop()

    run(loop, main())


# ~1.1 MB: one buffer of the frame's size; ~5.5 MB: past the connection's up-front allocation
# (4 MiB), so the buffer grows while the frame arrives.
@pytest.mark.parametrize("topic_count", [5000, 25000])
def test_large_response_is_framed_in_pieces(loop, topic_count):
    """A response larger than the receive buffer arrives over many reads into its own buffer."""
    topics = [
        codec.MetadataResponseTopic(error_code=0, name=f"topic-{i:06d}-" + "x" * 200, partitions=[])
        for i in range(topic_count)
    ]
    big = codec.MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="fake", controller_id=-1,
                                  topics=topics)

    def respond(req: FakeRequest) -> Reply:
        if req.api_key == API_METADATA:
            return Reply(reply_frame(req, big))
        return normal_reply(req)

    async def main():
        broker = await FakeBroker(respond).start()
        try:
            conn = Connection(loop)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            rec = Recorder(5, loop)
            for i in range(5):
                conn.metadata(None, rec.cb(i))
            await asyncio.wait_for(rec.all_done, 20)
            rec.assert_each_once()
            last = topic_count - 1
            for _, response, err in rec.results:
                assert err is None and len(response.topics) == topic_count
                assert response.topics[last].name.startswith(f"topic-{last:06d}-")
            conn.disconnect()
        finally:
            await broker.stop()

    run(loop, main())


def test_response_larger_than_max_response_size_is_refused(loop):
    def respond(req: FakeRequest) -> Reply:
        if req.api_key == API_METADATA:
            return Reply(reply_frame(req, codec.MetadataResponse(
                throttle_time_ms=0, brokers=[], cluster_id="x" * 5000, controller_id=-1, topics=[])))
        return normal_reply(req)

    async def main():
        broker = await FakeBroker(respond).start()
        try:
            conn = Connection(loop, max_response_size=4096)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            _, err = await call(conn.metadata, None)
            assert err is not None and err.code == errors.PROTOCOL and "max_response_size" in str(err)
        finally:
            await broker.stop()

    run(loop, main())


def test_unreferenced_connection_closes_its_socket(loop):
    async def main():
        broker = await FakeBroker().start()
        try:
            conn = Connection(loop)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            with pytest.warns(ResourceWarning, match="unclosed"):
                del conn
                gc.collect()
            await asyncio.wait_for(broker.closed_by_peer.wait(), 5)
        finally:
            await broker.stop()

    run(loop, main())


def test_fetch_is_written_inside_the_call(loop):
    """A Fetch is not coalesced until the loop iteration ends: the consumer sends its next one
    before it hands the previous response's records over, so the broker works meanwhile."""
    def respond(req: FakeRequest) -> Reply:
        return Reply(stall=True) if req.api_key == API_FETCH else normal_reply(req)

    async def main():
        broker = await FakeBroker(respond).start()
        try:
            conn = Connection(loop)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            before = conn.writes
            results: list[object] = []
            conn.fetch("topic", 0, 0, lambda resp, err: results.append(err))
            assert conn.writes - before == 1  # no loop turn in between
            conn.disconnect()
            await asyncio.sleep(0)
            assert len(results) == 1 and results[0] is not None  # failed once by the disconnect
        finally:
            await broker.stop()

    run(loop, main())


def test_writes_are_coalesced(loop):
    """A request to an idle connection (nothing in flight, nothing encoded) is written inside
    the call; the requests issued behind it in the same loop iteration reach the broker in one
    segment when the iteration ends, not one each."""
    async def main():
        broker = await FakeBroker().start()
        try:
            conn = Connection(loop)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            before = conn.writes
            rec = Recorder(500, loop)
            conn.metadata(None, rec.cb(0))
            assert conn.writes - before == 1  # no loop turn in between
            for i in range(1, 500):
                conn.metadata(None, rec.cb(i))
            assert conn.writes - before == 1  # coalesced until the iteration ends
            await asyncio.wait_for(rec.all_done, 10)
            rec.assert_each_once()
            assert conn.writes - before == 2
            assert conn.requests_sent >= 501 and conn.bytes_sent > 500 * 20
            conn.disconnect()
        finally:
            await broker.stop()

    run(loop, main())


API_PRODUCE = 0
BATCHES_PAST_SOCKET_BUFFERS = 24  # 1 MiB each: more than loopback's socket buffers take


@pytest.mark.parametrize("broker_reads", [True, False], ids=["broker-reads", "broker-stalls"])
def test_disconnect_sends_what_the_socket_still_held(loop, broker_reads):
    """acks=0 produces are reported once written to the transport, which may still hold them
    when the connection is closed: the socket sends them before it closes, and wait_closed
    says when. A broker that stops reading makes it time out, with the socket aborted."""
    def respond(req: FakeRequest) -> Reply:
        if req.api_key == API_PRODUCE:
            return Reply() if broker_reads else Reply(stall=True)
        return normal_reply(req)

    async def main():
        broker = await FakeBroker(respond).start()
        try:
            conn = Connection(loop)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
            batch = bytes(1 << 20)
            rec = Recorder(BATCHES_PAST_SOCKET_BUFFERS, loop)
            for i in range(BATCHES_PAST_SOCKET_BUFFERS):
                conn.produce_batch([ProducePartition("t", 0, batch)], rec.cb(i), acks=0)
            await asyncio.wait_for(rec.all_done, 10)
            rec.assert_each_once()
            assert all(err is None for _, _, err in rec.results)  # written: handed to the transport
            conn.disconnect()
            closed = loop.create_future()
            conn.wait_closed(closed.set_result, timeout_ms=500)
            err = await asyncio.wait_for(closed, 10)
            if broker_reads:
                assert err is None
                await asyncio.sleep(0.2)  # the last frames are read after the socket said it sent them
            else:
                assert err is not None and err.code == errors.TIMED_OUT and "bytes to send" in err.message
            produces = sum(1 for r in broker.requests if r.api_key == API_PRODUCE)
            assert produces == (BATCHES_PAST_SOCKET_BUFFERS if broker_reads else 1)
        finally:
            await broker.stop()

    run(loop, main())
