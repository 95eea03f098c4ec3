"""Starting broker JVMs so that none outlives the Python process that started it.

Three layers, because each covers a way of dying the others miss:
- ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` in the child: the kernel kills the JVM when its parent dies,
  even by SIGKILL. The kernel ties this to the *thread* that forked, so every JVM is forked from one
  long-lived spawner thread rather than from whichever thread happened to call ``start()``.
- ``atexit``: a normal exit (including after KeyboardInterrupt) stops what is still running.
- a SIGTERM handler: kills the JVMs, then hands the signal to whatever handler was there before.
JVMs run in their own session so a terminal's Ctrl-C reaches only Python, which then stops them in order.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_libc = ctypes.CDLL(None, use_errno=True)
_spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafkaev-jvm-spawner")
_live: set[subprocess.Popen[bytes]] = set()
_live_lock = threading.Lock()
_handlers_installed = False
_previous_sigterm: Any = None


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    def preexec() -> None:
        if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            os._exit(127)
        # The parent may have died between fork and prctl; then nobody would send the signal.
        if os.getppid() != parent_pid:
            os._exit(127)

    return preexec


def spawn(argv: Sequence[str], log_path: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stdout and stderr appended to ``log_path``; it dies with this process."""
    _install_handlers()

    def run() -> subprocess.Popen[bytes]:
        with open(log_path, "ab") as log:
            return subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
            )

    process = _spawner.submit(run).result()
    with _live_lock:
        _live.add(process)
    return process


def forget(process: subprocess.Popen[bytes]) -> None:
    """Drop an exited process from the emergency-kill list."""
    with _live_lock:
        _live.discard(process)


def kill_all() -> None:
    """SIGKILL every JVM still running (SIGCONT first would not matter: SIGKILL ends stopped processes too)."""
    with _live_lock:
        processes = list(_live)
        _live.clear()
    for process in processes:
        if process.poll() is None:
            try:
                process.kill()
            except ProcessLookupError:
                pass
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _on_sigterm(signum: int, frame: Any) -> None:
    kill_all()
    previous = _previous_sigterm
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:
        # Default disposition: die of the same signal, so the exit status stays honest.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    global _handlers_installed, _previous_sigterm
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(kill_all)
    # Signal handlers can only be set from the main thread; PDEATHSIG still covers the others.
    if threading.current_thread() is threading.main_thread():
        _previous_sigterm = signal.signal(signal.SIGTERM, _on_sigterm)
