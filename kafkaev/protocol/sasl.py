"""Client side of the SASL mechanisms a Connection speaks: PLAIN (RFC 4616), SCRAM-SHA-256/512
(RFC 5802, RFC 7677) and OAUTHBEARER (RFC 7628, with Kafka's extensions of KIP-342).

Each authenticator is a small state machine driven by the connection's SaslAuthenticate
exchange: ``first()`` gives the first client message, ``step(server_bytes)`` the next one or None
when the exchange is complete. Any failure raises ``SASLFailure`` with a message for the user.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from kafkaev.security import OAUTHBEARER, OAuthBearerToken, SASLConfig

# RFC 7677 recommends at least 4096 iterations; Kafka refuses fewer too. A server asking for
# less is either broken or trying to make the password cheap to brute-force.
SCRAM_MIN_ITERATIONS = 4096
SCRAM_NONCE_BYTES = 24
# GS2 header: no channel binding, no authorization identity.
GS2_HEADER = b"n,,"
# RFC 7628: key=value pairs are separated by ^A; the message ends with two.
OAUTH_SEPARATOR = b"\x01"


class SASLFailure(Exception):
    """The SASL exchange cannot continue; the message says why."""


class PlainAuthenticator:
    """PLAIN: one message, authzid empty, then the broker's verdict (an empty reply)."""

    __slots__ = ("_username", "_password", "done")

    def __init__(self, username: str, password: str) -> None:
        self._username = username
        self._password = password
        self.done = False

    def first(self) -> bytes:
        return b"\0" + self._username.encode() + b"\0" + self._password.encode()

    def step(self, server_bytes: bytes) -> bytes | None:
        self.done = True
        return None


def escape_saslname(name: str) -> str:
    """RFC 5802 saslname: ',' and '=' are escaped as '=2C' and '=3D' ('=' first)."""
    return name.replace("=", "=3D").replace(",", "=2C")


def _parse_attributes(message: bytes) -> dict[str, str]:
    try:
        text = message.decode()
    except UnicodeDecodeError as exc:
        raise SASLFailure(f"SCRAM: server message is not UTF-8: {message[:64]!r}") from exc
    attributes: dict[str, str] = {}
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise SASLFailure(f"SCRAM: malformed server message {text[:128]!r}")
        attributes[part[0]] = part[2:]
    return attributes


class ScramAuthenticator:
    """SCRAM-SHA-256 / SCRAM-SHA-512 client: client-first, client-final, then verify the server
    signature (a server that cannot prove it knows the password is refused)."""

    __slots__ = ("_hash", "_username", "_password", "_nonce", "_first_bare", "_server_signature", "done")

    def __init__(self, hash_name: str, username: str, password: str, nonce: str | None = None) -> None:
        self._hash = hash_name
        self._username = username
        self._password = password
        self._nonce = nonce if nonce is not None else secrets.token_urlsafe(SCRAM_NONCE_BYTES)
        self._first_bare = f"n={escape_saslname(username)},r={self._nonce}".encode()
        self._server_signature: bytes | None = None
        self.done = False

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.digest(key, msg, self._hash)

    def first(self) -> bytes:
        return GS2_HEADER + self._first_bare

    def step(self, server_bytes: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._client_final(server_bytes)
        self._verify_server_final(server_bytes)
        self.done = True
        return None

    def _client_final(self, server_first: bytes) -> bytes:
        attrs = _parse_attributes(server_first)
        if "e" in attrs:
            raise SASLFailure(f"SCRAM: server refused: {attrs['e']}")
        try:
            nonce, salt_b64, iterations_text = attrs["r"], attrs["s"], attrs["i"]
        except KeyError as exc:
            raise SASLFailure(f"SCRAM: server-first message lacks attribute {exc.args[0]!r}") from exc
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SASLFailure("SCRAM: server nonce does not extend the client nonce")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            iterations = int(iterations_text)
        except ValueError as exc:
            raise SASLFailure(f"SCRAM: bad salt or iteration count in server-first message: {exc}") from exc
        if iterations < SCRAM_MIN_ITERATIONS:
            raise SASLFailure(f"SCRAM: server asks for {iterations} iterations, fewer than {SCRAM_MIN_ITERATIONS}")

        salted = hashlib.pbkdf2_hmac(self._hash, self._password.encode(), salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = b"c=" + base64.b64encode(GS2_HEADER) + b",r=" + nonce.encode()
        auth_message = self._first_bare + b"," + server_first + b"," + without_proof
        client_signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return without_proof + b",p=" + base64.b64encode(proof)

    def _verify_server_final(self, server_final: bytes) -> None:
        attrs = _parse_attributes(server_final)
        if "e" in attrs:
            raise SASLFailure(f"SCRAM: server refused: {attrs['e']}")
        if "v" not in attrs:
            raise SASLFailure("SCRAM: server-final message lacks the server signature")
        try:
            signature = base64.b64decode(attrs["v"], validate=True)
        except ValueError as exc:
            raise SASLFailure("SCRAM: server signature is not base64") from exc
        assert self._server_signature is not None
        if not hmac.compare_digest(signature, self._server_signature):
            raise SASLFailure("SCRAM: server signature does not verify (the server does not know the password)")


class OAuthBearerAuthenticator:
    """OAUTHBEARER: the token (and its extensions) in one message. A broker that refuses the token
    answers with an error document instead of an empty reply; RFC 7628 has the client answer that
    with a lone separator, after which the broker reports the failure with its message."""

    __slots__ = ("_token", "refusal", "done")

    def __init__(self, token: OAuthBearerToken) -> None:
        self._token = token
        self.refusal: str | None = None  # the broker's error document, when it refused the token
        self.done = False

    def first(self) -> bytes:
        pairs = [b"auth=Bearer " + self._token.value.encode()]
        pairs += [f"{key}={value}".encode() for key, value in sorted(self._token.extensions.items())]
        return GS2_HEADER + OAUTH_SEPARATOR + OAUTH_SEPARATOR.join(pairs) + OAUTH_SEPARATOR + OAUTH_SEPARATOR

    def step(self, server_bytes: bytes) -> bytes | None:
        if server_bytes and self.refusal is None:
            self.refusal = server_bytes[:256].decode(errors="replace")
            return OAUTH_SEPARATOR
        if self.refusal is not None:
            raise SASLFailure(f"OAUTHBEARER: the broker refused the token: {self.refusal}")
        self.done = True
        return None


Authenticator = PlainAuthenticator | ScramAuthenticator | OAuthBearerAuthenticator


def authenticator_for(config: SASLConfig, token: OAuthBearerToken | None = None) -> Authenticator:
    """A fresh authenticator for one SASL exchange (OAUTHBEARER: with the token to present)."""
    if config.mechanism == OAUTHBEARER:
        if token is None:
            raise ValueError("OAUTHBEARER needs the token to present")
        return OAuthBearerAuthenticator(token)
    if config.mechanism == "PLAIN":
        return PlainAuthenticator(config.username, config.password)
    if config.mechanism == "SCRAM-SHA-256":
        return ScramAuthenticator("sha256", config.username, config.password)
    if config.mechanism == "SCRAM-SHA-512":
        return ScramAuthenticator("sha512", config.username, config.password)
    raise ValueError(f"unsupported SASL mechanism {config.mechanism!r}")
