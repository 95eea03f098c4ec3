"""``kafkaev groups list|describe|lag``."""

from __future__ import annotations

import argparse

from kafkaev.cli.common import CliError, add_brokers, open_admin
from kafkaev.errors import KafkaError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("groups", help="list and describe consumer groups, show their lag")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list groups")
    describe = actions.add_parser("describe", help="state and members of groups")
    describe.add_argument("group_ids", nargs="+")
    lag = actions.add_parser("lag", help="committed offset, end offset and lag per partition")
    lag.add_argument("group_id")
    for sub in (listing, describe, lag):
        add_brokers(sub)


def run(args: argparse.Namespace) -> int:
    admin = open_admin(args)
    try:
        if args.action == "list":
            for g in sorted(admin.run(admin.list_groups)):
                print(f"{g.group_id}\t{g.state or '-'}\t{g.protocol_type or '-'}\tcoordinator {g.coordinator}")
        elif args.action == "describe":
            for group_id, d in admin.run(admin.describe_groups, args.group_ids).items():
                if d.error is not None:  # GROUP_ID_NOT_FOUND for a group never heard of
                    raise CliError(f"describe {group_id}: {d.error}")
                print(f"group {group_id} state {d.state} protocol {d.protocol_type}/{d.protocol or '-'} "
                      f"coordinator {d.coordinator} members {len(d.members)}")
                for m in d.members:
                    parts = ",".join(f"{tp.topic}[{tp.partition}]" for tp in m.assignment)
                    print(f"  {m.member_id} client {m.client_id} host {m.client_host} assigned {parts or '-'}")
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
