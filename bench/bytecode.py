"""Compile kafkaev and the bench to bytecode before the first run, so that no run compiles them.

pip byte-compiles what it installs: the peers (confluent-kafka, aiokafka), uvloop and the
standard library are loaded from their ``.pyc``. kafkaev, installed editable from this
checkout, and the bench itself are not, and with ``PYTHONDONTWRITEBYTECODE`` set (as it is on
the bench machines) every worker compiled them from source at import: about 2 MB more peak
RSS and tens of milliseconds more start-up in every kafkaev run, and in no peer's. A ``.pyc``
written here is read by the workers whatever that variable says (it only stops writing), and
is checked against its source's time and size, so an edit made since is never run stale.
"""

from __future__ import annotations

import compileall
from pathlib import Path

# The packages the workers import from the checkout.
CHECKOUT_PACKAGES = ("kafkaev", "bench")


def precompile(project_root: Path) -> None:
    """Write the ``.pyc`` of every module of ``CHECKOUT_PACKAGES`` that lacks a current one.
    Raises RuntimeError naming the package when one does not compile."""
    for package in CHECKOUT_PACKAGES:
        if not compileall.compile_dir(project_root / package, quiet=1):
            raise RuntimeError(f"bench: {project_root / package} does not compile to bytecode")
