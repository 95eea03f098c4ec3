"""Shared fixtures: a real Apache Kafka cluster, unique topics, and event loops of both kinds.

Clusters (Apache Kafka 4.4.0 in KRaft mode, local JVMs on 127.0.0.1, see kafkaev.testing.cluster;
``KAFKAEV_KAFKA_VERSION=3.9.1`` or ``4.1.1`` starts that release instead, and ``-m compat`` runs the
subset meant for every version of the matrix):

``kafka`` (session)
    One combined broker+controller node, started once per run. A ``LocalCluster``:
    ``bootstrap`` (PLAINTEXT "127.0.0.1:p"), ``ssl_bootstrap`` (mutual TLS), ``sasl_bootstrap``
    (SASL_PLAINTEXT), ``sasl_ssl_bootstrap``; ``ca_cert``, ``client_cert``, ``client_key`` (PEM paths);
    ``sasl_plain``, ``sasl_scram_sha_256``, ``sasl_scram_sha_512`` (``SaslCredentials``: mechanism,
    username, password); ``create_topic(name, partitions=1, replication_factor=None, config=None)``,
    ``delete_topic(name)``, ``leader_of(topic, partition)``, ``partition_state(topic, partition)``
    (leader, replicas, isr), ``wait_for_leader(topic, partition, not_on=None)``, ``metadata()``,
    ``admin()`` (confluent-kafka AdminClient), ``api_versions()``, ``broker_version()`` ("4.4.0", from the
    node's log), ``kafka_version`` (the ``KafkaVersion`` it was started as), ``finalized_features()``
    ({"metadata.version": 33, "transaction.version": 2, ...}), ``feature_level(name)``, ``log_tail(n)``.
    With ``KAFKAEV_BROKERS=host:port,...`` it is an ``ExternalCluster`` (bootstrap and the topic/metadata
    helpers only); with ``KAFKAEV_TESTCONTAINERS=1`` a ``ContainerCluster``.
``kafka3`` (session, started on first use)
    Three nodes (ids 1, 2, 3) in one KRaft quorum, node n in rack ``rack-n`` with the
    RackAwareReplicaSelector (``rack_of(n)``); topics default to replication factor 3 and
    ``min.insync.replicas=2``. Adds ``kill(node_id)`` (SIGKILL), ``pause(node_id)`` (SIGSTOP),
    ``resume(node_id)`` (SIGCONT), ``stop_node(node_id)``, ``restart(node_id)`` (same ports and data, waits
    until the node is back), ``running_nodes()``, ``live_bootstrap``, ``wait_in_sync(topic, partition,
    node_id)``, ``nodes`` (``BrokerNode``: ports, pid, log_path, log_tail()). A fault-injecting test should
    leave all three nodes running when it ends (``restart``/``resume`` what it broke); a node found down at
    the start of a later test is restarted by the fixture. Skips when an external cluster is configured.
``secure_kafka``
    ``kafka`` when it has the SSL/SASL listeners, else a skip naming the reason (external clusters).
``secured_kafka`` (session, started on first use)
    A ``kafkaev.testing.secured.SecuredCluster``: one node whose SASL listeners also take OAUTHBEARER
    (tokens of a local OIDC issuer, ``.issuer``), with ``connections.max.reauth.ms=10000`` and ACLs
    enforced; ``.local`` is its ``LocalCluster``, ``oidc_provider(...)`` a token provider, ``allow(...)``
    creates ACLs. Skips when an external cluster is configured.
``topic`` / ``make_topic``
    ``topic``: a fresh 1-partition topic on ``kafka`` named after the test. ``make_topic(partitions=1,
    replication_factor=None, config=None, cluster=None)`` creates more (``cluster=kafka3`` for the
    three-node one). Both wait until every partition has a leader and a full ISR.

Event loops (in the manner of uvloop's ``_testbase``):

``event_loop_kind``
    Parametrized over ``"asyncio"`` and ``"uvloop"``: a test that uses ``loop`` runs once per kind.
``new_loop``
    Makes guarded loops: ``new_loop("asyncio")`` or ``new_loop("uvloop")`` is a new event loop of that
    kind, set as the current loop; ``new_loop.watch(loop)`` guards one made elsewhere (the runner's
    default loop). The test fails if a guarded loop's exception handler was called (an exception nobody
    handled: a callback that raised, a task never awaited), and each loop is closed afterwards, with its
    remaining tasks cancelled. Every loop a test runs on comes from here, so none escapes the guard.
``loop``
    ``new_loop(event_loop_kind)``. A module whose tests run on one kind only overrides ``loop`` with
    ``new_loop("asyncio")``.
``uv``
    ``new_loop("uvloop")``, for the tests that run on uvloop only (the long real-broker runs).

Fake brokers (``fake_broker.py``):

``fake_cluster``
    ``fake_cluster(1, 2)`` starts a ``FakeCluster`` of nodes 1 and 2 on ``loop`` (loopback sockets,
    scripted answers); every cluster it started is stopped when the test ends, before the loop closes.

Callbacks (``exactly_once.py``):

``each_callback_at_most_once`` (autouse)
    Every ``exactly_once.Calls``, ``producer_helpers.Delivery`` and ``conn_support.Recorder`` a test
    makes is checked when the test ends, after its loops are closed: a callback called twice fails
    the test, even one that never checked (tests still check that each callback was called, with
    ``assert_each_once``).

Markers:

``@pytest.mark.compat``
    The test is in the compatibility subset run against every broker version of the matrix.
``@pytest.mark.requires_kafka("4.0", "the consumer group protocol (KIP-848)")``
    Skipped, with that reason, when the brokers are older than the version given. The brokers' version
    is ``KAFKAEV_KAFKA_VERSION`` (default 4.4.0); with ``KAFKAEV_BROKERS`` set it to the external
    cluster's version.

When a test fails, the tail of each broker log it used is added to its report.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any

import pytest
import uvloop
from admin_helpers import admin, peer  # noqa: F401  (fixtures: kafkaev's Admin and confluent-kafka's AdminClient)
from exactly_once import each_callback_at_most_once  # noqa: F401  (an autouse fixture)
from fake_broker import FakeCluster

from kafkaev.testing import jars
from kafkaev.testing.admin import Capability, KafkaCluster
from kafkaev.testing.cluster import LocalCluster, NodeState
from kafkaev.testing.external import external_from_environment
from kafkaev.testing.versions import KafkaVersion, KafkaVersionError, broker_version

if TYPE_CHECKING:
    from kafkaev.testing.secured import SecuredCluster

pytest_plugins = ["pytester"]  # test_exactly_once.py runs a test session of its own

LOG_TAIL_LINES = 80
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def rack_of(node_id: int) -> str:
    """The broker.rack of node ``node_id`` of ``kafka3``."""
    return f"rack-{node_id}"

TOPIC_NAME_LIMIT = 200


class _LazyClusters:
    """The session's clusters, started on first request and stopped once at session end."""

    def __init__(self) -> None:
        self.single: KafkaCluster | None = None
        self.triple: LocalCluster | None = None

    def stop_all(self) -> None:
        for cluster in (self.triple, self.single):
            if cluster is not None:
                cluster.stop()


_CLUSTERS_KEY = pytest.StashKey[_LazyClusters]()
_VERSION_KEY = pytest.StashKey[KafkaVersion]()
REQUIRES_KAFKA_MARKER = "requires_kafka"


def pytest_configure(config: pytest.Config) -> None:
    try:
        config.stash[_VERSION_KEY] = broker_version(jars.kafka_version())
    except KafkaVersionError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config: pytest.Config) -> str:
    return f"kafka brokers: Apache Kafka {config.stash[_VERSION_KEY]} ({jars.VERSION_ENV} picks another)"


@pytest.fixture(scope="session")
def _clusters(request: pytest.FixtureRequest) -> Iterator[_LazyClusters]:
    clusters = _LazyClusters()
    request.config.stash[_CLUSTERS_KEY] = clusters
    try:
        yield clusters
    finally:
        clusters.stop_all()


@pytest.fixture(scope="session")
def kafka(_clusters: _LazyClusters, tmp_path_factory: pytest.TempPathFactory) -> KafkaCluster:
    external = external_from_environment()
    if external is not None:
        _clusters.single = external
        return external.start()
    cluster = LocalCluster(nodes=1, directory=tmp_path_factory.mktemp("kafka-1node"))
    _clusters.single = cluster
    cluster.start()
    return cluster


@pytest.fixture(scope="session")
def _kafka3_session(_clusters: _LazyClusters, tmp_path_factory: pytest.TempPathFactory) -> LocalCluster:
    if external_from_environment() is not None:
        pytest.skip("three-node tests need the local cluster; KAFKAEV_BROKERS/KAFKAEV_TESTCONTAINERS is set")
    # Each node in a rack of its own, and followers serve fetches to clients in their rack (KIP-392):
    # a client without client_rack still reads from leaders only.
    cluster = LocalCluster(nodes=3, directory=tmp_path_factory.mktemp("kafka-3nodes"),
                           broker_config={"replica.selector.class": RACK_AWARE_SELECTOR},
                           node_config={n: {"broker.rack": rack_of(n)} for n in (1, 2, 3)})
    _clusters.triple = cluster
    cluster.start()
    return cluster


@pytest.fixture
def kafka3(_kafka3_session: LocalCluster) -> LocalCluster:
    """The three-node cluster, with every node running when the test starts."""
    cluster = _kafka3_session
    for node_id, node in cluster.nodes.items():
        if node.state is NodeState.PAUSED:
            cluster.resume(node_id)
        if not node.is_alive():
            cluster.restart(node_id)
    return cluster


@pytest.fixture(scope="session")
def secured_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredCluster]:
    if external_from_environment() is not None:
        pytest.skip("the secured cluster is a local one; KAFKAEV_BROKERS/KAFKAEV_TESTCONTAINERS is set")
    from kafkaev.testing.secured import SecuredCluster  # cryptography and confluent's admin: only when used

    with SecuredCluster(tmp_path_factory.mktemp("kafka-secured")) as secured:
        yield secured


@pytest.fixture
def secure_kafka(kafka: KafkaCluster) -> LocalCluster:
    if Capability.SECURITY not in kafka.capabilities or not isinstance(kafka, LocalCluster):
        pytest.skip(f"{kafka!r} exposes only PLAINTEXT; SSL/SASL tests need the local cluster")
    return kafka


def _topic_prefix(request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")
    return name[:TOPIC_NAME_LIMIT] or "kafkaev-test"


@pytest.fixture
def make_topic(kafka: KafkaCluster, request: pytest.FixtureRequest) -> Callable[..., str]:
    prefix = _topic_prefix(request)

    def make(
        partitions: int = 1,
        replication_factor: int | None = None,
        config: dict[str, str] | None = None,
        cluster: KafkaCluster | None = None,
    ) -> str:
        target = cluster if cluster is not None else kafka
        return target.create_topic(
            target.unique_topic_name(prefix),
            partitions=partitions,
            replication_factor=replication_factor,
            config=config,
        )

    return make


@pytest.fixture
def topic(make_topic: Callable[..., str]) -> str:
    return make_topic()


@pytest.fixture(params=["asyncio", "uvloop"])
def event_loop_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


LOOP_FACTORIES: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


class LoopGuard:
    """The event loops of one test, each with an exception handler that records what it is given."""

    def __init__(self) -> None:
        self._loops: list[tuple[str, asyncio.AbstractEventLoop, list[dict[str, Any]]]] = []

    def __call__(self, kind: str) -> asyncio.AbstractEventLoop:
        """A new loop of ``kind`` ("asyncio" or "uvloop"), guarded and set as the current loop."""
        new = LOOP_FACTORIES[kind]()
        asyncio.set_event_loop(new)
        return self.watch(new, kind)

    def watch(self, loop: asyncio.AbstractEventLoop, kind: str) -> asyncio.AbstractEventLoop:
        """Guard a loop made elsewhere; it is closed with the others unless the test closed it."""
        unhandled: list[dict[str, Any]] = []

        def record(_loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            unhandled.append(context)
            _loop.default_exception_handler(context)

        loop.set_exception_handler(record)
        self._loops.append((kind, loop, unhandled))
        return loop

    def close(self) -> list[str]:
        """Cancel what each loop still runs and close it; describe each loop whose handler was called."""
        with contextlib.ExitStack() as stack:  # every loop is closed even if shutting one down fails
            stack.callback(asyncio.set_event_loop, None)
            for _kind, loop, _unhandled in self._loops:
                if not loop.is_closed():
                    stack.callback(_shut_down, loop)
        failures = []
        for kind, _loop, unhandled in self._loops:
            if unhandled:
                described = "\n".join(f"- {c.get('message', '')}: {c.get('exception')!r}" for c in unhandled)
                failures.append(f"the {kind} loop's exception handler was called:\n{described}")
        return failures


def _shut_down(loop: asyncio.AbstractEventLoop) -> None:
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


@pytest.fixture
def new_loop() -> Iterator[LoopGuard]:
    guard = LoopGuard()
    yield guard
    failures = guard.close()
    if failures:
        pytest.fail("\n".join(failures))


@pytest.fixture
def loop(event_loop_kind: str, new_loop: LoopGuard) -> asyncio.AbstractEventLoop:
    return new_loop(event_loop_kind)


@pytest.fixture
def uv(new_loop: LoopGuard) -> asyncio.AbstractEventLoop:
    return new_loop("uvloop")


@pytest.fixture
def fake_cluster(loop: asyncio.AbstractEventLoop) -> Iterator[Callable[..., FakeCluster]]:
    started: list[FakeCluster] = []

    def start(*node_ids: int) -> FakeCluster:
        cluster = loop.run_until_complete(FakeCluster(node_ids or (1,)).start())
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        loop.run_until_complete(cluster.stop())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    brokers = config.stash[_VERSION_KEY]
    for item in items:
        if "kafka3" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.three_nodes)
        for marker in item.iter_markers(REQUIRES_KAFKA_MARKER):
            minimum, feature = _required_kafka(item, marker)
            if brokers < minimum:
                item.add_marker(pytest.mark.skip(
                    reason=f"needs Kafka {marker.args[0]}+ for {feature}; the broker is {brokers}"
                ))
                break


def _required_kafka(item: pytest.Item, marker: pytest.Mark) -> tuple[KafkaVersion, str]:
    """The (minimum version, feature) of a ``requires_kafka("4.0", "what needs it")`` marker."""
    if len(marker.args) != 2 or not all(isinstance(arg, str) for arg in marker.args):
        raise pytest.UsageError(
            f"{item.nodeid}: use @pytest.mark.{REQUIRES_KAFKA_MARKER}(\"4.0\", \"the feature that needs it\"),"
            f" got args {marker.args!r}"
        )
    try:
        return KafkaVersion.parse(marker.args[0]), marker.args[1]
    except KafkaVersionError as exc:
        raise pytest.UsageError(f"{item.nodeid}: {REQUIRES_KAFKA_MARKER}: {exc}") from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not report.failed:
        return report
    clusters = item.config.stash.get(_CLUSTERS_KEY, None)
    if clusters is None:
        return report
    used = getattr(item, "fixturenames", ())
    if clusters.single is not None and {"kafka", "topic", "make_topic", "secure_kafka"} & set(used):
        report.sections.append(("kafka broker log (1 node)", clusters.single.log_tail(LOG_TAIL_LINES)))
    if clusters.triple is not None and "kafka3" in used:
        report.sections.append(("kafka broker logs (3 nodes)", clusters.triple.log_tail(LOG_TAIL_LINES)))
    return report
