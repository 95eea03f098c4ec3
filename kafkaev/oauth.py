"""The OAUTHBEARER token cache: one per ``SASLConfig.oauthbearer(...)``, shared by every connection
made from it, calling the user's token provider (plain or async) and deciding when a token is due
for a refresh: at 80% of its lifetime plus up to 5% jitter (the Java client's
``sasl.login.refresh.window.factor`` and ``.jitter``), well before it expires.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Callable

from kafkaev import errors
from kafkaev.errors import KafkaError
from kafkaev.security import OAuthBearerToken, TokenProvider

REFRESH_WINDOW_FACTOR = 0.8
REFRESH_WINDOW_JITTER = 0.05

TokenCallback = Callable[[OAuthBearerToken | None, KafkaError | None], object]


class TokenCache:
    """The current token, when it is due for a refresh, and the callers waiting for a fetch."""

    __slots__ = ("_provider", "_token", "_refresh_at", "_waiters", "_fetching", "fetches")

    def __init__(self, provider: TokenProvider) -> None:
        self._provider = provider
        self._token: OAuthBearerToken | None = None
        self._refresh_at = 0.0  # Unix time: tokens expire by the wall clock, whatever the loop
        self._waiters: list[tuple[asyncio.AbstractEventLoop, TokenCallback]] = []
        self._fetching = False
        self.fetches = 0  # provider calls that returned a usable token

    def __repr__(self) -> str:
        state = "empty" if self._token is None else f"refresh in {self._refresh_at - time.time():.0f}s"
        return f"<kafkaev TokenCache {state}>"

    def get(self, loop: asyncio.AbstractEventLoop, cb: TokenCallback) -> None:
        """``cb(token, None)`` with a token not yet due for refresh (fetching one if needed), or
        ``cb(None, KafkaError(AUTHENTICATION))``; always from the loop, never from inside get()."""
        token = self._token
        if token is not None and time.time() < self._refresh_at:
            loop.call_soon(cb, token, None)
            return
        self._waiters.append((loop, cb))
        if not self._fetching:
            self._fetching = True
            self._fetch(loop)

    def _fetch(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            result = self._provider()
        except Exception as exc:
            self._settle(None, _provider_failed(exc))
            return
        if not inspect.isawaitable(result):
            self._settle_result(result)
            return
        future = asyncio.ensure_future(result, loop=loop)
        future.add_done_callback(self._on_fetched)

    def _on_fetched(self, future: asyncio.Future[OAuthBearerToken]) -> None:
        if future.cancelled():
            self._settle(None, KafkaError(errors.AUTHENTICATION, "OAUTHBEARER token provider was cancelled"))
            return
        exc = future.exception()
        if exc is not None:
            self._settle(None, _provider_failed(exc))
            return
        self._settle_result(future.result())

    def _settle_result(self, token: object) -> None:
        if not isinstance(token, OAuthBearerToken):
            self._settle(None, KafkaError(errors.AUTHENTICATION, (
                f"OAUTHBEARER token provider returned {type(token).__name__}, not a kafkaev.OAuthBearerToken")))
            return
        now = time.time()
        left = token.expires_at - now
        if left <= 0:
            self._settle(None, KafkaError(errors.AUTHENTICATION, (
                f"OAUTHBEARER token provider returned a token that expired {-left:.0f}s ago")))
            return
        self._token = token
        self._refresh_at = now + left * (REFRESH_WINDOW_FACTOR + random.uniform(0, REFRESH_WINDOW_JITTER))
        self.fetches += 1
        self._settle(token, None)

    def _settle(self, token: OAuthBearerToken | None, err: KafkaError | None) -> None:
        self._fetching = False
        waiters, self._waiters = self._waiters, []
        for loop, cb in waiters:
            if not loop.is_closed():
                loop.call_soon(cb, token, err)


def _provider_failed(exc: BaseException) -> KafkaError:
    if isinstance(exc, KafkaError):
        return KafkaError(errors.AUTHENTICATION, f"OAUTHBEARER token provider failed: {exc.message}")
    return KafkaError(errors.AUTHENTICATION, f"OAUTHBEARER token provider failed: {type(exc).__name__}: {exc}")
