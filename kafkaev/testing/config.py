"""What a test broker is told: server.properties for one combined KRaft node, and its log4j2 config.

Values are tuned for tests on a small machine: quick group joins, small internal topics, failure
detection in seconds rather than tens of seconds, and no background leader moves that a routing test
did not ask for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .versions import CONSUMER_GROUP_PROTOCOL, SHARE_GROUPS, KafkaVersion

CONTROLLER_LISTENER = "CONTROLLER"
# Each listener name is also its security protocol, except the controller's.
LISTENER_PROTOCOLS = {
    "PLAINTEXT": "PLAINTEXT",
    "SSL": "SSL",
    "SASL_PLAINTEXT": "SASL_PLAINTEXT",
    "SASL_SSL": "SASL_SSL",
    CONTROLLER_LISTENER: "PLAINTEXT",
}
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER = "OAUTHBEARER"
OAUTH_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
# The brokers may fetch JWKS only from URLs listed in this JVM system property (Kafka 4.0+).
OAUTH_ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# PLAINTEXT (the harness, inter-broker) and CONTROLLER traffic: always a super user on an ACL cluster.
ANONYMOUS_PRINCIPAL = "User:ANONYMOUS"

SEGMENT_BYTES = 64 * 1024 * 1024
# Index files are preallocated per segment; 1 MiB still indexes a full 64 MiB segment.
INDEX_BYTES = 1024 * 1024
INTERNAL_TOPIC_PARTITIONS = 5
HEARTBEAT_INTERVAL_MS = 500
# A killed or paused node is fenced (and loses leadership) after this long without heartbeats.
SESSION_TIMEOUT_MS = 4000
# Consumer-protocol and share groups (Kafka 4.x): a member learns its assignment on a heartbeat,
# 5 s apart by default; these let tests also choose sessions as short as the classic group's.
GROUP_HEARTBEAT_INTERVAL_MS = 500
GROUP_MIN_HEARTBEAT_INTERVAL_MS = 100
GROUP_MIN_SESSION_TIMEOUT_MS = 1000

if TYPE_CHECKING:
    # certs imports cryptography, which a cluster without TLS listeners must not need.
    from .certs import TlsFiles
    from .oidc import OAuthValidation


@dataclass(frozen=True, slots=True)
class SaslCredentials:
    """One SASL user the test brokers accept."""

    mechanism: str
    username: str
    password: str


@dataclass(frozen=True, slots=True)
class NodePorts:
    """The loopback ports of one node, one per listener; None for a listener the node does not have
    (a cluster without security has PLAINTEXT and CONTROLLER only)."""

    plaintext: int
    ssl: int | None
    sasl_plaintext: int | None
    sasl_ssl: int | None
    controller: int

    def by_listener(self) -> dict[str, int]:
        """The node's listeners, name -> port."""
        ports = {
            "PLAINTEXT": self.plaintext,
            "SSL": self.ssl,
            "SASL_PLAINTEXT": self.sasl_plaintext,
            "SASL_SSL": self.sasl_ssl,
            CONTROLLER_LISTENER: self.controller,
        }
        return {name: port for name, port in ports.items() if port is not None}


@dataclass(frozen=True, slots=True)
class SecuritySetup:
    """TLS files and SASL users shared by every node of a cluster."""

    tls: TlsFiles
    plain_users: tuple[SaslCredentials, ...]
    scram_users: tuple[SaslCredentials, ...]
    # OAUTHBEARER on the SASL listeners too, tokens validated against this issuer's JWKS.
    oauth: OAuthValidation | None = None


def _escape(value: str) -> str:
    """Escape a value for java.util.Properties: backslashes, newlines (PEM blocks), '=' and ':' are literal."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")


def _jaas_value(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_server_properties(
    node_id: int,
    all_ports: dict[int, NodePorts],
    data_dir: Path,
    security: SecuritySetup | None,
    version: KafkaVersion,
    overrides: dict[str, str] | None = None,
) -> str:
    """server.properties for combined broker+controller ``node_id`` of the cluster ``all_ports``,
    on Apache Kafka ``version``; with ``security`` None, PLAINTEXT and CONTROLLER listeners only."""
    ports = all_ports[node_id]
    node_count = len(all_ports)
    replication = min(3, node_count)
    min_isr = min(2, node_count)
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.by_listener().items())
    advertised = ",".join(
        f"{name}://127.0.0.1:{port}"
        for name, port in ports.by_listener().items()
        if name != CONTROLLER_LISTENER
    )
    voters = ",".join(f"{nid}@127.0.0.1:{p.controller}" for nid, p in sorted(all_ports.items()))
    protocols = {name: LISTENER_PROTOCOLS[name] for name in ports.by_listener()}

    props: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": voters,
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": listeners,
        "advertised.listeners": advertised,
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in protocols.items()),
        "log.dirs": str(data_dir),
        # Sized for 2 shared cores.
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "4",
        # Topics and durability matched to the node count.
        "num.partitions": "1",
        "default.replication.factor": str(replication),
        "min.insync.replicas": str(min_isr),
        "offsets.topic.replication.factor": str(replication),
        "offsets.topic.num.partitions": str(INTERNAL_TOPIC_PARTITIONS),
        "transaction.state.log.replication.factor": str(replication),
        "transaction.state.log.min.isr": str(min_isr),
        "transaction.state.log.num.partitions": str(INTERNAL_TOPIC_PARTITIONS),
        # A transaction open past its timeout is aborted within a second, not ten.
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        "auto.create.topics.enable": "true",
        "delete.topic.enable": "true",
        "log.segment.bytes": str(SEGMENT_BYTES),
        "log.index.size.max.bytes": str(INDEX_BYTES),
        # Groups: join at once, and allow the short sessions that consumer tests use.
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "500",
        # Fail fast: a dead node is fenced and its partitions move within seconds.
        "broker.heartbeat.interval.ms": str(HEARTBEAT_INTERVAL_MS),
        "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "replica.lag.time.max.ms": "10000",
        # Leadership moves only when a test causes it.
        "auto.leader.rebalance.enable": "false",
    }
    if security is not None:
        props.update(_security_properties(security))
    # Only for the versions that have them (versions.py): 3.9 gets none of these.
    if CONSUMER_GROUP_PROTOCOL.enabled_on(version):
        props.update(_group_timing("consumer"))
    if SHARE_GROUPS.enabled_on(version):
        props.update(_group_timing("share"))
        props["share.coordinator.state.topic.replication.factor"] = str(replication)
        props["share.coordinator.state.topic.min.isr"] = str(min_isr)
        props["share.coordinator.state.topic.num.partitions"] = str(INTERNAL_TOPIC_PARTITIONS)
    props.update(overrides or {})
    return "".join(f"{key}={_escape(value)}\n" for key, value in props.items())


def _security_properties(security: SecuritySetup) -> dict[str, str]:
    """The SSL and SASL listeners' settings: TLS material and the SASL users."""
    tls = security.tls
    props = {
        # SSL listener: mutual TLS; SASL_SSL below is server-authenticated TLS only.
        # Inline PEM: Kafka's file-based PEM keystore insists on an encrypted key, inline does not.
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": tls.broker_cert.read_text(),
        "ssl.keystore.key": tls.broker_key.read_text(),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca_cert),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.sasl_ssl.ssl.client.auth": "none",
        "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
    }
    plain_users = " ".join(f"user_{u.username}={_jaas_value(u.password)}" for u in security.plain_users)
    for listener in ("sasl_plaintext", "sasl_ssl"):
        props[f"listener.name.{listener}.plain.sasl.jaas.config"] = f"{PLAIN_LOGIN_MODULE} required {plain_users};"
        for mechanism in ("scram-sha-256", "scram-sha-512"):
            props[f"listener.name.{listener}.{mechanism}.sasl.jaas.config"] = f"{SCRAM_LOGIN_MODULE} required;"
    if security.oauth is not None:
        props.update(_oauth_properties(security.oauth))
    return props


def _oauth_properties(oauth: OAuthValidation) -> dict[str, str]:
    """OAUTHBEARER on both SASL listeners, JWTs checked against the issuer's JWKS, audience and issuer."""
    props = {
        "sasl.enabled.mechanisms": ",".join((*SASL_MECHANISMS, OAUTHBEARER)),
        "sasl.oauthbearer.jwks.endpoint.url": oauth.jwks_url,
        "sasl.oauthbearer.expected.audience": oauth.audience,
        "sasl.oauthbearer.expected.issuer": oauth.issuer,
    }
    for listener in ("sasl_plaintext", "sasl_ssl"):
        prefix = f"listener.name.{listener}.oauthbearer"
        props[f"{prefix}.sasl.jaas.config"] = f"{OAUTH_LOGIN_MODULE} required;"
        props[f"{prefix}.sasl.server.callback.handler.class"] = OAUTH_VALIDATOR
    return props


def acl_properties(super_users: tuple[str, ...]) -> dict[str, str]:
    """Broker settings that enforce ACLs (StandardAuthorizer) with ``super_users`` ("User:name")
    allowed everything; anyone else needs an ACL for each resource."""
    return {
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": ";".join((ANONYMOUS_PRINCIPAL, *super_users)),
        "allow.everyone.if.no.acl.found": "false",
    }


def _group_timing(kind: str) -> dict[str, str]:
    """Heartbeat and session bounds of the ``consumer`` or ``share`` groups."""
    return {
        f"group.{kind}.heartbeat.interval.ms": str(GROUP_HEARTBEAT_INTERVAL_MS),
        f"group.{kind}.min.heartbeat.interval.ms": str(GROUP_MIN_HEARTBEAT_INTERVAL_MS),
        f"group.{kind}.min.session.timeout.ms": str(GROUP_MIN_SESSION_TIMEOUT_MS),
    }


def scram_format_arguments(users: tuple[SaslCredentials, ...]) -> list[str]:
    """``kafka-storage format`` arguments that create the SCRAM users with the cluster's metadata."""
    arguments: list[str] = []
    for user in users:
        arguments += ["--add-scram", f"{user.mechanism}=[name={user.username},password={user.password}]"]
    return arguments


LOG4J2_PROPERTIES = """\
# Written by kafkaev.testing: the broker logs to stdout, which the harness sends to server.log.
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""


def write_log4j2_config(path: Path) -> Path:
    path.write_text(LOG4J2_PROPERTIES)
    return path
