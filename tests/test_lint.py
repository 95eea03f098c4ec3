"""The linter and the type checker are part of the suite: a change that breaks either fails CI."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_is_clean():
    proc = run("ruff", "check", "kafkaev", "tests", "bench", "tools")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_is_clean():
    proc = run("mypy")  # files and options from pyproject.toml
    assert proc.returncode == 0, proc.stdout + proc.stderr


POLICY_LAYER = ("kafkaev/cluster", "kafkaev/producer", "kafkaev/consumer", "kafkaev/admin", "kafkaev/client.py")
# A parameter or attribute named for a connection or a response, annotated Any (alone or in a union).
UNTYPED_CONNECTION_OR_RESPONSE = re.compile(r"\b(conn|connection|resp|response|answer|responses)\s*:\s*(\w+\s*\|\s*)*Any\b")


def test_the_policy_layer_types_connections_and_responses():
    """Connections and responses are typed against the protocol stubs (connection.pyi, codec.pyi)."""
    offenders = []
    for root in POLICY_LAYER:
        path = ROOT / root
        for source in [path] if path.is_file() else sorted(path.rglob("*.py")):
            for number, line in enumerate(source.read_text().splitlines(), 1):
                if UNTYPED_CONNECTION_OR_RESPONSE.search(line):
                    offenders.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
