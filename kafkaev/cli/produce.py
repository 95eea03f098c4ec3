"""``kafkaev produce TOPIC``: records from stdin, one per line (or one per file)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from kafkaev.cli.common import (
    CliError,
    add_brokers,
    add_client_options,
    client_options,
    new_client,
    parse_pairs,
    wait,
)
from kafkaev.errors import MESSAGE_TOO_LARGE, KafkaError

ACKS_CHOICES = {"0": 0, "1": 1, "-1": -1, "all": -1}
TRAILING_POSITIONAL = "files"  # files may follow the options too (kafkaev/__main__.py)
FLUSH_EVERY = 10000  # records: on long inputs, let the loop send and free buffer memory

# (what the user calls it: "line 3" or a file's path, key, value)
Record = tuple[str, bytes | None, bytes]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "produce", help="produce stdin lines (or files) as records",
        description="Records are sent in order; the first one that cannot be sent (too large, say) "
                    "stops the run with exit status 1, after the records before it were sent.")
    parser.add_argument("topic")
    parser.add_argument("files", nargs="*", help="files to send, one record each (default: stdin lines)")
    parser.add_argument("-k", "--key-separator", metavar="SEP",
                        help="split each line into key SEP value at the first SEP; a line without SEP "
                             "is sent whole as the value, with no key (as kcat does)")
    parser.add_argument("-H", "--header", action="append", metavar="KEY=VALUE",
                        help="record header, repeatable; a name given twice is sent twice, in order")
    parser.add_argument("-p", "--partition", type=int, help="partition (default: the partitioner's choice)")
    parser.add_argument("--acks", choices=list(ACKS_CHOICES), default="all", help="required acks (default all)")
    parser.add_argument("-z", "--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none")
    parser.add_argument("--linger-ms", type=float, default=5.0, help="batching delay (default 5)")
    add_brokers(parser)
    add_client_options(parser)


def _records(args: argparse.Namespace) -> Iterator[Record]:
    if args.files:
        for path in args.files:
            try:
                with open(path, "rb") as f:
                    yield path, None, f.read()
            except OSError as exc:
                raise CliError(f"cannot read {path}: {exc.strerror}") from None
        return
    separator = args.key_separator.encode() if args.key_separator else None
    for number, line in enumerate(sys.stdin.buffer, 1):
        line = line.rstrip(b"\r\n")
        if separator is not None:
            key, sep, value = line.partition(separator)
            if sep:
                yield f"line {number}", key, value
                continue
        yield f"line {number}", None, line


def _plural(n: int) -> str:
    return f"{n} record" if n == 1 else f"{n} records"


def run(args: argparse.Namespace) -> int:
    if args.partition is not None and args.partition < 0:
        raise CliError(f"--partition must be >= 0, got {args.partition}")
    headers = [(k, v.encode()) for k, v in parse_pairs(args.header, "--header")] or None
    options: dict[str, Any] = {"acks": ACKS_CHOICES[args.acks], "compression": args.compression,
                               "linger_ms": args.linger_ms, "allow_auto_topic_creation": True}
    options.update(client_options(args.client_options))
    client = new_client(args.brokers, **options)
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
        for label, key, value in _records(args):
            try:
                client.produce(args.topic, key, value, delivered_as(label), partition=args.partition,
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
