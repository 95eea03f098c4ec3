"""The one backoff policy (kafkaev/backoff.py) and the pool's reconnects that use it: bounds,
growth, cap, reset and floor of the policy, the shared retry timer; pools losing the same broker
at once come back at spread-out times, and one pool's failed connects wait exponentially longer
up to the cap."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from types import SimpleNamespace as NS

import pytest
from fake_broker import FakeNode

from kafkaev.backoff import FLOOR_FRACTION, MIN_DELAY_MS, Backoff, BackoffPolicy, RetryTimer
from kafkaev.cluster.pool import ConnectionPool, Role
from kafkaev.config import ClientConfig
from kafkaev.errors import TRANSPORT, KafkaError


class Highest:
    """A random source that always draws the top of the window."""

    def uniform(self, a: float, b: float) -> float:
        return max(a, b)


class Lowest:
    def uniform(self, a: float, b: float) -> float:
        return min(a, b)


class Recording:
    """Draws from a seeded generator and keeps every window it was asked for and every draw."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.windows: list[tuple[float, float]] = []
        self.draws: list[float] = []

    def uniform(self, a: float, b: float) -> float:
        self.windows.append((a, b))
        self.draws.append(self.rng.uniform(a, b))
        return self.draws[-1]


# --- the policy ------------------------------------------------------------------------------------
def test_the_window_doubles_per_failure_up_to_the_cap():
    backoff = Backoff(BackoffPolicy(100, 1000), Highest())
    assert [round(backoff.next_delay_s() * 1000, 6) for _ in range(7)] == [100, 200, 400, 800, 1000, 1000, 1000]
    assert backoff.failures == 7


def test_every_delay_stays_inside_its_window():
    rng = Recording(seed=1)
    policy = BackoffPolicy(50, 3000)
    backoff = Backoff(policy, rng)
    for failures in range(40):
        delay_ms = backoff.next_delay_s() * 1000
        low, high = rng.windows[-1]
        assert low == policy.floor_ms == 50 * FLOOR_FRACTION
        assert high == min(3000, 50 * 2 ** failures)
        assert low <= delay_ms <= high


def test_delays_are_spread_over_the_whole_window():
    """Full jitter: the draws cover the window from the floor to the ceiling, not a band
    around one value."""
    policy = BackoffPolicy(100, 100)
    delays = [policy.delay_s(0, random.Random(seed)) * 1000 for seed in range(500)]
    assert min(delays) < policy.floor_ms + 10 and max(delays) > 90
    assert len({round(d, 3) for d in delays}) > 450


def test_reset_starts_again_from_the_first_window():
    backoff = Backoff(BackoffPolicy(10, 10000), Highest())
    for _ in range(5):
        backoff.next_delay_s()
    backoff.reset()
    assert backoff.failures == 0
    assert backoff.next_delay_s() == pytest.approx(0.010)


def test_the_floor_keeps_every_retry_a_real_pause():
    assert Backoff(BackoffPolicy(100, 1000), Lowest()).next_delay_s() == pytest.approx(100 * FLOOR_FRACTION / 1000)
    # A 0 ms base is a valid option: it never becomes a 0 ms busy loop.
    zero = Backoff(BackoffPolicy(0, 0), Highest())
    assert [zero.next_delay_s() for _ in range(3)] == [MIN_DELAY_MS / 1000] * 3


def test_a_long_outage_does_not_overflow():
    policy = BackoffPolicy(100, 10000)
    assert policy.ceiling_ms(10_000) == 10000
    assert policy.delay_s(10_000, Highest()) == pytest.approx(10.0)


@pytest.mark.parametrize("base, cap", [(-1, 10), (20, 10)])
def test_a_policy_needs_base_at_most_cap(base, cap):
    with pytest.raises(ValueError, match="base_ms <= max_ms"):
        BackoffPolicy(base, cap)


def test_the_config_builds_both_policies_from_its_options():
    config = ClientConfig(reconnect_backoff_ms=30, reconnect_backoff_max_ms=900, retry_backoff_ms=7,
                          retry_backoff_max_ms=70)
    assert config.reconnect_backoff == BackoffPolicy(30, 900)
    assert config.retry_backoff == BackoffPolicy(7, 70)


def test_a_retry_timer_fires_once_at_the_earliest_time_asked_for(loop):
    fired: list[float] = []
    timer = RetryTimer(loop, lambda: fired.append(loop.time()))
    start = loop.time()
    timer.arm_at(start + 0.05)
    timer.arm_at(start + 0.02)  # earlier: moves the timer
    timer.arm_at(start + 0.04)  # later: covered by the earlier call
    loop.run_until_complete(asyncio.sleep(0.08))
    assert len(fired) == 1 and 0.015 <= fired[0] - start < 0.04
    timer.arm_at(loop.time() + 0.01)
    timer.cancel()
    loop.run_until_complete(asyncio.sleep(0.03))
    assert len(fired) == 1, "a cancelled timer does not fire"


# --- the pool's reconnects -------------------------------------------------------------------------
# Each pool dials one FakeCluster node with real Connections; the node records when each connect
# reached it (loop time) and, from the connection's first request, which pool's client id made it.
def run_until(loop: asyncio.AbstractEventLoop, predicate, timeout: float = 10.0) -> None:
    async def wait() -> None:
        while not predicate():
            await asyncio.sleep(0.002)
    loop.run_until_complete(asyncio.wait_for(wait(), timeout))


def make_pool(loop, node: FakeNode, config: ClientConfig, **kw) -> ConnectionPool:
    pool = ConnectionPool(config, loop, **kw)
    pool.set_brokers({1: (node.host, node.port)})
    return pool


def attempt_times(node: FakeNode, client_id: str) -> list[float]:
    return [attempt.opened_at for attempt in node.attempts(client_id)]


def concordance(xs: list[float], ys: list[float]) -> float:
    """Kendall's tau: 1 when ys are in the order of xs, about 0 for unrelated orders."""
    pairs = [(i, j) for i in range(len(xs)) for j in range(i + 1, len(xs))]
    agree = sum(1 if (xs[i] - xs[j]) * (ys[i] - ys[j]) > 0 else -1 for i, j in pairs)
    return agree / len(pairs)


def test_pools_that_lose_a_broker_at_once_reconnect_at_spread_out_times(loop, fake_cluster):
    """A cluster restart: every client's connection drops in the same instant and its first
    reconnect is refused. Without jitter the second attempts would all land together one
    backoff later; with it they spread over the window.

    The spreading is checked on what each pool drew and on the order its reconnects reached the
    node, not on the node's clock alone: on this shared machine a loop stall can hold back a run
    of due reconnects and land them in one slice of time."""
    pools_count = 40
    base_ms = 200
    config = ClientConfig(reconnect_backoff_ms=base_ms, reconnect_backoff_max_ms=10 * base_ms)
    node = fake_cluster(1).nodes[1]
    rngs = [Recording(seed=i) for i in range(pools_count)]
    pools = [make_pool(loop, node, ClientConfig(client_id=f"pool-{i}", reconnect_backoff_ms=base_ms,
                                                reconnect_backoff_max_ms=10 * base_ms), rng=rngs[i])
             for i in range(pools_count)]
    conns: list[object] = []
    for pool in pools:
        pool.get(1, Role.PRODUCE, lambda c, e: conns.append(c))
    run_until(loop, lambda: len(conns) == pools_count)
    assert all(c is not None for c in conns)

    node.refuse_connections()
    node.drop_connections()
    run_until(loop, lambda: not any(pool.ready(1, Role.PRODUCE) for pool in pools))
    refused: list[KafkaError | None] = []
    for pool in pools:
        pool.get(1, Role.PRODUCE, lambda c, e: refused.append(e))
    run_until(loop, lambda: len(refused) == pools_count)
    assert all(e is not None and e.code == TRANSPORT for e in refused)
    assert all(len(attempt_times(node, f"pool-{i}")) == 2 for i in range(pools_count))
    failed_at = [attempt_times(node, f"pool-{i}")[-1] for i in range(pools_count)]

    # Each client asks again as soon as its connect failed; the pool waits out the backoff.
    node.accept_connections()
    back: list[NS] = []
    for i, pool in enumerate(pools):
        pool.get(1, Role.PRODUCE, lambda c, e, i=i: back.append(NS(index=i, err=e)))
    run_until(loop, lambda: len(back) == pools_count)
    assert all(b.err is None for b in back)
    assert all(len(attempt_times(node, f"pool-{i}")) == 3 for i in range(pools_count)), "one reconnect each"

    # One draw per pool (the refusal's), spread over the whole window: without jitter they would
    # all be one value; here no 5 ms slice holds more than a quarter of them (about 1 in 30 is
    # expected in each).
    assert all(len(rng.draws) == 1 for rng in rngs)
    draws_s = [rng.draws[0] / 1000 for rng in rngs]
    floor_s = config.reconnect_backoff.floor_ms / 1000
    window = (base_ms - config.reconnect_backoff.floor_ms) / 1000
    slices = Counter(int(d / 0.005) for d in draws_s)
    assert max(slices.values()) <= pools_count // 4, f"draws bunched up: {sorted(slices.items())}"
    assert max(draws_s) - min(draws_s) > 0.6 * window
    # On the wire: the node saw each refused attempt before the pool heard of the refusal and
    # started its wait, so the gap to the reconnect is at least the pool's draw ...
    retried_at = [attempt_times(node, f"pool-{i}")[-1] for i in range(pools_count)]
    waits = [r - f for r, f in zip(retried_at, failed_at, strict=True)]
    assert all(w >= max(floor_s, d) - 0.002 for w, d in zip(waits, draws_s, strict=True)), \
        "no reconnect came before its pool's backoff was over"
    # ... and the reconnects reached it in the order of the draws (a stall may shuffle a few).
    tau = concordance(draws_s, retried_at)
    assert tau > 0.5, f"reconnects out of the draws' order (tau {tau:.2f})"
    for pool in pools:
        pool.close()


def test_a_pools_failed_connects_wait_exponentially_longer_up_to_the_cap(loop, fake_cluster):
    """The slot's own backoff: each refused connect doubles the wait before the next one, to
    reconnect_backoff_max_ms; a success starts over from reconnect_backoff_ms."""
    config = ClientConfig(client_id="the-pool", reconnect_backoff_ms=10, reconnect_backoff_max_ms=80)
    node = fake_cluster(1).nodes[1]
    node.refuse_connections()
    pool = make_pool(loop, node, config, rng=Highest())
    expected_ms = [10, 20, 40, 80, 80]
    told: list[float] = []
    failures: list[KafkaError | None] = []

    def ask() -> None:
        pool.get(1, Role.ADMIN, on_result)

    def on_result(conn, err) -> None:
        failures.append(err)
        told.append(pool.retry_in_s(1, Role.ADMIN))
        if len(failures) <= len(expected_ms):
            ask()  # at once: the pool, not the caller, waits

    ask()
    run_until(loop, lambda: len(failures) == len(expected_ms) + 1)
    assert all(e is not None and e.code == TRANSPORT for e in failures)
    attempts = attempt_times(node, "the-pool")
    # Gaps between the node's accepts: each at least the wait the pool began after hearing of
    # the refusal (a lower bound; a slow loop only makes them longer).
    gaps_ms = [(b - a) * 1000 for a, b in zip(attempts, attempts[1:], strict=False)]
    assert len(attempts) == len(expected_ms) + 1
    for gap, expected in zip(gaps_ms, expected_ms, strict=True):
        assert gap >= expected - 2, f"waited {gaps_ms} ms, expected at least {expected_ms}"
    # What the pool tells a caller right after each failure is that failure's whole wait.
    assert [round(t * 1000) for t in told[:-1]] == pytest.approx(expected_ms, abs=2)

    node.accept_connections()
    ok: list[KafkaError | None] = []
    pool.get(1, Role.ADMIN, lambda c, e: ok.append(e))
    run_until(loop, lambda: ok)
    assert ok == [None]
    node.refuse_connections()
    node.drop_connections()
    run_until(loop, lambda: pool.ready(1, Role.ADMIN) is None)
    again: list[tuple[KafkaError | None, float]] = []
    pool.get(1, Role.ADMIN, lambda c, e: again.append((e, pool.retry_in_s(1, Role.ADMIN))))
    run_until(loop, lambda: again)
    [(err, retry_in_s)] = again
    assert err is not None and err.code == TRANSPORT
    assert retry_in_s == pytest.approx(0.010, abs=0.002), "a success reset the backoff"
    pool.close()


def test_a_caller_is_told_to_wait_at_least_the_floor(loop):
    """A node the pool has no address for fails at once and sets no backoff: the caller still
    waits the floor before asking again, rather than spinning."""
    config = ClientConfig()
    pool = ConnectionPool(config, loop)
    got: list[KafkaError | None] = []
    pool.get(7, Role.PRODUCE, lambda c, e: got.append(e))
    assert got and got[0] is not None
    assert pool.retry_in_s(7, Role.PRODUCE) == config.reconnect_backoff.floor_ms / 1000
    assert pool.retry_in_s(8, Role.FETCH) == config.reconnect_backoff.floor_ms / 1000
    pool.close()
