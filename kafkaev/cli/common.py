"""What every subcommand shares: the broker option, user errors, and running the client's loop."""

from __future__ import annotations

import argparse
import os
import re
import signal
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from kafkaev.errors import NONE, BufferFullError, KafkaError, error_name
from kafkaev.local_broker import BROKERS_ENV, FALLBACK_BROKERS


class CliError(Exception):
    """An operation failure (or a value the cluster refuses): printed as one line, exit status 1."""


class UsageError(CliError):
    """A mistake in the command line itself (a malformed or contradictory option value): printed
    as one line, exit status 2, as argparse's own usage errors."""


EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


def add_brokers(parser: argparse.ArgumentParser) -> None:
    """The options of every subcommand that talks to a broker: -b, the TLS/SASL flags and -X."""
    from kafkaev.cli.security import add_security

    # None: Client/Admin apply kafkaev.local_broker's rule, so the command line and Python agree.
    parser.add_argument("-b", "--brokers", default=None,
                        help=f"bootstrap brokers host:port,... (default: ${BROKERS_ENV}, else the broker "
                             f"'kafkaev broker start' runs, else {FALLBACK_BROKERS})")
    add_client_options(parser)
    add_security(parser)


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


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """The Client keyword arguments the command line asked for: -X key=value pairs, and ``tls`` /
    ``sasl`` from the security flags and -X security properties. An unknown key is passed on as it
    is, so that ClientConfig names it with its "did you mean"."""
    from kafkaev.cli.security import SASL_PLAINTEXT, SecuritySettings, quiet_plaintext_credentials
    from kafkaev.config import ClientConfig

    annotations = {f.name: str(f.type) for f in fields(ClientConfig) if f.init}
    security = SecuritySettings.from_args(args)
    options: dict[str, Any] = {}
    for item in getattr(args, "client_options", None) or ():
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(f"-X must look like key=value, got {item!r}")
        if security.take_property(key, text):
            continue
        if key not in annotations:
            options[key] = text
            continue
        if key in X_FLAGS:
            raise UsageError(f"-X {key}: give it with {X_FLAGS[key]}")
        parse = X_SPECIAL.get(key) or X_PARSERS.get(annotations[key])
        if parse is None:
            raise UsageError(f"-X {key}: this option is a Python object ({annotations[key]}) and has no "
                             f"command-line form")
        try:
            options[key] = parse(text)
        except ValueError:
            kind = "true or false" if parse is _parse_bool else annotations[key]
            raise UsageError(f"-X {key}: expected {kind}, got {text!r}") from None
    secured = security.client_options()
    if "tls" in options and "tls" in secured:
        raise UsageError("-X tls and the TLS flags (or security.protocol) both set TLS: give one")
    if security.protocol() == SASL_PLAINTEXT:
        quiet_plaintext_credentials()
    return {**options, **secured}


# kcat's escapes in delimiters and -f formats: \n \r \t, \\ for a backslash, \xNN for any byte.
# Another backslash stays as it is (kcat keeps them too).
ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|x|[nrt\\])")
ESCAPED = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"\\": b"\\"}


def unescape(text: str, flag: str) -> bytes:
    """``text`` (a command-line word) with its escapes replaced, as bytes: what the user typed
    needs no encoding round trip (os.fsencode gives back the bytes of any argv word)."""

    def replace(match: re.Match[bytes]) -> bytes:
        code = match.group(1)
        if code == b"x":
            raise UsageError(f"{flag}: \\x needs two hex digits (\\x09 is a tab), in {text!r}")
        if code[:1] == b"x":
            return bytes([int(code[1:], 16)])
        return ESCAPED[code]

    return ESCAPE.sub(replace, os.fsencode(text))


def parse_pairs(items: list[str] | None, what: str) -> list[tuple[str, str]]:
    """key=value items in order, a key repeated as often as given (record headers)."""
    pairs: list[tuple[str, str]] = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} must look like key=value, got {item!r}")
        pairs.append((key, value))
    return pairs


def parse_key_values(items: list[str] | None, what: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} must look like key=value, got {item!r}")
        result[key] = value
    return result


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # both ask a command to finish cleanly, as kcat takes them


class StopRequested(Exception):
    """SIGINT or SIGTERM arrived while the command was blocked reading its input."""


class StopSignals:
    """SIGINT and SIGTERM as a request to finish cleanly, for a command that blocks outside the
    loop (produce reading stdin): ``requested`` is set; inside ``reading()`` the signal also
    interrupts the blocking read (StopRequested). While the loop runs the flag is all it does,
    so no callback is cut in half."""

    def __init__(self) -> None:
        self.requested = False
        self.blocking = False

    def install(self) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, _signum: int, _frame: object) -> None:
        if self.requested:  # asked twice: stop now, without finishing the flush
            raise KeyboardInterrupt
        self.requested = True
        if self.blocking:
            self.blocking = False
            raise StopRequested


def on_stop_signals(loop: Any, stop: Callable[[], None]) -> None:
    """SIGINT and SIGTERM call ``stop`` from ``loop`` (a command whose work runs in the loop)."""
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop)


def new_client(args: argparse.Namespace, **options: Any) -> Any:
    """A kafkaev.Client for ``-b`` with the command's ``options``, then -X and the security flags
    (which override them); imported here so that parsing arguments never needs the extension modules."""
    from kafkaev.client import Client

    return Client(args.brokers, **{**options, **client_options(args)})


def open_admin(args: argparse.Namespace) -> Any:
    """A kafkaev.Admin for ``-b``, -X and the security flags."""
    from kafkaev.admin import Admin

    return Admin(args.brokers, **client_options(args))


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


def produce_when_room(client: Any, topic: str, key: bytes | None, value: bytes, cb: Any = None, *,
                      partition: int | None = None, headers: Any = None) -> None:
    """``client.produce(...)``; while the producer's buffer is full (BufferFullError), turn the
    loop until ``Client.on_buffer_room`` says there is room (the records before are sent and
    acknowledged meanwhile, or their topic's metadata arrives), then produce it. A record that
    could never fit raises MESSAGE_TOO_LARGE at once, as any other refusal."""
    while True:
        try:
            client.produce(topic, key, value, cb, partition=partition, headers=headers)
            return
        except BufferFullError:
            wait(client.loop, lambda done: client.on_buffer_room(lambda: done(None, None)), "buffer room")


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
