"""``kafkaev topics list|create|delete|describe|alter``."""

from __future__ import annotations

import argparse

from kafkaev.admin import DEFAULT_PARTITIONS, DEFAULT_REPLICATION, NewPartitions, NewTopic
from kafkaev.cli.common import CliError, UsageError, add_brokers, open_admin, parse_key_values
from kafkaev.errors import NONE, KafkaError, error_name


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("topics", help="list, create, delete, describe and grow topics")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="list topics")
    listing.add_argument("--internal", action="store_true", help="include internal topics")
    create = actions.add_parser("create", help="create a topic")
    create.add_argument("name")
    create.add_argument("-p", "--partitions", type=int, help="partitions, >= 1 (default: the broker's num.partitions)")
    create.add_argument("-r", "--replication-factor", type=int,
                        help="replicas, >= 1 (default: the broker's default.replication.factor)")
    create.add_argument("-c", "--config", action="append", metavar="KEY=VALUE", help="topic config, repeatable")
    delete = actions.add_parser("delete", help="delete topics")
    delete.add_argument("names", nargs="+")
    describe = actions.add_parser("describe", help="partitions, leaders, replicas and ISR of topics")
    describe.add_argument("names", nargs="+")
    alter = actions.add_parser("alter", help="add partitions to a topic (kafka-topics.sh --alter --partitions)")
    alter.add_argument("name")
    alter.add_argument("-p", "--partitions", type=int, required=True,
                       help="the new total number of partitions, more than the topic has")
    alter.add_argument("--dry-run", action="store_true", help="let the broker check the change, apply nothing")
    for sub in (listing, create, delete, describe, alter):
        add_brokers(sub)


def _count(value: int | None, flag: str, broker_default: int) -> int:
    """A count the user gave (>= 1), or the broker's default when none was given."""
    if value is None:
        return broker_default
    if value < 1:
        raise UsageError(f"{flag} must be >= 1, got {value}")
    return value


def _raise_failures(results: dict[str, KafkaError | None], verb: str) -> None:
    failed = {name: err for name, err in results.items() if err is not None}
    if failed:
        raise CliError("; ".join(f"{verb} {name}: {err}" for name, err in failed.items()))


def run(args: argparse.Namespace) -> int:
    admin = open_admin(args)
    try:
        if args.action == "list":
            for name in admin.run(admin.list_topics, internal=args.internal):
                print(name)
        elif args.action == "create":
            topic = NewTopic(args.name, _count(args.partitions, "--partitions", DEFAULT_PARTITIONS),
                             _count(args.replication_factor, "--replication-factor", DEFAULT_REPLICATION),
                             parse_key_values(args.config, "--config"))
            _raise_failures(admin.run(admin.create_topics, [topic]), "create")
            print(f"created {args.name}")
        elif args.action == "delete":
            _raise_failures(admin.run(admin.delete_topics, args.names), "delete")
            for name in args.names:
                print(f"deleted {name}")
        elif args.action == "alter":
            total = _count(args.partitions, "--partitions", DEFAULT_PARTITIONS)
            _raise_failures(admin.run(admin.create_partitions, [NewPartitions(args.name, total)],
                                      validate_only=args.dry_run), "alter")
            print(f"{'would grow' if args.dry_run else 'grew'} {args.name} to {total} partitions")
        else:
            for name, info in admin.run(admin.describe_topics, args.names).items():
                if info.error_code != NONE:
                    raise CliError(f"describe {name}: {error_name(info.error_code)}")
                topic_id = f" id {info.topic_id}" if info.topic_id else ""
                print(f"topic {name}{topic_id} partitions {info.num_partitions}")
                for p in info.partitions:
                    replicas = ",".join(map(str, p.replicas))
                    isr = ",".join(map(str, p.isr))
                    print(f"  partition {p.partition} leader {p.leader} epoch {p.leader_epoch} "
                          f"replicas {replicas} isr {isr}")
    except KafkaError as exc:
        raise CliError(str(exc)) from None
    finally:
        admin.close()
    return 0
