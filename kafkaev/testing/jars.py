"""The Apache Kafka broker jars, resolved from Maven Central into a cache outside the work tree.

The version is ``KAFKA_VERSION`` unless ``KAFKAEV_KAFKA_VERSION`` names another: ``kafka_version()``
is what the tests, the benchmark and ``kafkaev broker start`` all start.

The cache is ``~/.cache/kafkaev/kafka-<version>/libs`` (or ``$KAFKAEV_KAFKA_CACHE/kafka-<version>/libs``).
A marker file holding the digest of the pom is written into a fresh directory only after Maven
copied every jar, and that directory is then renamed into place: an interrupted download, or a pom
that changed since, is resolved again instead of starting a broker with half a classpath.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .versions import KafkaVersionError, broker_version

KAFKA_VERSION = "4.4.0"
VERSION_ENV = "KAFKAEV_KAFKA_VERSION"
POM_PATH = Path(__file__).with_name("kafka-jars.pom.xml")
CACHE_ENV = "KAFKAEV_KAFKA_CACHE"
MARKER_NAME = ".kafkaev-complete"
# Maven's first run on a cold ~/.m2 downloads ~100 MB; generous, but bounded.
MAVEN_TIMEOUT_S = 1800.0


class JarResolutionError(RuntimeError):
    """Maven could not resolve the Kafka jars; the message carries Maven's output."""


def kafka_version() -> str:
    """The Apache Kafka version to start: ``$KAFKAEV_KAFKA_VERSION`` if set, else ``KAFKA_VERSION``."""
    configured = os.environ.get(VERSION_ENV, "").strip()
    if not configured:
        return KAFKA_VERSION
    try:
        broker_version(configured)
    except KafkaVersionError as exc:
        raise KafkaVersionError(f"{VERSION_ENV}: {exc}") from None
    return configured


def cache_root() -> Path:
    """The directory holding one ``kafka-<version>`` folder per resolved version."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "kafkaev"


def libs_dir(version: str | None = None) -> Path:
    """Where the jars of ``version`` (default: ``kafka_version()``) live once resolved (it may not exist yet)."""
    version = version or kafka_version()
    return cache_root() / f"kafka-{version}" / "libs"


def _pom_digest(version: str) -> str:
    # The version is part of the digest because it is passed to Maven as a property.
    return hashlib.sha256(POM_PATH.read_bytes() + version.encode()).hexdigest()


def is_complete(version: str | None = None) -> bool:
    """True when the cache holds a full copy resolved from the current pom."""
    version = version or kafka_version()
    marker = libs_dir(version) / MARKER_NAME
    try:
        return marker.read_text().strip() == _pom_digest(version)
    except FileNotFoundError:
        return False


def ensure_jars(version: str | None = None, *, quiet: bool = True) -> Path:
    """Return the directory of the Kafka ``version`` jars (default: ``kafka_version()``), resolving
    them with Maven if needed.

    Safe to call from several processes at once: one resolves while the others wait on a lock.
    """
    version = version or kafka_version()
    if is_complete(version):
        return libs_dir(version)
    target = libs_dir(version)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".resolve.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_complete(version):  # another process finished while this one waited
            return target
        _resolve(version, target, quiet=quiet)
    return target


def _resolve(version: str, target: Path, *, quiet: bool) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarResolutionError(
            "Maven ('mvn') is not on PATH; it is needed once to fetch the Apache Kafka "
            f"{version} jars into {target}"
        )
    staging = target.with_name(f"libs.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    command = [
        mvn,
        "-B",
        "-f",
        str(POM_PATH),
        f"-Dkafka.version={version}",
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
    ]
    if quiet:
        command.insert(1, "-q")
    else:
        print(f"kafkaev: resolving Apache Kafka {version} jars into {target}", file=sys.stderr)
    started = time.monotonic()
    result = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=MAVEN_TIMEOUT_S
    )
    if result.returncode != 0 or not any(staging.glob(f"kafka_2.13-{version}.jar")):
        shutil.rmtree(staging, ignore_errors=True)
        raise JarResolutionError(
            f"mvn exited with {result.returncode} resolving Apache Kafka {version}:\n{result.stdout[-4000:]}"
        )
    (staging / MARKER_NAME).write_text(_pom_digest(version) + "\n")
    # Swap directories so no reader ever sees a half-filled libs/ that carries the marker.
    retired = target.with_name(f"libs.old-{os.getpid()}")
    if target.exists():
        target.rename(retired)
    staging.rename(target)
    shutil.rmtree(retired, ignore_errors=True)
    if not quiet:
        print(f"kafkaev: resolved in {time.monotonic() - started:.1f}s", file=sys.stderr)


def classpath(version: str | None = None) -> str:
    """A JVM classpath with every jar of ``version`` (resolving them first if needed)."""
    return str(ensure_jars(version) / "*")
