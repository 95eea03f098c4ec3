"""A local OpenID Connect issuer for OAUTHBEARER test clusters: an RSA signing key, a JWKS endpoint
(plain HTTP, for the brokers' ``OAuthBearerValidatorCallbackHandler``) and a client-credentials
token endpoint (HTTPS with its own CA, for clients), each a small HTTP server on a loopback port in
a daemon thread of the test process. Tokens are RS256 JWTs signed with ``cryptography``.

    with LocalIssuer(directory) as issuer:
        issuer.add_client("app", "app-secret", lifetime_s=30)
        cluster = LocalCluster(oauth=issuer.validation, ...)
"""

from __future__ import annotations

import base64
import json
import secrets
import ssl
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import parse_qs, unquote

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from .certs import RSA_KEY_BITS, RSA_PUBLIC_EXPONENT, TlsFiles, make_tls_files

AUDIENCE = "kafkaev-test-cluster"
JWKS_PATH = "/jwks"
TOKEN_PATH = "/token"
DEFAULT_LIFETIME_S = 3600.0
LOOPBACK = "127.0.0.1"
MAX_FORM_BYTES = 64 * 1024


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _int_bytes(value: int) -> bytes:
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


@dataclass(frozen=True, slots=True)
class OAuthValidation:
    """What a broker needs to validate the issuer's tokens."""

    jwks_url: str
    issuer: str
    audience: str


@dataclass(slots=True)
class OAuthClient:
    client_id: str
    secret: str
    lifetime_s: float


class SigningKey:
    """An RSA key with a key id: signs JWTs and publishes itself as a JWK."""

    __slots__ = ("kid", "_key")

    def __init__(self) -> None:
        self.kid = uuid.uuid4().hex
        self._key = rsa.generate_private_key(public_exponent=RSA_PUBLIC_EXPONENT, key_size=RSA_KEY_BITS)

    def jwk(self) -> dict[str, str]:
        numbers = self._key.public_key().public_numbers()
        return {"kty": "RSA", "kid": self.kid, "use": "sig", "alg": "RS256",
                "n": b64url(_int_bytes(numbers.n)), "e": b64url(_int_bytes(numbers.e))}

    def sign(self, claims: dict[str, object]) -> str:
        header = {"alg": "RS256", "typ": "JWT", "kid": self.kid}
        signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
        signature = self._key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{b64url(signature)}"


class LocalIssuer:
    """JWKS and token endpoints on loopback; ``token_requests`` counts the tokens issued."""

    def __init__(self, directory: Path) -> None:
        self.key = SigningKey()
        self.clients: dict[str, OAuthClient] = {}
        self.tls: TlsFiles = make_tls_files(directory / "issuer-tls")
        self.token_requests = 0
        self.refused_requests = 0
        self.issued: list[str] = []  # every token made: tests check that none is ever printed
        self._lock = threading.Lock()
        self._jwks_server = ThreadingHTTPServer((LOOPBACK, 0), self._handler())
        self._token_server = ThreadingHTTPServer((LOOPBACK, 0), self._handler())
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tls.broker_cert, self.tls.broker_key)
        self._token_server.socket = context.wrap_socket(self._token_server.socket, server_side=True)
        self._threads: list[threading.Thread] = []

    @property
    def jwks_url(self) -> str:
        return f"http://{LOOPBACK}:{self._jwks_server.server_address[1]}{JWKS_PATH}"

    @property
    def token_url(self) -> str:
        return f"https://{LOOPBACK}:{self._token_server.server_address[1]}{TOKEN_PATH}"

    @property
    def issuer(self) -> str:
        return f"https://{LOOPBACK}:{self._token_server.server_address[1]}"

    @property
    def ca_cert(self) -> Path:
        """The CA that signed the token endpoint's certificate."""
        return self.tls.ca_cert

    @property
    def validation(self) -> OAuthValidation:
        return OAuthValidation(self.jwks_url, self.issuer, AUDIENCE)

    def add_client(self, client_id: str, secret: str, lifetime_s: float = DEFAULT_LIFETIME_S) -> OAuthClient:
        client = OAuthClient(client_id, secret, lifetime_s)
        with self._lock:
            self.clients[client_id] = client
        return client

    def token_for(self, subject: str, lifetime_s: float, *, key: SigningKey | None = None,
                  issued_at: float | None = None) -> str:
        """A JWT for ``subject`` expiring ``lifetime_s`` after ``issued_at`` (default now); ``key``
        signs it instead of the published key (a token the brokers must refuse)."""
        now = time.time() if issued_at is None else issued_at
        claims = {"iss": self.issuer, "aud": AUDIENCE, "sub": subject, "iat": int(now), "nbf": int(now),
                  "exp": int(now + lifetime_s), "jti": secrets.token_hex(8), "scope": "kafka"}
        token = (key or self.key).sign(claims)
        with self._lock:
            self.issued.append(token)
        return token

    # -- HTTP ---------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
                pass  # quiet: the requests are counted instead

            def _reply(self, status: int, document: dict[str, object]) -> None:
                body = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if self.path != JWKS_PATH:
                    self._reply(404, {"error": "not_found"})
                    return
                self._reply(200, {"keys": [issuer.key.jwk()]})

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = min(int(self.headers.get("Content-Length") or 0), MAX_FORM_BYTES)
                form = parse_qs(self.rfile.read(length).decode())
                status, document = issuer._grant(self.path, self.headers.get("Authorization", ""), form)
                self._reply(status, document)

        return Handler

    def _grant(self, path: str, authorization: str, form: dict[str, list[str]]) -> tuple[int, dict[str, object]]:
        if path != TOKEN_PATH:
            return 404, {"error": "not_found"}
        if form.get("grant_type") != ["client_credentials"]:
            return 400, {"error": "unsupported_grant_type"}
        client_id, secret = _basic_credentials(authorization)
        with self._lock:
            client = self.clients.get(client_id)
            if client is None or not secrets.compare_digest(client.secret, secret):
                self.refused_requests += 1
                return 401, {"error": "invalid_client"}
            self.token_requests += 1
        token = self.token_for(client.client_id, client.lifetime_s)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": int(client.lifetime_s)}

    def start(self) -> LocalIssuer:
        for server in (self._jwks_server, self._token_server):
            thread = threading.Thread(target=server.serve_forever, name="kafkaev-oidc", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        for server in (self._jwks_server, self._token_server):
            server.shutdown()
            server.server_close()

    def __enter__(self) -> LocalIssuer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _basic_credentials(header: str) -> tuple[str, str]:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return "", ""
    try:
        decoded = base64.b64decode(encoded, validate=True).decode()
    except ValueError:
        return "", ""
    client_id, _, secret = decoded.partition(":")
    return unquote(client_id), unquote(secret)
