"""Running the ``kafkaev`` command line as a user would, for the CLI tests: a subprocess with the
checkout's package, bytes in and out."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 120


def cli_env(brokers: str | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if brokers is not None:
        env["KAFKAEV_BROKERS"] = brokers
    return env


def run_cli(*args: str, stdin: bytes = b"", brokers: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """``kafkaev args...`` to completion; stdout and stderr as bytes."""
    return subprocess.run([sys.executable, "-m", "kafkaev", *args], input=stdin, capture_output=True,
                          timeout=TIMEOUT_S, env=cli_env(brokers), cwd=ROOT)


def start_cli(*args: str, brokers: str | None = None, **popen: Any) -> subprocess.Popen[bytes]:
    """``kafkaev args...`` left running (stdin, stdout and stderr are pipes unless given)."""
    for stream in ("stdin", "stdout", "stderr"):
        popen.setdefault(stream, subprocess.PIPE)
    return subprocess.Popen([sys.executable, "-m", "kafkaev", *args], env=cli_env(brokers), cwd=ROOT, **popen)


def one_line_error(result: subprocess.CompletedProcess[bytes], command: str, status: int = 1) -> str:
    """The single stderr line of a failed command, checked: its exit status, no traceback."""
    stderr = result.stderr.decode()
    assert result.returncode == status, (result.returncode, stderr)
    assert "Traceback" not in stderr, stderr
    [line] = stderr.strip().splitlines()
    assert line.startswith(f"kafkaev {command}: "), line
    return line
