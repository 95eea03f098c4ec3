"""What every subcommand shares: the broker option, user errors, and running the client's loop."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from kafkaev.errors import NONE, KafkaError, error_name
from kafkaev.local_broker import BROKERS_ENV, FALLBACK_BROKERS


class CliError(Exception):
    """A user mistake or an operation failure: printed as one line, exit status 1."""


def add_brokers(parser: argparse.ArgumentParser) -> None:
    # None: Client/Admin apply kafkaev.local_broker's rule, so the command line and Python agree.
    parser.add_argument("-b", "--brokers", default=None,
                        help=f"bootstrap brokers host:port,... (default: ${BROKERS_ENV}, else the broker "
                             f"'kafkaev broker start' runs, else {FALLBACK_BROKERS})")


def parse_key_values(items: list[str] | None, what: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"{what} must look like key=value, got {item!r}")
        result[key] = value
    return result


def new_client(brokers: str, **options: Any) -> Any:
    """A kafkaev.Client; imported here so that parsing arguments never needs the extension modules."""
    from kafkaev.client import Client

    return Client(brokers, **options)


def wait(loop: Any, start: Callable[[Callable[[Any, KafkaError | None], None]], None], what: str) -> Any:
    """Start a callback operation on ``loop`` and turn the loop until it reports; raise CliError on failure."""
    future = loop.create_future()

    def done(result: Any, err: KafkaError | None = None) -> None:
        if not future.done():
            if err is not None:
                future.set_exception(CliError(f"{what}: {err}"))
            else:
                future.set_result(result)

    loop.call_soon(start, done)
    return loop.run_until_complete(future)


def require_topic(client: Any, topic: str) -> None:
    """Fail at once on a topic the cluster does not have (the consumer itself would wait for it)."""
    from kafkaev.admin import Admin

    admin = Admin(client)
    try:
        info = wait(client.loop, lambda done: admin.describe_topics([topic], done), f"describe {topic}")[topic]
    finally:
        admin.close()
    if info.error_code != NONE:
        raise CliError(f"{topic}: {error_name(info.error_code)}")
