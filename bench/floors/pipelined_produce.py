"""The ceiling for pipelined produce: a raw-socket client that does no per-record work.

Before the clock starts it encodes, in plain Python, one full RecordBatch v2 of the scenario's
values (as many records as fit in ``BATCH_SIZE``, the batch size kafkaev's run of the same
scenario fills, CRC-32C included) and one Produce v7 request per partition carrying it; that
encoding costs the floor nothing. Each partition gets its own blocking TCP socket, driven by its
own thread (the GIL is released while a socket sends or reads), as kafkaev's throughput runs use
``produce_connections`` equal to the topic's partitions: a broker handles one request per
connection at a time, so one connection for all partitions would be a lower ceiling than the
broker's. Once each partition has accepted one request (a topic just created may not have its
leaders in place) and the warm-up is over, the measured section only writes the same frame again
and again on each socket, with at most ``MAX_IN_FLIGHT_PER_PARTITION`` requests unanswered
(kafkaev's ``max_in_flight``), and reads every response in order, checking its correlation id,
partition and error code: one error fails the run with its name. Its records per second are what
the broker takes in on this machine when the client costs next to nothing.

It does less than a producer must (no idempotence, the same bytes each time), so it is a ceiling,
not a competitor.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from bench.floors.wire import (
    PRODUCE_VERSION,
    connect,
    full_record_batch,
    produce_answer,
    produce_request,
    read_frame,
)
from bench.measure import Section, make_value
from bench.spec import RunResult, RunSpec
from kafkaev.errors import (
    LEADER_NOT_AVAILABLE,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    UNKNOWN_TOPIC_OR_PARTITION,
    error_name,
)

# The batch size of the kafkaev produce runs (bench/clients/kafkaev_client.py, BATCH_SIZE); a
# test keeps the two equal.
BATCH_SIZE = 1024 * 1024
# kafkaev's default max_in_flight: produce requests unanswered per partition.
MAX_IN_FLIGHT_PER_PARTITION = 5
ACKS_NONE = 0
# A topic created a moment ago: its partitions may answer these until their leader is in place.
LEADER_NOT_READY = frozenset({NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION})
LEADER_WAIT_S = 0.05
READY_TIMEOUT_S = 10.0


class ProducePipeline:
    """Pre-encoded Produce frames written again and again over one socket, every answer checked.

    Frame ``i`` must carry correlation id ``partitions[i]`` and write that partition (by default
    ``i``): that is what its answer is checked against.
    """

    __slots__ = ("_sock", "_reader", "_frames", "_partitions", "_records_per_frame", "_depth")

    def __init__(self, sock: socket.socket, frames: Sequence[bytes], records_per_frame: int,
                 in_flight_per_frame: int, partitions: Sequence[int] | None = None) -> None:
        self._sock = sock
        self._reader = sock.makefile("rb")
        self._frames = frames
        self._partitions = list(range(len(frames))) if partitions is None else list(partitions)
        self._records_per_frame = records_per_frame
        self._depth = in_flight_per_frame * len(frames)

    def run_for(self, seconds: float) -> tuple[int, float]:
        """Send for ``seconds``, then wait for every answer; returns the records acknowledged and
        the seconds spent sending. An answer with an error raises ``RuntimeError`` naming it."""
        sendall = self._sock.sendall
        frames = self._frames
        frame_count = len(frames)
        depth = self._depth
        clock = time.perf_counter
        awaited: deque[int] = deque()  # frame indexes sent and not yet answered, oldest first
        next_frame = 0
        answered = 0
        started = clock()
        deadline = started + seconds
        while clock() < deadline:
            while len(awaited) < depth:
                sendall(frames[next_frame])
                awaited.append(next_frame)
                next_frame = (next_frame + 1) % frame_count
            self._check(awaited.popleft())
            answered += 1
        sending_s = clock() - started
        while awaited:
            self._check(awaited.popleft())
            answered += 1
        return answered * self._records_per_frame, sending_s

    def wait_ready(self, timeout_s: float) -> int:
        """Send each frame once, alone, until its partition accepts it (a topic just created may
        not have its leader in place yet); returns the records acknowledged. Any other error, or
        a partition still not led after ``timeout_s``, raises ``RuntimeError``."""
        deadline = time.perf_counter() + timeout_s
        for frame, data in enumerate(self._frames):
            while True:
                self._sock.sendall(data)
                error_code = self._answer(frame)
                if error_code not in LEADER_NOT_READY or time.perf_counter() >= deadline:
                    break
                time.sleep(LEADER_WAIT_S)
            self._fail_on(frame, error_code)
        return len(self._frames) * self._records_per_frame

    def _check(self, frame: int) -> None:
        self._fail_on(frame, self._answer(frame))

    def _answer(self, frame: int) -> int:
        """The error code of the next answer, which must be frame ``frame``'s."""
        expected = self._partitions[frame]
        correlation_id, partition, error_code = produce_answer(read_frame(self._reader))
        if correlation_id != expected or partition != expected:
            raise RuntimeError(f"raw-socket produce: expected the answer to request {expected} (partition "
                               f"{expected}), got correlation id {correlation_id} for partition {partition}")
        return error_code

    def _fail_on(self, frame: int, error_code: int) -> None:
        if error_code != NONE:
            raise RuntimeError(f"raw-socket produce: partition {self._partitions[frame]} answered "
                               f"{error_name(error_code)} ({error_code})")

    def close(self) -> None:
        """Close the reader and the socket."""
        self._reader.close()
        self._sock.close()


def produce(spec: RunSpec) -> RunResult:
    if spec.acks == ACKS_NONE:
        raise ValueError("raw-socket produce: 'acks' must be 1 or -1, it counts acknowledged records; got 0")
    batch, records_per_batch = full_record_batch(make_value(spec.value_size), int(time.time() * 1000), BATCH_SIZE)
    pipelines: list[ProducePipeline] = []
    try:
        for partition in range(spec.partitions):
            frame = produce_request(partition, spec.topic, partition, batch, spec.acks)
            pipelines.append(ProducePipeline(connect(spec.bootstrap), [frame], records_per_batch,
                                             MAX_IN_FLIGHT_PER_PARTITION, partitions=[partition]))
        with ThreadPoolExecutor(len(pipelines)) as threads:

            def run_all(seconds: float) -> tuple[int, float]:
                """Every socket sends for ``seconds`` at once: records acknowledged, longest send."""
                done = list(threads.map(lambda pipeline: pipeline.run_for(seconds), pipelines))
                return sum(acked for acked, _ in done), max(sending for _, sending in done)

            warm = sum(pipeline.wait_ready(READY_TIMEOUT_S) for pipeline in pipelines)
            warm += run_all(spec.warmup_s)[0]
            with Section() as section:
                acked, sending_s = run_all(spec.duration_s)
    finally:
        for pipeline in pipelines:
            pipeline.close()
    return RunResult(
        records=acked,
        elapsed_s=section.elapsed,
        call_elapsed_s=sending_s,
        calls=acked,  # every record sent was acknowledged, or the run failed
        warmup_records=warm,
        cpu_s=section.cpu,
        bytes=acked * spec.value_size,
        settings={
            "request": f"Produce v{PRODUCE_VERSION}, pre-encoded full batches, one blocking socket per partition",
            "connections": len(pipelines),
            "acks": spec.acks,
            "batch_size": BATCH_SIZE,
            "records_per_batch": records_per_batch,
            "max_in_flight_per_partition": MAX_IN_FLIGHT_PER_PARTITION,
        },
    )
