"""The rebalance scenario's shared parts: a steady producer and the pause tracker.

A group of ``REBALANCE_MEMBERS`` members reads a ``spec.partitions``-partition topic while a
producer (the same confluent-kafka one for every client, on its own thread) writes
``spec.rate`` records a second spread over every partition. Once the group has settled (every
partition delivering, each member delivering some, and no partition changing hands for
``SETTLE_QUIET_S``: a first member that briefly owned everything has given it up), a fifth
member joins, and later leaves. The pause is the longest time any partition went
without delivering a record in that window: records kept arriving the whole time, so every
gap above the producer's spacing is the rebalance's doing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from bench.measure import make_value, percentile
from bench.spec import RunResult, RunSpec

REBALANCE_MEMBERS = 4
SETTLE_TIMEOUT_S = 60.0
# The group counts as settled once no partition has changed the member delivering it for this long.
SETTLE_QUIET_S = 1.5
# How long the group runs with the fifth member before it leaves, and after it left.
PHASE_S = 6.0
PRODUCER_TICK_S = 0.005


class SteadyProducer:
    """``rate`` records a second, partitions in turn, until stopped."""

    def __init__(self, spec: RunSpec) -> None:
        # Imported here, not with the module: every client's worker imports this module, and
        # librdkafka loaded into kafkaev's or aiokafka's would count in their peak RSS.
        import confluent_kafka

        self.producer = confluent_kafka.Producer({"bootstrap.servers": spec.bootstrap, "linger.ms": 5})
        self.spec = spec
        self.value = make_value(spec.value_size)
        self.stop = threading.Event()
        self.sent = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        started = time.perf_counter()
        partitions = self.spec.partitions
        while not self.stop.is_set():
            due = int((time.perf_counter() - started) * self.spec.rate)
            while self.sent < due:
                try:
                    self.producer.produce(self.spec.topic, self.value, partition=self.sent % partitions)
                except BufferError:
                    break
                self.sent += 1
            self.producer.poll(0)
            time.sleep(PRODUCER_TICK_S)
        self.producer.flush(10)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(20)


class PauseTracker:
    """The time of each partition's latest delivery and the member that made it, and the
    longest gap seen in the window."""

    def __init__(self, partitions: int) -> None:
        self.lock = threading.Lock()
        self.partitions = partitions
        self.last: dict[int, float] = {}
        self.member_of: dict[int, int] = {}  # partition: the member that delivered it last
        self.moved_at = time.perf_counter()  # the latest time a partition changed member
        self.longest: dict[int, float] = {}
        self.window_open = False
        self.records = 0

    def delivered(self, partition: int, member: int) -> None:
        now = time.perf_counter()
        with self.lock:
            self.records += 1
            previous = self.last.get(partition)
            if self.window_open and previous is not None and now - previous > self.longest.get(partition, 0.0):
                self.longest[partition] = now - previous
            self.last[partition] = now
            if self.member_of.get(partition) != member:
                self.member_of[partition] = member
                self.moved_at = now

    def settled(self, members: int) -> bool:
        """Every partition delivering, by ``members`` members, none moved for SETTLE_QUIET_S."""
        with self.lock:
            return (len(self.last) == self.partitions and len(set(self.member_of.values())) == members
                    and time.perf_counter() - self.moved_at >= SETTLE_QUIET_S)

    def open_window(self) -> None:
        with self.lock:
            self.window_open = True
            self.longest = {}

    def close_window(self) -> None:
        """A partition silent since its last delivery counts up to now."""
        now = time.perf_counter()
        with self.lock:
            for partition, at in self.last.items():
                self.longest[partition] = max(self.longest.get(partition, 0.0), now - at)
            self.window_open = False

    def result(self, settings: dict[str, object], note: str = "") -> RunResult:
        pauses = sorted(self.longest.get(p, 0.0) * 1e6 for p in range(self.partitions))
        return RunResult(records=self.records, latency_us={"max_pause": pauses[-1],
                                                           "median_pause": percentile(pauses, 50.0)},
                         settings=settings, note=note)


def run_timeline(spec: RunSpec, tracker: PauseTracker, wait: Callable[[float], None],
                 join_fifth: Callable[[], None], leave_fifth: Callable[[], None]) -> None:
    """The scenario's steps: settle, open the window, the fifth joins, then leaves, close it."""
    deadline = time.perf_counter() + SETTLE_TIMEOUT_S
    while not tracker.settled(REBALANCE_MEMBERS):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the {REBALANCE_MEMBERS}-member group did not settle on every partition "
                               f"within {SETTLE_TIMEOUT_S:.0f}s")
        wait(0.05)
    tracker.open_window()
    join_fifth()
    wait(PHASE_S)
    leave_fifth()
    wait(PHASE_S)
    tracker.close_window()
