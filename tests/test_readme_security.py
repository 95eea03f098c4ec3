"""The README's "Connecting to a secured cluster" snippets, run as written against the secured
test cluster: only the example addresses, file names and credentials are replaced by the
cluster's (the replacements are listed here, and each must occur in the section)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)
from test_readme import README, ROOT, readme_snippets

from kafkaev.testing.secured import OAUTH_CLIENT_ID, OAUTH_CLIENT_SECRET

SECTION = "Connecting to a secured cluster"
SNIPPETS = readme_snippets(README.read_text(), (SECTION,))
RUN_TIMEOUT_S = 60.0
# The custom-provider example's "identity system": hands out a token the issuer made.
IDENTITY_MODULE = '''\
async def token():
    return {token!r}
'''


def _replacements(secured, workdir: Path) -> dict[str, str]:
    cluster = secured.local
    return {
        "kafka.example.com:9093": cluster.ssl_bootstrap,
        "kafka.example.com:9094": cluster.sasl_ssl_bootstrap,
        '"idp-ca.pem"': repr(str(secured.issuer.ca_cert)),
        '"ca.pem"': repr(str(cluster.ca_cert)),
        '"client.pem"': repr(str(cluster.client_cert)),
        '"client.key"': repr(str(cluster.client_key)),
        '"alice", "alice-secret"': f"{cluster.sasl_scram_sha_512.username!r}, {cluster.sasl_scram_sha_512.password!r}",
        "https://idp.example.com/oauth2/token": secured.issuer.token_url,
        '"kafka-app", "app-secret"': f"{OAUTH_CLIENT_ID!r}, {OAUTH_CLIENT_SECRET!r}",
    }


def test_the_section_has_an_example_per_mechanism():
    codes = [s.code for s in SNIPPETS]
    assert len(codes) == 4 and not any(s.skipped for s in SNIPPETS)
    assert "certfile=" in codes[0] and '"SCRAM-SHA-512"' in codes[1]
    assert "OIDCClientCredentials" in codes[2] and "OAuthBearerToken" in codes[3]


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[f"line{s.line}" for s in SNIPPETS])
def test_readme_security_snippet_runs(secured_kafka, snippet, tmp_path):
    code = snippet.code
    for placeholder, real in _replacements(secured_kafka, tmp_path).items():
        code = code.replace(placeholder, real)
    (tmp_path / "my_identity_system.py").write_text(
        IDENTITY_MODULE.format(token=secured_kafka.issuer.token_for(OAUTH_CLIENT_ID, 300)))
    script = tmp_path / "snippet.py"
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL,
                            env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, f"{snippet}\n{code}\n{result.stdout}\n{result.stderr}"
    assert result.stdout.strip() == "[1]", result.stdout  # the cluster's one broker, no error
    assert "Traceback" not in result.stderr


def test_every_placeholder_is_in_the_section(secured_kafka, tmp_path):
    text = "".join(s.code for s in SNIPPETS)
    missing = [p for p in _replacements(secured_kafka, tmp_path) if p not in text]
    assert not missing, missing
