"""A class-data-sharing archive of the broker's classes, so later brokers start about twice as fast.

The first broker run that finds no archive records one with ``-XX:ArchiveClassesAtExit`` (the JVM writes
it during a clean exit); later runs map it with ``-XX:SharedArchiveFile``. The archive is keyed by the
jar set (and when it was written), the Java runtime and the JVM options, since CDS rejects an archive made under a different
class path or runtime. A run that is SIGKILLed never publishes its (possibly partial) archive.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from . import jars

CDS_ENV = "KAFKAEV_BROKER_CDS"  # "0" turns the archive off


class ClassDataArchive:
    def __init__(self, version: str, java: str, jvm_options: Sequence[str]) -> None:
        self.enabled = os.environ.get(CDS_ENV, "1") != "0"
        libs = jars.libs_dir(version)
        marker = libs / jars.MARKER_NAME
        key = "\0".join(
            [
                marker.read_text() if marker.exists() else "",
                # A re-resolved jar set has new file times, which CDS checks: record anew.
                str(libs.stat().st_mtime_ns) if libs.exists() else "",
                os.path.realpath(shutil.which(java) or java),
                *jvm_options,
            ]
        )
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        self.path = jars.libs_dir(version).parent / f"broker-{digest}.jsa"

    def use_options(self) -> list[str]:
        """JVM options that map the archive, if one has been recorded."""
        if self.enabled and self.path.exists():
            return [f"-XX:SharedArchiveFile={self.path}"]
        return []

    def needs_recording(self) -> bool:
        return self.enabled and not self.path.exists()

    def recording_path(self) -> Path:
        """Where one run writes its archive before publish() moves it into place."""
        return self.path.with_name(f"{self.path.stem}.recording-{os.getpid()}-{id(self)}.jsa")

    def publish(self, recorded: Path, exited_cleanly: bool) -> None:
        """Move a finished recording into place; drop a partial one."""
        if exited_cleanly and recorded.exists() and recorded.stat().st_size > 0:
            os.replace(recorded, self.path)
        else:
            recorded.unlink(missing_ok=True)
