"""Stamping a client's private steps for the bench's timeline tools (``aio_timeline``,
``txn_timeline``): methods replaced by wrappers for the duration of a run, then restored."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any


@contextmanager
def replaced(replacements: Sequence[tuple[type, str, Callable[..., Any]]]) -> Iterator[None]:
    """Set each ``owner.name`` to its replacement inside the block, and back to what it was after."""
    originals = [(owner, name, owner.__dict__[name]) for owner, name, _ in replacements]
    for owner, name, replacement in replacements:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
