"""A standalone SASL login over a plain socket: does one broker accept one user's credentials now?

The harness proves each SASL user it hands to the tests can log in before a cluster (or a restarted
node) counts as ready: a credential the broker has not loaded yet, or lost, then fails the start with
a clear message instead of failing whichever test logs in first. Like ``probe.py`` it leans on none of
kafkaev's own codecs or SASL code (they are what the tests check): SaslHandshake v1 and
SaslAuthenticate v1 are encoded here, and the SCRAM client (RFC 5802) is written out with hashlib.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
import struct

from .config import SaslCredentials
from .probe import PROBE_CLIENT_ID, PROBE_CORRELATION_ID, ProbeError, _read_exact

SASL_HANDSHAKE_KEY = 17
SASL_HANDSHAKE_VERSION = 1
SASL_AUTHENTICATE_KEY = 36
SASL_AUTHENTICATE_VERSION = 1
NO_ERROR = 0
MAX_RESPONSE_BYTES = 1 << 16
SCRAM_NONCE_BYTES = 18
SCRAM_DIGESTS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class LoginRefused(ProbeError):
    """The broker answered the login with an error (a credential it does not know, a wrong password)."""


def _frame(api_key: int, api_version: int, body: bytes) -> bytes:
    # RequestHeader v1 (both APIs are non-flexible at these versions): ApiKey int16, ApiVersion int16,
    # CorrelationId int32, ClientId nullable string (int16 length).
    payload = struct.pack(">hhih", api_key, api_version, PROBE_CORRELATION_ID, len(PROBE_CLIENT_ID))
    payload += PROBE_CLIENT_ID + body
    return struct.pack(">i", len(payload)) + payload


def _exchange(sock: socket.socket, request: bytes) -> memoryview:
    """Send one request, return its response body (past ResponseHeader v0: CorrelationId int32)."""
    sock.sendall(request)
    size = struct.unpack(">i", _read_exact(sock, 4))[0]
    if not 4 <= size <= MAX_RESPONSE_BYTES:
        raise ProbeError(f"SASL response size {size} out of range")
    frame = memoryview(_read_exact(sock, size))
    if struct.unpack_from(">i", frame)[0] != PROBE_CORRELATION_ID:
        raise ProbeError("SASL response carries a correlation id the probe never sent")
    return frame[4:]


def _handshake(sock: socket.socket, mechanism: str) -> None:
    # SaslHandshakeRequest v1: Mechanism string.  Response: ErrorCode int16, Mechanisms [string].
    name = mechanism.encode()
    body = _exchange(sock, _frame(SASL_HANDSHAKE_KEY, SASL_HANDSHAKE_VERSION, struct.pack(">h", len(name)) + name))
    (code,) = struct.unpack_from(">h", body)
    if code != NO_ERROR:
        raise LoginRefused(f"SaslHandshake for {mechanism} failed with error code {code}")


def _authenticate(sock: socket.socket, auth_bytes: bytes) -> bytes:
    # SaslAuthenticateRequest v1: AuthBytes bytes.  Response: ErrorCode int16, ErrorMessage nullable
    # string, AuthBytes bytes, SessionLifetimeMs int64.
    body = _exchange(sock, _frame(SASL_AUTHENTICATE_KEY, SASL_AUTHENTICATE_VERSION,
                                  struct.pack(">i", len(auth_bytes)) + auth_bytes))
    code, message_length = struct.unpack_from(">hh", body)
    at = 4 + max(message_length, 0)
    if code != NO_ERROR:
        message = bytes(body[4:at]).decode(errors="replace") if message_length > 0 else ""
        raise LoginRefused(f"SaslAuthenticate failed with error code {code}: {message}")
    (length,) = struct.unpack_from(">i", body, at)
    return bytes(body[at + 4 : at + 4 + length])


def _scram_login(sock: socket.socket, user: SaslCredentials) -> None:
    digest = SCRAM_DIGESTS[user.mechanism]
    name = user.username.replace("=", "=3D").replace(",", "=2C")
    nonce = secrets.token_urlsafe(SCRAM_NONCE_BYTES)
    first_bare = f"n={name},r={nonce}"
    server_first = _authenticate(sock, f"n,,{first_bare}".encode()).decode()
    fields = dict(part.split("=", 1) for part in server_first.split(","))
    if not fields.get("r", "").startswith(nonce):
        raise ProbeError("SCRAM: the server nonce does not extend the probe's")
    salted = hashlib.pbkdf2_hmac(digest, user.password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.digest(salted, b"Client Key", digest)
    final_bare = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{final_bare}".encode()
    signature = hmac.digest(hashlib.new(digest, client_key).digest(), auth_message, digest)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
    server_final = _authenticate(sock, f"{final_bare},p={proof}".encode()).decode()
    expected = hmac.digest(hmac.digest(salted, b"Server Key", digest), auth_message, digest)
    if server_final != "v=" + base64.b64encode(expected).decode():
        raise ProbeError("SCRAM: the server's signature does not verify")


def sasl_login(host: str, port: int, user: SaslCredentials, timeout: float = 5.0) -> None:
    """Log ``user`` (PLAIN or SCRAM) in on the SASL_PLAINTEXT listener at ``host:port``; LoginRefused
    when the broker refuses the credential, ProbeError or OSError when it cannot be asked."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        _handshake(sock, user.mechanism)
        if user.mechanism == "PLAIN":
            _authenticate(sock, b"\0" + user.username.encode() + b"\0" + user.password.encode())
        else:
            _scram_login(sock, user)
