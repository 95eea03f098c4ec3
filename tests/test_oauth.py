"""OAUTHBEARER without a broker: the client's first message (RFC 7628, KIP-342 extensions), the
shared token cache (refresh at 80% of the lifetime, one fetch for many waiters, sync and async
providers, failures), the OIDC client-credentials provider against the local issuer, and that no
secret shows in a repr or an error."""

from __future__ import annotations

import asyncio
import ssl
import time

import pytest
from secret_guard import leaks, no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev import errors
from kafkaev.errors import KafkaError
from kafkaev.oauth import REFRESH_WINDOW_FACTOR, REFRESH_WINDOW_JITTER, TokenCache
from kafkaev.oidc import OIDCClientCredentials, TokenEndpointError
from kafkaev.protocol.sasl import OAuthBearerAuthenticator, SASLFailure, authenticator_for
from kafkaev.security import OAuthBearerToken, SASLConfig, TLSConfig
from kafkaev.testing.certs import make_tls_files
from kafkaev.testing.oidc import LocalIssuer

CLIENT_ID = "app"
SECRET = "app-secret-do-not-print"
SECRETS = (SECRET, SECRET + "-wrong")  # searched for by secret_guard


def test_first_message_carries_token_and_sorted_extensions():
    token = OAuthBearerToken.from_lifetime("eyJ.abc.def", 60, "app", {"traceId": "42", "logicalCluster": "lkc-1"})
    auth = authenticator_for(SASLConfig.oauthbearer(lambda: token), token)
    assert isinstance(auth, OAuthBearerAuthenticator)
    assert auth.first() == b"n,,\x01auth=Bearer eyJ.abc.def\x01logicalCluster=lkc-1\x01traceId=42\x01\x01"
    assert auth.step(b"") is None and auth.done


def test_a_refused_token_gets_the_separator_then_a_failure_naming_the_status():
    auth = OAuthBearerAuthenticator(OAuthBearerToken.from_lifetime("t", 60))
    auth.first()
    assert auth.step(b'{"status":"invalid_token"}') == b"\x01"
    assert not auth.done and auth.refusal == '{"status":"invalid_token"}'
    with pytest.raises(SASLFailure, match="invalid_token"):
        auth.step(b"")


@pytest.mark.parametrize(("extensions", "match"), [
    ({"auth": "x"}, "not 'auth'"), ({"a1": "x"}, "ASCII letters"), ({"ok": ""}, "non-empty"), ({"ok": "é"}, "printable"),
])
def test_bad_extensions_are_refused(extensions, match):
    with pytest.raises(ValueError, match=match):
        OAuthBearerToken.from_lifetime("t", 60, None, extensions)


def test_sasl_config_oauthbearer_validation():
    with pytest.raises(TypeError, match="token_provider"):
        SASLConfig("OAUTHBEARER")
    with pytest.raises(ValueError, match="not a username or password"):
        SASLConfig("oauthbearer", "user", token_provider=lambda: None)
    with pytest.raises(ValueError, match="token_provider is for OAUTHBEARER"):
        SASLConfig("PLAIN", "u", "p", token_provider=lambda: None)
    with pytest.raises(TypeError, match="reauthenticate"):
        SASLConfig("PLAIN", "u", "p", reauthenticate="no")  # type: ignore[arg-type]
    config = SASLConfig.oauthbearer(lambda: None)
    assert config.mechanism == "OAUTHBEARER" and isinstance(config.tokens, TokenCache)
    assert SASLConfig("PLAIN", "u", "p").tokens is None


def _get(loop, cache: TokenCache) -> tuple[OAuthBearerToken | None, KafkaError | None]:
    future = loop.create_future()
    cache.get(loop, lambda token, err: future.set_result((token, err)))
    return loop.run_until_complete(future)


def test_token_cache_refreshes_at_80_percent_of_the_lifetime(loop):
    lifetime = 1.0
    made: list[OAuthBearerToken] = []

    def provider() -> OAuthBearerToken:
        made.append(OAuthBearerToken.from_lifetime(f"token-{len(made)}", lifetime))
        return made[-1]

    cache = TokenCache(provider)
    first, err = _get(loop, cache)
    assert err is None and first is made[0]
    time.sleep(lifetime * REFRESH_WINDOW_FACTOR * 0.8)
    assert _get(loop, cache)[0] is first and len(made) == 1  # not due yet
    time.sleep(lifetime * (REFRESH_WINDOW_FACTOR + REFRESH_WINDOW_JITTER) - lifetime * REFRESH_WINDOW_FACTOR * 0.8
               + 0.02)
    second, err = _get(loop, cache)
    assert err is None and second is made[1] and second is not first  # due: fetched again, before expiry
    assert first.lifetime_left_s > 0
    assert cache.fetches == 2


def test_token_cache_asks_an_async_provider_once_for_many_waiters(loop):
    calls = 0

    async def provider() -> OAuthBearerToken:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)
        return OAuthBearerToken.from_lifetime("shared", 60)

    cache = TokenCache(provider)
    results: list[tuple[object, object]] = []
    for _ in range(5):
        cache.get(loop, lambda token, err: results.append((token, err)))
    loop.run_until_complete(asyncio.sleep(0.2))
    assert calls == 1 and len(results) == 5
    assert all(err is None and token.value == "shared" for token, err in results)


@pytest.mark.parametrize(("provider", "match"), [
    (lambda: OAuthBearerToken("old", time.time() - 5), "expired 5s ago"),
    (lambda: "a bare string", "returned str, not a kafkaev.OAuthBearerToken"),
    (lambda: 1 / 0, "ZeroDivisionError"),
])
def test_token_cache_reports_a_bad_provider_as_an_authentication_failure(loop, provider, match):
    token, err = _get(loop, TokenCache(provider))
    assert token is None and err is not None and err.code == errors.AUTHENTICATION
    assert match in str(err)


@pytest.fixture(scope="module")
def issuer(tmp_path_factory):
    with LocalIssuer(tmp_path_factory.mktemp("issuer")) as running:
        running.add_client(CLIENT_ID, SECRET, lifetime_s=120)
        yield running


def test_oidc_provider_gets_a_token_over_https(issuer, loop):
    provider = OIDCClientCredentials(issuer.token_url, CLIENT_ID, SECRET, scope="kafka", cafile=str(issuer.ca_cert),
                                     extensions={"traceId": "1"})
    before = issuer.token_requests
    token = loop.run_until_complete(provider())
    assert issuer.token_requests == before + 1
    assert token.principal == CLIENT_ID and token.extensions == {"traceId": "1"}
    assert 110 < token.lifetime_left_s <= 120
    assert token.value.count(".") == 2  # a JWT


def test_oidc_provider_wrong_secret_fails_without_echoing_it(issuer, loop):
    wrong = SECRET + "-wrong"
    provider = OIDCClientCredentials(issuer.token_url, CLIENT_ID, wrong, cafile=str(issuer.ca_cert))
    with pytest.raises(TokenEndpointError, match="HTTP 401") as caught:
        loop.run_until_complete(provider())
    assert wrong not in str(caught.value) and SECRET not in str(caught.value)


def test_oidc_provider_refuses_an_endpoint_signed_by_another_ca(issuer, loop, tmp_path):
    stranger = make_tls_files(tmp_path / "stranger")
    provider = OIDCClientCredentials(issuer.token_url, CLIENT_ID, SECRET, cafile=str(stranger.ca_cert))
    with pytest.raises(TokenEndpointError, match="TLS failed.*CERTIFICATE_VERIFY_FAILED"):
        loop.run_until_complete(provider())


def test_oidc_provider_argument_checks():
    with pytest.raises(ValueError, match="https://"):
        OIDCClientCredentials("ftp://x/token", "id", "secret")
    with pytest.raises(TypeError, match="client_secret"):
        OIDCClientCredentials("https://x/token", "id", "")
    with pytest.raises(ValueError, match="timeout_s"):
        OIDCClientCredentials("https://x/token", "id", "s", timeout_s=0)


def test_no_secret_in_any_repr(tmp_path):
    files = make_tls_files(tmp_path / "tls")
    key_pem = files.client_key.read_text()
    objects = [
        SASLConfig("SCRAM-SHA-512", "user", "scram-password-do-not-print"),
        SASLConfig.oauthbearer(OIDCClientCredentials("https://idp/token", "id", SECRET)),
        OAuthBearerToken.from_lifetime("token-value-do-not-print", 60, "app"),
        TLSConfig(certfile=str(files.client_cert), keyfile=str(files.client_key), password="key-password-do-not-print"),
        TLSConfig(cert_pem=files.client_cert.read_text(), key_pem=key_pem),
    ]
    text = " ".join(repr(o) for o in objects)
    for secret in ("scram-password-do-not-print", SECRET, "token-value-do-not-print", "key-password-do-not-print",
                   "PRIVATE KEY"):
        assert secret not in text
    assert "OIDCClientCredentials(token_endpoint='https://idp/token', client_id='id'" in text


def test_tls_from_pem_text_in_memory(tmp_path):
    files = make_tls_files(tmp_path / "tls")
    config = TLSConfig(cadata=files.ca_cert.read_text(), cert_pem=files.client_cert.read_text(),
                       key_pem=files.client_key.read_text())
    context = config.context()
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert len(context.get_ca_certs()) == 1
    assert not list(tmp_path.glob("kafkaev-tls-*"))  # the temporary file is gone
    with pytest.raises(ValueError, match="key_pem must be PEM text") as caught:
        TLSConfig(cert_pem=files.client_cert.read_text(), key_pem="not-a-key-secret")
    assert "not-a-key-secret" not in str(caught.value)
    with pytest.raises(ValueError, match="key_pem given without cert_pem"):
        TLSConfig(key_pem=files.client_key.read_text())


def test_the_secret_guard_finds_each_kind_of_leak(issuer):
    jwt = issuer.token_for("someone", 60)
    header, claims, _signature = jwt.split(".")
    assert leaks([f"refused {jwt}"], []) and leaks([f"x {header}.{claims[:20]}"], [])  # any JWT, even cut short
    assert leaks(["password scram512-secret-1 rejected"], ["scram512-secret-1"])
    assert leaks(["-----BEGIN PRIVATE KEY-----"], [])
    assert not leaks(["SASL SCRAM-SHA-512 authentication of 'kafkaev-scram512' failed"], ["scram512-secret-1"])
