"""``kafkaev groups list|describe|lag|delete|reset-offsets``.

``reset-offsets`` follows ``kafka-consumer-groups.sh --reset-offsets``: a scope (``--topic t``,
``--topic t:0,2`` or ``--all-topics``: every partition the group committed), one target
(``--to-earliest``, ``--to-latest``, ``--to-datetime``, ``--to-timestamp``, ``--to-offset``,
``--shift-by``), and ``--execute`` to commit; without it the plan is only shown (``--dry-run``).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from kafkaev.admin import Admin, OffsetReset, PartitionReset
from kafkaev.cli.common import CliError, UsageError, add_brokers, open_admin
from kafkaev.errors import KafkaError
from kafkaev.types import NO_OFFSET, TopicPartition

MS_PER_S = 1000


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("groups", help="list, describe and delete consumer groups, show their lag, "
                                                  "reset their offsets")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list groups")
    listing.add_argument("--type", dest="types", action="append", metavar="TYPE",
                         help="only groups of this type (classic, consumer, share), repeatable")
    describe = actions.add_parser("describe", help="state and members of groups (classic or consumer protocol)")
    describe.add_argument("group_ids", nargs="+")
    lag = actions.add_parser("lag", help="committed offset, end offset and lag per partition")
    lag.add_argument("group_id")
    delete = actions.add_parser("delete", help="delete groups that have no members, with their offsets")
    delete.add_argument("group_ids", nargs="+")
    reset = actions.add_parser("reset-offsets", help="move a group's committed offsets (kafka-consumer-groups.sh "
                                                     "--reset-offsets); a dry run unless --execute")
    reset.add_argument("group_id")
    scope = reset.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P]", type=_topic_scope,
                       help="a topic, or some of its partitions (orders:0,2), repeatable")
    scope.add_argument("--all-topics", action="store_true", help="every partition the group has committed")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="the first offset still in the log")
    target.add_argument("--to-latest", action="store_true", help="the end of the log")
    target.add_argument("--to-datetime", metavar="ISO-8601", type=_datetime_ms,
                        help="the first record at or after this time, e.g. 2026-01-31T12:00:00Z (no zone: local)")
    target.add_argument("--to-timestamp", type=_at_least_zero, metavar="MS", help="the same, in ms since the epoch")
    target.add_argument("--to-offset", type=_at_least_zero, metavar="N", help="this offset (kept inside the log)")
    target.add_argument("--shift-by", type=int, metavar="N",
                        help="the committed offset plus N (negative: back; kept inside the log)")
    mode = reset.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the new offsets, commit nothing (the default)")
    mode.add_argument("--execute", action="store_true", help="commit the new offsets (the group must be empty)")
    for sub in (listing, describe, lag, delete, reset):
        add_brokers(sub)


# --- argument types: a malformed value is a usage error (exit status 2) --------------------------
def _at_least_zero(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def _datetime_ms(text: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO-8601 time: {text!r}") from None
    return int(moment.timestamp() * MS_PER_S)


def _topic_scope(text: str) -> str | list[TopicPartition]:
    """``orders`` (every partition) or ``orders:0,2`` (those partitions)."""
    name, sep, numbers = text.partition(":")
    if not name:
        raise argparse.ArgumentTypeError(f"needs a topic name, got {text!r}")
    if not sep:
        return name
    try:
        return [TopicPartition(name, int(p)) for p in numbers.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"partitions must be numbers, as in {name}:0,2; got {text!r}") from None


def _reset_spec(args: argparse.Namespace) -> OffsetReset:
    if args.to_earliest:
        return OffsetReset.to_earliest()
    if args.to_latest:
        return OffsetReset.to_latest()
    if args.to_offset is not None:
        return OffsetReset.to_offset(args.to_offset)
    if args.shift_by is not None:
        return OffsetReset.shift_by(args.shift_by)
    if args.to_timestamp is not None:
        return OffsetReset.to_timestamp(args.to_timestamp)
    return OffsetReset.to_timestamp(args.to_datetime)


def _scope(args: argparse.Namespace) -> tuple[list[str] | None, list[TopicPartition] | None]:
    """The topics (all their partitions) and single partitions --topic names; None for --all-topics."""
    if args.all_topics:
        return None, None
    topics: list[str] = []
    partitions: list[TopicPartition] = []
    for item in args.topic:
        if isinstance(item, str):
            topics.append(item)
        else:
            partitions.extend(item)
    if topics and partitions:
        raise UsageError("--topic: give whole topics or topic:partitions, not both in one reset")
    return (topics or None), (partitions or None)


def _print_plan(group_id: str, plan: list[PartitionReset], executed: bool) -> None:
    print("GROUP\tTOPIC\tPARTITION\tCURRENT\tNEW")
    for r in plan:
        current = "-" if r.current == NO_OFFSET else str(r.current)
        target = "-" if r.target == NO_OFFSET else str(r.target)
        print(f"{group_id}\t{r.topic}\t{r.partition}\t{current}\t{target}")
    if not executed:
        print("(dry run: nothing committed; add --execute to commit)", file=sys.stderr)


def _reset(admin: Admin, args: argparse.Namespace) -> None:
    spec = _reset_spec(args)
    topics, partitions = _scope(args)
    plan = admin.run(admin.reset_group_offsets, args.group_id, spec, topics=topics, partitions=partitions,
                     dry_run=not args.execute)
    if not plan:
        raise CliError(f"group {args.group_id} has no committed offsets to reset (no such group?)")
    _print_plan(args.group_id, plan, args.execute)
    failed = [r for r in plan if r.error is not None]
    if failed:
        raise CliError("; ".join(f"{r.topic}[{r.partition}]: {r.error}" for r in failed))


def run(args: argparse.Namespace) -> int:
    admin = open_admin(args)
    try:
        if args.action == "list":
            for g in sorted(admin.run(admin.list_groups, types=args.types or ())):
                print(f"{g.group_id}\t{g.state or '-'}\t{g.group_type or g.protocol_type or '-'}\t"
                      f"coordinator {g.coordinator}")
        elif args.action == "describe":
            for group_id, d in admin.run(admin.describe_consumer_groups, args.group_ids).items():
                if d.error is not None:  # GROUP_ID_NOT_FOUND for a group never heard of
                    raise CliError(f"describe {group_id}: {d.error}")
                epoch = f" epoch {d.group_epoch}" if d.group_epoch >= 0 else ""
                print(f"group {group_id} state {d.state} type {d.group_type} assignor {d.assignor or '-'}{epoch} "
                      f"coordinator {d.coordinator} members {len(d.members)}")
                for m in d.members:
                    parts = ",".join(f"{tp.topic}[{tp.partition}]" for tp in m.assignment)
                    print(f"  {m.member_id} client {m.client_id} host {m.client_host} assigned {parts or '-'}")
        elif args.action == "delete":
            failed = {g: e for g, e in admin.run(admin.delete_groups, args.group_ids).items() if e is not None}
            for group_id in args.group_ids:
                if group_id not in failed:
                    print(f"deleted {group_id}")
            if failed:
                raise CliError("; ".join(f"delete {g}: {e}" for g, e in failed.items()))
        elif args.action == "reset-offsets":
            _reset(admin, args)
        else:
            rows = admin.run(admin.group_lag, args.group_id)
            if not rows:
                raise CliError(f"group {args.group_id} has no committed offsets (no such group?)")
            print("TOPIC\tPARTITION\tCOMMITTED\tEND\tLAG")
            for r in rows:
                print(f"{r.topic}\t{r.partition}\t{r.committed}\t{r.end_offset}\t{r.lag}")
            print(f"total lag {sum(r.lag for r in rows)}")
    except KafkaError as exc:
        raise CliError(str(exc)) from None
    finally:
        admin.close()
    return 0
