"""A real Apache Kafka cluster in KRaft mode, as local JVM processes on loopback.

Every node is a combined broker+controller; the nodes form one static quorum. Each node listens on
PLAINTEXT, SSL (mutual TLS), SASL_PLAINTEXT and SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), plus its
CONTROLLER listener, all on free ports picked at start (``plaintext_port`` fixes the first node's PLAINTEXT
port; ``security=False`` leaves only PLAINTEXT and CONTROLLER, and then no TLS material is made, so
``cryptography`` is not needed). Logs stay in the cluster directory; a node that
dies or does not become ready raises BrokerStartError with the tail of its log.

    with LocalCluster(nodes=3) as cluster:
        cluster.create_topic("t", partitions=3)
        cluster.kill(cluster.leader_of("t", 0))
"""

from __future__ import annotations

import base64
import enum
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from . import jars, process, versions
from .admin import (
    NO_LEADER,
    Capability,
    ClusterTimeout,
    KafkaCluster,
    PartitionState,
    UnknownPartition,
    wait_until,
)
from .cds import ClassDataArchive
from .config import (
    OAUTH_ALLOWED_URLS_PROPERTY,
    NodePorts,
    SaslCredentials,
    SecuritySetup,
    render_server_properties,
    scram_format_arguments,
    write_log4j2_config,
)
from .probe import NodeMetadata, ProbeError, node_metadata, quorum_leader
from .sasl_probe import sasl_login

if TYPE_CHECKING:
    # certs imports cryptography (a test extra): imported at run time only where TLS is set up.
    from .certs import TlsFiles
    from .oidc import OAuthValidation

START_TIMEOUT_S = 120.0
STOP_GRACE_S = 15.0
# Writing the class-data archive at exit takes a while on a busy machine; never cut it short.
RECORDING_STOP_GRACE_S = 120.0
FORMAT_TIMEOUT_S = 120.0
HEAP = "512m"
# Measured on 2 busy cores (format + start to ready): JVM defaults 31s, serial GC only 28s, serial GC
# and C1-only 17-21s, plus the class-data archive (cds.py) 7-13s. A test broker never runs long enough
# for C2 to pay off; benchmarks pass THROUGHPUT_JVM_OPTIONS.
FAST_START_JVM_OPTIONS = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xshare:auto",
    "-XX:-UsePerfData",
)
THROUGHPUT_JVM_OPTIONS = ("-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Xshare:auto", "-XX:-UsePerfData")
COMMON_JVM_OPTIONS = (
    "-Djava.awt.headless=true",
    "-XX:+ExitOnOutOfMemoryError",
    "-Dcom.sun.management.jmxremote=false",
)
KAFKA_MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL_MAIN_CLASS = "kafka.tools.StorageTool"
BIND_FAILURE_MARKERS = ("Address already in use", "BindException")
VERSION_LINE = re.compile(r"Kafka version: (\S+)")
LISTENERS_PER_NODE = 5
PLAINTEXT_LISTENERS_PER_NODE = 2  # security=False: PLAINTEXT and CONTROLLER
PORT_CLAIM_ATTEMPTS = 3
FIRST_NODE_ID = 1
MAX_PORT = 65535
READINESS_PROBE_TIMEOUT_S = 2.0
DEFAULT_LOG_TAIL_LINES = 60
# pause() returns once every thread of the JVM is stopped: SIGSTOP is delivered to each
# thread asynchronously, and one still running could answer a request sent right after.
PAUSE_SETTLE_TIMEOUT_S = 5.0
PAUSE_SETTLE_POLL_S = 0.005
RUN_MARKER_PREFIX = "===== kafkaev.testing: starting node"
ERROR_LEVELS = ("] ERROR ", "] FATAL ", "Exception in thread")
# First line of a Java stack trace, or of one of its causes (frames start with a tab).
EXCEPTION_HEADLINE = re.compile(r"^(Caused by: )?[\w.$]+(Exception|Error)\b")
MAX_REPORTED_ERRORS = 20


class BrokerStartError(RuntimeError):
    """A broker JVM exited or did not become ready; the message ends with its log tail."""


class NodeState(enum.Enum):
    STOPPED = "stopped"
    RUNNING = "running"
    PAUSED = "paused"


@dataclass(slots=True)
class BrokerNode:
    """One combined broker+controller JVM of a LocalCluster."""

    node_id: int
    ports: NodePorts
    directory: Path
    process: subprocess.Popen[bytes] | None = None
    state: NodeState = NodeState.STOPPED
    # Set while this run records the class-data archive at exit.
    cds_recording: Path | None = None

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports.plaintext}"

    def is_alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = DEFAULT_LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of this node's log (every run of the node appends to it)."""
        return tail_file(self.log_path, lines)

    def failure_report(self, lines: int = DEFAULT_LOG_TAIL_LINES) -> str:
        """ERROR lines of the node's latest run, then the log tail.

        A failing broker spends its last hundred lines shutting down; the cause is logged earlier.
        """
        errors: dict[str, None] = {}  # ordered and without repeats
        for line in _read_lines(self.log_path):
            if line.startswith(RUN_MARKER_PREFIX):
                errors.clear()
            elif len(errors) < MAX_REPORTED_ERRORS and (
                any(level in line for level in ERROR_LEVELS) or EXCEPTION_HEADLINE.match(line)
            ):
                errors[line.rstrip()] = None
        first = "\n".join(errors) if errors else "(none)"
        return (
            f"ERROR lines of this run ({self.log_path}):\n{first}\n"
            f"last {lines} lines:\n{self.log_tail(lines)}"
        )


def tail_file(path: Path, lines: int) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            # Broker log lines are rarely longer than a few hundred bytes.
            handle.seek(max(0, size - lines * 400))
            text = handle.read().decode(errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def _free_ports(count: int) -> list[int]:
    """Ports the kernel says are free now; all held open together so none is handed out twice."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _cluster_id() -> str:
    # Kafka's Uuid text form: URL-safe base64 of 16 random bytes. One starting with '-' would be
    # read as an option by the storage tool's argument parser.
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise BrokerStartError("no 'java' on PATH: the test broker needs a Java 17+ runtime")
    return java


class LocalCluster(KafkaCluster):
    """``nodes`` combined KRaft nodes (1 or 3 are the tested shapes), started by ``start()``.

    ``version`` is the Apache Kafka release to run, by default ``jars.kafka_version()`` (4.4.0, or
    ``$KAFKAEV_KAFKA_VERSION``); 3.9 and newer start.

    ``directory`` holds configs, data and logs; by default a temporary folder (in ``temp_parent``,
    or the system's temporary directory) removed by ``stop()``.

    ``plaintext_port`` is the first node's PLAINTEXT port (default: a free one, as for every other
    listener); ``kafkaev broker start`` asks for 9092. ``security=False`` starts PLAINTEXT (and
    CONTROLLER) listeners only: no SSL or SASL, no certificates. ``oauth`` (an issuer's
    ``OAuthValidation``, see ``oidc.py``) adds OAUTHBEARER to the SASL listeners, and lets the
    brokers fetch that issuer's JWKS (``secured.py`` builds such a cluster with ACLs).
    """

    capabilities = frozenset({Capability.SECURITY, Capability.FAULTS})

    def __init__(
        self,
        nodes: int = 1,
        *,
        directory: Path | str | None = None,
        version: str | None = None,
        heap: str = HEAP,
        jvm_options: Sequence[str] = FAST_START_JVM_OPTIONS,
        start_timeout: float = START_TIMEOUT_S,
        broker_config: dict[str, str] | None = None,
        node_config: dict[int, dict[str, str]] | None = None,
        temp_parent: Path | str | None = None,
        plaintext_port: int | None = None,
        security: bool = True,
        oauth: OAuthValidation | None = None,
    ) -> None:
        super().__init__()
        if nodes < 1:
            raise ValueError(f"nodes: must be >= 1, got {nodes}")
        if plaintext_port is not None and not 1 <= plaintext_port <= MAX_PORT:
            raise ValueError(f"plaintext_port: must be in 1..{MAX_PORT}, got {plaintext_port}")
        self.plaintext_port = plaintext_port
        self.security = security
        if not security:
            self.capabilities = frozenset({Capability.FAULTS})
        if start_timeout <= 0:
            raise ValueError(f"start_timeout: must be > 0, got {start_timeout}")
        self.node_count = nodes
        # The default is validated by kafka_version(), whose error names the environment variable.
        self.version = version if version is not None else jars.kafka_version()
        try:
            self.kafka_version = versions.broker_version(self.version)
        except versions.KafkaVersionError as exc:
            raise versions.KafkaVersionError(f"version: {exc}") from None
        self.heap = heap
        self.jvm_options = tuple(jvm_options)
        self.start_timeout = start_timeout
        self.broker_config = dict(broker_config or {})
        # Per node, on top of broker_config: what differs between nodes (broker.rack).
        self.node_config = {node_id: dict(props) for node_id, props in (node_config or {}).items()}
        if oauth is not None and not security:
            raise ValueError("oauth: OAUTHBEARER listeners need security=True")
        self.oauth = oauth
        self._owns_directory = directory is None
        self.directory = (
            Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="kafkaev-", dir=temp_parent))
        )
        self.directory.mkdir(parents=True, exist_ok=True)
        self.cluster_id = _cluster_id()
        self.sasl_plain = SaslCredentials("PLAIN", "kafkaev-plain", "plain-secret-1")
        self.sasl_scram_sha_256 = SaslCredentials("SCRAM-SHA-256", "kafkaev-scram256", "scram256-secret-1")
        self.sasl_scram_sha_512 = SaslCredentials("SCRAM-SHA-512", "kafkaev-scram512", "scram512-secret-1")
        self.tls: TlsFiles | None = None
        self.nodes: dict[int, BrokerNode] = {}
        self.start_seconds: float | None = None
        self._log4j_config = self.directory / "log4j2.properties"
        self._cds: ClassDataArchive | None = None
        self._started = False

    # -- addresses and credentials ---------------------------------------------------------

    def _listener_bootstrap(self, field: str) -> str:
        if not self.nodes:
            raise RuntimeError("the cluster has no ports yet: call start() first")
        if field != "plaintext" and not self.security:
            raise RuntimeError(f"the cluster has no {field.upper()} listener: it was made with security=False")
        return ",".join(f"127.0.0.1:{getattr(n.ports, field)}" for n in self.nodes.values())

    @property
    def bootstrap(self) -> str:
        """PLAINTEXT bootstrap of every node, "127.0.0.1:p1,127.0.0.1:p2,..."."""
        return self._listener_bootstrap("plaintext")

    @property
    def ssl_bootstrap(self) -> str:
        """SSL listeners (mutual TLS: present client_cert/client_key, verify with ca_cert)."""
        return self._listener_bootstrap("ssl")

    @property
    def sasl_bootstrap(self) -> str:
        """SASL_PLAINTEXT listeners (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)."""
        return self._listener_bootstrap("sasl_plaintext")

    @property
    def sasl_ssl_bootstrap(self) -> str:
        """SASL_SSL listeners (server-authenticated TLS, then SASL)."""
        return self._listener_bootstrap("sasl_ssl")

    def _tls(self) -> TlsFiles:
        if not self.security:
            raise RuntimeError("the cluster has no certificates: it was made with security=False")
        if self.tls is None:
            raise RuntimeError("the cluster has no certificates yet: call start() first")
        return self.tls

    @property
    def ca_cert(self) -> Path:
        return self._tls().ca_cert

    @property
    def client_cert(self) -> Path:
        return self._tls().client_cert

    @property
    def client_key(self) -> Path:
        return self._tls().client_key

    @property
    def scram_users(self) -> tuple[SaslCredentials, ...]:
        return (self.sasl_scram_sha_256, self.sasl_scram_sha_512)

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> LocalCluster:
        """Format storage and start every node; return when all answer and see each other."""
        if self._started:
            raise RuntimeError("start(): the cluster is already started")
        began = time.monotonic()
        classpath = jars.classpath(self.version)
        self._cds = ClassDataArchive(self.version, _java(), self.jvm_options)
        if self.security:
            from .certs import make_tls_files

            self.tls = make_tls_files(self.directory / "tls")
        write_log4j2_config(self._log4j_config)
        for attempt in range(1, PORT_CLAIM_ATTEMPTS + 1):
            self._plan_nodes()
            self._format_storage(classpath)
            for node in self.nodes.values():
                self._spawn(node, classpath)
            self._started = True
            try:
                self._wait_ready(list(self.nodes.values()), began + self.start_timeout)
                break
            except BrokerStartError as exc:
                # Another process may have taken a port between picking and binding it: retry on new ones.
                lost_race = any(m in str(exc) for m in BIND_FAILURE_MARKERS)
                self._kill_all_nodes()
                self._started = False
                if not lost_race or attempt == PORT_CLAIM_ATTEMPTS:
                    raise
        self.start_seconds = time.monotonic() - began
        return self

    def _plan_nodes(self) -> None:
        per_node = LISTENERS_PER_NODE if self.security else PLAINTEXT_LISTENERS_PER_NODE
        # One spare: the kernel may hand out the fixed port itself, which is then dropped here.
        ports = [p for p in _free_ports(per_node * self.node_count + 1) if p != self.plaintext_port]
        if self.plaintext_port is not None:
            ports[0] = self.plaintext_port
        self.nodes = {}
        for index in range(self.node_count):
            node_id = FIRST_NODE_ID + index
            own = ports[index * per_node : (index + 1) * per_node]
            node_ports = (
                NodePorts(*own) if self.security else NodePorts(own[0], None, None, None, controller=own[1])
            )
            node_dir = self.directory / f"node-{node_id}"
            shutil.rmtree(node_dir, ignore_errors=True)
            node_dir.mkdir(parents=True)
            self.nodes[node_id] = BrokerNode(node_id, node_ports, node_dir)
        all_ports = {node_id: node.ports for node_id, node in self.nodes.items()}
        security = (
            SecuritySetup(self._tls(), (self.sasl_plain,), self.scram_users, self.oauth) if self.security else None
        )
        for node in self.nodes.values():
            node.config_path.write_text(
                render_server_properties(
                    node.node_id, all_ports, node.data_dir, security, self.kafka_version,
                    {**self.broker_config, **self.node_config.get(node.node_id, {})},
                )
            )

    def _jvm_command(
        self, classpath: str, main_class: str, *arguments: str, recording: Path | None = None
    ) -> list[str]:
        sharing = self._cds.use_options() if self._cds is not None else []
        if recording is not None:
            sharing = [f"-XX:ArchiveClassesAtExit={recording}"]
        return [
            _java(),
            f"-Xmx{self.heap}",
            *self.jvm_options,
            *sharing,
            *COMMON_JVM_OPTIONS,
            *self._system_properties(),
            f"-Dlog4j2.configurationFile={self._log4j_config}",
            "-cp",
            classpath,
            main_class,
            *arguments,
        ]

    def _system_properties(self) -> list[str]:
        # Outside jvm_options, which key the class-data archive: an issuer's port changes per run.
        if self.oauth is None:
            return []
        return [f"-D{OAUTH_ALLOWED_URLS_PROPERTY}={self.oauth.jwks_url}"]

    def _format_storage(self, classpath: str) -> None:
        def format_node(node: BrokerNode) -> subprocess.CompletedProcess[str]:
            command = self._jvm_command(
                classpath,
                STORAGE_TOOL_MAIN_CLASS,
                "format",
                "--cluster-id",
                self.cluster_id,
                "--config",
                str(node.config_path),
                *(scram_format_arguments(self.scram_users) if self.security else ()),
                *versions.format_feature_arguments(self.kafka_version),
            )
            return subprocess.run(
                command, capture_output=True, text=True, timeout=FORMAT_TIMEOUT_S, stdin=subprocess.DEVNULL
            )

        with ThreadPoolExecutor(max_workers=self.node_count) as pool:
            results = list(pool.map(format_node, self.nodes.values()))
        for node, result in zip(self.nodes.values(), results, strict=True):
            if result.returncode != 0:
                raise BrokerStartError(
                    f"formatting node {node.node_id} storage failed (exit {result.returncode}):\n"
                    f"{result.stdout[-3000:]}{result.stderr[-3000:]}"
                )

    def _spawn(self, node: BrokerNode, classpath: str | None = None) -> None:
        cds = self._cds
        recording_elsewhere = any(n.cds_recording is not None for n in self.nodes.values())
        if cds is not None and cds.needs_recording() and not recording_elsewhere:
            node.cds_recording = cds.recording_path()
        command = self._jvm_command(
            classpath or jars.classpath(self.version),
            KAFKA_MAIN_CLASS,
            str(node.config_path),
            recording=node.cds_recording,
        )
        with open(node.log_path, "ab") as log:
            log.write(f"\n{RUN_MARKER_PREFIX} {node.node_id} =====\n".encode())
        node.process = process.spawn(command, node.log_path, node.directory)
        node.state = NodeState.RUNNING

    def _wait_ready(self, nodes: list[BrokerNode], deadline: float) -> None:
        """Each node answers on PLAINTEXT, for this cluster's id, and its metadata lists every running
        node as an unfenced broker."""
        for node in nodes:
            self._wait_port(node, deadline)
        for node in nodes:
            self._wait_registered(node, deadline)
        if self.security:
            for node in nodes:
                self._wait_logins(node, deadline)

    def _check_alive(self, node: BrokerNode) -> None:
        if node.process is not None and node.process.poll() is not None:
            code = node.process.returncode
            process.forget(node.process)
            node.state = NodeState.STOPPED
            raise BrokerStartError(
                f"Kafka node {node.node_id} exited with status {code} while starting. {node.failure_report()}"
            )

    def _timeout_error(self, node: BrokerNode, what: str) -> BrokerStartError:
        return BrokerStartError(
            f"Kafka node {node.node_id} {what} within {self.start_timeout:.0f}s. {node.failure_report()}"
        )

    def _wait_port(self, node: BrokerNode, deadline: float) -> None:
        while True:
            self._check_alive(node)
            try:
                with closing(socket.create_connection(("127.0.0.1", node.ports.plaintext), timeout=1.0)):
                    return
            except OSError:
                pass
            if time.monotonic() >= deadline:
                raise self._timeout_error(node, "did not open its PLAINTEXT port")
            time.sleep(0.1)

    def _wait_registered(self, node: BrokerNode, deadline: float) -> None:
        expected = {n.node_id for n in self.nodes.values() if n.state is NodeState.RUNNING}
        while True:
            self._check_alive(node)
            try:
                view = node_metadata("127.0.0.1", node.ports.plaintext, [], READINESS_PROBE_TIMEOUT_S)
                # Another harness's broker may hold the port picked for this node (its own node 1
                # answers too): then this node fails to bind, and _check_alive reports it.
                if view.cluster_id == self.cluster_id and expected <= set(view.brokers):
                    return
            except (OSError, ProbeError):
                pass
            if time.monotonic() >= deadline:
                raise self._timeout_error(node, f"did not see brokers {sorted(expected)} in metadata")
            time.sleep(0.1)

    def _wait_logins(self, node: BrokerNode, deadline: float, users: Sequence[SaslCredentials] | None = None) -> None:
        """Each SASL user the tests are handed (``users``: those only) logs in on the node's
        SASL_PLAINTEXT listener: a credential the broker has not loaded yet (or lost) holds back the
        start or restart, and fails it by the deadline, instead of failing the first test to log in."""
        port = node.ports.sasl_plaintext
        if port is None:
            raise RuntimeError(f"node {node.node_id} has no SASL_PLAINTEXT listener")
        for user in (self.sasl_plain, *self.scram_users) if users is None else users:
            while True:
                self._check_alive(node)
                try:
                    sasl_login("127.0.0.1", port, user, READINESS_PROBE_TIMEOUT_S)
                    break
                except (OSError, ProbeError) as exc:
                    refusal = exc
                if time.monotonic() >= deadline:
                    raise self._timeout_error(node, f"did not accept the {user.mechanism} login of "
                                                    f"{user.username!r} ({refusal})")
                time.sleep(0.1)

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """SIGTERM every node, SIGKILL those still running after ``grace`` seconds; remove an owned temp dir."""
        self._close_admin()
        for node in self.nodes.values():
            if node.is_alive() and node.process is not None:
                if node.state is NodeState.PAUSED:
                    node.process.send_signal(signal.SIGCONT)
                node.process.terminate()
        deadline = time.monotonic() + grace
        for node in self.nodes.values():
            self._reap(node, max(0.0, deadline - time.monotonic()))
        self._started = False
        if self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _kill_all_nodes(self) -> None:
        for node in self.nodes.values():
            if node.is_alive() and node.process is not None:
                node.process.kill()
            self._reap(node, STOP_GRACE_S)

    def _reap(self, node: BrokerNode, timeout: float) -> None:
        if node.process is None:
            return
        if node.cds_recording is not None:
            timeout = max(timeout, RECORDING_STOP_GRACE_S)
        try:
            node.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            node.process.kill()
            node.process.wait()
        process.forget(node.process)
        node.state = NodeState.STOPPED
        if node.cds_recording is not None and self._cds is not None:
            self._cds.publish(node.cds_recording, exited_cleanly=node.process.returncode != -signal.SIGKILL)
            node.cds_recording = None

    # -- faults ---------------------------------------------------------------------------

    def node(self, node_id: int) -> BrokerNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise ValueError(
                f"node_id: no node {node_id} in this cluster (nodes: {sorted(self.nodes)})"
            ) from None

    def _running_process(self, node_id: int, action: str) -> subprocess.Popen[bytes]:
        node = self.node(node_id)
        if not node.is_alive() or node.process is None:
            raise RuntimeError(f"{action}: node {node_id} is not running")
        return node.process

    def kill(self, node_id: int) -> None:
        """SIGKILL one node: no shutdown, no flush, as in a machine crash."""
        proc = self._running_process(node_id, "kill")
        proc.kill()
        self._reap(self.node(node_id), STOP_GRACE_S)
        self._close_admin()

    def pause(self, node_id: int) -> None:
        """SIGSTOP one node: its sockets stay open but nothing answers, as in a long GC pause."""
        node = self.node(node_id)
        if node.state is not NodeState.RUNNING:
            raise RuntimeError(f"pause: node {node_id} is {node.state.value}, not running")
        proc = self._running_process(node_id, "pause")
        proc.send_signal(signal.SIGSTOP)
        node.state = NodeState.PAUSED
        _wait_until_stopped(proc.pid, PAUSE_SETTLE_TIMEOUT_S)

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node."""
        node = self.node(node_id)
        if node.state is not NodeState.PAUSED:
            raise RuntimeError(f"resume: node {node_id} is {node.state.value}, not paused")
        self._running_process(node_id, "resume").send_signal(signal.SIGCONT)
        node.state = NodeState.RUNNING

    def stop_node(self, node_id: int, grace: float = STOP_GRACE_S) -> None:
        """Graceful shutdown of one node (SIGTERM; SIGKILL after ``grace`` seconds)."""
        node = self.node(node_id)
        if node.is_alive() and node.process is not None:
            if node.state is NodeState.PAUSED:
                node.process.send_signal(signal.SIGCONT)
            node.process.terminate()
        self._reap(node, grace)
        self._close_admin()

    def restart(self, node_id: int, grace: float = STOP_GRACE_S) -> None:
        """Stop the node if it runs (gracefully), start it on the same ports and data, wait until it is back."""
        node = self.node(node_id)
        self.stop_node(node_id, grace)
        self._spawn(node)
        began = time.monotonic()
        self._wait_ready([node], began + self.start_timeout)

    def _admin_servers(self) -> str:
        # Only live nodes: a paused one accepts connections and then never answers.
        return self.live_bootstrap or self.bootstrap

    def running_nodes(self) -> list[int]:
        return [n.node_id for n in self.nodes.values() if n.state is NodeState.RUNNING and n.is_alive()]

    @property
    def live_bootstrap(self) -> str:
        """PLAINTEXT bootstrap of the nodes currently running (not killed, stopped or paused)."""
        return ",".join(self.nodes[node_id].bootstrap for node_id in self.running_nodes())

    def node_metadata(self, node_id: int | None = None, topics: list[str] | None = None) -> NodeMetadata:
        """The metadata as one node (default: the first running one) serves it right now."""
        if node_id is None:
            running = self.running_nodes()
            if not running:
                raise RuntimeError("node_metadata: no node is running")
            node_id = running[0]
        return node_metadata("127.0.0.1", self.node(node_id).ports.plaintext, topics)

    def active_controller(self) -> int:
        """Node id of the active KRaft controller (DescribeQuorum, forwarded by a running node).

        Pausing that node stalls everything that needs the controller (creating topics, producer ids
        for idempotent producers) until the quorum elects another, which takes seconds to tens of seconds.
        """
        running = self.running_nodes()
        if not running:
            raise RuntimeError("active_controller: no node is running")
        return quorum_leader("127.0.0.1", self.node(running[0]).ports.plaintext)

    def partition_state(self, topic: str, partition: int, node_id: int | None = None) -> PartitionState:
        """Leader, replicas and ISR of a partition as one node (default: the first running) reports them."""
        view = self.node_metadata(node_id, [topic]).topics.get(topic)
        if view is None or view.error_code != 0 or partition not in view.partitions:
            raise UnknownPartition(f"no partition {topic}[{partition}] in the cluster metadata")
        found = view.partitions[partition]
        return PartitionState(found.leader, found.replicas, found.isr)

    def _topic_ready(self, name: str, partitions: int, replication: int) -> bool:
        # Every running node must serve the topic: a client may bootstrap from any of them.
        for node_id in self.running_nodes():
            view = self.node_metadata(node_id, [name]).topics.get(name)
            if view is None or view.error_code != 0 or len(view.partitions) != partitions:
                return False
            if any(p.leader == NO_LEADER or len(p.isr) != replication for p in view.partitions.values()):
                return False
        return True

    def wait_in_sync(
        self, topic: str, partition: int, node_id: int, timeout: float = START_TIMEOUT_S
    ) -> None:
        """Wait until ``node_id`` is back in the partition's ISR."""
        wait_until(
            lambda: node_id in self.partition_state(topic, partition).isr,
            timeout,
            f"node {node_id} in the ISR of {topic}[{partition}]",
        )

    # -- diagnostics ----------------------------------------------------------------------

    def log_tail(self, lines: int = DEFAULT_LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of every node's log, one titled block per node."""
        return "\n".join(
            f"----- node {node.node_id} ({node.log_path}) -----\n{node.log_tail(lines)}"
            for node in self.nodes.values()
        )

    def broker_version(self) -> str:
        """The version a node printed at start-up ("Kafka version: 4.1.1")."""
        for node in self.nodes.values():
            for line in _read_lines(node.log_path):
                match = VERSION_LINE.search(line)
                if match:
                    return match.group(1)
        raise ClusterTimeout("no node logged its 'Kafka version:' line")

    def __repr__(self) -> str:
        return f"LocalCluster(nodes={self.node_count}, running={self.running_nodes()}, directory={self.directory})"


def _read_lines(path: Path) -> Iterator[str]:
    try:
        with open(path, errors="replace") as handle:
            yield from handle
    except FileNotFoundError:
        return


def _wait_until_stopped(pid: int, timeout_s: float) -> None:
    """Wait until every thread of ``pid`` is in the stopped state (``T`` in /proc); where /proc
    is missing, return at once."""
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(_thread_state(stat) in ("T", "t", None) for stat in tasks.glob("*/stat")):
            return
        time.sleep(PAUSE_SETTLE_POLL_S)
    raise RuntimeError(f"pause: process {pid} did not stop within {timeout_s:.0f}s")


def _thread_state(stat: Path) -> str | None:
    """The state letter in /proc/<pid>/task/<tid>/stat (after the parenthesized name), or None
    when the thread is gone."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2]
