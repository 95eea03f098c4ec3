"""``OIDCClientCredentials``: an OAUTHBEARER token provider that asks an OpenID Connect / OAuth 2
token endpoint for a token with the client-credentials grant (RFC 6749 section 4.4).

The POST is made over asyncio streams on the caller's loop (TLS through an ``ssl.SSLContext``), so
fetching a token never blocks the loop that also carries the Kafka connections. The client secret
and the token never appear in a ``repr`` or an error message.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import ssl
import time
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode, urlsplit

from kafkaev.security import MINIMUM_TLS_VERSION, OAuthBearerToken, _check_extensions

DEFAULT_TIMEOUT_S = 10.0
# A token response is a small JSON document; anything bigger is not one.
MAX_RESPONSE_BYTES = 1024 * 1024
MAX_HEADER_LINES = 100
HTTPS_PORT = 443
HTTP_PORT = 80
HTTP_OK = 200
# Echoed in errors: enough of a refusal to say why, not a whole page.
ERROR_BODY_EXCERPT = 300
# The claim that names the token's subject when the endpoint issues a JWT.
SUBJECT_CLAIM = "sub"


class TokenEndpointError(Exception):
    """The token endpoint could not be reached or did not issue a token."""


@dataclass(frozen=True, slots=True)
class _HttpResponse:
    status: int
    reason: str
    body: bytes


@dataclass(frozen=True, slots=True)
class OIDCClientCredentials:
    """A token provider for ``SASLConfig.oauthbearer``: POSTs the client-credentials grant to
    ``token_endpoint`` (an https URL; http only for a test endpoint) with HTTP Basic client
    authentication, and returns the ``access_token`` with its ``expires_in`` lifetime.

    scope: the OAuth scope to ask for (None = the endpoint's default).
    cafile / ssl_context: how the endpoint's certificate is verified (default: the system store).
    extensions: SASL extensions (KIP-342) sent with every token.
    """

    token_endpoint: str
    client_id: str
    client_secret: str = field(repr=False)
    scope: str | None = None
    cafile: str | None = None
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    extensions: dict[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        for name in ("token_endpoint", "client_id", "client_secret"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TypeError(f"OIDCClientCredentials: {name} must be a non-empty str")
        url = urlsplit(self.token_endpoint)
        if url.scheme not in ("https", "http") or not url.hostname:
            raise ValueError(f"OIDCClientCredentials: token_endpoint must be an https:// URL, not {self.token_endpoint!r}")
        if self.scope is not None and not isinstance(self.scope, str):
            raise TypeError("OIDCClientCredentials: scope must be a str or None")
        if self.cafile is not None and self.ssl_context is not None:
            raise ValueError("OIDCClientCredentials: give cafile or ssl_context, not both")
        if isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float)) or self.timeout_s <= 0:
            raise ValueError("OIDCClientCredentials: timeout_s must be a positive number of seconds")
        _check_extensions(self.extensions)
        if url.scheme == "https" and self.ssl_context is None:
            ctx = ssl.create_default_context(cafile=self.cafile)
            ctx.minimum_version = MINIMUM_TLS_VERSION
            object.__setattr__(self, "ssl_context", ctx)

    async def __call__(self) -> OAuthBearerToken:
        try:
            response = await asyncio.wait_for(self._post(), self.timeout_s)
        except asyncio.TimeoutError:
            raise TokenEndpointError(f"{self.token_endpoint}: no answer within {self.timeout_s:g}s") from None
        except ssl.SSLError as exc:
            raise TokenEndpointError(f"{self.token_endpoint}: TLS failed: {exc.reason or exc}") from None
        except OSError as exc:
            raise TokenEndpointError(f"{self.token_endpoint}: {exc.strerror or exc}") from None
        return self._token_from(response)

    def _request(self, host: str, path: str) -> bytes:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        body = urlencode(form).encode()
        # RFC 6749 2.3.1: id and secret are form-encoded before they are joined for Basic.
        basic = base64.b64encode(f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}".encode())
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Basic {basic.decode()}\r\n"
            "Content-Type: application/x-www-form-urlencoded\r\nAccept: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        return head.encode() + body

    async def _post(self) -> _HttpResponse:
        url = urlsplit(self.token_endpoint)
        secure = url.scheme == "https"
        host = url.hostname or ""
        port = url.port or (HTTPS_PORT if secure else HTTP_PORT)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        reader, writer = await asyncio.open_connection(
            host, port, ssl=self.ssl_context if secure else None, server_hostname=host if secure else None)
        try:
            writer.write(self._request(url.netloc, path))
            await writer.drain()
            return await _read_response(reader, self.token_endpoint)
        finally:
            writer.close()

    def _token_from(self, response: _HttpResponse) -> OAuthBearerToken:
        where = self.token_endpoint
        if response.status != HTTP_OK:
            excerpt = response.body[:ERROR_BODY_EXCERPT].decode(errors="replace")
            raise TokenEndpointError(f"{where}: HTTP {response.status} {response.reason}: {excerpt}")
        try:
            document = json.loads(response.body)
            token = document["access_token"]
        except (ValueError, KeyError, TypeError):
            raise TokenEndpointError(f"{where}: the answer is not a token response (no access_token)") from None
        if not isinstance(token, str) or not token:
            raise TokenEndpointError(f"{where}: access_token is not a string")
        claims = _jwt_claims(token)
        expires_in = document.get("expires_in")
        exp = claims.get("exp")
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            expires_at = time.time() + expires_in
        elif isinstance(exp, (int, float)) and not isinstance(exp, bool):
            expires_at = float(exp)
        else:
            raise TokenEndpointError(f"{where}: the token response says neither expires_in nor exp")
        subject = claims.get(SUBJECT_CLAIM)
        principal = subject if isinstance(subject, str) else self.client_id
        return OAuthBearerToken(token, expires_at, principal, dict(self.extensions))


async def _read_response(reader: asyncio.StreamReader, where: str) -> _HttpResponse:
    status_line = (await reader.readline()).decode("latin-1").rstrip("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise TokenEndpointError(f"{where}: not an HTTP answer: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADER_LINES):
        line = (await reader.readline()).decode("latin-1").rstrip("\r\n")
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    else:
        raise TokenEndpointError(f"{where}: more than {MAX_HEADER_LINES} header lines")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader, where)
    elif "content-length" in headers and headers["content-length"].isdigit():
        length = int(headers["content-length"])
        if length > MAX_RESPONSE_BYTES:
            raise TokenEndpointError(f"{where}: answer of {length} bytes is too large for a token")
        body = await reader.readexactly(length)
    else:
        body = await reader.read(MAX_RESPONSE_BYTES + 1)
        if len(body) > MAX_RESPONSE_BYTES:
            raise TokenEndpointError(f"{where}: answer is too large for a token")
    return _HttpResponse(int(parts[1]), parts[2] if len(parts) > 2 else "", body)


async def _read_chunked(reader: asyncio.StreamReader, where: str) -> bytes:
    body = bytearray()
    while True:
        size_line = (await reader.readline()).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise TokenEndpointError(f"{where}: bad chunk size {size_line[:20]!r}") from None
        if size == 0:
            return bytes(body)
        if len(body) + size > MAX_RESPONSE_BYTES:
            raise TokenEndpointError(f"{where}: answer is too large for a token")
        body += await reader.readexactly(size)
        await reader.readexactly(2)  # the CRLF after each chunk


def _jwt_claims(token: str) -> dict[str, object]:
    """The claims of a JWT, unverified (the broker verifies); {} for a token that is not one."""
    pieces = token.split(".")
    if len(pieces) != 3:
        return {}
    payload = pieces[1] + "=" * (-len(pieces[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, binascii.Error):
        return {}
    return claims if isinstance(claims, dict) else {}

