"""No secret in any output: while a guarded test runs, every log line (any logger, DEBUG and up,
with its traceback), every KafkaError message made and every ClientConfig's repr are captured,
then searched for the test clusters' passwords and client secrets, the tokens the OIDC issuer
issued, any JWT, any private key, and the module's own ``SECRETS``. A security test module turns
it on by importing ``no_secret_in_output`` (an autouse fixture)."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from kafkaev.config import ClientConfig
from kafkaev.errors import KafkaError

JWT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}")
KEY_MARKER = "PRIVATE KEY"
# The shortest secret searched for: a shorter one would match innocent text.
MIN_SECRET_LENGTH = 6


class _Capture(logging.Handler):
    def __init__(self, texts: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.texts = texts
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))


def leaks(texts: Iterable[str], secrets: Iterable[str]) -> list[str]:
    """The captured texts that show a secret, a JWT or a private key (shortened)."""
    wanted = [s for s in set(secrets) if len(s) >= MIN_SECRET_LENGTH]
    found = []
    for text in texts:
        if KEY_MARKER in text or JWT.search(text) or any(secret in text for secret in wanted):
            found.append(text[:300])
    return found


def _key_lines(path: Path) -> list[str]:
    # A key's base64 body lines: any one of them in output is part of the key.
    return [line for line in path.read_text().splitlines() if line and not line.startswith("-----")][:3]


class _Secrets:
    """The secrets of the clusters a test uses: looked up before it runs (fixtures are gone by
    the time the guard checks), the issuer's tokens read after (it issues them during the test)."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.fixed: list[str] = list(getattr(request.module, "SECRETS", ()))
        self.issuers: list[object] = []
        clusters = []
        if "secure_kafka" in request.fixturenames:
            clusters.append(request.getfixturevalue("secure_kafka"))
        if "secured_kafka" in request.fixturenames:
            secured = request.getfixturevalue("secured_kafka")
            clusters.append(secured.local)
            self.issuers.append(secured.issuer)
            self.fixed += [client.secret for client in secured.issuer.clients.values()]
        for cluster in clusters:
            self.fixed += [cluster.sasl_plain.password, *(u.password for u in cluster.scram_users)]
            if cluster.tls is not None:
                self.fixed += _key_lines(cluster.tls.client_key) + _key_lines(cluster.tls.broker_key)

    def all(self) -> list[str]:
        return self.fixed + [token for issuer in self.issuers for token in issuer.issued]  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def no_secret_in_output(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    secrets = _Secrets(request)
    texts: list[str] = []
    handler = _Capture(texts)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    kafka_error_init = KafkaError.__init__
    config_post_init = ClientConfig.__post_init__

    def recording_error_init(self: KafkaError, code: int, message: str | None = None, **flags: bool | None) -> None:
        kafka_error_init(self, code, message, **flags)  # type: ignore[arg-type]  # fatal=, txn_requires_abort=...
        texts.append(f"{self.name}: {message}")

    def recording_post_init(self: ClientConfig) -> None:
        config_post_init(self)
        texts.append(repr(self))

    monkeypatch.setattr(KafkaError, "__init__", recording_error_init)
    monkeypatch.setattr(ClientConfig, "__post_init__", recording_post_init)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    found = leaks(texts, secrets.all())
    assert not found, f"a secret appeared in output: {found}"
