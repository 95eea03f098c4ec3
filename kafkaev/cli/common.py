"""What every subcommand shares: the broker option, user errors, and running the client's loop."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import fields
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


# -X values by the ClientConfig field's annotation (a string: config.py defers annotations).
# Options that are Python objects (callables, the loop, SASLConfig) have no command-line form.
TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


def _parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError("expected true or false")


def _parse_names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


X_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": int, "float": float, "bool": _parse_bool, "str": str, "str | None": str,
    "tuple[str, ...]": _parse_names,
}
# Annotated Any in ClientConfig, but a bool on the command line: tls=true (the system's CAs).
X_SPECIAL: dict[str, Callable[[str], Any]] = {"tls": _parse_bool}
X_FLAGS = {"brokers": "-b"}  # options every command has a flag for


def add_client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-X", dest="client_options", action="append", metavar="KEY=VALUE",
                        help="any kafkaev.Client option (docs/options.md), repeatable, e.g. -X linger_ms=0; "
                             "the value is read as the option's type (int, float, bool true/false, str, "
                             "a comma-separated list for assignors); overrides the command's own flags")


def client_options(items: list[str] | None) -> dict[str, Any]:
    """-X key=value pairs as Client keyword arguments. An unknown key is passed on as it is, so that
    ClientConfig names it with its "did you mean"."""
    from kafkaev.config import ClientConfig

    annotations = {f.name: str(f.type) for f in fields(ClientConfig) if f.init}
    options: dict[str, Any] = {}
    for item in items or ():
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise CliError(f"-X must look like key=value, got {item!r}")
        if key not in annotations:
            options[key] = text
            continue
        if key in X_FLAGS:
            raise CliError(f"-X {key}: give it with {X_FLAGS[key]}")
        parse = X_SPECIAL.get(key) or X_PARSERS.get(annotations[key])
        if parse is None:
            raise CliError(f"-X {key}: this option is a Python object ({annotations[key]}) and has no "
                           f"command-line form")
        try:
            options[key] = parse(text)
        except ValueError:
            kind = "true or false" if parse is _parse_bool else annotations[key]
            raise CliError(f"-X {key}: expected {kind}, got {text!r}") from None
    return options


def parse_pairs(items: list[str] | None, what: str) -> list[tuple[str, str]]:
    """key=value items in order, a key repeated as often as given (record headers)."""
    pairs: list[tuple[str, str]] = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"{what} must look like key=value, got {item!r}")
        pairs.append((key, value))
    return pairs


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
