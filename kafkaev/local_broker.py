"""Which brokers ``kafkaev`` and ``kafkaev.Client()`` talk to when none are given.

The rule, in order:

1. ``$KAFKAEV_BROKERS`` (``host:port,...``) if set: the same variable points the test suite at an
   existing cluster (``kafkaev/testing/external.py``), so it means "the cluster to use" everywhere;
2. else the bootstrap of the broker ``kafkaev broker start`` runs, as recorded in its state file
   (``~/.cache/kafkaev/broker.json``), while the recorded process is alive;
3. else ``127.0.0.1:9092``.

Standard library only: ``ClientConfig`` reads this on every construction without brokers.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

BROKERS_ENV = "KAFKAEV_BROKERS"
DEFAULT_PORT = 9092
FALLBACK_BROKERS = f"127.0.0.1:{DEFAULT_PORT}"
STATE_FILE_NAME = "broker.json"


def state_file() -> Path:
    """Where ``kafkaev broker start`` records its broker: ``~/.cache/kafkaev/broker.json``.

    Computed on each call, so a changed ``$HOME`` (the README test runs under a temporary one) applies.
    """
    return Path.home() / ".cache" / "kafkaev" / STATE_FILE_NAME


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one owned by another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True, slots=True)
class LocalBroker:
    """One running ``kafkaev broker start``: the process that owns the cluster and its address."""

    pid: int
    bootstrap: str  # PLAINTEXT "127.0.0.1:port,..."
    version: str  # the Apache Kafka release it runs
    directory: str  # configs, data and logs

    def alive(self) -> bool:
        return pid_alive(self.pid)

    def write(self, path: Path) -> None:
        """Record it; written to a temporary name and renamed, so a reader never sees half a file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(asdict(self)))
        partial.replace(path)


def read_record(path: Path | None = None) -> LocalBroker | None:
    """The broker recorded in ``path`` (default ``state_file()``), alive or not; None when there is no
    readable record (missing, unreadable, or not in this format)."""
    try:
        data = json.loads((path or state_file()).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid, bootstrap = data.get("pid"), data.get("bootstrap")
    if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(bootstrap, str) or not bootstrap:
        return None
    return LocalBroker(pid, bootstrap, str(data.get("version", "")), str(data.get("directory", "")))


def running_broker(path: Path | None = None) -> LocalBroker | None:
    """The recorded broker if its process is alive, else None (a stale record is ignored, not removed)."""
    record = read_record(path)
    return record if record is not None and record.alive() else None


def default_brokers() -> str:
    """``$KAFKAEV_BROKERS``, else the running ``kafkaev broker start``'s bootstrap, else 127.0.0.1:9092."""
    configured = os.environ.get(BROKERS_ENV, "").strip()
    if configured:
        return configured
    running = running_broker()
    return running.bootstrap if running is not None else FALLBACK_BROKERS


def default_address() -> tuple[str, int]:
    """The first of ``default_brokers()`` as ``(host, port)``: where a bare ``kafkaev.Connection``
    would connect, e.g. ``conn.connect(*default_address(), cb=ready)``."""
    from .config import parse_brokers  # config imports this module: import it only when called

    return parse_brokers(default_brokers())[0]
