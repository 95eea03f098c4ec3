"""A secured test cluster as a company runs one: OAUTHBEARER (tokens from a local OIDC issuer,
``oidc.py``) beside PLAIN and SCRAM on the SASL listeners, sessions that must be re-authenticated
(``connections.max.reauth.ms``), and ACLs enforced by StandardAuthorizer.

The cluster's own users (its SCRAM users, the mutual-TLS client, the ``kafkaev-oauth`` client) are
super users, so whole-client runs work as they would for an application with broad rights;
``kafkaev-limited`` is an OAuth client with only the ACLs ``allow`` gives it.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from kafkaev.oidc import OIDCClientCredentials

from .admin import ADMIN_TIMEOUT_S
from .certs import CLIENT_COMMON_NAME
from .cluster import LocalCluster
from .config import acl_properties
from .oidc import LocalIssuer

REAUTH_MS = 10_000
# Short-lived tokens: each outlives only a few sessions, so re-authentication needs fresh ones.
TOKEN_LIFETIME_S = 30.0
OAUTH_CLIENT_ID = "kafkaev-oauth"
OAUTH_CLIENT_SECRET = "oauth-client-secret-1"
LIMITED_CLIENT_ID = "kafkaev-limited"
LIMITED_CLIENT_SECRET = "limited-client-secret-1"
# How Kafka names the mutual-TLS client: its certificate's subject, RFC 2253.
TLS_CLIENT_PRINCIPAL = f"User:CN={CLIENT_COMMON_NAME},O=kafkaev tests"


@dataclass(frozen=True, slots=True)
class Grant:
    """One ACL: ``principal`` may do ``operation`` on ``resource`` named ``name`` (literal or prefix)."""

    principal: str
    resource: ResourceType
    name: str
    operation: AclOperation
    prefixed: bool = False

    def binding(self) -> AclBinding:
        pattern = ResourcePatternType.PREFIXED if self.prefixed else ResourcePatternType.LITERAL
        return AclBinding(self.resource, self.name, pattern, self.principal, "*", self.operation,
                          AclPermissionType.ALLOW)


class SecuredCluster:
    """A one-node ``LocalCluster`` with OAuth, re-authentication and ACLs, and its OIDC issuer."""

    def __init__(self, directory: Path | None = None, *, reauth_ms: int = REAUTH_MS,
                 token_lifetime_s: float = TOKEN_LIFETIME_S) -> None:
        self._owns_directory = directory is None
        self.directory = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="kafkaev-sec-"))
        self.issuer = LocalIssuer(self.directory)
        self.issuer.add_client(OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET, token_lifetime_s)
        self.issuer.add_client(LIMITED_CLIENT_ID, LIMITED_CLIENT_SECRET, token_lifetime_s)
        self.reauth_ms = reauth_ms
        self.cluster: LocalCluster | None = None

    def start(self) -> SecuredCluster:
        self.issuer.start()
        # Built before start() so the super users can name the cluster's own SCRAM users.
        cluster = LocalCluster(oauth=self.issuer.validation, directory=self.directory / "cluster")
        super_users = (
            f"User:{cluster.sasl_plain.username}",
            *(f"User:{user.username}" for user in cluster.scram_users),
            f"User:{OAUTH_CLIENT_ID}",
            TLS_CLIENT_PRINCIPAL,
        )
        cluster.broker_config.update(acl_properties(super_users))
        cluster.broker_config["connections.max.reauth.ms"] = str(self.reauth_ms)
        self.cluster = cluster.start()
        return self

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        self.issuer.stop()
        if self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> SecuredCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def local(self) -> LocalCluster:
        if self.cluster is None:
            raise RuntimeError("the secured cluster is not started: call start() first")
        return self.cluster

    def oidc_provider(self, client_id: str = OAUTH_CLIENT_ID, secret: str = OAUTH_CLIENT_SECRET,
                      **options: object) -> OIDCClientCredentials:
        """The built-in OIDC provider pointed at the issuer's token endpoint, trusting its CA."""
        return OIDCClientCredentials(self.issuer.token_url, client_id, secret, scope="kafka",
                                     cafile=str(self.issuer.ca_cert), **options)  # type: ignore[arg-type]

    def allow(self, *grants: Grant) -> None:
        """Create the ACLs (through the PLAINTEXT listener, whose ANONYMOUS user is a super user)."""
        futures = self.local.admin().create_acls([grant.binding() for grant in grants])
        for future in futures.values():
            future.result(timeout=ADMIN_TIMEOUT_S)
