"""``kafkaev configs describe|alter``: configs of a topic, a broker, every broker or a group
(``kafka-configs.sh --describe`` / ``--alter``, always incremental).

``describe`` shows what was set on the resource (kafka-configs.sh's default), ``--all`` every
config with its source. ``alter`` applies ``--set k=v``, ``--delete k`` (back to the default),
``--append k=v`` and ``--subtract k=v`` (list configs) in one request.
"""

from __future__ import annotations

import argparse

from kafkaev.admin import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)
from kafkaev.cli.common import CliError, UsageError, add_brokers, open_admin, parse_pairs
from kafkaev.errors import KafkaError

# What kafka-configs.sh --describe lists without --all: values set on the resource or its broker.
SET_SOURCES = frozenset({ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG,
                         ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                         ConfigSource.GROUP_CONFIG, ConfigSource.CLIENT_METRICS_CONFIG})
SENSITIVE = "(sensitive)"


def _node_id(text: str) -> str:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"a broker's node id is a number, got {text!r}")
    return text


def _add_resource(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", help="a topic's configs")
    which.add_argument("--broker", metavar="NODE_ID", type=_node_id, help="one broker's configs")
    which.add_argument("--broker-defaults", action="store_true", help="the default of every broker")
    which.add_argument("--group", help="a group's configs (consumer and share groups)")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("configs", help="describe and alter configs of topics, brokers and groups")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    describe = actions.add_parser("describe", help="configs set on a resource (--all: every config)")
    _add_resource(describe)
    describe.add_argument("--all", action="store_true", help="every config, defaults included, with its source")
    alter = actions.add_parser("alter", help="set, delete, append to or subtract from configs")
    _add_resource(alter)
    alter.add_argument("--set", action="append", metavar="KEY=VALUE", help="set a config, repeatable")
    alter.add_argument("--delete", action="append", metavar="KEY", help="back to its default, repeatable")
    alter.add_argument("--append", action="append", metavar="KEY=VALUE", help="add to a list config, repeatable")
    alter.add_argument("--subtract", action="append", metavar="KEY=VALUE",
                       help="remove from a list config, repeatable")
    alter.add_argument("--dry-run", action="store_true", help="let the broker check the changes, apply nothing")
    for sub in (describe, alter):
        add_brokers(sub)


def _resource(args: argparse.Namespace) -> ConfigResource:
    if args.topic is not None:
        return ConfigResource(ConfigResourceType.TOPIC, args.topic)
    if args.group is not None:
        return ConfigResource(ConfigResourceType.GROUP, args.group)
    if args.broker_defaults:
        return ConfigResource(ConfigResourceType.BROKER, "")
    return ConfigResource(ConfigResourceType.BROKER, args.broker)


def _changes(args: argparse.Namespace) -> list[AlterConfigOp]:
    ops = [AlterConfigOp(k, v) for k, v in parse_pairs(args.set, "--set")]
    ops += [AlterConfigOp(k, v, AlterConfigOpType.APPEND) for k, v in parse_pairs(args.append, "--append")]
    ops += [AlterConfigOp(k, v, AlterConfigOpType.SUBTRACT) for k, v in parse_pairs(args.subtract, "--subtract")]
    ops += [AlterConfigOp(k, op=AlterConfigOpType.DELETE) for k in args.delete or ()]
    if not ops:
        raise UsageError("nothing to change: give --set, --delete, --append or --subtract")
    names = [op.name for op in ops]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"{twice[0]} is changed twice; one change per config")
    return ops


def _line(entry: ConfigEntry, with_source: bool) -> str:
    value = SENSITIVE if entry.is_sensitive else entry.value
    return f"{entry.name}={value}" + (f"\t{entry.source.name}" if with_source else "")


def run(args: argparse.Namespace) -> int:
    resource = _resource(args)
    admin = open_admin(args)
    try:
        if args.action == "describe":
            described = admin.run(admin.describe_configs, [resource])[resource]
            if described.error is not None:
                raise CliError(f"describe {_label(resource)}: {described.error}")
            for _name, entry in sorted(described.entries.items()):
                if args.all or entry.source in SET_SOURCES:
                    print(_line(entry, args.all))
        else:
            failure = admin.run(admin.incremental_alter_configs, {resource: _changes(args)},
                                validate_only=args.dry_run)[resource]
            if failure is not None:
                raise CliError(f"alter {_label(resource)}: {failure}")
            print(f"{'would alter' if args.dry_run else 'altered'} {_label(resource)}")
    except KafkaError as exc:
        raise CliError(str(exc)) from None
    finally:
        admin.close()
    return 0


def _label(resource: ConfigResource) -> str:
    if resource.type is ConfigResourceType.BROKER:
        return f"broker {resource.name}" if resource.name else "the broker defaults"
    return f"{resource.type.name.lower()} {resource.name}"
