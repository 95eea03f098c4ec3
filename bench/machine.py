"""The machine a run happened on, recorded next to its figures."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

LIBRARIES = ("kafkaev", "confluent-kafka", "aiokafka", "kafka-python", "uvloop", "Cython", "matplotlib")
CPUIDLE = Path("/sys/devices/system/cpu/cpuidle")
# A KVM guest's halt polling (the cpuidle-haltpoll driver): how long an idle vCPU polls for work
# before it halts. At 0 every wake-up of an idle vCPU is an interrupt into a halted guest CPU,
# which on the bench's host doubled every client's one-record round trip (DESIGN.md, "Latency
# breakdown"): latency figures from hosts that differ here are not comparable.
HALT_POLL_NS = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpu_idle() -> dict[str, Any]:
    """How this machine's idle CPUs wait: the cpuidle driver and governor, and with the KVM
    guest's haltpoll driver, its polling window in ns (None where a value cannot be read)."""
    halt_poll = _read_text(HALT_POLL_NS)
    return {"driver": _read_text(CPUIDLE / "current_driver"),
            "governor": _read_text(CPUIDLE / "current_governor_ro") or _read_text(CPUIDLE / "current_governor"),
            "halt_poll_ns": int(halt_poll) if halt_poll is not None and halt_poll.isdigit() else None}


def _java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    return (out.stderr or out.stdout).splitlines()[0] if (out.stderr or out.stdout) else "unknown"


def _source_version() -> str:
    """kafkaev.__version__ and the commit of the work tree it was imported from."""
    import kafkaev

    root = Path(kafkaev.__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10)
        commit = out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        commit = ""
    return f"{kafkaev.__version__} (source {commit})" if commit else f"{kafkaev.__version__} (source)"


def _library_versions() -> dict[str, str]:
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    if versions.get("kafkaev") == "not installed":  # run from a source tree, not pip-installed
        versions["kafkaev"] = _source_version()
    try:
        import confluent_kafka

        versions["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    return versions


def machine_info() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": _java_version(),
        "libraries": _library_versions(),
        "load_average": os.getloadavg(),
        "cpu_idle": _cpu_idle(),
    }


def describe(info: dict[str, Any]) -> str:
    text = (f"{info['cpu']}, {info['cores']} cores, {info['memory_gib']} GiB, {info['os']}, "
            f"Python {info['python']}")
    halt_poll_ns = info["cpu_idle"]["halt_poll_ns"]
    if halt_poll_ns is not None:
        text += f", guest halt polling {halt_poll_ns // 1000} µs"
    return text
