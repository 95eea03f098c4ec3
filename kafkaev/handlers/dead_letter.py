"""Dead letters: the record a failed source record becomes, and producing it until it is
acknowledged.

The dead-letter record keeps the source's key, value (``None`` stays a tombstone) and headers,
except any whose name starts with ``kafkaev.dlq.`` (a producer must not be able to forge the
provenance), and adds the provenance headers below. It is produced with acks=-1; a retriable
failure is tried again on the client's ``retry_backoff`` policy (``kafkaev.backoff``) until
the runner stops, a non-retriable one (too large, not authorized, invalid) is final.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkaev.backoff import Backoff, BackoffPolicy
from kafkaev.errors import MSG_TIMED_OUT, UNKNOWN_TOPIC_WAIT_TIMEOUT, KafkaError

if TYPE_CHECKING:
    from kafkaev.client import Client
    from kafkaev.protocol.codec import Message

HEADER_PREFIX = "kafkaev.dlq."
HEADER_CONSUMER = "kafkaev.dlq.consumer"
HEADER_TOPIC = "kafkaev.dlq.original-topic"
HEADER_PARTITION = "kafkaev.dlq.original-partition"
HEADER_OFFSET = "kafkaev.dlq.original-offset"
HEADER_ATTEMPTS = "kafkaev.dlq.attempts"
HEADER_ERROR = "kafkaev.dlq.error"
MAX_ERROR_BYTES = 1024
# Client-side outcomes worth another try: the producer already retried until its delivery
# timeout, or the topic's metadata did not come in time; the broker may be back later.
RETRIABLE_CLIENT_CODES = frozenset({MSG_TIMED_OUT, UNKNOWN_TOPIC_WAIT_TIMEOUT})


def error_text(exc: BaseException) -> str:
    """The handler's failure as the dead-letter header carries it: at most 1,024 bytes of UTF-8,
    cut on a character boundary."""
    text = f"{type(exc).__name__}: {exc}"
    raw = text.encode("utf-8", "replace")
    if len(raw) <= MAX_ERROR_BYTES:
        return text
    return raw[:MAX_ERROR_BYTES].decode("utf-8", "ignore")


def dead_letter_headers(consumer: str, msg: Message, attempts: int,
                        error: BaseException) -> list[tuple[str, bytes | None]]:
    kept = [(name, value) for name, value in msg.headers if not name.startswith(HEADER_PREFIX)]
    kept += [
        (HEADER_CONSUMER, consumer.encode()),
        (HEADER_TOPIC, msg.topic.encode()),
        (HEADER_PARTITION, str(msg.partition).encode()),
        (HEADER_OFFSET, str(msg.offset).encode()),
        (HEADER_ATTEMPTS, str(attempts).encode()),
        (HEADER_ERROR, error_text(error).encode()),
    ]
    return kept


def is_retriable(err: BaseException) -> bool:
    """Whether producing the dead letter again may succeed."""
    if isinstance(err, KafkaError):
        return err.retriable or err.code in RETRIABLE_CLIENT_CODES
    return False  # a record the producer refused at produce() time (too large for a request)


class DeadLetterSend:
    """One dead letter on its way: ``done(None)`` once acknowledged, ``done(err)`` once it
    failed for good; ``cancel()`` (the runner stopping) ends the retries with no call."""

    __slots__ = ("_client", "_loop", "_topic", "_msg", "_headers", "_backoff", "_done", "_timer", "_cancelled",
                 "_on_retry")

    def __init__(self, client: Client, topic: str, msg: Message, headers: list[tuple[str, bytes | None]],
                 policy: BackoffPolicy, done: Callable[[BaseException | None], object],
                 on_retry: Callable[[BaseException, float], object]) -> None:
        self._client = client
        self._loop: asyncio.AbstractEventLoop = client.loop
        self._topic = topic
        self._msg = msg
        self._headers = headers
        self._backoff = Backoff(policy)
        self._done = done
        self._on_retry = on_retry
        self._timer: asyncio.TimerHandle | None = None
        self._cancelled = False

    def send(self) -> None:
        self._timer = None
        if self._cancelled:
            return
        msg = self._msg
        try:
            self._client.produce(self._topic, msg.key, msg.value, self._acked, headers=self._headers)
        except Exception as exc:  # noqa: BLE001 - a refused produce() is this record's outcome
            self._failed(exc)

    def cancel(self) -> None:
        self._cancelled = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _acked(self, _md: Any, err: KafkaError | None) -> None:
        if self._cancelled:
            return
        if err is None:
            self._done(None)
        else:
            self._failed(err)

    def _failed(self, err: BaseException) -> None:
        if not is_retriable(err):
            self._done(err)
            return
        delay = self._backoff.next_delay_s()
        self._on_retry(err, delay)
        self._timer = self._loop.call_later(delay, self.send)
