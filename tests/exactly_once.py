"""Callbacks that must each be called exactly once, checked outside the callbacks.

An assert inside a callback proves nothing: the code under test is what calls it, and the producer,
the consumer and the Connection catch what a callback raises (they hand it to an error sink that a
test may never read). So the helpers here only count calls. The test checks the count
(``assert_each_once``), and every counter made while a test runs is checked for a second call once
the test has ended and its loops are closed: ``each_callback_at_most_once``, an autouse fixture that
conftest.py imports. A callback that fires twice therefore fails the test that made it fire, whether
or not that test looked.

A counter is anything with ``assert_no_second_call()`` that passed itself to ``track``: ``Calls``
here, ``producer_helpers.Delivery`` and ``conn_support.Recorder``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import pytest

SHOWN = 10  # keys named in a failure message


class Counter(Protocol):
    def assert_no_second_call(self) -> None: ...


_tracked: list[Counter] | None = None  # the counters of the running test


def track(counter: Counter) -> None:
    """Have ``counter`` checked for a second call when the running test ends (outside a test: never)."""
    if _tracked is not None:
        _tracked.append(counter)


@contextlib.contextmanager
def tracking() -> Iterator[list[Counter]]:
    """Collect the counters made inside the block (instead of the enclosing collection)."""
    global _tracked
    outer, _tracked = _tracked, []
    try:
        yield _tracked
    finally:
        _tracked = outer


def assert_no_second_calls(counters: Iterable[Counter]) -> None:
    """Every counter's ``assert_no_second_call``; one AssertionError naming all that failed."""
    failures = []
    for counter in counters:
        try:
            counter.assert_no_second_call()
        except AssertionError as exc:
            failures.append(str(exc))
    assert not failures, "\n".join(failures)


@pytest.fixture(autouse=True)
def each_callback_at_most_once() -> Iterator[None]:
    """Autouse, so it is set up before the loop fixtures and torn down after them: a callback that a
    loop's shutdown still runs is counted before the check."""
    with tracking() as counters:
        yield
    try:
        assert_no_second_calls(counters)
    except AssertionError as exc:
        pytest.fail(f"a callback was called more than once:\n{exc}", pytrace=False)


def _named(keys: Iterable[Hashable]) -> str:
    ordered = sorted(keys, key=repr)
    more = f" and {len(ordered) - SHOWN} more" if len(ordered) > SHOWN else ""
    return ", ".join(repr(k) for k in ordered[:SHOWN]) + more


def assert_once_each(called: Collection[Hashable], again: Iterable[Hashable],
                     expected: Iterable[Hashable] | None = None, what: str = "callback") -> None:
    """``called``: the keys whose callback was called; ``again``: those called more than once;
    ``expected``: when given, exactly the keys that had to be called."""
    repeated = set(again)
    assert not repeated, f"{what} called more than once for {_named(repeated)}"
    if expected is not None:
        wanted = set(expected)
        missing, extra = wanted.difference(called), set(called).difference(wanted)
        assert not missing, f"{what} never called for {_named(missing)}"
        assert not extra, f"{what} called for unexpected {_named(extra)}"


class Calls(Mapping[Hashable, tuple[Any, ...]]):
    """Callbacks by key: ``cb(key)`` records each call's arguments; ``calls[key]`` is the first
    call's, so ``len(calls)`` counts the keys called at least once. ``assert_each_once(keys)``
    checks that exactly those were called, once each."""

    def __init__(self, what: str = "callback") -> None:
        self.what = what
        self.args: dict[Hashable, list[tuple[Any, ...]]] = {}
        self._waiters: dict[Hashable, asyncio.Future[None]] = {}
        track(self)

    def cb(self, key: Hashable) -> Callable[..., None]:
        def record(*args: Any) -> None:
            self.args.setdefault(key, []).append(args)
            waiter = self._waiters.pop(key, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)

        return record

    async def first_call(self, key: Hashable, timeout: float) -> tuple[Any, ...]:
        """Wait for the first call of ``key``'s callback; its arguments."""
        if key not in self.args:
            waiter = self._waiters[key] = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(waiter, timeout)
            except asyncio.TimeoutError:  # TimeoutError from 3.11 on
                raise AssertionError(f"timed out after {timeout}s waiting for {self.what}") from None
        return self[key]

    def __getitem__(self, key: Hashable) -> tuple[Any, ...]:
        return self.args[key][0]

    def __iter__(self) -> Iterator[Hashable]:
        return iter(self.args)

    def __len__(self) -> int:
        return len(self.args)

    def count(self, key: Hashable) -> int:
        return len(self.args.get(key, ()))

    def repeated(self) -> dict[Hashable, list[tuple[Any, ...]]]:
        """The keys called more than once, with every call's arguments."""
        return {key: args for key, args in self.args.items() if len(args) > 1}

    def assert_no_second_call(self) -> None:
        repeated = self.repeated()
        shown = "".join(f"\n  {key!r}: {args}" for key, args in list(repeated.items())[:SHOWN])
        assert not repeated, f"{self.what} called more than once for {_named(repeated)}:{shown}"

    def assert_each_once(self, expected: Iterable[Hashable]) -> None:
        self.assert_no_second_call()
        assert_once_each(self.args, (), expected, self.what)
