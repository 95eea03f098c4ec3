"""Stamping a client's private steps for the bench's timeline tools (``aio_timeline``,
``txn_timeline``): methods replaced by wrappers for the duration of a run, then restored."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from kafkaev.producer import sender

Replacement = tuple[type, str, Callable[..., Any]]


@contextmanager
def replaced(replacements: Sequence[Replacement]) -> Iterator[None]:
    """Set each ``owner.name`` to its replacement inside the block, and back to what it was after."""
    originals = [(owner, name, owner.__dict__[name]) for owner, name, _ in replacements]
    for owner, name, replacement in replacements:
        setattr(owner, name, replacement)
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def produce_requests(written: Callable[[], object], answered: Callable[[], object]) -> list[Replacement]:
    """The sender's Produce requests, for ``replaced``: ``written()`` before each is written,
    ``answered()`` before each answer (or failure) is handled."""
    send_request, on_response = sender.Sender._send_request, sender.Sender._on_response

    def send_request_stamped(self: Any, conn: Any, batches: list[Any]) -> None:
        written()
        send_request(self, conn, batches)

    def on_response_stamped(self: Any, batches: list[Any], resp: Any, err: Any) -> None:
        answered()
        on_response(self, batches, resp, err)

    return [(sender.Sender, "_send_request", send_request_stamped),
            (sender.Sender, "_on_response", on_response_stamped)]
