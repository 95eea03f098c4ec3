"""Typed TLS and SASL settings for a broker connection, and the SSLContext built from them."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True, slots=True)
class TLSConfig:
    """TLS for a broker connection.

    cafile: CA bundle that signed the broker certificates (None = the system store).
    certfile/keyfile/password: client certificate for mutual TLS.
    check_hostname: the broker certificate must name the host connected to.
    verify: False accepts any broker certificate (an explicit opt-out, for tests only).
    """

    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    password: str | None = None
    check_hostname: bool = True
    verify: bool = True

    def __post_init__(self) -> None:
        for name in ("cafile", "certfile", "keyfile", "password"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"TLSConfig: {name} must be a str or None, not {type(value).__name__}")
        if self.keyfile is not None and self.certfile is None:
            raise ValueError("TLSConfig: keyfile given without certfile")
        if self.check_hostname and not self.verify:
            # Checking a name on a certificate nobody verified would be theatre.
            object.__setattr__(self, "check_hostname", False)

    def context(self) -> ssl.SSLContext:
        """A client-side SSLContext for these settings (files are read now, errors raised now)."""
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.cafile)
        ctx.check_hostname = self.check_hostname
        ctx.verify_mode = ssl.CERT_REQUIRED if self.verify else ssl.CERT_NONE
        if self.certfile is not None:
            ctx.load_cert_chain(self.certfile, self.keyfile, self.password)
        return ctx


@dataclass(frozen=True, slots=True)
class SASLConfig:
    """SASL authentication: mechanism "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"."""

    mechanism: str
    username: str
    password: str

    def __post_init__(self) -> None:
        if not isinstance(self.mechanism, str) or self.mechanism.upper() not in SASL_MECHANISMS:
            raise ValueError(f"SASLConfig: mechanism must be one of {', '.join(SASL_MECHANISMS)}, not {self.mechanism!r}")
        object.__setattr__(self, "mechanism", self.mechanism.upper())
        for name in ("username", "password"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"SASLConfig: {name} must be a str")
        if not self.username:
            raise ValueError("SASLConfig: username must not be empty")


def ssl_context(tls: TLSConfig | ssl.SSLContext | None) -> ssl.SSLContext | None:
    """The SSLContext to connect with, or None for plaintext."""
    if tls is None or isinstance(tls, ssl.SSLContext):
        return tls
    if isinstance(tls, TLSConfig):
        return tls.context()
    raise TypeError(f"tls must be a TLSConfig, an ssl.SSLContext or None, not {type(tls).__name__}")


class InsecureCredentialsWarning(UserWarning):
    """SASL credentials are about to cross a connection without TLS."""
