"""``kafkaev consume TOPIC``: print records, from a position or as a group member."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import re
import string
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from kafkaev.client import Client

from kafkaev.cli.common import (
    CliError,
    add_brokers,
    add_client_options,
    client_options,
    new_client,
    require_topic,
    wait,
)
from kafkaev.errors import KafkaError
from kafkaev.runner import stop as stop_delivering
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
NULL_TEXT = "NULL"  # -Z: what a null key or value prints as (kcat's word)
BASE64_MARKER = "base64"  # -J: {"base64": "..."} holds bytes that are not UTF-8
RELATIVE_PREFIX = "-"  # -o -N
START_TIME_PREFIXES = ("@", "s@")
STOP_TIME_PREFIX = "e@"
ESCAPES = {"\\n": "\n", "\\t": "\t"}
CLOSE_TIMEOUT_S = 10.0  # leaving the group and committing, at most
END_CHECK_S = 0.05  # with -e: how often the positions are compared with the end offsets

Render = Callable[[Any], str]


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("consume", help="print records of topics")
    parser.add_argument("topics", nargs="+", metavar="topic", help="one or more topics")
    parser.add_argument("-G", "--group", help="consume as a member of this group (commits offsets)")
    parser.add_argument("-o", "--offset", action="append", metavar="OFFSET",
                        help="where to start: beginning | end | <offset> | -<N> (N before each partition's "
                             "end, or its first offset) | @<ms> or s@<ms> (the first record at or after a "
                             "timestamp); and where to stop: e@<ms> (stop a partition at its first record "
                             "at or after that timestamp, not printed; give it as a second -o). Default end; "
                             "ignored with -G but for beginning. An <offset> outside a partition's range "
                             "(from its first offset to its end offset) is an error, never a silent restart")
    parser.add_argument("-p", "--partition", type=int, action="append",
                        help="only these partitions (of every topic), repeatable")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("-f", "--format", default="%v\\n",
                        help="output format: kcat's %%t %%p %%o %%k %%v %%T %%h (%%%% for a literal %%; "
                             "braces are literal), or, with none of those, {topic} {partition} {offset} "
                             "{key} {value} {timestamp} {headers} as in str.format ({{ }} for literal "
                             "braces); checked before consuming (default '%%v\\n')")
    output.add_argument("-J", "--json", action="store_true",
                        help="one JSON object per record: topic, partition, offset, timestamp, key, value, "
                             "headers ([[name, value], ...]); key, value and header values are strings when "
                             "they are UTF-8, else {\"base64\": \"...\"}, and null when null")
    parser.add_argument("-Z", "--null", action="store_true",
                        help="print a null key or value as NULL (default: as empty, like an empty one)")
    parser.add_argument("-c", "--count", type=int, help="exit after this many records")
    parser.add_argument("-e", "--exit", action="store_true",
                        help="exit once every partition read has reached the end offset it had at the "
                             "start (at once when it starts there)")
    add_brokers(parser)
    add_client_options(parser)


def _text(data: Any, null: str = "") -> str:
    if data is None:
        return null
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data).decode("utf-8", "backslashreplace")
    return str(data)


def _fields(msg: Any, null: str = "") -> dict[str, Any]:
    headers = ",".join(f"{_text(k)}={_text(v)}" for k, v in (msg.headers or ()))
    return {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset, "key": _text(msg.key, null),
            "value": _text(msg.value, null), "timestamp": msg.timestamp, "headers": headers, "percent": "%"}


def _json_data(data: Any) -> Any:
    """Text as a JSON string, other bytes as {"base64": ...}: a value is never silently altered."""
    if data is None or isinstance(data, str):
        return data
    raw = bytes(data)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return {BASE64_MARKER: base64.b64encode(raw).decode("ascii")}


def json_record(msg: Any) -> str:
    record = {"topic": msg.topic, "partition": msg.partition, "offset": msg.offset, "timestamp": msg.timestamp,
              "key": _json_data(msg.key), "value": _json_data(msg.value),
              "headers": [[_json_data(k), _json_data(v)] for k, v in (msg.headers or ())]}
    return json.dumps(record, ensure_ascii=False) + "\n"


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


def formatter(spec: str, null: str = "") -> Render:
    """The record printer for ``spec``; a mistake in it is a CliError now, before any record is read.

    A spec with a kcat %-placeholder is read kcat's way, its braces literal (``%k {"v": %v}``);
    one without any is a str.format template when it has braces."""
    for escape, char in ESCAPES.items():
        spec = spec.replace(escape, char)
    if TOKEN.search(spec) is None and ("{" in spec or "}" in spec):
        _check_brace_format(spec)
        return lambda msg: spec.format_map(_fields(msg, null))
    _check_percent_format(spec)

    def render(msg: Any) -> str:
        values = _fields(msg, null)
        return TOKEN.sub(lambda m: str(values[FORMAT_TOKENS[m.group(0)]]), spec)

    return render


class Start(NamedTuple):
    """Where -o starts each partition: one of an absolute offset (or OFFSET_BEGINNING/END), a count
    back from the end, or a timestamp."""

    offset: int | None = OFFSET_END
    back: int | None = None
    timestamp: int | None = None


OFFSET_HELP = "beginning, end, a number, -<N>, @<ms>, s@<ms> or e@<ms>"


def _timestamp(text: str, prefix: str) -> int:
    try:
        value = int(text[len(prefix):])
    except ValueError:
        raise CliError(f"--offset must be {OFFSET_HELP}, got {text!r}") from None
    if value < 0:
        raise CliError(f"--offset {prefix}<timestamp ms> must be >= 0, got {text!r}")
    return value


def _start_offset(text: str) -> Start:
    if text == "beginning":
        return Start(OFFSET_BEGINNING)
    if text == "end":
        return Start(OFFSET_END)
    for prefix in START_TIME_PREFIXES:
        if text.startswith(prefix):
            return Start(None, timestamp=_timestamp(text, prefix))
    try:
        offset = int(text)
    except ValueError:
        raise CliError(f"--offset must be {OFFSET_HELP}, got {text!r}") from None
    if text.startswith(RELATIVE_PREFIX):
        return Start(None, back=-offset)
    return Start(offset)


def parse_offsets(items: list[str] | None) -> tuple[Start, int | None]:
    """(the start, the e@ stop timestamp or None) from the -o options: at most one of each."""
    start: Start | None = None
    first = ""
    stop: int | None = None
    for text in items or ():
        if text.startswith(STOP_TIME_PREFIX):
            if stop is not None:
                raise CliError("--offset e@<ms> given twice")
            stop = _timestamp(text, STOP_TIME_PREFIX)
        elif start is not None:
            raise CliError(f"--offset: two starts given ({first!r} and {text!r}); a second -o may only be e@<ms>")
        else:
            start, first = _start_offset(text), text
    return start or Start(), stop


def _check_in_range(topic: str, offset: int, ranges: dict[int, tuple[int, int]], partitions: list[int]) -> None:
    """An explicit offset must be one a partition has, or its end (wait for the next record)."""
    for p in partitions:
        earliest, end = ranges[p]
        if not earliest <= offset <= end:
            held = f"offsets {earliest} to {end - 1}" if end > earliest else "no records"
            raise CliError(f"--offset {offset} is out of range for {topic} partition {p}: it holds {held}, "
                           f"and --offset {end} (its end) waits for the next record")


TP = tuple[str, int]  # (topic, partition)


class EndWatch:
    """With -e or e@<ms>: which partitions are still to be read.

    With -e a partition is done once its position (the next offset to deliver) reaches the end
    offset looked up at the start, whether records brought it there or it started there (an end
    offset, a committed offset at the end, a timestamp after the last record), so an empty read
    ends too. With e@<ms> it is done at its first record at or after that time."""

    def __init__(self, client: Client, topics: list[str], ends: dict[TP, int] | None, stop_ms: int | None, *,
                 group: bool) -> None:
        self.client = client
        self.topics = set(topics)
        self.ends = ends  # None: no -e
        self.stop_ms = stop_ms
        self.group = group
        self.assigned = not group  # a group member knows its partitions at its first assignment
        self.partitions: set[TP] = set()
        self.done: set[TP] = set()

    def on_assign(self, _partitions: Any) -> None:
        self.assigned = True

    def keep(self, msg: Any) -> bool:
        """Whether to print ``msg``: not past its partition's e@ time, nor after it."""
        tp = (msg.topic, msg.partition)
        if tp in self.done and self.stop_ms is not None:
            return False
        if self.stop_ms is not None and msg.timestamp >= self.stop_ms:
            self.done.add(tp)
            return False
        if self.ends is not None and msg.offset + 1 >= self.ends.get(tp, 0):
            self.done.add(tp)
        return True

    def reached(self) -> bool:
        if not self.assigned:
            return False
        if self.group:
            self.partitions = {(tp.topic, tp.partition) for tp in self.client.assignment() if tp.topic in self.topics}
        if self.ends is not None:
            for topic, p in self.partitions - self.done:
                try:
                    position = self.client.position(topic, p)
                except KafkaError:
                    continue  # unassigned meanwhile: the next assignment says
                if position != NO_OFFSET and position >= self.ends[(topic, p)]:
                    self.done.add((topic, p))
        return self.partitions <= self.done


def run(args: argparse.Namespace) -> int:
    if args.count is not None and args.count < 1:
        raise CliError(f"--count must be >= 1, got {args.count}")
    start, stop_ms = parse_offsets(args.offset)
    render = json_record if args.json else formatter(args.format, NULL_TEXT if args.null else "")
    extra = client_options(args.client_options)
    topics = list(dict.fromkeys(args.topics))  # a topic named twice is read once
    out = sys.stdout
    seen = 0
    failure: BaseException | None = None  # raised by printing a record: ends the run
    stopping = False  # set once the run is over: records still in flight are not printed
    watch: EndWatch | None = None
    client: Client

    def finished() -> bool:
        if failure is not None or (args.count is not None and seen >= args.count):
            return True
        return watch is not None and watch.reached()

    def on_message(msg: Any) -> None:
        # Checked after printing, not before: inside this callback position() already counts
        # the record being delivered, so a check first would take the last record for done.
        nonlocal seen, failure, stopping
        if stopping or (watch is not None and not watch.keep(msg)):
            return
        try:
            out.write(render(msg))
        except Exception as exc:  # noqa: BLE001 - a closed pipe, or a record the format cannot print
            failure = exc
            stopping = True
            stop_delivering(client.loop)
            return
        seen += 1
        if finished():
            # kafkaev.stop: no further record is handed over, so a group member's closing
            # commit covers exactly what was printed.
            stopping = True
            stop_delivering(client.loop)

    def check_end() -> None:
        if finished():
            client.loop.stop()
        else:
            client.loop.call_later(END_CHECK_S, check_end)

    options: dict[str, Any] = {"on_message": on_message}
    if args.group:
        options.update(group_id=args.group,
                       auto_offset_reset="earliest" if start.offset == OFFSET_BEGINNING else "latest")
    options.update(extra)
    client = new_client(args.brokers, **options)
    loop = client.loop
    try:
        wait(loop, client.connect, "connect")
        ranges: dict[TP, tuple[int, int]] = {}
        partitions: list[TP] = []
        def offsets_of(topic: str) -> dict[int, tuple[int, int]]:
            return wait(loop, lambda done: client.offsets_for(topic, done), f"offsets of {topic}")  # type: ignore[no-any-return]

        for topic in topics:
            require_topic(client, topic)
            found = offsets_of(topic)
            ranges.update({(topic, p): span for p, span in found.items()})
            chosen = sorted(found)
            if args.partition:
                missing = set(args.partition) - set(chosen)
                if missing:
                    raise CliError(f"{topic} has no partition {sorted(missing)[0]}")
                chosen = sorted(set(args.partition))
            if start.offset is not None and start.offset >= 0 and not args.group:
                _check_in_range(topic, start.offset, {p: ranges[(topic, p)] for p in chosen}, chosen)
            partitions.extend((topic, p) for p in chosen)
        if args.exit or stop_ms is not None:
            ends = {tp: end for tp, (_, end) in ranges.items()} if args.exit else None
            watch = EndWatch(client, topics, ends, stop_ms, group=bool(args.group))
            watch.partitions = set(partitions)
        if args.group:
            if watch is not None:
                client.subscribe(topics, on_assign=watch.on_assign)
            else:
                client.subscribe(topics)
        else:
            assignment = []
            for topic, p in partitions:
                if start.back is not None:  # N before the end, never before the first offset
                    earliest, end = ranges[(topic, p)]
                    assignment.append((topic, p, max(earliest, end - start.back)))
                else:
                    assignment.append((topic, p, start.offset if start.offset is not None else OFFSET_END))
            client.assign(assignment)
            if start.timestamp is not None:
                for topic, p in partitions:
                    client.seek_to_time(topic, p, start.timestamp)
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
