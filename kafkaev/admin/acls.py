"""ACLs: create, describe and delete them (the broker needs an authorizer: without one it answers
SECURITY_DISABLED)."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import PROTOCOL, KafkaError
from ..protocol import codec
from ..protocol.connection import Connection
from .core import AdminCore, ResultCallback, answered, check_items, error_or_none, send_request

ANY_HOST = "*"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only: any pattern type
    MATCH = 2  # filters only: the ACLs that would apply to the name
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1  # filters only
    DENY = 2
    ALLOW = 3


_FILTER_ONLY = {ResourceType: ResourceType.ANY, PatternType: PatternType.ANY, AclOperation: AclOperation.ANY,
                AclPermissionType: AclPermissionType.ANY}


def _enum(owner: str, name: str, kind: type[enum.IntEnum], value: int, *, filtering: bool) -> enum.IntEnum:
    try:
        member = kind(value)
    except ValueError:
        raise ValueError(f"kafkaev.{owner}: '{name}' must be one of {kind.__name__}, got {value!r}") from None
    if member.value == 0 or (not filtering and (member is _FILTER_ONLY[kind]
                                                 or (kind is PatternType and member is PatternType.MATCH))):
        raise ValueError(f"kafkaev.{owner}: '{name}' cannot be {member.name}"
                         + ("" if filtering else " in a binding (only in a filter)"))
    return member


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: ``principal`` (e.g. "User:alice") may or may not (``permission_type``) do
    ``operation`` on the resource, from ``host`` ("*": any)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        _check_fields(self, "AclBinding", filtering=False)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Which ACLs describe_acls and delete_acls select: each None (a name, principal or host)
    or ANY matches everything; PatternType.MATCH selects what would apply to ``name``."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        _check_fields(self, "AclBindingFilter", filtering=True)


def _check_fields(acl: AclBinding | AclBindingFilter, owner: str, *, filtering: bool) -> None:
    for name, kind in (("resource_type", ResourceType), ("pattern_type", PatternType),
                       ("operation", AclOperation), ("permission_type", AclPermissionType)):
        object.__setattr__(acl, name, _enum(owner, name, kind, getattr(acl, name), filtering=filtering))
    for name in ("name", "principal", "host"):
        value = getattr(acl, name)
        if value is None and filtering:
            continue
        if not isinstance(value, str) or not value:
            raise ValueError(f"kafkaev.{owner}: '{name}' must be a non-empty string, got {value!r}")


@dataclass(frozen=True, slots=True)
class AclDeletion:
    """One filter's answer to delete_acls: the ACLs it deleted, or its error."""

    deleted: tuple[AclBinding, ...] = ()
    error: KafkaError | None = None


def _miscounted(api: str, sent: int, results: int) -> KafkaError | None:
    """Results are matched to requests by position, so a count that differs is a broken answer."""
    return None if results == sent else KafkaError(PROTOCOL, f"{api}: {results} results for {sent} entries")


def _binding(resource_type: int, name: str, pattern_type: int, principal: str, host: str, operation: int,
             permission: int) -> AclBinding:
    return AclBinding(ResourceType(resource_type), name, PatternType(pattern_type), principal, host,
                      AclOperation(operation), AclPermissionType(permission))


class AclAdmin(AdminCore):
    """ACL administration."""

    def create_acls(self, bindings: Iterable[AclBinding], cb: ResultCallback[dict[AclBinding, KafkaError | None]]
                    ) -> None:
        """``cb({AclBinding: KafkaError | None}, err)``, None where the ACL was created."""
        wanted = check_items("bindings", bindings, AclBinding)
        done = self._once(cb)

        on_response = answered(codec.CreateAclsResponse, done, lambda resp: {
            b: error_or_none(r.error_code, r.error_message) for b, r in zip(wanted, resp.results, strict=True)},
            lambda resp: _miscounted("CreateAcls", len(wanted), len(resp.results)))

        def send(conn: Connection) -> None:
            body = codec.CreateAclsRequest(creations=[codec.AclCreation(
                resource_type=b.resource_type, resource_name=b.name, resource_pattern_type=b.pattern_type,
                principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission_type)
                for b in wanted])
            send_request(conn, body, codec.CreateAclsResponse, on_response)

        self._on_controller(done, send)

    def describe_acls(self, acl_filter: AclBindingFilter, cb: ResultCallback[list[AclBinding]]) -> None:
        """``cb([AclBinding], err)``: the ACLs ``acl_filter`` selects."""
        if not isinstance(acl_filter, AclBindingFilter):
            raise TypeError(f"kafkaev.Admin: 'acl_filter' must be an AclBindingFilter, got {type(acl_filter).__name__}")
        done = self._once(cb)
        on_response = answered(codec.DescribeAclsResponse, done, lambda resp: [
            _binding(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation,
                     a.permission_type) for r in resp.resources for a in r.acls],
            lambda resp: error_or_none(resp.error_code, resp.error_message))

        f = acl_filter
        body = codec.DescribeAclsRequest(resource_type_filter=f.resource_type, resource_name_filter=f.name,
                                         pattern_type_filter=f.pattern_type, principal_filter=f.principal,
                                         host_filter=f.host, operation=f.operation, permission_type=f.permission_type)
        self._on_any(done, lambda conn: send_request(conn, body, codec.DescribeAclsResponse, on_response))

    def delete_acls(self, filters: Iterable[AclBindingFilter], cb: ResultCallback[dict[AclBindingFilter, AclDeletion]]
                    ) -> None:
        """``cb({AclBindingFilter: AclDeletion}, err)``: per filter, the ACLs it deleted."""
        wanted = check_items("filters", filters, AclBindingFilter)
        done = self._once(cb)

        on_response = answered(codec.DeleteAclsResponse, done, lambda resp: {
            f: AclDeletion(tuple(_binding(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host,
                                          m.operation, m.permission_type) for m in r.matching_acls),
                           error_or_none(r.error_code, r.error_message))
            for f, r in zip(wanted, resp.filter_results, strict=True)},
            lambda resp: _miscounted("DeleteAcls", len(wanted), len(resp.filter_results)))

        def send(conn: Connection) -> None:
            body = codec.DeleteAclsRequest(filters=[codec.DeleteAclsFilter(
                resource_type_filter=f.resource_type, resource_name_filter=f.name, pattern_type_filter=f.pattern_type,
                principal_filter=f.principal, host_filter=f.host, operation=f.operation,
                permission_type=f.permission_type) for f in wanted])
            send_request(conn, body, codec.DeleteAclsResponse, on_response)

        self._on_controller(done, send)
