"""Round-trip latency and pipelined throughput of one kafkaev.Connection, against the raw-socket floor.

Sequential: one request, wait for its response, repeat (p50/p90/p99 in microseconds).
Pipelined: keep WINDOW requests in flight over one connection, count responses per second.
Both are measured for kafkaev.Connection (on uvloop) and for a minimal raw-socket client that
sends the very same pre-encoded request bytes over a blocking socket and reads the response frame
(the floor: no client can do less per round trip). Runs alternate so that broker warm-up and
machine noise hit both sides alike; ratios are reported side by side.

    python -m bench.conn_latency                       # starts a local broker
    python -m bench.conn_latency --brokers 127.0.0.1:9092 --requests 20000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import time

import uvloop

from bench.measure import summarize_latencies
from kafkaev.protocol import codec
from kafkaev.protocol.connection import BusyPoll, Connection

API_METADATA = 3
API_API_VERSIONS = 18
SIZE = struct.Struct(">i")
PIPELINE_WINDOW = 1000
CLIENT_ID = "kafkaev"


def bare_connection(loop: asyncio.AbstractEventLoop, busy_poll_us: int = 0) -> Connection:
    """A ``Connection`` outside any client; with ``busy_poll_us``, a ``BusyPoll`` of its own, as a
    client's pool would give it. ``close_connection`` disconnects it and closes that poll."""
    conn = Connection(loop)
    if busy_poll_us:
        conn.busy_poll = BusyPoll(loop, busy_poll_us)
    return conn


def close_connection(conn: Connection) -> None:
    conn.disconnect()
    if conn.busy_poll is not None:
        conn.busy_poll.close()


class RawClient:
    """Blocking socket, pre-encoded frames: the floor."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray(1 << 20)
        self.view = memoryview(self.buf)

    def close(self) -> None:
        self.sock.close()

    def _read_exactly(self, n: int) -> memoryview:
        if n > len(self.buf):
            self.buf = bytearray(n)
            self.view = memoryview(self.buf)
        got = 0
        while got < n:
            r = self.sock.recv_into(self.view[got:n])
            if not r:
                raise ConnectionError("broker closed the connection")
            got += r
        return self.view[:n]

    def read_frame(self) -> None:
        (size,) = SIZE.unpack(self._read_exactly(4))
        self._read_exactly(size)

    def sequential(self, frame: bytes, count: int) -> list[float]:
        latencies = []
        for _ in range(count):
            t0 = time.perf_counter_ns()
            self.sock.sendall(frame)
            self.read_frame()
            latencies.append((time.perf_counter_ns() - t0) / 1000.0)
        return latencies

    def pipelined(self, frame: bytes, count: int) -> float:
        """Responses per second with up to PIPELINE_WINDOW requests in flight (sent in batches)."""
        started = time.perf_counter()
        sent = received = 0
        while received < count:
            burst = min(PIPELINE_WINDOW - (sent - received), count - sent)
            if burst > 0:
                self.sock.sendall(frame * burst)
                sent += burst
            self.read_frame()
            received += 1
        return count / (time.perf_counter() - started)


async def kafkaev_sequential(conn: Connection, issue, count: int) -> list[float]:
    """One request at a time, the next issued from the previous one's callback, each timed from
    the call to its callback: the way a callback user drives a Connection, and the way the
    roundtrip scenario drives produce(). Awaiting a future per request instead timed asyncio's
    task wake-up too (a turn of the loop and a Task step, ~10 µs idle and several times that
    on a loaded machine), which the raw floor does not pay."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    latencies: list[float] = []
    started = 0

    def send() -> None:
        nonlocal started
        started = time.perf_counter_ns()
        issue(conn, answered)

    def answered(_response, err) -> None:
        latencies.append((time.perf_counter_ns() - started) / 1000.0)
        if err is not None:
            if not done.done():
                done.set_exception(err)
        elif len(latencies) < count:
            send()
        elif not done.done():
            done.set_result(None)

    if count <= 0:
        return latencies
    send()
    await done
    return latencies


async def kafkaev_pipelined(conn: Connection, issue, count: int) -> float:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    state = {"sent": 0, "received": 0}

    def on_response(response, err):
        if err is not None:
            if not done.done():
                done.set_exception(err)
            return
        state["received"] += 1
        if state["received"] == count:
            done.set_result(None)
        elif state["sent"] < count:
            state["sent"] += 1
            issue(conn, on_response)

    started = time.perf_counter()
    for _ in range(min(PIPELINE_WINDOW, count)):
        state["sent"] += 1
        issue(conn, on_response)
    await done
    return count / (time.perf_counter() - started)


def requests_under_test(topic: str | None):
    """(name, kafkaev issuer, raw frame builder) per request kind."""
    topics = [topic] if topic else []

    def issue_metadata(conn: Connection, cb) -> None:
        conn.metadata(topics, cb, allow_auto_topic_creation=False)

    def metadata_frame(version: int) -> bytes:
        body = codec.MetadataRequest(
            topics=[codec.MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=False)
        return codec.encode_request_frame(API_METADATA, version, 1, CLIENT_ID, body)

    def issue_api_versions(conn: Connection, cb) -> None:
        conn.api_versions_request(cb)

    def api_versions_frame(version: int) -> bytes:
        body = codec.ApiVersionsRequest(client_software_name="kafkaev", client_software_version="0")
        return codec.encode_request_frame(API_API_VERSIONS, version, 1, CLIENT_ID, body)

    return [("Metadata", API_METADATA, issue_metadata, metadata_frame),
            ("ApiVersions", API_API_VERSIONS, issue_api_versions, api_versions_frame)]


async def measure(host: str, port: int, topic: str | None, count: int, rounds: int) -> dict:
    conn = Connection(asyncio.get_running_loop())
    ready = asyncio.get_running_loop().create_future()
    conn.connect(host, port, cb=lambda c, e: ready.set_result(e))
    err = await ready
    if err is not None:
        raise err
    raw = RawClient(host, port)
    results: dict = {}
    try:
        for name, api_key, issue, frame_of in requests_under_test(topic):
            frame = frame_of(conn.version_for(api_key))
            # Warm both paths (broker caches, JIT, CPU frequency) before measuring.
            raw.sequential(frame, 500)
            await kafkaev_sequential(conn, issue, 500)
            seq = {"kafkaev": [], "raw": []}
            rate = {"kafkaev": [], "raw": []}
            for _ in range(rounds):
                seq["raw"] += raw.sequential(frame, count)
                seq["kafkaev"] += await kafkaev_sequential(conn, issue, count)
                rate["raw"].append(raw.pipelined(frame, count * 5))
                rate["kafkaev"].append(await kafkaev_pipelined(conn, issue, count * 5))
            summary = {side: summarize_latencies(values) for side, values in seq.items()}
            best_rate = {side: max(values) for side, values in rate.items()}
            results[name] = {
                "sequential_us": {side: {k: summary[side][k] for k in ("p50", "p90", "p99")} for side in summary},
                "pipelined_req_per_s": best_rate,
                "ratio_p50": summary["kafkaev"]["p50"] / summary["raw"]["p50"],
                "ratio_p99": summary["kafkaev"]["p99"] / summary["raw"]["p99"],
                "ratio_rate": best_rate["kafkaev"] / best_rate["raw"],
            }
    finally:
        raw.close()
        conn.disconnect()
    return results


def print_table(results: dict) -> None:
    print(f"{'request':<12} {'side':<8} {'p50 us':>9} {'p90 us':>9} {'p99 us':>9} {'pipelined req/s':>16}")
    for name, r in results.items():
        for side in ("raw", "kafkaev"):
            s = r["sequential_us"][side]
            print(f"{name:<12} {side:<8} {s['p50']:9.1f} {s['p90']:9.1f} {s['p99']:9.1f} "
                  f"{r['pipelined_req_per_s'][side]:16,.0f}")
        print(f"{name:<12} {'ratio':<8} {r['ratio_p50']:9.2f}x {'':>9} {r['ratio_p99']:8.2f}x "
              f"{r['ratio_rate']:15.2f}x   (kafkaev / raw floor; goal p50 <= 1.30x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", help="host:port of a running broker (default: start a local one)")
    parser.add_argument("--requests", type=int, default=5000, help="sequential round trips per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    cluster = None
    if args.brokers:
        bootstrap = args.brokers.split(",")[0]
    else:
        from bench.broker import start_embedded

        cluster = start_embedded()
        bootstrap = cluster.bootstrap.split(",")[0]
    try:
        topic = None
        if cluster is not None:
            topic = cluster.create_topic("conn-latency", partitions=1)
        host, port = bootstrap.rsplit(":", 1)
        results = uvloop.run(measure(host, int(port), topic, args.requests, args.rounds))
    finally:
        if cluster is not None:
            cluster.stop()
    print_table(results)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
