"""``kafkaev consume TOPIC``: print records, from a position or as a group member."""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkaev.client import Client

from kafkaev.cli.common import CliError, add_brokers, new_client, require_topic, wait
from kafkaev.errors import KafkaError
from kafkaev.types import OFFSET_BEGINNING, OFFSET_END

# kcat-style placeholders.
FORMAT_TOKENS = {"%t": "topic", "%p": "partition", "%o": "offset", "%k": "key", "%v": "value",
                 "%T": "timestamp", "%h": "headers", "%%": "percent"}
TOKEN = re.compile("|".join(re.escape(t) for t in FORMAT_TOKENS))
ESCAPES = {"\\n": "\n", "\\t": "\t"}
CLOSE_TIMEOUT_S = 10.0  # leaving the group and committing, at most


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("consume", help="print records of a topic")
    parser.add_argument("topic")
    parser.add_argument("-G", "--group", help="consume as a member of this group (commits offsets)")
    parser.add_argument("-o", "--offset", default="end",
                        help="beginning | end | <offset> | @<timestamp ms> (default end; ignored with -G)")
    parser.add_argument("-p", "--partition", type=int, action="append", help="only these partitions, repeatable")
    parser.add_argument("-f", "--format", default="%v\\n",
                        help="output format: %%t %%p %%o %%k %%v %%T %%h, or {topic} {partition} {offset} "
                             "{key} {value} {timestamp} {headers} (default '%%v\\n')")
    parser.add_argument("-c", "--count", type=int, help="exit after this many records")
    parser.add_argument("-e", "--exit", action="store_true", help="exit at the end of the partitions")
    add_brokers(parser)


def _text(data: Any) -> str:
    if data is None:
        return ""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data).decode("utf-8", "backslashreplace")
    return str(data)


def formatter(spec: str) -> Any:
    for escape, char in ESCAPES.items():
        spec = spec.replace(escape, char)

    def fields(msg: Any) -> dict[str, Any]:
        headers = ",".join(f"{_text(k)}={_text(v)}" for k, v in (msg.headers or ()))
        return {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset, "key": _text(msg.key),
                "value": _text(msg.value), "timestamp": msg.timestamp, "headers": headers, "percent": "%"}

    if "{" in spec:
        def render_named(msg: Any) -> str:
            try:
                return spec.format_map(fields(msg))
            except (KeyError, IndexError, ValueError) as exc:
                raise CliError(f"bad --format field: {exc}") from None
        return render_named

    def render(msg: Any) -> str:
        values = fields(msg)
        return TOKEN.sub(lambda m: str(values[FORMAT_TOKENS[m.group(0)]]), spec)

    return render


def _start_offset(text: str) -> tuple[int | None, int | None]:
    """(offset, timestamp_ms) from the -o option."""
    if text == "beginning":
        return OFFSET_BEGINNING, None
    if text == "end":
        return OFFSET_END, None
    try:
        if text.startswith("@"):
            return None, int(text[1:])
        offset = int(text)
    except ValueError:
        raise CliError(f"--offset must be beginning, end, a number or @<timestamp ms>, got {text!r}") from None
    if offset < 0:
        raise CliError(f"--offset must be >= 0, got {offset}")
    return offset, None


def run(args: argparse.Namespace) -> int:
    if args.count is not None and args.count < 1:
        raise CliError(f"--count must be >= 1, got {args.count}")
    offset, timestamp = _start_offset(args.offset)
    render = formatter(args.format)
    out = sys.stdout
    seen = 0
    remaining_ends: dict[int, int] = {}
    client: Client

    def finished() -> bool:
        return (args.count is not None and seen >= args.count) or (args.exit and not remaining_ends)

    def on_message(msg: Any) -> None:
        nonlocal seen
        if finished():
            return
        out.write(render(msg))
        seen += 1
        end = remaining_ends.get(msg.partition)
        if end is not None and msg.offset + 1 >= end:
            del remaining_ends[msg.partition]
        if finished():
            client.loop.stop()

    options: dict[str, Any] = {"on_message": on_message}
    if args.group:
        options.update(group_id=args.group, auto_offset_reset="earliest" if args.offset == "beginning" else "latest")
    client = new_client(args.brokers, **options)
    loop = client.loop
    try:
        wait(loop, client.connect, "connect")
        require_topic(client, args.topic)
        ends = wait(loop, lambda done: client.offsets_for(args.topic, done), f"offsets of {args.topic}")
        partitions = sorted(ends)
        if args.partition:
            missing = set(args.partition) - set(partitions)
            if missing:
                raise CliError(f"{args.topic} has no partition {sorted(missing)[0]}")
            partitions = sorted(set(args.partition))
        if args.exit:
            remaining_ends.update({p: ends[p][1] for p in partitions if ends[p][1] > ends[p][0]})
        if args.group:
            client.subscribe([args.topic])
        else:
            if offset is not None and offset >= 0:
                start = offset
            else:
                start = offset if offset is not None else OFFSET_END
            client.assign([(args.topic, p, start) for p in partitions])
            if timestamp is not None:
                for p in partitions:
                    client.seek_to_time(args.topic, p, timestamp)
            if args.exit and offset == OFFSET_END:
                remaining_ends.clear()  # from the end, the end is already reached
        if not finished():
            client.start()
            loop.run_forever()
        out.flush()
    except KafkaError as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        pass
    finally:
        try:
            client.stop()
            closed = loop.create_future()

            def on_closed(_err: KafkaError | None) -> None:
                if not closed.done():
                    closed.set_result(None)

            client.close(on_closed)
            loop.run_until_complete(asyncio.wait_for(closed, CLOSE_TIMEOUT_S))
        except (RuntimeError, asyncio.TimeoutError):
            pass  # closing is best effort once the records are printed
    print(f"consumed {seen} records", file=sys.stderr)
    return 0
