"""``kafkaev produce TOPIC``: records from stdin, one per line (or one per file)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kafkaev.cli.common import CliError, add_brokers, new_client, parse_key_values, wait
from kafkaev.errors import KafkaError

ACKS_CHOICES = {"0": 0, "1": 1, "-1": -1, "all": -1}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("produce", help="produce stdin lines (or files) as records")
    parser.add_argument("topic")
    parser.add_argument("files", nargs="*", help="files to send, one record each (default: stdin lines)")
    parser.add_argument("-k", "--key-separator", metavar="SEP", help="split each line into key SEP value")
    parser.add_argument("-H", "--header", action="append", metavar="KEY=VALUE", help="record header, repeatable")
    parser.add_argument("-p", "--partition", type=int, help="partition (default: the partitioner's choice)")
    parser.add_argument("--acks", choices=list(ACKS_CHOICES), default="all", help="required acks (default all)")
    parser.add_argument("-z", "--compression", choices=["none", "gzip", "snappy", "lz4", "zstd"], default="none")
    parser.add_argument("--linger-ms", type=float, default=5.0, help="batching delay (default 5)")
    add_brokers(parser)


def _records(args: argparse.Namespace) -> Any:
    if args.files:
        for path in args.files:
            try:
                with open(path, "rb") as f:
                    yield None, f.read()
            except OSError as exc:
                raise CliError(f"cannot read {path}: {exc.strerror}") from None
        return
    separator = args.key_separator.encode() if args.key_separator else None
    for line in sys.stdin.buffer:
        line = line.rstrip(b"\r\n")
        if separator is not None:
            key, sep, value = line.partition(separator)
            if not sep:
                raise CliError(f"line without the key separator {args.key_separator!r}: {line[:60]!r}")
            yield key, value
        else:
            yield None, line


def run(args: argparse.Namespace) -> int:
    if args.partition is not None and args.partition < 0:
        raise CliError(f"--partition must be >= 0, got {args.partition}")
    headers = [(k, v.encode()) for k, v in parse_key_values(args.header, "--header").items()] or None
    client = new_client(args.brokers, acks=ACKS_CHOICES[args.acks], compression=args.compression,
                    linger_ms=args.linger_ms, allow_auto_topic_creation=True)
    loop = client.loop
    wait(loop, client.connect, "connect")
    failures: list[KafkaError] = []
    sent = 0

    def delivered(_meta: Any, err: KafkaError | None) -> None:
        if err is not None:
            failures.append(err)

    try:
        for key, value in _records(args):
            client.produce(args.topic, key, value, delivered, partition=args.partition, headers=headers)
            sent += 1
            if sent % 10000 == 0:  # let the loop send and free buffer memory on long inputs
                wait(loop, lambda done: client.flush(lambda err: done(None, err)), "flush")
        wait(loop, lambda done: client.flush(lambda err: done(None, err)), "flush")
    finally:
        wait(loop, lambda done: client.close(lambda err: done(None, None)), "close")
    if failures:
        raise CliError(f"{len(failures)} of {sent} records failed: {failures[0]}")
    print(f"produced {sent} records to {args.topic}", file=sys.stderr)
    return 0
