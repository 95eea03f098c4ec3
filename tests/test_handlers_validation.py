"""kafkaev.Runner's configuration rules, one row each: the error names the consumer and the
option, and no two rules share a message. No broker: nothing starts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import kafkaev
from kafkaev.handlers.options import ConsumerOptions
from kafkaev.handlers.retry import MAX_RETRY_DELAY_MS, RetrySchedule

BROKERS = "127.0.0.1:1"  # never contacted: every row fails before anything starts


def handle(_msg: object) -> None:
    pass


def runner(**options: object) -> kafkaev.Runner:
    return kafkaev.Runner(BROKERS, **options)  # type: ignore[arg-type]


def add(r: kafkaev.Runner, name: object = "billing", topics: object = ("orders",), handler: object = handle,
        **options: object) -> None:
    r.consumer(name, topics, handler, **options)  # type: ignore[arg-type]


def twice(first: dict[str, object], second: dict[str, object]) -> Callable[[], None]:
    def attempt() -> None:
        r = runner()
        add(r, **first)  # type: ignore[arg-type]
        add(r, **second)  # type: ignore[arg-type]
    return attempt


RULES: list[tuple[str, Callable[[], None], str]] = [
    ("empty name", lambda: add(runner(), name=" ", group_id="g"), "a consumer's 'name' must be a non-empty str"),
    ("names unique", twice({"group_id": "g"}, {"topics": ["other"], "group_id": "g2"}),
     "consumer 'billing': 'name' is taken by another consumer"),
    ("a topic", lambda: add(runner(), topics=[], group_id="g"),
     "consumer 'billing': 'topics' must be a non-empty list"),
    ("topics a list, not a str", lambda: add(runner(), topics="orders", group_id="g"),
     "consumer 'billing': 'topics' must be a non-empty list of topic names, got 'orders'"),
    ("no empty topic", lambda: add(runner(), topics=["orders", ""], group_id="g"),
     "consumer 'billing': 'topics' must not hold an empty"),
    ("a handler", lambda: add(runner(), handler=None, group_id="g"),
     "consumer 'billing': 'handler' must be a callable"),
    ("a group", lambda: add(runner()), "consumer 'billing': 'group_id' must be a non-empty str"),
    ("dead-letter topic not empty", lambda: add(runner(), group_id="g", dead_letter_topic=""),
     "consumer 'billing': 'dead_letter_topic' must be a non-empty topic name"),
    ("dead-letter topic not its own", lambda: add(runner(), group_id="g", dead_letter_topic="orders"),
     "consumer 'billing': 'dead_letter_topic' must not be one of the consumer's own topics"),
    ("retry_backoff_ms > 0", lambda: add(runner(), group_id="g", retry_backoff_ms=0),
     "consumer 'billing': 'retry_backoff_ms' must be a number > 0, got 0"),
    ("max_retries >= 0", lambda: add(runner(), group_id="g", max_retries=-1),
     "consumer 'billing': 'max_retries' must be >= 0"),
    ("retry budget below the rebalance timeout",
     lambda: add(runner(rebalance_timeout_ms=60000), group_id="g", max_retries=6, retry_backoff_ms=1000),
     # 1 + 2 + 4 + 8 + 16 s, then the 30 s cap
     "consumer 'billing': 'max_retries' with retry_backoff_ms=1000 makes a retry budget of 61000 ms, not below "
     "rebalance_timeout_ms (60000 ms)"),
    ("no two consumers share a group and a topic",
     twice({"group_id": "g"}, {"name": "audit", "topics": ["payments", "orders"], "group_id": "g"}),
     "consumer 'audit': 'group_id' 'g' and topic 'orders' are also consumer 'billing''s"),
    ("ordering", lambda: add(runner(), group_id="g", ordering="offset"),
     "consumer 'billing': 'ordering' must be 'partition' or 'key', got 'offset'"),
    ("concurrency >= 1", lambda: add(runner(), group_id="g", concurrency=0),
     "consumer 'billing': 'concurrency' must be >= 1, got 0"),
    ("max_unprocessed >= 1", lambda: add(runner(), group_id="g", max_unprocessed=0),
     "consumer 'billing': 'max_unprocessed' must be >= 1, got 0"),
    ("the runner delivers", lambda: runner(on_message=handle), "'on_message' is set by the runner"),
    ("the runner commits", lambda: runner(auto_commit=True), "'auto_commit' is set by the runner"),
    ("shutdown_timeout_ms >= 0", lambda: runner(shutdown_timeout_ms=-1),
     "'shutdown_timeout_ms' must be an int >= 0, got -1"),
    ("start() needs a consumer", lambda: runner().start(), "start: no consumer"),
]


@pytest.mark.parametrize(("rule", "attempt", "message"), RULES, ids=[rule for rule, _, _ in RULES])
def test_each_rule_is_refused_with_its_own_message(rule: str, attempt: Callable[[], None], message: str) -> None:
    with pytest.raises(kafkaev.RunnerConfigError) as raised:
        attempt()
    assert message in str(raised.value), f"{rule}: {raised.value}"


def test_no_two_rules_share_a_message() -> None:
    messages = []
    for _rule, attempt, _message in RULES:
        with pytest.raises(kafkaev.RunnerConfigError) as raised:
            attempt()
        messages.append(str(raised.value))
    assert len(set(messages)) == len(messages)


def test_the_same_topic_in_two_groups_or_two_topics_in_one_group_is_fine() -> None:
    r = runner(group_id="default")
    add(r, name="a", topics=["orders"])
    add(r, name="b", topics=["orders"], group_id="other")
    add(r, name="c", topics=["payments"])  # same default group, another topic
    assert r.health().status == "DOWN" and set(r.health().reasons.values()) == {"not started"}
    assert r.stats("a").handled == 0
    with pytest.raises(KeyError, match="no consumer 'zz'"):
        r.stats("zz")


def test_a_bad_client_option_is_named_at_construction() -> None:
    with pytest.raises(TypeError, match="unknown option 'lingr_ms'; did you mean 'linger_ms'"):
        runner(lingr_ms=5)


def test_start_checks_again_and_consumer_after_start_is_refused(uv) -> None:
    r = runner(loop=uv, group_id="g")
    add(r)
    r._consumers.append(r._consumers[0])  # as if a rule were broken behind consumer()'s back
    with pytest.raises(kafkaev.RunnerConfigError, match="'name' is taken"):
        r.start()


def test_the_retry_schedule_doubles_and_stops_at_30_seconds() -> None:
    schedule = RetrySchedule(100.0)
    assert [schedule.delay_ms(n) for n in range(1, 5)] == [100, 200, 400, 800]
    assert schedule.delay_ms(20) == MAX_RETRY_DELAY_MS == 30000
    assert schedule.delay_ms(10**9) == MAX_RETRY_DELAY_MS
    assert schedule.budget_ms(3) == 700
    assert schedule.budget_ms(10**9) == 100 + 200 + 400 + 800 + 1600 + 3200 + 6400 + 12800 + 25600 + \
        (10**9 - 9) * 30000


def test_an_async_handler_is_told_apart() -> None:
    async def coroutine_handler(_msg: object) -> None:
        pass

    class AsyncCallable:
        async def __call__(self, _msg: object) -> None:
            pass

    def build(handler: object) -> ConsumerOptions:
        return ConsumerOptions.build("c", ["t"], handler, group_id="g", max_retries=0, retry_backoff_ms=1,
                                     dead_letter_topic=None, ordering="partition", concurrency=1, max_unprocessed=1)

    assert build(coroutine_handler).is_async and build(AsyncCallable()).is_async and not build(handle).is_async
