"""``kafkaev produce TOPIC``: records from stdin, one per line (or one per file)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from kafkaev.cli.common import (
    CliError,
    StopRequested,
    StopSignals,
    UsageError,
    add_brokers,
    new_client,
    parse_pairs,
    produce_when_room,
    unescape,
    wait,
)
from kafkaev.errors import MESSAGE_TOO_LARGE, KafkaError

ACKS_CHOICES = {"0": 0, "1": 1, "-1": -1, "all": -1}
TRAILING_POSITIONAL = "files"  # files may follow the options too (kafkaev/__main__.py)
FLUSH_EVERY = 10000  # records: on long inputs, let the loop send and free buffer memory
READ_SIZE = 1 << 16  # bytes asked of stdin at a time (a pipe gives what it holds)
LINE_DELIMITER = b"\n"
CARRIAGE_RETURN = b"\r"  # dropped before the default delimiter: a text file written on Windows
ESCAPES_HELP = "escapes \\t \\n \\r \\\\ \\xNN allowed"

# (what the user calls it: "line 3" or a file's path, key, value)
Record = tuple[str, bytes | None, bytes]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "produce", help="produce stdin lines (or files) as records",
        description="Records are sent in order; the first one that cannot be sent (too large, say) "
                    "stops the run with exit status 1, after the records before it were sent. SIGTERM or "
                    "Ctrl-C stops reading stdin: what was read is sent, and the exit status is 0.")
    parser.add_argument("topic")
    parser.add_argument("files", nargs="*", help="files to send, one record each (default: stdin lines)")
    parser.add_argument("-k", "--key-separator", metavar="SEP",
                        help="split each record into key SEP value at the first SEP; a record without SEP "
                             f"is sent whole as the value, with no key (as kcat -K does); {ESCAPES_HELP}")
    parser.add_argument("-D", "--delimiter", metavar="DELIM",
                        help="what separates records on stdin (kcat -D; default a newline, with a carriage "
                             f"return before it dropped); the last record needs none; {ESCAPES_HELP}")
    parser.add_argument("-H", "--header", action="append", metavar="KEY=VALUE",
                        help="record header, repeatable; a name given twice is sent twice, in order")
    parser.add_argument("-p", "--partition", type=int, help="partition (default: the partitioner's choice)")
    parser.add_argument("--acks", choices=list(ACKS_CHOICES), default="all", help="required acks (default all)")
    parser.add_argument("-z", "--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none")
    parser.add_argument("--linger-ms", type=float, default=5.0, help="batching delay (default 5)")
    add_brokers(parser)


def _split(stream: Any, delimiter: bytes, signals: StopSignals) -> Iterator[bytes]:
    """The records of ``stream``, each delimited by ``delimiter`` (the last need not be). A stop
    signal while waiting for input ends it, after the bytes read so far (as a last record)."""
    pending = bytearray()
    searched = 0  # pending[:searched] holds no delimiter
    while True:
        signals.blocking = True
        try:
            chunk = stream.read1(READ_SIZE)
        except StopRequested:
            chunk = b""
        finally:
            signals.blocking = False
        if not chunk:
            break
        pending += chunk
        at = 0
        while (end := pending.find(delimiter, max(at, searched))) >= 0:
            yield bytes(pending[at:end])
            at = end + len(delimiter)
        del pending[:at]
        searched = max(0, len(pending) - len(delimiter) + 1)
        if signals.requested:
            break
    if pending:
        yield bytes(pending)


def _records(args: argparse.Namespace, signals: StopSignals) -> Iterator[Record]:
    if args.files:
        for path in args.files:
            try:
                with open(path, "rb") as f:
                    yield path, None, f.read()
            except OSError as exc:
                raise CliError(f"cannot read {path}: {exc.strerror}") from None
        return
    separator = _delimiter(args.key_separator, "--key-separator")
    delimiter = _delimiter(args.delimiter, "--delimiter") or LINE_DELIMITER
    for number, record in enumerate(_split(sys.stdin.buffer, delimiter, signals), 1):
        if args.delimiter is None and record.endswith(CARRIAGE_RETURN):
            record = record[:-len(CARRIAGE_RETURN)]
        label = f"line {number}" if args.delimiter is None else f"record {number}"
        if separator is not None:
            key, sep, value = record.partition(separator)
            if sep:
                yield label, key, value
                continue
        yield label, None, record


def _delimiter(text: str | None, flag: str) -> bytes | None:
    if text is None:
        return None
    delimiter = unescape(text, flag)
    if not delimiter:
        raise UsageError(f"{flag} must not be empty")
    return delimiter


def _plural(n: int) -> str:
    return f"{n} record" if n == 1 else f"{n} records"


def run(args: argparse.Namespace) -> int:
    if args.partition is not None and args.partition < 0:
        raise UsageError(f"--partition must be >= 0, got {args.partition}")
    headers = [(k, v.encode()) for k, v in parse_pairs(args.header, "--header")] or None
    _delimiter(args.key_separator, "--key-separator")  # checked before connecting
    _delimiter(args.delimiter, "--delimiter")
    signals = StopSignals()  # SIGINT/SIGTERM: stop reading, send what was read, exit 0
    signals.install()
    options: dict[str, Any] = {"acks": ACKS_CHOICES[args.acks], "compression": args.compression,
                               "linger_ms": args.linger_ms, "allow_auto_topic_creation": True}
    client = new_client(args, **options)
    max_size = client.config.max_request_size
    loop = client.loop
    wait(loop, client.connect, "connect")
    failures: list[tuple[str, KafkaError]] = []
    sent = 0

    def flush() -> None:
        wait(loop, lambda done: client.flush(lambda err: done(None, err)), "flush")

    def delivered_as(label: str) -> Any:
        def delivered(_meta: Any, err: KafkaError | None) -> None:
            if err is not None:
                failures.append((label, err))
        return delivered

    def refused(label: str, size: int, err: KafkaError) -> CliError:
        """The record produce() would not take: the ones before it are flushed, then said."""
        flush()
        if failures:
            before = f"{len(failures)} of the {_plural(sent)} before it failed too, none after it was sent"
        elif sent:
            before = "the record before it was sent" if sent == 1 else f"the {sent} records before it were sent"
            before += ", none after it"
        else:
            before = "nothing was sent"
        if err.code == MESSAGE_TOO_LARGE:
            return CliError(f"{label} ({size} bytes) is too large to send: a record and its framing must fit "
                            f"in max_request_size ({max_size} bytes); {before}")
        return CliError(f"{label}: {err}; {before}")

    try:
        for label, key, value in ([] if signals.requested else _records(args, signals)):
            try:
                # large records fill the buffer before FLUSH_EVERY: it waits for room
                produce_when_room(client, args.topic, key, value, delivered_as(label), partition=args.partition,
                                  headers=headers)
            except KafkaError as exc:
                raise refused(label, len(value) + len(key or b""), exc) from None
            sent += 1
            if sent % FLUSH_EVERY == 0:
                flush()
        flush()
    finally:
        wait(loop, lambda done: client.close(lambda err: done(None, None)), "close")
    if failures:
        label, err = failures[0]
        raise CliError(f"{len(failures)} of {sent} records failed, the first {label}: {err}")
    print(f"produced {_plural(sent)} to {args.topic}", file=sys.stderr)
    return 0
