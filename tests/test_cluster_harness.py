"""The test cluster is a real Apache Kafka: records go through it, it reports its version and the
newest features it was set up with, and the three-node cluster really loses and regains nodes. Also:
its jars cache, the version it is told to start, loud start failures, and no JVM outliving the process
that started it."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kafkaev.testing import jars, probe, versions
from kafkaev.testing.admin import Capability, KafkaCluster, UnknownPartition
from kafkaev.testing.certs import make_tls_files
from kafkaev.testing.cluster import BrokerNode, BrokerStartError, LocalCluster
from kafkaev.testing.config import NodePorts, SecuritySetup, render_server_properties
from kafkaev.testing.external import ExternalCluster
from kafkaev.testing.peer import PeerRecord, consume, produce, round_trip
from kafkaev.testing.versions import KafkaVersion, KafkaVersionError

# Kafka's MetadataVersion feature levels: 4.0-IV0 is 22, 3.9-IV0 was 21.
METADATA_VERSION_4_0_IV0 = 22
METADATA_VERSION_3_9_IV0 = 21
# Produce v11 is the newest a 3.9 broker knows (4.x: 12 and up).
PRODUCE_V11 = 11
PRODUCE_KEY = 0
TWO_SLF4J_BINDINGS = "multiple SLF4J bindings"
JAVA_ORACLE = Path(__file__).with_name("java") / "NewestFeatures.java"
JAVA_ORACLE_TIMEOUT_S = 300
JAVA_RESULT_PREFIX = "newest-features: "
UNKNOWN_TOPIC_OR_PARTITION = 3
FAILOVER_TIMEOUT_S = 45.0
PROCESS_EXIT_TIMEOUT_S = 15.0
FIRST_NODE = 1


def _plain(cluster: KafkaCluster) -> dict[str, str]:
    return {"bootstrap.servers": cluster.bootstrap}


@pytest.mark.compat
def test_single_node_round_trip_with_peer_client(kafka: KafkaCluster, topic: str) -> None:
    records = [
        PeerRecord(b"k1", b"first", (("h", b"1"),)),
        PeerRecord(None, b"second"),
        PeerRecord(b"k3", None),
    ]
    trip = round_trip(_plain(kafka), topic, records)
    assert [m.offset() for m in trip.delivered] == [0, 1, 2]
    assert [(m.key(), m.value()) for m in trip.consumed] == [(r.key, r.value) for r in records]
    assert trip.consumed[0].headers() == [("h", b"1")]
    assert [m.offset() for m in trip.consumed] == [0, 1, 2]
    assert all(m.partition() == 0 and m.topic() == topic for m in trip.consumed)


@pytest.mark.compat
def test_broker_reports_the_version_it_was_started_as(kafka: KafkaCluster) -> None:
    answer = kafka.api_versions()
    assert answer.apis[PRODUCE_KEY].max_version >= PRODUCE_V11
    if not isinstance(kafka, LocalCluster):
        return  # an external cluster's version is whatever its operator installed
    assert kafka.broker_version() == kafka.version == jars.kafka_version()
    oldest_level = METADATA_VERSION_4_0_IV0 if kafka.kafka_version >= versions.KAFKA_4_0 else METADATA_VERSION_3_9_IV0
    assert answer.finalized_features["metadata.version"] >= oldest_level
    # The "Kafka version" line came through slf4j: the broker logs through log4j2, with one binding.
    for node in kafka.nodes.values():
        assert TWO_SLF4J_BINDINGS not in node.log_path.read_text()


@pytest.mark.compat
def test_newest_features_are_finalized_where_the_version_has_them(kafka: KafkaCluster) -> None:
    if not isinstance(kafka, LocalCluster):
        pytest.skip("the feature levels of an external cluster are its operator's choice")
    levels = kafka.finalized_features()
    for feature in versions.NEWEST_FEATURES:
        if feature.enabled_on(kafka.kafka_version):
            assert kafka.feature_level(feature.name) >= feature.level, (feature, levels)
        else:  # early access on this version: left off
            assert kafka.feature_level(feature.name) == 0, (feature, levels)


@pytest.mark.compat
@pytest.mark.requires_kafka("4.0", "transactions v2 (KIP-890) and the consumer group protocol (KIP-848)")
def test_newest_features_work_for_the_java_client(kafka: KafkaCluster, topic: str) -> None:
    """Kafka's own client of the broker's version is the oracle: a transaction (v2 where the broker
    finalized it), read back by a consumer-protocol group member, then by a share group."""
    if not isinstance(kafka, LocalCluster):
        pytest.skip("the Java client of the local cluster's version is in the jar cache")
    enabled = [feature.name for feature in versions.enabled_features(kafka.kafka_version)]
    result = subprocess.run(
        ["java", "-cp", jars.classpath(kafka.version), str(JAVA_ORACLE), kafka.bootstrap, topic, *enabled],
        capture_output=True,
        text=True,
        timeout=JAVA_ORACLE_TIMEOUT_S,
    )
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    results = [line.removeprefix(JAVA_RESULT_PREFIX) for line in result.stdout.splitlines()
               if line.startswith(JAVA_RESULT_PREFIX)]
    expected = ["transaction committed: 3", "consumer group protocol read: 3"]
    if versions.SHARE_GROUPS.name in enabled:
        expected.append("share group read: 3")
    assert results == expected, result.stdout + result.stderr[-3000:]


def test_topic_helpers(kafka: KafkaCluster) -> None:
    name = kafka.create_topic(kafka.unique_topic_name(), partitions=3, config={"retention.ms": "60000"})
    assert sorted(kafka.metadata(name).topics[name].partitions) == [0, 1, 2]
    leader = kafka.leader_of(name, 2)
    assert leader in kafka.metadata().brokers
    state = kafka.partition_state(name, 1)
    assert state.leader in state.isr and state.isr == state.replicas
    kafka.delete_topic(name)
    assert name not in kafka.metadata().topics
    with pytest.raises(ValueError, match="partitions"):
        kafka.create_topic("never-created", partitions=0)
    with pytest.raises(UnknownPartition, match="no partition"):
        kafka.partition_state(name, 0)


@pytest.mark.compat
def test_three_node_leader_moves_on_kill_and_node_rejoins(kafka3: LocalCluster, make_topic) -> None:
    topic = make_topic(partitions=1, cluster=kafka3)
    before = kafka3.partition_state(topic, 0)
    assert len(before.replicas) == 3 and sorted(before.isr) == [1, 2, 3]
    victim = before.leader

    kafka3.kill(victim)
    assert not kafka3.node(victim).is_alive()
    new_leader = kafka3.wait_for_leader(topic, 0, not_on=victim, timeout=FAILOVER_TIMEOUT_S)
    assert new_leader != victim and new_leader in before.replicas
    # Two of three replicas still satisfy min.insync.replicas=2: acks=all writes go on.
    surviving = {"bootstrap.servers": kafka3.live_bootstrap}
    delivered = produce(surviving, topic, [PeerRecord(b"k", b"after-kill")])
    assert delivered[0].offset() == 0
    assert victim not in kafka3.partition_state(topic, 0).isr

    kafka3.restart(victim)
    kafka3.wait_in_sync(topic, 0, victim, timeout=FAILOVER_TIMEOUT_S)
    assert sorted(kafka3.partition_state(topic, 0).isr) == [1, 2, 3]
    assert [m.value() for m in consume(_plain(kafka3), topic, 1)] == [b"after-kill"]


def test_three_node_pause_fences_node_and_resume_brings_it_back(kafka3: LocalCluster, make_topic) -> None:
    topic = make_topic(partitions=1, cluster=kafka3)
    state = kafka3.partition_state(topic, 0)
    # Not the active controller: pausing that one stalls what needs the controller (fencing the
    # node, the ISR change waited for below) until the quorum moves on, which is a different test.
    controller = kafka3.active_controller()
    follower = next(node for node in state.replicas if node not in (state.leader, controller))

    kafka3.pause(follower)
    try:
        assert follower not in kafka3.running_nodes()
        # A stopped JVM sends no heartbeats: the controller fences it and drops it from the ISR.
        kafka3.wait_for(
            lambda: follower not in kafka3.partition_state(topic, 0).isr,
            FAILOVER_TIMEOUT_S,
            f"paused node {follower} to leave the ISR",
        )
        # Without idempotence, so no producer id is needed. A broker's channel to the controller
        # can still point at the paused node, from before the last election. Its producer-id
        # requests then wait there until the node resumes: in CI, InitProducerId was answered
        # COORDINATOR_LOAD_IN_PROGRESS for the whole delivery timeout.
        produce({"bootstrap.servers": kafka3.live_bootstrap}, topic, [PeerRecord(None, b"while-paused")],
                idempotent=False)
    finally:
        kafka3.resume(follower)
    kafka3.wait_in_sync(topic, 0, follower, timeout=FAILOVER_TIMEOUT_S)
    assert sorted(kafka3.running_nodes()) == [1, 2, 3]


def test_fault_methods_reject_unknown_or_stopped_nodes(kafka3: LocalCluster) -> None:
    with pytest.raises(ValueError, match="node_id"):
        kafka3.kill(99)
    with pytest.raises(RuntimeError, match="not paused"):
        kafka3.resume(1)


def test_start_failure_is_loud(tmp_path: Path) -> None:
    cluster = LocalCluster(nodes=1, directory=tmp_path, broker_config={"log.segment.bytes": "not-a-number"})
    with pytest.raises(BrokerStartError, match="log.segment.bytes"):
        cluster.start()
    cluster.stop()
    assert all(not node.is_alive() for node in cluster.nodes.values())


def test_jar_cache_holds_kafka_with_log4j2_binding() -> None:
    libs = jars.ensure_jars()
    assert jars.is_complete()
    names = {p.name for p in libs.glob("*.jar")}
    assert f"kafka_2.13-{jars.kafka_version()}.jar" in names
    assert f"kafka-tools-{jars.kafka_version()}.jar" in names
    # The broker logs through log4j2; slf4j's reload4j binding (Kafka 3.x) would take its place.
    # reload4j itself may stay: Kafka 3.x's Log4jController calls it.
    assert any(n.startswith("log4j-slf4j-impl-") for n in names)
    assert not any(n.startswith("slf4j-reload4j-") for n in names)


def test_jar_cache_without_current_marker_is_resolved_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(jars.CACHE_ENV, str(tmp_path))
    libs = jars.libs_dir()
    libs.mkdir(parents=True)
    (libs / f"kafka_2.13-{jars.kafka_version()}.jar").write_bytes(b"half a download")
    resolved: list[Path] = []

    def fake_maven(version: str, target: Path, *, quiet: bool) -> None:
        resolved.append(target)
        (target / jars.MARKER_NAME).write_text(jars._pom_digest(version))

    monkeypatch.setattr(jars, "_resolve", fake_maven)
    # No marker: an interrupted copy, not trusted.
    assert not jars.is_complete()
    assert jars.ensure_jars() == libs and resolved == [libs]
    assert jars.is_complete()
    jars.ensure_jars()
    assert resolved == [libs], "a complete cache must not be resolved again"
    # A marker from another pom (the dependency list changed) is stale.
    (libs / jars.MARKER_NAME).write_text("digest-of-an-older-pom\n")
    assert not jars.is_complete()
    jars.ensure_jars()
    assert resolved == [libs, libs]


def test_kafka_version_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jars.VERSION_ENV, raising=False)
    assert jars.kafka_version() == jars.KAFKA_VERSION
    monkeypatch.setenv(jars.VERSION_ENV, "3.9.1")
    assert jars.kafka_version() == "3.9.1"
    assert jars.libs_dir().parent.name == "kafka-3.9.1"
    cluster = LocalCluster()
    try:
        assert cluster.kafka_version == KafkaVersion(3, 9, 1)
    finally:
        cluster.stop()  # never started: this removes its temp directory


def test_an_external_cluster_runs_the_version_the_environment_declares(monkeypatch: pytest.MonkeyPatch) -> None:
    """The protocol cannot tell a cluster's release: tests that ask ``kafka.kafka_version`` of
    a ``KAFKAEV_BROKERS`` cluster get the one ``KAFKAEV_KAFKA_VERSION`` declares."""
    monkeypatch.delenv(jars.VERSION_ENV, raising=False)
    assert ExternalCluster("127.0.0.1:9092").kafka_version == versions.broker_version(jars.KAFKA_VERSION)
    monkeypatch.setenv(jars.VERSION_ENV, "3.9.1")
    assert ExternalCluster("127.0.0.1:9092").kafka_version == KafkaVersion(3, 9, 1)
    monkeypatch.setenv(jars.VERSION_ENV, "4.x")
    with pytest.raises(KafkaVersionError, match=jars.VERSION_ENV):
        ExternalCluster("127.0.0.1:9092")


@pytest.mark.parametrize(
    ("value", "complaint"),
    [("4.x", "not a Kafka version"), ("4.1", "in full, such as 4.1.0"), ("3.8.1", "3.9 and newer")],
)
def test_kafka_version_from_the_environment_is_validated(
    monkeypatch: pytest.MonkeyPatch, value: str, complaint: str
) -> None:
    monkeypatch.setenv(jars.VERSION_ENV, value)
    with pytest.raises(KafkaVersionError, match=f"^{jars.VERSION_ENV}: .*{complaint}"):
        jars.kafka_version()
    with pytest.raises(KafkaVersionError, match=jars.VERSION_ENV):
        LocalCluster()


def test_older_brokers_get_only_the_settings_they_know(tmp_path: Path) -> None:
    ports = {1: NodePorts(9092, 9093, 9094, 9095, 9096)}
    security = SecuritySetup(make_tls_files(tmp_path / "tls"), (), ())

    def keys(version: str) -> set[str]:
        text = render_server_properties(1, ports, tmp_path / "data", security, KafkaVersion.parse(version))
        return {line.split("=", 1)[0] for line in text.splitlines()}

    four_only = {key for key in keys("4.4.0") if key.startswith(("share.", "group.share.", "group.consumer."))}
    assert four_only and not four_only & keys("3.9.1")
    assert not {key for key in keys("4.0.0") if key.startswith(("share.", "group.share."))}
    # Only 4.1 needs a feature level the format would not pick itself.
    assert versions.format_feature_arguments(KafkaVersion(3, 9, 1)) == []
    assert versions.format_feature_arguments(KafkaVersion(4, 1, 1)) == ["--feature", "share.version=1"]
    assert versions.format_feature_arguments(KafkaVersion(4, 4, 0)) == []


def test_a_cluster_without_security_has_plaintext_and_controller_listeners_only(tmp_path: Path) -> None:
    ports = {1: NodePorts(9092, None, None, None, 9096)}
    text = render_server_properties(1, ports, tmp_path / "data", None, KafkaVersion.parse("4.4.0"))
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["listeners"] == "PLAINTEXT\\://127.0.0.1\\:9092,CONTROLLER\\://127.0.0.1\\:9096"
    assert props["advertised.listeners"] == "PLAINTEXT\\://127.0.0.1\\:9092"
    assert not [key for key in props if key.startswith(("ssl.", "sasl.", "listener.name."))]
    cluster = LocalCluster(security=False, plaintext_port=9092, directory=tmp_path)
    assert Capability.SECURITY not in cluster.capabilities
    cluster.nodes = {1: BrokerNode(1, ports[1], tmp_path)}
    assert cluster.bootstrap == "127.0.0.1:9092"
    with pytest.raises(RuntimeError, match="no SSL listener"):
        _ = cluster.ssl_bootstrap
    with pytest.raises(RuntimeError, match="no certificates"):
        _ = cluster.ca_cert
    with pytest.raises(ValueError, match="plaintext_port"):
        LocalCluster(plaintext_port=0)


def test_a_cluster_without_security_needs_neither_cryptography_nor_confluent_kafka() -> None:
    script = (
        "import sys\n"
        "sys.modules['cryptography'] = sys.modules['confluent_kafka'] = None  # as on a plain install\n"
        "import kafkaev.testing.cluster, kafkaev.cli.broker\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


_ORPHAN_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from kafkaev.testing.cluster import LocalCluster
    cluster = LocalCluster(nodes=1, directory=sys.argv[1]).start()
    print(cluster.nodes[1].pid, flush=True)
    time.sleep(600)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_no_jvm_outlives_its_python_process(tmp_path: Path, signum: signal.Signals) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    owner = subprocess.Popen(
        [sys.executable, "-c", _ORPHAN_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert owner.stdout is not None
        jvm_pid = int(owner.stdout.readline())
        os.kill(jvm_pid, 0)  # the broker runs
        owner.send_signal(signum)
        owner.wait(timeout=PROCESS_EXIT_TIMEOUT_S)
        deadline = time.monotonic() + PROCESS_EXIT_TIMEOUT_S
        while _alive(jvm_pid):
            assert time.monotonic() < deadline, f"JVM {jvm_pid} still running after its owner got {signum!r}"
            time.sleep(0.1)
    finally:
        owner.kill()
        owner.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited; only its parent (gone) would reap it.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_start_retries_on_fresh_ports_when_a_port_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafkaev.testing import cluster as cluster_module

    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    real_free_ports = cluster_module._free_ports
    handed_out: list[list[int]] = []

    def first_plaintext_port_taken(count: int) -> list[int]:
        ports = real_free_ports(count)
        if not handed_out:
            ports[0] = taken  # NodePorts order: PLAINTEXT first
        handed_out.append(ports)
        return ports

    monkeypatch.setattr(cluster_module, "_free_ports", first_plaintext_port_taken)
    cluster = LocalCluster(nodes=1, directory=tmp_path)
    try:
        cluster.start()
        assert len(handed_out) == 2
        assert cluster.nodes[1].ports.plaintext == handed_out[1][0] != taken
        assert kafka_answers(cluster)
    finally:
        cluster.stop()
        squatter.close()


def test_a_broker_of_another_cluster_on_a_picked_port_is_not_taken_for_this_one(
    kafka: KafkaCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two harnesses on one machine may pick the same free port; the other one's node 1 then
    answers this one's readiness probe, until this node's bind failure shows."""
    from kafkaev.testing import cluster as cluster_module

    if not isinstance(kafka, LocalCluster):
        pytest.skip("needs a local broker to play the other harness's")
    real_free_ports = cluster_module._free_ports
    handed_out: list[list[int]] = []

    def first_plaintext_port_is_the_other_clusters(count: int) -> list[int]:
        ports = real_free_ports(count)
        if not handed_out:
            ports[0] = kafka.nodes[FIRST_NODE].ports.plaintext  # NodePorts order: PLAINTEXT first
        handed_out.append(ports)
        return ports

    monkeypatch.setattr(cluster_module, "_free_ports", first_plaintext_port_is_the_other_clusters)
    cluster = LocalCluster(nodes=1, directory=tmp_path)
    try:
        cluster.start()
        assert len(handed_out) == 2
        answer = cluster.node_metadata()
        assert answer.cluster_id == cluster.cluster_id != kafka.cluster_id
    finally:
        cluster.stop()


def kafka_answers(cluster: LocalCluster) -> bool:
    return bool(cluster.metadata(timeout=10).brokers)


def test_probe_rejects_truncated_or_foreign_answers(kafka: KafkaCluster) -> None:
    host, port = kafka.bootstrap.split(",")[0].rsplit(":", 1)
    frame = probe._exchange(host, int(port), probe.encode_api_versions_request(), 5.0)
    assert probe.decode_api_versions_response(frame).apis[probe.API_VERSIONS_KEY].max_version >= 3
    with pytest.raises(probe.ProbeError, match="truncated"):
        probe.decode_api_versions_response(frame[: len(frame) // 2])
    foreign = struct.pack(">i", probe.PROBE_CORRELATION_ID + 1) + frame[4:]
    with pytest.raises(probe.ProbeError, match="correlation id"):
        probe.decode_api_versions_response(foreign)
    # A v12 Metadata answer for a topic that does not exist carries the error, not an exception.
    view = probe.node_metadata(host, int(port), ["kafkaev-no-such-topic"])
    assert view.topics["kafkaev-no-such-topic"].error_code == UNKNOWN_TOPIC_OR_PARTITION
