"""Typed TLS and SASL settings for a broker connection, and the SSLContext built from them.

Secrets (passwords, private keys, tokens, client secrets) are kept out of every ``repr``: these
objects end up in logs and tracebacks.
"""

from __future__ import annotations

import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkaev.oauth import TokenCache

OAUTHBEARER = "OAUTHBEARER"
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", OAUTHBEARER)
# The oldest TLS a broker connection accepts: 1.0 and 1.1 are broken and Kafka disables them too.
MINIMUM_TLS_VERSION = ssl.TLSVersion.TLSv1_2
PEM_MARKER = "-----BEGIN "


@dataclass(frozen=True, slots=True)
class TLSConfig:
    """TLS for a broker connection.

    cafile / cadata: CA bundle that signed the broker certificates, as a file or as PEM text
    (neither = the system store).
    certfile/keyfile/password: client certificate for mutual TLS, as files; cert_pem/key_pem: the
    same as PEM text in memory (a private key never has to be written by the caller).
    check_hostname: the broker certificate must name the host connected to.
    verify: False accepts any broker certificate (an explicit opt-out, for tests only).
    Every connection is TLS 1.2 or later.
    """

    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    password: str | None = field(default=None, repr=False)
    check_hostname: bool = True
    verify: bool = True
    cadata: str | None = None
    cert_pem: str | None = None
    key_pem: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("cafile", "certfile", "keyfile", "password", "cadata", "cert_pem", "key_pem"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"TLSConfig: {name} must be a str or None, not {type(value).__name__}")
        for name in ("cadata", "cert_pem", "key_pem"):
            value = getattr(self, name)
            if value is not None and PEM_MARKER not in value:
                # Never echo the value: it may be a key.
                raise ValueError(f"TLSConfig: {name} must be PEM text (a '{PEM_MARKER}...' block)")
        if self.keyfile is not None and self.certfile is None:
            raise ValueError("TLSConfig: keyfile given without certfile")
        if self.key_pem is not None and self.cert_pem is None:
            raise ValueError("TLSConfig: key_pem given without cert_pem")
        if self.certfile is not None and self.cert_pem is not None:
            raise ValueError("TLSConfig: give the client certificate as certfile or as cert_pem, not both")
        if self.check_hostname and not self.verify:
            # Checking a name on a certificate nobody verified would be theatre.
            object.__setattr__(self, "check_hostname", False)

    def context(self) -> ssl.SSLContext:
        """A client-side SSLContext for these settings (files are read now, errors raised now)."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.cafile, cadata=self.cadata)
        ctx.minimum_version = MINIMUM_TLS_VERSION
        ctx.check_hostname = self.check_hostname
        ctx.verify_mode = ssl.CERT_REQUIRED if self.verify else ssl.CERT_NONE
        if self.certfile is not None:
            ctx.load_cert_chain(self.certfile, self.keyfile, self.password)
        elif self.cert_pem is not None:
            _load_pem_chain(ctx, self.cert_pem, self.key_pem, self.password)
        return ctx


def _load_pem_chain(ctx: ssl.SSLContext, cert_pem: str, key_pem: str | None, password: str | None) -> None:
    """ssl can load a certificate chain only from a file: write the PEM text to a private
    temporary file (mode 0600) for the duration of the call."""
    fd, path = tempfile.mkstemp(prefix="kafkaev-tls-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(cert_pem if key_pem is None else cert_pem.rstrip("\n") + "\n" + key_pem)
        try:
            ctx.load_cert_chain(path, None, password)
        except ssl.SSLError as exc:
            raise ssl.SSLError(exc.errno, f"TLSConfig: cert_pem/key_pem do not load: {exc.reason}") from None
    finally:
        os.unlink(path)


def _check_extensions(extensions: Mapping[str, str]) -> None:
    # KIP-342: keys are letters only ("auth" is the token's own), values printable ASCII.
    for key, value in extensions.items():
        if not isinstance(key, str) or not key.isascii() or not key.isalpha() or key == "auth":
            raise ValueError(f"OAuthBearerToken: extension key {key!r} must be ASCII letters, not 'auth'")
        if not isinstance(value, str) or not value or not all(c in "\t\r\n" or " " <= c <= "~" for c in value):
            raise ValueError(f"OAuthBearerToken: extension {key!r} must be a non-empty printable ASCII str")


@dataclass(frozen=True, slots=True, eq=False)
class OAuthBearerToken:
    """An OAUTHBEARER token, as a token provider returns it.

    value: the compact token (a JWT for Kafka's own validator), never shown by ``repr``.
    expires_at: when it expires, Unix time in seconds.
    principal: who it names (informational: the broker takes the principal from the token).
    extensions: SASL extensions sent with it (KIP-342), key -> value.
    """

    value: str = field(repr=False)
    expires_at: float
    principal: str | None = None
    extensions: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.value, str) or not self.value:
            raise TypeError("OAuthBearerToken: value must be a non-empty str")
        if isinstance(self.expires_at, bool) or not isinstance(self.expires_at, (int, float)):
            raise TypeError("OAuthBearerToken: expires_at must be Unix time in seconds (a number)")
        if self.principal is not None and not isinstance(self.principal, str):
            raise TypeError("OAuthBearerToken: principal must be a str or None")
        if not isinstance(self.extensions, Mapping):
            raise TypeError("OAuthBearerToken: extensions must be a mapping of str to str")
        _check_extensions(self.extensions)
        object.__setattr__(self, "extensions", dict(self.extensions))

    @classmethod
    def from_lifetime(
        cls, value: str, lifetime_s: float, principal: str | None = None, extensions: Mapping[str, str] | None = None
    ) -> OAuthBearerToken:
        """A token that expires ``lifetime_s`` seconds from now."""
        return cls(value, time.time() + lifetime_s, principal, dict(extensions or {}))

    @property
    def lifetime_left_s(self) -> float:
        return self.expires_at - time.time()


TokenProvider = Callable[[], OAuthBearerToken | Awaitable[OAuthBearerToken]]


@dataclass(frozen=True, slots=True)
class SASLConfig:
    """SASL authentication: mechanism "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512" with a username
    and password, or "OAUTHBEARER" with a token provider (``SASLConfig.oauthbearer(provider)``).

    reauthenticate: when the broker gives the session a lifetime (``connections.max.reauth.ms``,
    or the token's expiry), authenticate again on the same connection before it ends (KIP-368);
    False lets the broker close the connection instead.
    """

    mechanism: str
    username: str = ""
    password: str = field(default="", repr=False)
    token_provider: TokenProvider | None = None
    reauthenticate: bool = True
    # One token cache per OAUTHBEARER config: every connection made from it shares the token.
    tokens: TokenCache | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, str) or self.mechanism.upper() not in SASL_MECHANISMS:
            raise ValueError(f"SASLConfig: mechanism must be one of {', '.join(SASL_MECHANISMS)}, not {self.mechanism!r}")
        object.__setattr__(self, "mechanism", self.mechanism.upper())
        for name in ("username", "password"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"SASLConfig: {name} must be a str")
        if not isinstance(self.reauthenticate, bool):
            raise TypeError("SASLConfig: reauthenticate must be a bool")
        if self.mechanism == OAUTHBEARER:
            if not callable(self.token_provider):
                raise TypeError("SASLConfig: OAUTHBEARER needs token_provider, a callable returning an "
                                "OAuthBearerToken (or an awaitable of one)")
            if self.username or self.password:
                raise ValueError("SASLConfig: OAUTHBEARER takes a token_provider, not a username or password")
            from kafkaev.oauth import TokenCache

            object.__setattr__(self, "tokens", TokenCache(self.token_provider))
            return
        if self.token_provider is not None:
            raise ValueError(f"SASLConfig: token_provider is for OAUTHBEARER, not {self.mechanism}")
        if not self.username:
            raise ValueError("SASLConfig: username must not be empty")

    @classmethod
    def oauthbearer(cls, token_provider: TokenProvider, *, reauthenticate: bool = True) -> SASLConfig:
        """OAUTHBEARER with ``token_provider``: a callable (plain or async) returning an
        ``OAuthBearerToken``; it is called again at about 80% of each token's lifetime.
        ``kafkaev.OIDCClientCredentials`` is one."""
        return cls(OAUTHBEARER, token_provider=token_provider, reauthenticate=reauthenticate)

    @property
    def identity(self) -> str:
        """Who authenticates, for messages: the username, or the mechanism for a token."""
        return repr(self.username) if self.username else f"the {self.mechanism} token"


def ssl_context(tls: TLSConfig | ssl.SSLContext | None) -> ssl.SSLContext | None:
    """The SSLContext to connect with, or None for plaintext."""
    if tls is None or isinstance(tls, ssl.SSLContext):
        return tls
    if isinstance(tls, TLSConfig):
        return tls.context()
    raise TypeError(f"tls must be a TLSConfig, an ssl.SSLContext or None, not {type(tls).__name__}")


class InsecureCredentialsWarning(UserWarning):
    """SASL credentials are about to cross a connection without TLS."""
