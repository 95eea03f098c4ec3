"""Collecting the broker's heap before each latency run.

A young-generation pause of the broker's G1 collector lasts 10-15 ms on the bench machine and
comes every 10-20 s at 10,000 msg/s. A latency run measures ~5 s, so one pause falls into some
clients' runs and not into others', and where it falls it is the run's p99.9 and max: the
broker's GC log showed the pause ending in the same millisecond as the run's latest record.
Collecting the heap just before each latency run (``jcmd <pid> GC.run``, untimed) starts every
client's run with an empty young generation, so the pauses stop drawing lots between clients.

Only a broker on this machine can be collected: the JVMs listening on the ports the cluster's
metadata names, found through ``/proc``. For any other the runs go on as before, and the run's
header says so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
PROC = Path("/proc")
# /proc/net/tcp{,6}: "sl local_address rem_address st ... inode"; st 0A is LISTEN
PROC_TCP_TABLES = (PROC / "net" / "tcp", PROC / "net" / "tcp6")
TCP_LISTEN_STATE = "0A"
LOCAL_ADDRESS_FIELD, STATE_FIELD, INODE_FIELD = 1, 3, 9
JCMD_TIMEOUT_S = 30.0
JAVA_EXECUTABLE = "java"


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in PROC_TCP_TABLES:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) <= INODE_FIELD or fields[STATE_FIELD] != TCP_LISTEN_STATE:
                continue
            if int(fields[LOCAL_ADDRESS_FIELD].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[INODE_FIELD])
    return inodes


def listening_pids(port: int) -> set[int]:
    """The processes of this machine with a socket listening on TCP ``port`` (any address)."""
    sockets = {f"socket:[{inode}]" for inode in _listening_inodes(port)}
    pids: set[int] = set()
    if not sockets:
        return pids
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            descriptors = list((entry / "fd").iterdir())
        except OSError:  # gone, or not ours to read
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(descriptor) in sockets:
                    pids.add(int(entry.name))
                    break
            except OSError:
                continue
    return pids


def is_jvm(pid: int) -> bool:
    """Whether ``pid`` runs java: jcmd's attach sends SIGQUIT, which ends any other process."""
    try:
        return Path(os.readlink(PROC / str(pid) / "exe")).name == JAVA_EXECUTABLE
    except OSError:
        return False


def _jcmd() -> str | None:
    """The JDK's jcmd: beside the java on PATH (its real path: /usr/bin/java is a link), or on PATH."""
    java = shutil.which("java")
    if java is not None:
        beside = Path(java).resolve().parent / "jcmd"
        if beside.is_file():
            return str(beside)
    return shutil.which("jcmd")


@dataclass(frozen=True, slots=True)
class BrokerHeap:
    """The broker JVMs whose heaps the bench collects, and the jcmd that does it; ``missing``
    says why there are none (a remote broker, no jcmd)."""

    pids: tuple[int, ...]
    jcmd: str | None
    missing: str = ""

    @classmethod
    def of(cls, broker_addresses: list[tuple[str, int]]) -> BrokerHeap:
        """The local JVMs listening on ``broker_addresses`` (host, port), as the cluster's
        metadata names them."""
        remote = sorted(f"{host}:{port}" for host, port in broker_addresses if host not in LOCAL_HOSTS)
        if remote:
            return cls((), None, f"brokers not on this machine ({', '.join(remote)})")
        jcmd = _jcmd()
        if jcmd is None:
            return cls((), None, "no jcmd next to java or on PATH")
        pids: set[int] = set()
        for host, port in broker_addresses:
            listening = listening_pids(port)
            if not listening:
                return cls((), jcmd, f"no process of this machine found listening on {host}:{port}")
            if not all(is_jvm(pid) for pid in listening):
                return cls((), jcmd, f"the process listening on {host}:{port} is not a JVM")
            pids |= listening
        return cls(tuple(sorted(pids)), jcmd)

    def describe(self) -> str:
        if not self.pids:
            return f"broker heap not collected before latency runs: {self.missing}"
        return f"broker heap collected before each latency run (jcmd GC.run, pid {', '.join(map(str, self.pids))})"

    def collect(self) -> str | None:
        """A full collection in each broker JVM; what failed, or None."""
        if self.jcmd is None:
            return None
        for pid in self.pids:
            if not is_jvm(pid):  # ended since, and the pid reused
                return f"pid {pid} is no longer a JVM"
            try:
                done = subprocess.run([self.jcmd, str(pid), "GC.run"], capture_output=True, text=True,
                                      timeout=JCMD_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"jcmd {pid} GC.run: {type(exc).__name__}: {exc}"
            if done.returncode != 0:
                said = (done.stderr or done.stdout).strip().splitlines()
                return f"jcmd {pid} GC.run exited {done.returncode}: {said[-1] if said else 'no output'}"
        return None
