"""The broker a benchmark run talks to: the embedded local cluster, or an existing one (--brokers)."""

from __future__ import annotations

import shutil
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.measure import make_value
from kafkaev.testing.admin import KafkaCluster
from kafkaev.testing.cluster import THROUGHPUT_JVM_OPTIONS, LocalCluster

# The broker is the shared bottleneck of every client: give it the throughput JVM settings and
# a heap big enough not to be the thing measured.
BENCH_BROKER_HEAP = "1g"
PREFILL_QUEUE_MESSAGES = 1_000_000
MEMORY_LOG_PARENT = Path("/dev/shm")
# A full run writes ~20 GB over its course; topics are deleted after each run, so a few GB at once.
MEMORY_LOG_MIN_FREE_BYTES = 8 * 1024**3
DELETE_DELAY_CONFIG = "log.segment.delete.delay.ms"
BENCH_BROKER_CONFIG = {
    # A deleted run topic's files go at once, not a minute later: they may be in memory.
    DELETE_DELAY_CONFIG: "1000",
}
ADMIN_TIMEOUT_S = 15.0


class ExistingCluster(KafkaCluster):
    """A cluster someone else runs; the harness only creates topics on it, and deletes them after each run."""

    def __init__(self, bootstrap: str) -> None:
        super().__init__()
        self._bootstrap = bootstrap
        self.node_count = len(self.metadata().brokers)

    @property
    def bootstrap(self) -> str:
        return self._bootstrap

    def start(self) -> ExistingCluster:
        return self  # already running: someone else's cluster

    def stop(self) -> None:
        self._close_admin()

    def log_tail(self, lines: int = 0) -> str:
        return ""  # its logs are not ours to read


def deletion_delays(cluster: KafkaCluster) -> dict[int, int]:
    """Each broker's ``log.segment.delete.delay.ms``: how long a deleted run topic's files stay."""
    from confluent_kafka.admin import ConfigResource

    admin = cluster.admin()
    resources = [ConfigResource(ConfigResource.Type.BROKER, str(node)) for node in cluster.metadata().brokers]
    delays = {}
    for resource, future in admin.describe_configs(resources, request_timeout=ADMIN_TIMEOUT_S).items():
        delays[int(resource.name)] = int(future.result(timeout=ADMIN_TIMEOUT_S)[DELETE_DELAY_CONFIG].value)
    return delays


def slow_deletion_warning(delays: dict[int, int], bootstrap: str) -> str | None:
    """What to tell the user of a ``--brokers`` cluster that keeps deleted topics' files longer
    than the embedded broker does: a full run writes ~20 GB, deleted after each run, and a log in
    memory (/dev/shm) that keeps them a minute fills the machine's RAM and slows every later run."""
    wanted = int(BENCH_BROKER_CONFIG[DELETE_DELAY_CONFIG])
    slow = {node: delay for node, delay in sorted(delays.items()) if delay > wanted}
    if not slow:
        return None
    listed = ", ".join(f"broker {node}: {delay} ms" for node, delay in slow.items())
    commands = "\n".join(f"    kafkaev configs alter -b {bootstrap} --broker {node} --set {DELETE_DELAY_CONFIG}={wanted}"
                         for node in slow)
    return (f"warning: deleted run topics keep their files for {DELETE_DELAY_CONFIG} ({listed}); a full run "
            f"writes ~20 GB, so a broker log in memory can fill it. The embedded broker uses {wanted} ms:\n"
            f"{commands}")


def memory_log_parent() -> Path | None:
    """Where the embedded broker keeps its log: in memory when the machine has room, so that the
    disk's writeback (at several hundred MB/s of produce it throttles the broker for seconds)
    does not slow whichever client happens to run then. None: the system's temp directory."""
    if MEMORY_LOG_PARENT.is_dir() and shutil.disk_usage(MEMORY_LOG_PARENT).free >= MEMORY_LOG_MIN_FREE_BYTES:
        return MEMORY_LOG_PARENT
    return None


def start_embedded() -> LocalCluster:
    return LocalCluster(nodes=1, heap=BENCH_BROKER_HEAP, jvm_options=THROUGHPUT_JVM_OPTIONS,
                        temp_parent=memory_log_parent(), broker_config=BENCH_BROKER_CONFIG).start()


def landed_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Records the broker holds for ``topic``: the sum of its partitions' high watermarks."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-watermarks"})
    try:
        total = 0
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            total += high - low
        return total
    finally:
        consumer.close()


def prefill(bootstrap: str, topic: str, records: int, value_size: int) -> None:
    """Fill ``topic`` for the consume scenarios (untimed set-up, the same bytes for every client)."""
    failures: list[object] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    producer = Producer({
        "bootstrap.servers": bootstrap, "linger.ms": 20, "acks": 1,
        "queue.buffering.max.messages": PREFILL_QUEUE_MESSAGES, "on_delivery": delivered,
    })
    value = make_value(value_size)
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(120)
    if remaining or failures:
        raise RuntimeError(f"prefilling {topic}: {remaining} undelivered, {len(failures)} failed ({failures[:1]})")
