"""``kafkaev consume TOPIC``: print records, from a position or as a group member."""

from __future__ import annotations

import argparse
import asyncio
import re
import string
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkaev.client import Client

from kafkaev.cli.common import CliError, add_brokers, new_client, require_topic, wait
from kafkaev.errors import KafkaError
from kafkaev.types import NO_OFFSET, OFFSET_BEGINNING, OFFSET_END

# kcat-style placeholders.
FORMAT_TOKENS = {"%t": "topic", "%p": "partition", "%o": "offset", "%k": "key", "%v": "value",
                 "%T": "timestamp", "%h": "headers", "%%": "percent"}
TOKEN = re.compile("|".join(re.escape(t) for t in FORMAT_TOKENS))
PERCENT = re.compile("%(.?)", re.DOTALL)  # every '%' and what follows it, to find the unknown ones
FIELDS = tuple(name for name in FORMAT_TOKENS.values() if name != "percent")
# One record of each field's type: a brace format that renders it renders every record.
SAMPLE_FIELDS: dict[str, Any] = {"topic": "t", "partition": 0, "offset": 0, "key": "", "value": "",
                                 "timestamp": 0, "headers": "", "percent": "%"}
ESCAPES = {"\\n": "\n", "\\t": "\t"}
CLOSE_TIMEOUT_S = 10.0  # leaving the group and committing, at most
END_CHECK_S = 0.05  # with -e: how often the positions are compared with the end offsets

Render = Callable[[Any], str]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("consume", help="print records of a topic")
    parser.add_argument("topic")
    parser.add_argument("-G", "--group", help="consume as a member of this group (commits offsets)")
    parser.add_argument("-o", "--offset", default="end",
                        help="beginning | end | <offset> | @<timestamp ms> (default end; ignored with -G). "
                             "An <offset> outside a partition's range (from its first offset to its end "
                             "offset) is an error, never a silent restart elsewhere")
    parser.add_argument("-p", "--partition", type=int, action="append", help="only these partitions, repeatable")
    parser.add_argument("-f", "--format", default="%v\\n",
                        help="output format: kcat's %%t %%p %%o %%k %%v %%T %%h (%%%% for a literal %%; "
                             "braces are literal), or, with none of those, {topic} {partition} {offset} "
                             "{key} {value} {timestamp} {headers} as in str.format ({{ }} for literal "
                             "braces); checked before consuming (default '%%v\\n')")
    parser.add_argument("-c", "--count", type=int, help="exit after this many records")
    parser.add_argument("-e", "--exit", action="store_true",
                        help="exit once every partition read has reached the end offset it had at the "
                             "start (at once when it starts there)")
    add_brokers(parser)


def _text(data: Any) -> str:
    if data is None:
        return ""
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data).decode("utf-8", "backslashreplace")
    return str(data)


def _fields(msg: Any) -> dict[str, Any]:
    headers = ",".join(f"{_text(k)}={_text(v)}" for k, v in (msg.headers or ()))
    return {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset, "key": _text(msg.key),
            "value": _text(msg.value), "timestamp": msg.timestamp, "headers": headers, "percent": "%"}


def _check_percent_format(spec: str) -> None:
    for match in PERCENT.finditer(spec):
        if match.group(0) not in FORMAT_TOKENS:
            known = " ".join(t for t in FORMAT_TOKENS if t != "%%")
            raise CliError(f"--format: unknown placeholder {match.group(0)!r} (known: {known}; %% for a literal %)")


def _check_brace_format(spec: str) -> None:
    known = " ".join("{" + name + "}" for name in FIELDS)
    try:
        for _literal, field, _spec, _conversion in string.Formatter().parse(spec):
            if field is not None and field not in SAMPLE_FIELDS:
                raise CliError(f"--format: unknown field {{{field}}} (known: {known}; {{{{ and }}}} for literal braces)")
        spec.format_map(SAMPLE_FIELDS)
    except (KeyError, IndexError, ValueError, TypeError, AttributeError) as exc:
        raise CliError(f"--format: {exc} in {spec!r} ({{{{ and }}}} for literal braces)") from None


def formatter(spec: str) -> Render:
    """The record printer for ``spec``; a mistake in it is a CliError now, before any record is read.

    A spec with a kcat %-placeholder is read kcat's way, its braces literal (``%k {"v": %v}``);
    one without any is a str.format template when it has braces."""
    for escape, char in ESCAPES.items():
        spec = spec.replace(escape, char)
    if TOKEN.search(spec) is None and ("{" in spec or "}" in spec):
        _check_brace_format(spec)
        return lambda msg: spec.format_map(_fields(msg))
    _check_percent_format(spec)

    def render(msg: Any) -> str:
        values = _fields(msg)
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
            timestamp = int(text[1:])
            if timestamp < 0:
                raise CliError(f"--offset @<timestamp ms> must be >= 0, got {text!r}")
            return None, timestamp
        offset = int(text)
    except ValueError:
        raise CliError(f"--offset must be beginning, end, a number or @<timestamp ms>, got {text!r}") from None
    if offset < 0:
        raise CliError(f"--offset must be >= 0, got {offset}")
    return offset, None


def _check_in_range(topic: str, offset: int, ranges: dict[int, tuple[int, int]], partitions: list[int]) -> None:
    """An explicit offset must be one a partition has, or its end (wait for the next record)."""
    for p in partitions:
        earliest, end = ranges[p]
        if not earliest <= offset <= end:
            held = f"offsets {earliest} to {end - 1}" if end > earliest else "no records"
            raise CliError(f"--offset {offset} is out of range for {topic} partition {p}: it holds {held}, "
                           f"and --offset {end} (its end) waits for the next record")


class EndWatch:
    """With -e: which partitions are still short of the end offsets looked up at the start.

    A partition is done once its position (the next offset to deliver) reaches its end, whether
    records brought it there or it started there (an end offset, a committed offset at the end, a
    timestamp after the last record), so an empty read ends too."""

    def __init__(self, client: Client, topic: str, ends: dict[int, int], *, group: bool) -> None:
        self.client = client
        self.topic = topic
        self.ends = ends
        self.group = group
        self.assigned = not group  # a group member knows its partitions at its first assignment
        self.partitions: set[int] = set()
        self.done: set[int] = set()

    def on_assign(self, _partitions: Any) -> None:
        self.assigned = True

    def record(self, partition: int, offset: int) -> None:
        if offset + 1 >= self.ends.get(partition, 0):
            self.done.add(partition)

    def reached(self) -> bool:
        if not self.assigned:
            return False
        if self.group:
            self.partitions = {tp.partition for tp in self.client.assignment() if tp.topic == self.topic}
        for p in self.partitions - self.done:
            try:
                position = self.client.position(self.topic, p)
            except KafkaError:
                continue  # unassigned meanwhile: the next assignment says
            if position != NO_OFFSET and position >= self.ends[p]:
                self.done.add(p)
        return self.partitions <= self.done


def run(args: argparse.Namespace) -> int:
    if args.count is not None and args.count < 1:
        raise CliError(f"--count must be >= 1, got {args.count}")
    offset, timestamp = _start_offset(args.offset)
    render = formatter(args.format)
    out = sys.stdout
    seen = 0
    failure: BaseException | None = None  # raised by printing a record: ends the run
    watch: EndWatch | None = None
    client: Client

    def finished() -> bool:
        if failure is not None or (args.count is not None and seen >= args.count):
            return True
        return watch is not None and watch.reached()

    def on_message(msg: Any) -> None:
        nonlocal seen, failure
        if finished():
            return
        try:
            out.write(render(msg))
        except Exception as exc:  # noqa: BLE001 - a closed pipe, or a record the format cannot print
            failure = exc
            client.loop.stop()
            return
        seen += 1
        if watch is not None:
            watch.record(msg.partition, msg.offset)
        if finished():
            client.loop.stop()

    def check_end() -> None:
        if finished():
            client.loop.stop()
        else:
            client.loop.call_later(END_CHECK_S, check_end)

    options: dict[str, Any] = {"on_message": on_message}
    if args.group:
        options.update(group_id=args.group, auto_offset_reset="earliest" if args.offset == "beginning" else "latest")
    client = new_client(args.brokers, **options)
    loop = client.loop
    try:
        wait(loop, client.connect, "connect")
        require_topic(client, args.topic)
        ranges = wait(loop, lambda done: client.offsets_for(args.topic, done), f"offsets of {args.topic}")
        partitions = sorted(ranges)
        if args.partition:
            missing = set(args.partition) - set(partitions)
            if missing:
                raise CliError(f"{args.topic} has no partition {sorted(missing)[0]}")
            partitions = sorted(set(args.partition))
        if offset is not None and offset >= 0 and not args.group:
            _check_in_range(args.topic, offset, ranges, partitions)
        if args.exit:
            watch = EndWatch(client, args.topic, {p: end for p, (_, end) in ranges.items()}, group=bool(args.group))
            watch.partitions = set(partitions)
        if args.group:
            if watch is not None:
                client.subscribe([args.topic], on_assign=watch.on_assign)
            else:
                client.subscribe([args.topic])
        else:
            start = offset if offset is not None else OFFSET_END
            client.assign([(args.topic, p, start) for p in partitions])
            if timestamp is not None:
                for p in partitions:
                    client.seek_to_time(args.topic, p, timestamp)
        if not finished():
            client.start()
            if watch is not None:
                loop.call_later(END_CHECK_S, check_end)
            loop.run_forever()
        if failure is not None:
            raise failure
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
