"""The TLS and SASL flags of every subcommand that talks to a broker, and their ``-X`` names.

kcat and the Java client configure security with properties (``security.protocol``,
``ssl.ca.location``, ``sasl.mechanism``, ...); the command line takes those names through ``-X``
as well as its own flags, and turns either into the ``tls`` and ``sasl`` options of
``kafkaev.Client``. The SSL context is built here, before any connection, so that a missing
or unreadable file is one line naming the flag, not a failure inside the client.
"""

from __future__ import annotations

import argparse
import os
import ssl
import warnings
from dataclasses import dataclass
from typing import Any

from kafkaev.cli.common import CliError, UsageError
from kafkaev.security import SASL_MECHANISMS, InsecureCredentialsWarning, SASLConfig, TLSConfig

PLAINTEXT = "PLAINTEXT"
SSL = "SSL"
SASL_PLAINTEXT = "SASL_PLAINTEXT"
SASL_SSL = "SASL_SSL"
PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
DEFAULT_MECHANISM = "PLAIN"

# Each flag's destination, and the property names kcat (librdkafka) and the Java client use for
# it, normalised as kafkaev.config normalises option names (lower case, '.' and '-' as '_').
SECURITY_PROPERTIES: dict[str, str] = {
    "security_protocol": "security_protocol",
    "ssl_ca_location": "ca_file",
    "ssl_truststore_location": "ca_file",  # the Java client's, for a PEM truststore
    "ssl_cafile": "ca_file",
    "ssl_certificate_location": "cert_file",
    "ssl_keystore_location": "cert_file",  # the Java client's, for a PEM keystore (certificate and key)
    "ssl_certfile": "cert_file",
    "ssl_key_location": "key_file",
    "ssl_keyfile": "key_file",
    "ssl_key_password": "key_password",
    "ssl_endpoint_identification_algorithm": "hostname_check",
    "sasl_mechanism": "sasl_mechanism",
    "sasl_mechanisms": "sasl_mechanism",
    "sasl_username": "sasl_username",
    "sasl_plain_username": "sasl_username",
    "sasl_password": "sasl_password",
    "sasl_plain_password": "sasl_password",
}
# ssl.endpoint.identification.algorithm: "https" checks the broker's name, "" or "none" does not.
HOSTNAME_CHECK_OFF = frozenset({"", "none"})
HOSTNAME_CHECK_ON = frozenset({"https"})
FLAG_OF = {"security_protocol": "--security-protocol", "ca_file": "--ca-file", "cert_file": "--cert-file",
           "key_file": "--key-file", "key_password": "--key-password", "sasl_mechanism": "--sasl-mechanism",
           "sasl_username": "--sasl-username", "sasl_password": "--sasl-password",
           "hostname_check": "--no-hostname-check"}
TLS_FILES = ("ca_file", "cert_file", "key_file")
TLS_FIELDS = (*TLS_FILES, "key_password")
SASL_CREDENTIALS = ("sasl_username", "sasl_password")
SASL_FIELDS = (*SASL_CREDENTIALS, "sasl_mechanism")


def normalise(name: str) -> str:
    return name.strip().lower().replace(".", "_").replace("-", "_")


def add_security(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "security", "TLS and SASL (also as -X with kcat's or the Java client's names: security.protocol, "
                    "ssl.ca.location, ssl.certificate.location, ssl.key.location, ssl.key.password, "
                    "sasl.mechanism(s), sasl.username, sasl.password)")
    group.add_argument("--security-protocol", type=str.upper, choices=PROTOCOLS, default=None,
                       help="default: SASL_SSL with TLS and SASL flags, SSL with TLS flags only, SASL_PLAINTEXT "
                            "with SASL flags only, else PLAINTEXT")
    group.add_argument("--ca-file", metavar="PEM", help="CA certificates that signed the brokers' (default: "
                                                        "the system's)")
    group.add_argument("--cert-file", metavar="PEM", help="client certificate, for mutual TLS")
    group.add_argument("--key-file", metavar="PEM", help="the client certificate's key (default: in --cert-file)")
    group.add_argument("--key-password", metavar="TEXT", help="password of an encrypted --key-file")
    group.add_argument("--no-hostname-check", dest="hostname_check", action="store_false", default=None,
                       help="accept a broker certificate that does not name the host connected to")
    group.add_argument("--sasl-mechanism", type=str.upper, choices=SASL_MECHANISMS, default=None,
                       help=f"default {DEFAULT_MECHANISM}")
    group.add_argument("--sasl-username", metavar="NAME")
    group.add_argument("--sasl-password", metavar="TEXT")


@dataclass(slots=True)
class SecuritySettings:
    """What the flags and the -X properties asked for, before they become Client options."""

    security_protocol: str | None = None
    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password: str | None = None
    hostname_check: bool | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> SecuritySettings:
        return cls(**{name: getattr(args, name, None) for name in FLAG_OF})

    def take_property(self, key: str, text: str) -> bool:
        """Apply ``-X key=text`` when ``key`` is a security property (it overrides the flag, as
        every -X does); False when it is not one."""
        name = SECURITY_PROPERTIES.get(normalise(key))
        if name is None:
            return False
        value: Any = text
        if name == "security_protocol":
            value = text.strip().upper()
            if value not in PROTOCOLS:
                raise UsageError(f"-X {key}: expected one of {', '.join(PROTOCOLS)}, got {text!r}")
        elif name == "sasl_mechanism":
            value = text.strip().upper()
            if value not in SASL_MECHANISMS:
                raise UsageError(f"-X {key}: expected one of {', '.join(SASL_MECHANISMS)}, got {text!r}")
        elif name == "hostname_check":
            word = text.strip().lower()
            if word not in HOSTNAME_CHECK_OFF | HOSTNAME_CHECK_ON:
                raise UsageError(f"-X {key}: expected https or none (or empty), got {text!r}")
            value = word in HOSTNAME_CHECK_ON
        setattr(self, name, value)
        return True

    def _given(self, names: tuple[str, ...]) -> list[str]:
        return [FLAG_OF[n] for n in names if getattr(self, n) is not None]

    def protocol(self) -> str:
        if self.security_protocol is not None:
            return self.security_protocol
        tls = self._given(TLS_FIELDS) or self.hostname_check is not None
        sasl = self._given(SASL_FIELDS)
        if tls and sasl:
            return SASL_SSL
        return SSL if tls else SASL_PLAINTEXT if sasl else PLAINTEXT

    def client_options(self) -> dict[str, Any]:
        """``tls`` and ``sasl`` for kafkaev.Client (empty for PLAINTEXT)."""
        protocol = self.protocol()
        uses_tls = protocol in (SSL, SASL_SSL)
        uses_sasl = protocol in (SASL_PLAINTEXT, SASL_SSL)
        if not uses_tls and (self._given(TLS_FIELDS) or self.hostname_check is not None):
            flags = self._given(TLS_FIELDS) or [FLAG_OF["hostname_check"]]
            raise UsageError(f"{flags[0]} needs TLS: --security-protocol SSL or SASL_SSL, not {protocol}")
        if not uses_sasl and self._given(SASL_FIELDS):
            flag = self._given(SASL_FIELDS)[0]
            raise UsageError(f"{flag} needs SASL: --security-protocol SASL_PLAINTEXT or SASL_SSL, not {protocol}")
        options: dict[str, Any] = {}
        if uses_tls:
            options["tls"] = self._ssl_context()
        if uses_sasl:
            options["sasl"] = self._sasl()
        return options

    def _ssl_context(self) -> ssl.SSLContext:
        if self.key_file is not None and self.cert_file is None:
            raise UsageError("--key-file needs --cert-file")
        for name in TLS_FILES:
            path = getattr(self, name)
            if path is not None and not os.path.isfile(path):
                raise CliError(f"{FLAG_OF[name]}: no such file: {path}")
        tls = TLSConfig(cafile=self.ca_file, certfile=self.cert_file, keyfile=self.key_file,
                        password=self.key_password, check_hostname=self.hostname_check is not False)
        try:
            return tls.context()
        except (OSError, ssl.SSLError) as exc:  # not PEM, a key that does not match, a wrong password
            raise CliError(f"the TLS files cannot be used: {exc}") from None

    def _sasl(self) -> SASLConfig:
        missing = [FLAG_OF[n] for n in SASL_CREDENTIALS if getattr(self, n) is None]
        if missing:
            raise UsageError(f"SASL needs {' and '.join(missing)}")
        assert self.sasl_username is not None and self.sasl_password is not None
        try:
            return SASLConfig(self.sasl_mechanism or DEFAULT_MECHANISM, self.sasl_username, self.sasl_password)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


def quiet_plaintext_credentials() -> None:
    """SASL without TLS is what the command line was asked for (by the protocol's name, or by SASL
    flags alone): no warning line per connection."""
    warnings.simplefilter("ignore", InsecureCredentialsWarning)
