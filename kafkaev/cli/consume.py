"""``kafkaev consume TOPIC``: print records, from a position or as a group member."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from kafkaev.client import Client

from kafkaev.cli.common import (
    CliError,
    UsageError,
    add_brokers,
    new_client,
    on_stop_signals,
    require_topic,
    wait,
)
from kafkaev.cli.output import FORMAT_TOKENS, SAMPLE_FIELDS, formatter, json_record
from kafkaev.errors import KafkaError
from kafkaev.runner import stop as stop_delivering
from kafkaev.types import NO_OFFSET, OFFSET_BEGINNING, OFFSET_END

RELATIVE_PREFIX = "-"  # -o -N
START_TIME_PREFIXES = ("@", "s@")
STOP_TIME_PREFIX = "e@"
CLOSE_TIMEOUT_S = 10.0  # leaving the group and committing, at most
END_CHECK_S = 0.05  # with -e: how often the positions are compared with the end offsets


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "consume", help="print records of topics",
        description="Records are written to stdout byte for byte. SIGTERM or Ctrl-C ends the run cleanly: "
                    "a group member commits what was printed and leaves the group; the exit status is 0.")
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
    tokens = ", ".join(f"{t.decode()} {what}" for t, what in FORMAT_TOKENS.items()).replace("%", "%%")
    fields = " ".join("{" + name + "}" for name in SAMPLE_FIELDS)
    output.add_argument("-f", "--format", default="%s\\n",
                        help=f"output format, written byte for byte: kcat's tokens ({tokens}; braces are "
                             f"literal), or, with none of those, {fields} as in str.format ({{{{ }}}} for "
                             "literal braces); escapes \\n \\r \\t \\\\ \\xNN; checked before "
                             "consuming (default '%%s\\n')")
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
        raise UsageError(f"--offset must be {OFFSET_HELP}, got {text!r}") from None
    if value < 0:
        raise UsageError(f"--offset {prefix}<timestamp ms> must be >= 0, got {text!r}")
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
        raise UsageError(f"--offset must be {OFFSET_HELP}, got {text!r}") from None
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
                raise UsageError("--offset e@<ms> given twice")
            stop = _timestamp(text, STOP_TIME_PREFIX)
        elif start is not None:
            raise UsageError(f"--offset: two starts given ({first!r} and {text!r}); a second -o may only be e@<ms>")
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
        raise UsageError(f"--count must be >= 1, got {args.count}")
    for partition in args.partition or ():
        if partition < 0:
            raise UsageError(f"--partition must be >= 0, got {partition}")
    start, stop_ms = parse_offsets(args.offset)
    render = json_record if args.json else formatter(args.format, args.null)
    topics = list(dict.fromkeys(args.topics))  # a topic named twice is read once
    out = sys.stdout.buffer  # bytes, written as they are
    seen = 0
    failure: BaseException | None = None  # raised by printing a record: ends the run
    stopping = False  # set once the run is over: records still in flight are not printed
    flush_due = False  # a flush of stdout is scheduled after the records being delivered now
    following = False  # the loop runs until the end, a count or a stop signal
    watch: EndWatch | None = None
    client: Client

    def finished() -> bool:
        if failure is not None or (args.count is not None and seen >= args.count):
            return True
        return watch is not None and watch.reached()

    def on_message(msg: Any) -> None:
        # Checked after printing, not before: inside this callback position() already counts
        # the record being delivered, so a check first would take the last record for done.
        nonlocal seen, failure, stopping, flush_due
        if stopping or (watch is not None and not watch.keep(msg)):
            return
        try:
            out.write(render(msg))
            if not flush_due:  # once per delivered burst: a reader of the pipe sees records as they come
                flush_due = True
                client.loop.call_soon(flush_output)
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

    def flush_output() -> None:
        nonlocal flush_due, failure, stopping
        flush_due = False
        try:
            out.flush()
        except Exception as exc:  # noqa: BLE001 - a closed pipe
            failure = exc
            stopping = True
            stop_delivering(client.loop)

    def on_stop_signal() -> None:
        """SIGINT/SIGTERM: deliver nothing more; close() below commits and leaves the group."""
        nonlocal stopping
        stopping = True
        if following:  # while setting up, the flag is enough: the loop is not turned for records
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
    client = new_client(args, **options)
    loop = client.loop
    on_stop_signals(loop, on_stop_signal)
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
        if not finished() and not stopping:
            client.start()
            if watch is not None:
                loop.call_later(END_CHECK_S, check_end)
            following = True
            loop.run_forever()
            following = False
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
