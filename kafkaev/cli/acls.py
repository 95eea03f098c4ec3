"""``kafkaev acls create|describe|delete`` (``kafka-acls.sh --add`` / ``--list`` / ``--remove``).

A resource is one of ``--topic``, ``--group``, ``--transactional-id``, ``--cluster``, with
``--pattern literal|prefixed`` (a filter may also say ``any`` or ``match``); a binding names its
``--principal``, ``--host`` (default ``*``), one or more ``--operation`` and ``--deny`` to forbid
rather than allow. ``describe`` and ``delete`` select by whatever flags are given; ``delete``
needs at least one.
"""

from __future__ import annotations

import argparse

from kafkaev.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkaev.cli.common import CliError, UsageError, add_brokers, open_admin
from kafkaev.errors import KafkaError

CLUSTER_NAME = "kafka-cluster"  # the one name of the CLUSTER resource
ANY_HOST = "*"
BINDING_OPERATIONS = [op.name.lower() for op in AclOperation if op not in (AclOperation.UNKNOWN, AclOperation.ANY)]
BINDING_PATTERNS = ("literal", "prefixed")
FILTER_PATTERNS = ("literal", "prefixed", "any", "match")


def _add_selection(parser: argparse.ArgumentParser, *, filtering: bool) -> None:
    which = parser.add_mutually_exclusive_group(required=not filtering)
    which.add_argument("--topic", help="a topic (or, --pattern prefixed, a name prefix)")
    which.add_argument("--group", help="a consumer group")
    which.add_argument("--transactional-id", help="a transactional id")
    which.add_argument("--cluster", action="store_true", help="the cluster itself")
    parser.add_argument("--pattern", choices=FILTER_PATTERNS if filtering else BINDING_PATTERNS,
                        default="any" if filtering else "literal",
                        help="how the name matches (default: %(default)s)")
    parser.add_argument("--principal", required=not filtering, help="e.g. User:alice")
    parser.add_argument("--host", default=None if filtering else ANY_HOST,
                        help="the client host" + ("" if filtering else " (default: * for any)"))
    parser.add_argument("--operation", action="append", choices=BINDING_OPERATIONS, required=not filtering,
                        help="what may (or, --deny, may not) be done, repeatable")
    permission = parser.add_mutually_exclusive_group()
    permission.add_argument("--deny", action="store_true", help="forbid instead of allow")
    if filtering:
        permission.add_argument("--allow", action="store_true", help="only ALLOW bindings")
    add_brokers(parser)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("acls", help="create, describe and delete ACLs")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    _add_selection(actions.add_parser("create", help="add ACLs (one per --operation)"), filtering=False)
    _add_selection(actions.add_parser("describe", help="the ACLs the flags select (none: every ACL)"),
                   filtering=True)
    _add_selection(actions.add_parser("delete", help="remove the ACLs the flags select"), filtering=True)


def _resource(args: argparse.Namespace) -> tuple[ResourceType, str | None]:
    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.transactional_id is not None:
        return ResourceType.TRANSACTIONAL_ID, args.transactional_id
    if args.cluster:
        return ResourceType.CLUSTER, CLUSTER_NAME
    return ResourceType.ANY, None


def _permission(args: argparse.Namespace) -> AclPermissionType:
    if args.deny:
        return AclPermissionType.DENY
    return AclPermissionType.ALLOW if getattr(args, "allow", True) else AclPermissionType.ANY


def _bindings(args: argparse.Namespace) -> list[AclBinding]:
    kind, name = _resource(args)
    assert name is not None  # a binding's resource is required by the parser
    return [AclBinding(kind, name, PatternType[args.pattern.upper()], args.principal, args.host,
                       AclOperation[op.upper()], _permission(args)) for op in dict.fromkeys(args.operation)]


def _filters(args: argparse.Namespace) -> list[AclBindingFilter]:
    kind, name = _resource(args)
    operations = [AclOperation[op.upper()] for op in dict.fromkeys(args.operation)] if args.operation else [
        AclOperation.ANY]
    return [AclBindingFilter(kind, name, PatternType[args.pattern.upper()], args.principal, args.host, op,
                             _permission(args)) for op in operations]


def _print(binding: AclBinding) -> None:
    print(f"{binding.resource_type.name}:{binding.name}\t{binding.pattern_type.name}\t{binding.principal}\t"
          f"{binding.host}\t{binding.operation.name}\t{binding.permission_type.name}")


def _selects_something(args: argparse.Namespace) -> bool:
    return any((args.topic, args.group, args.transactional_id, args.cluster, args.principal, args.host,
                args.operation, args.deny, args.allow))


def run(args: argparse.Namespace) -> int:
    if args.action == "delete" and not _selects_something(args):
        raise UsageError("delete needs a resource, --principal, --host, --operation, --allow or --deny; "
                       "it would remove every ACL")
    admin = open_admin(args)
    try:
        if args.action == "create":
            bindings = _bindings(args)
            failed = {b: e for b, e in admin.run(admin.create_acls, bindings).items() if e is not None}
            if failed:
                raise CliError("; ".join(f"{b.operation.name} for {b.principal}: {e}" for b, e in failed.items()))
            for binding in bindings:
                _print(binding)
        elif args.action == "describe":
            found: dict[AclBinding, None] = {}
            for acl_filter in _filters(args):
                found.update(dict.fromkeys(admin.run(admin.describe_acls, acl_filter)))
            for binding in found:
                _print(binding)
        else:
            deleted = admin.run(admin.delete_acls, _filters(args))
            errors = [d.error for d in deleted.values() if d.error is not None]
            for d in deleted.values():
                for binding in d.deleted:
                    _print(binding)
            if errors:
                raise CliError("; ".join(map(str, errors)))
    except KafkaError as exc:
        raise CliError(str(exc)) from None
    finally:
        admin.close()
    return 0
