"""The linter and the type checker are part of the suite: a change that breaks either fails CI."""

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
