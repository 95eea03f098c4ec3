"""SCRAM credentials (KIP-554): which users have them, and setting or removing them.

The password never leaves the client: an upsertion sends the salt, the iteration count and
the salted password (PBKDF2 over the mechanism's hash, RFC 5802's Hi()), which is what the
broker stores and checks a SCRAM login against.
"""

from __future__ import annotations

import enum
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import KafkaError
from ..protocol import codec
from ..protocol.connection import Connection
from .core import (
    AdminCore,
    ResultCallback,
    answered,
    check_int,
    check_items,
    check_names,
    error_or_none,
    send_request,
)

SALT_BYTES = 32
DEFAULT_ITERATIONS = 4096  # the broker's minimum for SCRAM-SHA-256/512, and what kafka-configs.sh uses
MAX_ITERATIONS = 16384  # the broker refuses more (ScramMechanism.maxIterations)


class ScramMechanism(enum.IntEnum):
    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def hash_name(self) -> str:
        return {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}[self]


def _mechanism(owner: str, value: int) -> ScramMechanism:
    try:
        mechanism = ScramMechanism(value)
    except ValueError:
        mechanism = ScramMechanism.UNKNOWN
    if mechanism is ScramMechanism.UNKNOWN:
        raise ValueError(f"kafkaev.{owner}: 'mechanism' must be SCRAM_SHA_256 or SCRAM_SHA_512, got {value!r}")
    return mechanism


def _user(owner: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"kafkaev.{owner}: 'user' must be a non-empty string, got {value!r}")


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    """Set ``user``'s credential for ``mechanism`` to ``password`` (a random salt unless given)."""

    user: str
    mechanism: ScramMechanism
    password: str = field(repr=False)
    iterations: int = DEFAULT_ITERATIONS
    salt: bytes | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _user("ScramUpsertion", self.user)
        object.__setattr__(self, "mechanism", _mechanism("ScramUpsertion", self.mechanism))
        if not isinstance(self.password, str) or not self.password:
            raise ValueError("kafkaev.ScramUpsertion: 'password' must be a non-empty string")
        check_int("iterations", self.iterations, DEFAULT_ITERATIONS, MAX_ITERATIONS)
        if self.salt is not None and (not isinstance(self.salt, bytes) or not self.salt):
            raise ValueError("kafkaev.ScramUpsertion: 'salt' must be non-empty bytes or None")

    def request(self) -> codec.ScramCredentialUpsertion:
        salt = self.salt or os.urandom(SALT_BYTES)
        salted = hashlib.pbkdf2_hmac(self.mechanism.hash_name, self.password.encode(), salt, self.iterations)
        return codec.ScramCredentialUpsertion(name=self.user, mechanism=self.mechanism, iterations=self.iterations,
                                              salt=salt, salted_password=salted)


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    """Remove ``user``'s credential for ``mechanism``."""

    user: str
    mechanism: ScramMechanism

    def __post_init__(self) -> None:
        _user("ScramDeletion", self.user)
        object.__setattr__(self, "mechanism", _mechanism("ScramDeletion", self.mechanism))


@dataclass(frozen=True, slots=True)
class ScramCredentialInfo:
    mechanism: ScramMechanism
    iterations: int


@dataclass(frozen=True, slots=True)
class UserScramCredentials:
    """A user's credentials (never their secrets), or the error (RESOURCE_NOT_FOUND: none)."""

    user: str
    credentials: tuple[ScramCredentialInfo, ...] = ()
    error: KafkaError | None = None


class ScramAdmin(AdminCore):
    """SCRAM credential administration."""

    def describe_user_scram_credentials(self, cb: ResultCallback[dict[str, UserScramCredentials]], *,
                                        users: Iterable[str] | None = None) -> None:
        """``cb({user: UserScramCredentials}, err)`` for ``users``, or every user that has one."""
        wanted = None if users is None else check_names("users", users)
        done = self._once(cb)
        on_response = answered(codec.DescribeUserScramCredentialsResponse, done, lambda resp: {
            r.user: UserScramCredentials(r.user, tuple(
                ScramCredentialInfo(_known(c.mechanism), c.iterations) for c in r.credential_infos),
                error_or_none(r.error_code, r.error_message)) for r in resp.results},
            lambda resp: error_or_none(resp.error_code, resp.error_message))

        body = codec.DescribeUserScramCredentialsRequest(
            users=None if wanted is None else [codec.UserName(name=u) for u in wanted])
        self._on_any(done, lambda conn: send_request(conn, body, codec.DescribeUserScramCredentialsResponse,
                                                     on_response))

    def alter_user_scram_credentials(self, alterations: Iterable[ScramUpsertion | ScramDeletion],
                                     cb: ResultCallback[dict[str, KafkaError | None]]) -> None:
        """``cb({user: KafkaError | None}, err)``, None where every change of that user was made."""
        wanted = check_items("alterations", alterations, (ScramUpsertion, ScramDeletion))
        users = [a.user for a in wanted]
        twice = sorted({u for u in users if users.count(u) > 1})
        if twice:  # the broker refuses the whole request (DUPLICATE_RESOURCE): say so before sending
            raise ValueError(f"kafkaev.Admin: 'alterations' changes user {twice[0]!r} twice; one change per "
                             f"user and call")
        done = self._once(cb)

        on_response = answered(codec.AlterUserScramCredentialsResponse, done, lambda resp: {
            r.user: error_or_none(r.error_code, r.error_message) for r in resp.results})

        def send(conn: Connection) -> None:
            body = codec.AlterUserScramCredentialsRequest(
                deletions=[codec.ScramCredentialDeletion(name=d.user, mechanism=d.mechanism)
                           for d in wanted if isinstance(d, ScramDeletion)],
                upsertions=[u.request() for u in wanted if isinstance(u, ScramUpsertion)])
            send_request(conn, body, codec.AlterUserScramCredentialsResponse, on_response)

        self._on_controller(done, send)


def _known(code: int) -> ScramMechanism:
    try:
        return ScramMechanism(code)
    except ValueError:
        return ScramMechanism.UNKNOWN
