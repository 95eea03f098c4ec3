"""A handler consumer's options, and the rules they are checked against.

``ConsumerOptions.build`` checks one consumer when ``Runner.consumer()`` is called;
``check_together`` checks what only the whole set can tell (unique names, one consumer per
group and topic) and the retry budget against the group's rebalance timeout, at ``consumer()``
and again at ``start()``. Every error names the consumer and the option.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .retry import RetrySchedule

Ordering = Literal["partition", "key"]
ORDERINGS: tuple[str, ...] = ("partition", "key")

DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRY_BACKOFF_MS = 100
DEFAULT_CONCURRENCY = 1
# Records fetched but not finished, per partition, before the partition is paused.
DEFAULT_MAX_UNPROCESSED = 1000


class RunnerConfigError(ValueError):
    """A runner or consumer option that cannot work; the message names the consumer and the option."""


def _fail(name: object, option: str, problem: str) -> RunnerConfigError:
    return RunnerConfigError(f"kafkaev.Runner: consumer {name!r}: '{option}' {problem}")


def _int_option(name: str, option: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, option, f"must be an int, got {type(value).__name__}")
    if value < minimum:
        raise _fail(name, option, f"must be >= {minimum}, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class ConsumerOptions:
    """One consumer of a runner: what it reads, how it handles, what it does on failure."""

    name: str
    topics: tuple[str, ...]
    handler: Callable[[Any], Any]
    is_async: bool  # an ``async def`` handler (its calls are awaited as tasks)
    group_id: str
    max_retries: int
    retry: RetrySchedule
    dead_letter_topic: str | None
    ordering: Ordering
    concurrency: int
    max_unprocessed: int

    @classmethod
    def build(cls, name: object, topics: object, handler: object, *, group_id: object, max_retries: object,
              retry_backoff_ms: object, dead_letter_topic: object, ordering: object, concurrency: object,
              max_unprocessed: object) -> ConsumerOptions:
        if not isinstance(name, str) or not name.strip():
            raise RunnerConfigError(f"kafkaev.Runner: a consumer's 'name' must be a non-empty str, got {name!r}")
        if isinstance(topics, str) or not isinstance(topics, Sequence) or not topics:
            raise _fail(name, "topics", f"must be a non-empty list of topic names, got {topics!r}")
        if not all(isinstance(t, str) and t.strip() for t in topics):
            raise _fail(name, "topics", f"must not hold an empty or non-str topic name, got {list(topics)!r}")
        if handler is None or not callable(handler):
            raise _fail(name, "handler", f"must be a callable (def h(msg) or async def h(msg)), got {handler!r}")
        if not isinstance(group_id, str) or not group_id.strip():
            raise _fail(name, "group_id", f"must be a non-empty str (or group_id in the client options), "
                                          f"got {group_id!r}")
        retries = _int_option(name, "max_retries", max_retries, 0)
        if isinstance(retry_backoff_ms, bool) or not isinstance(retry_backoff_ms, (int, float)) \
                or not retry_backoff_ms > 0:
            raise _fail(name, "retry_backoff_ms", f"must be a number > 0, got {retry_backoff_ms!r}")
        if dead_letter_topic is not None:
            if not isinstance(dead_letter_topic, str) or not dead_letter_topic.strip():
                raise _fail(name, "dead_letter_topic", f"must be a non-empty topic name or None, "
                                                       f"got {dead_letter_topic!r}")
            if dead_letter_topic in topics:
                raise _fail(name, "dead_letter_topic", f"must not be one of the consumer's own topics "
                                                       f"({dead_letter_topic!r}): its failures would loop")
        if ordering not in ORDERINGS:
            raise _fail(name, "ordering", f"must be 'partition' or 'key', got {ordering!r}")
        return cls(
            name=name, topics=tuple(dict.fromkeys(topics)), handler=handler,  # type: ignore[arg-type]
            is_async=_is_async(handler), group_id=group_id, max_retries=retries,
            retry=RetrySchedule(float(retry_backoff_ms)), dead_letter_topic=dead_letter_topic,
            ordering=ordering,  # type: ignore[arg-type]
            concurrency=_int_option(name, "concurrency", concurrency, 1),
            max_unprocessed=_int_option(name, "max_unprocessed", max_unprocessed, 1),
        )

    @property
    def retry_budget_ms(self) -> float:
        """How long one record can wait in retries in all: the sum of every retry's delay."""
        return self.retry.budget_ms(self.max_retries)


def _is_async(handler: object) -> bool:
    call = getattr(handler, "__call__", None)  # noqa: B004 - an object with an async __call__ counts
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


def check_together(consumers: Sequence[ConsumerOptions], rebalance_timeout_ms: int) -> None:
    """The rules a set of consumers must keep; raises RunnerConfigError at the first broken one."""
    names: set[str] = set()
    readers: dict[tuple[str, str], str] = {}
    for c in consumers:
        if c.name in names:
            raise _fail(c.name, "name", "is taken by another consumer of this runner; names must be unique")
        names.add(c.name)
        if c.retry_budget_ms >= rebalance_timeout_ms:
            raise _fail(c.name, "max_retries", f"with retry_backoff_ms={c.retry.base_ms:g} makes a retry budget of "
                                               f"{c.retry_budget_ms:.0f} ms, not below rebalance_timeout_ms "
                                               f"({rebalance_timeout_ms} ms): a revoked partition must be given "
                                               f"up in time")
        for topic in c.topics:
            other = readers.setdefault((c.group_id, topic), c.name)
            if other != c.name:
                raise _fail(c.name, "group_id", f"{c.group_id!r} and topic {topic!r} are also consumer {other!r}'s: "
                                                "two consumers of one group and topic would each get only some "
                                                "of its partitions")
