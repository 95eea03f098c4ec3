"""Admin.create_acls, describe_acls and delete_acls against a real broker with an authorizer (one of
this module's own: the session's broker has none), compared with confluent-kafka's AdminClient."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from admin_helpers import PEER_TIMEOUT_S, eventually, peer_error_code, result
from confluent_kafka.admin import AclBinding as CAclBinding
from confluent_kafka.admin import AclBindingFilter as CAclBindingFilter
from confluent_kafka.admin import AclOperation as CAclOperation
from confluent_kafka.admin import AclPermissionType as CAclPermissionType
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import ResourcePatternType as CResourcePatternType
from confluent_kafka.admin import ResourceType as CResourceType

from kafkaev.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Admin,
    PatternType,
    ResourceType,
)
from kafkaev.errors import SECURITY_DISABLED
from kafkaev.testing.cluster import LocalCluster

pytestmark = pytest.mark.compat

AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # PLAINTEXT clients (these tests, the broker itself) are User:ANONYMOUS: allowed everything.
    "super.users": "User:ANONYMOUS",
}


@pytest.fixture(scope="module")
def secured(tmp_path_factory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(nodes=1, security=False, broker_config=AUTHORIZER,
                           directory=tmp_path_factory.mktemp("kafka-authorizer"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def acl_admin(secured) -> Iterator[Admin]:
    admin = Admin(secured.bootstrap)
    yield admin
    admin.close()
    admin.loop.close()


def _as_peer(b: AclBinding) -> tuple:
    return (int(b.resource_type), b.name, int(b.pattern_type), b.principal, b.host, int(b.operation),
            int(b.permission_type))


def _peer_tuple(b: CAclBinding) -> tuple:
    return (b.restype.value, b.name, b.resource_pattern_type.value, b.principal, b.host, b.operation.value,
            b.permission_type.value)


def test_create_describe_delete_agree_with_the_peer(secured, acl_admin):
    peer = AdminClient({"bootstrap.servers": secured.bootstrap})
    topic = f"acl-topic-{uuid.uuid4().hex[:8]}"
    alice = f"User:alice-{uuid.uuid4().hex[:6]}"
    read = AclBinding(ResourceType.TOPIC, topic, PatternType.LITERAL, alice, "*", AclOperation.READ,
                      AclPermissionType.ALLOW)
    deny_write = AclBinding(ResourceType.TOPIC, topic[:8], PatternType.PREFIXED, alice, "10.0.0.1",
                            AclOperation.WRITE, AclPermissionType.DENY)
    group = AclBinding(ResourceType.GROUP, "acl-group", PatternType.LITERAL, alice, "*", AclOperation.DESCRIBE,
                       AclPermissionType.ALLOW)
    assert acl_admin.run(acl_admin.create_acls, [read, deny_write, group]) == {read: None, deny_write: None,
                                                                                group: None}
    everything_of_alice = AclBindingFilter(ResourceType.ANY, None, PatternType.ANY, alice, None, AclOperation.ANY,
                                           AclPermissionType.ANY)
    ours = eventually(lambda: acl_admin.run(acl_admin.describe_acls, everything_of_alice), lambda a: len(a) == 3)
    assert sorted(map(_as_peer, ours)) == sorted(map(_as_peer, [read, deny_write, group]))
    peer_filter = CAclBindingFilter(CResourceType.ANY, None, CResourcePatternType.ANY, alice, None,
                                    CAclOperation.ANY, CAclPermissionType.ANY)
    theirs = peer.describe_acls(peer_filter).result(timeout=PEER_TIMEOUT_S)
    assert sorted(map(_peer_tuple, theirs)) == sorted(map(_as_peer, ours))

    # MATCH: the ACLs that apply to the topic, the prefixed one included.
    matching = AclBindingFilter(ResourceType.TOPIC, topic, PatternType.MATCH, None, None, AclOperation.ANY,
                                AclPermissionType.ANY)
    assert sorted(map(_as_peer, acl_admin.run(acl_admin.describe_acls, matching))) == sorted(
        map(_as_peer, [read, deny_write]))

    topics_only = AclBindingFilter(ResourceType.TOPIC, None, PatternType.ANY, alice, None, AclOperation.ANY,
                                   AclPermissionType.ANY)
    deleted = acl_admin.run(acl_admin.delete_acls, [topics_only])[topics_only]
    assert deleted.error is None and sorted(map(_as_peer, deleted.deleted)) == sorted(map(_as_peer, [read, deny_write]))
    # The peer deletes the rest, and finds exactly what kafkaev left.
    eventually(lambda: acl_admin.run(acl_admin.describe_acls, everything_of_alice), lambda a: len(a) == 1)
    [peer_deleted] = peer.delete_acls([peer_filter]).values()
    assert sorted(map(_peer_tuple, result(peer_deleted))) == [_as_peer(group)]
    assert eventually(lambda: acl_admin.run(acl_admin.describe_acls, everything_of_alice), lambda a: not a) == []


def test_the_peer_creates_and_kafkaev_reads(secured, acl_admin):
    peer = AdminClient({"bootstrap.servers": secured.bootstrap})
    bob = f"User:bob-{uuid.uuid4().hex[:6]}"
    binding = CAclBinding(CResourceType.TRANSACTIONAL_ID, "txn-", CResourcePatternType.PREFIXED, bob, "*",
                          CAclOperation.WRITE, CAclPermissionType.ALLOW)
    [future] = peer.create_acls([binding]).values()
    result(future)
    found = eventually(lambda: acl_admin.run(acl_admin.describe_acls, AclBindingFilter(
        ResourceType.ANY, None, PatternType.ANY, bob, None, AclOperation.ANY, AclPermissionType.ANY)), bool)
    assert found == [AclBinding(ResourceType.TRANSACTIONAL_ID, "txn-", PatternType.PREFIXED, bob, "*",
                                AclOperation.WRITE, AclPermissionType.ALLOW)]


def test_without_an_authorizer_both_clients_say_security_disabled(admin, peer):
    binding = AclBinding(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:x", "*", AclOperation.READ,
                         AclPermissionType.ALLOW)
    [err] = admin.run(admin.create_acls, [binding]).values()
    assert err is not None and err.code == SECURITY_DISABLED
    [future] = peer.create_acls([CAclBinding(CResourceType.TOPIC, "t", CResourcePatternType.LITERAL, "User:x", "*",
                                             CAclOperation.READ, CAclPermissionType.ALLOW)]).values()
    assert peer_error_code(future) == SECURITY_DISABLED


def test_bad_arguments_name_the_argument(acl_admin):
    with pytest.raises(ValueError, match="'pattern_type' cannot be ANY in a binding"):
        AclBinding(ResourceType.TOPIC, "t", PatternType.ANY, "User:x", "*", AclOperation.READ,
                   AclPermissionType.ALLOW)
    with pytest.raises(ValueError, match="'principal'"):
        AclBinding(ResourceType.TOPIC, "t", PatternType.LITERAL, "", "*", AclOperation.READ, AclPermissionType.ALLOW)
    with pytest.raises(ValueError, match="'operation' must be one of AclOperation"):
        AclBindingFilter(ResourceType.ANY, None, PatternType.ANY, None, None, 99, AclPermissionType.ANY)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'bindings'"):
        acl_admin.create_acls([("t", "User:x")], lambda r, e: None)
    with pytest.raises(TypeError, match="'acl_filter'"):
        acl_admin.describe_acls(None, lambda r, e: None)


def test_acls_on_the_command_line(secured, acl_admin):
    from test_cli import kafkaev

    def acls(*args: str):
        return kafkaev("acls", *args, brokers=secured.bootstrap)

    carol = f"User:carol-{uuid.uuid4().hex[:6]}"
    topic = f"cli-acl-{uuid.uuid4().hex[:6]}"
    created = acls("create", "--topic", topic, "--principal", carol, "--operation", "read", "--operation", "describe")
    assert created.returncode == 0, created.stderr
    assert created.stdout.splitlines() == [f"TOPIC:{topic}\tLITERAL\t{carol}\t*\tREAD\tALLOW",
                                           f"TOPIC:{topic}\tLITERAL\t{carol}\t*\tDESCRIBE\tALLOW"]
    denied = acls("create", "--group", "cli-", "--pattern", "prefixed", "--principal", carol, "--host", "10.0.0.9",
                  "--operation", "read", "--deny")
    assert denied.returncode == 0, denied.stderr
    ours = eventually(lambda: acl_admin.run(acl_admin.describe_acls, AclBindingFilter(
        ResourceType.ANY, None, PatternType.ANY, carol, None, AclOperation.ANY, AclPermissionType.ANY)),
        lambda a: len(a) == 3)
    assert sorted(map(_as_peer, ours)) == sorted([
        (ResourceType.TOPIC, topic, PatternType.LITERAL, carol, "*", AclOperation.READ, AclPermissionType.ALLOW),
        (ResourceType.TOPIC, topic, PatternType.LITERAL, carol, "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW),
        (ResourceType.GROUP, "cli-", PatternType.PREFIXED, carol, "10.0.0.9", AclOperation.READ,
         AclPermissionType.DENY)])

    described = acls("describe", "--principal", carol, "--deny")
    assert described.stdout.splitlines() == [f"GROUP:cli-\tPREFIXED\t{carol}\t10.0.0.9\tREAD\tDENY"]
    matching = acls("describe", "--group", "cli-orders", "--pattern", "match")
    assert f"GROUP:cli-\tPREFIXED\t{carol}\t10.0.0.9\tREAD\tDENY" in matching.stdout.splitlines()
    deleted = acls("delete", "--topic", topic, "--principal", carol, "--operation", "read")
    assert deleted.returncode == 0 and deleted.stdout.splitlines() == [
        f"TOPIC:{topic}\tLITERAL\t{carol}\t*\tREAD\tALLOW"], deleted.stderr
    assert len(eventually(lambda: acls("describe", "--principal", carol).stdout.splitlines(),
                          lambda lines: len(lines) == 2)) == 2
    assert acls("delete", "--principal", carol).returncode == 0
    assert eventually(lambda: acls("describe", "--principal", carol).stdout, lambda out: out == "") == ""

    everything = acls("delete")
    assert everything.returncode == 2 and "every ACL" in everything.stderr
    for usage in (("create", "--topic", topic, "--operation", "read"),  # no principal
                  ("create", "--principal", carol, "--operation", "read"),  # no resource
                  ("create", "--topic", topic, "--principal", carol, "--operation", "fly"),
                  ("create", "--topic", topic, "--principal", carol, "--operation", "read", "--pattern", "any")):
        result = acls(*usage)
        assert result.returncode == 2 and "Traceback" not in result.stderr, usage
