"""Admin.describe_configs and incremental_alter_configs for topics, brokers and groups, against the
real broker and compared with confluent-kafka's AdminClient."""

from __future__ import annotations

import uuid

import pytest
from admin_helpers import eventually, result
from confluent_kafka.admin import AlterConfigOpType as CAlterConfigOpType
from confluent_kafka.admin import ConfigEntry as CConfigEntry
from confluent_kafka.admin import ConfigResource as CConfigResource
from confluent_kafka.admin import ResourceType as CResourceType

from kafkaev.admin import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
)
from kafkaev.errors import INVALID_CONFIG, UNKNOWN_TOPIC_OR_PARTITION

pytestmark = pytest.mark.compat

CLEANER_BACKOFF = "log.cleaner.backoff.ms"  # a dynamic broker config no test depends on
GROUP_SESSION_TIMEOUT = "consumer.session.timeout.ms"


def _peer_values(peer, resource: CConfigResource) -> dict[str, tuple[str | None, int]]:
    [future] = peer.describe_configs([resource]).values()
    return {name: (entry.value, int(entry.source)) for name, entry in result(future).items()}


def _our_values(admin, resource: ConfigResource) -> dict[str, tuple[str | None, int]]:
    described = admin.run(admin.describe_configs, [resource])[resource]
    assert described.error is None, described.error
    return {name: (entry.value, int(entry.source)) for name, entry in described.entries.items()}


def _eventually(admin, resource: ConfigResource, name: str, check) -> tuple[str | None, int]:
    return eventually(lambda: _our_values(admin, resource)[name], check)


def test_topic_configs_set_append_delete_agree_with_the_peer(admin, peer, make_topic):
    topic = make_topic(config={"retention.ms": "3600000"})
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    entries = admin.run(admin.describe_configs, [resource], include_synonyms=True)[resource].entries
    assert entries["retention.ms"].value == "3600000"
    assert entries["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG and not entries["retention.ms"].is_default
    assert entries["retention.ms"].synonyms[0].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert entries["segment.ms"].is_default

    changes = {resource: [AlterConfigOp("retention.ms", None, AlterConfigOpType.DELETE),
                          AlterConfigOp("max.message.bytes", "200000"),
                          AlterConfigOp("cleanup.policy", "compact", AlterConfigOpType.APPEND)]}
    assert admin.run(admin.incremental_alter_configs, changes) == {resource: None}
    _eventually(admin, resource, "max.message.bytes", lambda v: v[0] == "200000")
    ours = _our_values(admin, resource)
    assert ours["max.message.bytes"] == ("200000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert ours["cleanup.policy"] == ("delete,compact", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert ours["retention.ms"][1] == ConfigSource.DEFAULT_CONFIG
    assert ours == _peer_values(peer, CConfigResource(CResourceType.TOPIC, topic))

    # The peer alters, kafkaev reads it.
    peer_change = CConfigResource(CResourceType.TOPIC, topic, incremental_configs=[
        CConfigEntry("max.message.bytes", "300000", incremental_operation=CAlterConfigOpType.SET)])
    [future] = peer.incremental_alter_configs([peer_change]).values()
    result(future)
    assert _eventually(admin, resource, "max.message.bytes", lambda v: v[0] == "300000") == (
        "300000", ConfigSource.DYNAMIC_TOPIC_CONFIG)


def test_per_resource_errors_do_not_hide_the_others(admin, topic):
    good = ConfigResource(ConfigResourceType.TOPIC, topic)
    missing = ConfigResource(ConfigResourceType.TOPIC, f"no-such-{uuid.uuid4().hex[:8]}")
    described = admin.run(admin.describe_configs, [good, missing])
    assert described[good].error is None and described[good].entries
    assert described[missing].error is not None and described[missing].error.code == UNKNOWN_TOPIC_OR_PARTITION
    altered = admin.run(admin.incremental_alter_configs, {
        good: [AlterConfigOp("retention.ms", "not-a-number")], missing: [AlterConfigOp("retention.ms", "1000")]})
    assert altered[good] is not None and altered[good].code == INVALID_CONFIG
    assert altered[missing] is not None


def test_broker_configs_at_the_broker_and_the_cluster_default(admin, peer):
    [node] = [b.node_id for b in admin.run(admin.describe_cluster).brokers][:1]
    broker = ConfigResource(ConfigResourceType.BROKER, str(node))
    cluster_default = ConfigResource(ConfigResourceType.BROKER, "")
    try:
        assert admin.run(admin.incremental_alter_configs,
                         {cluster_default: [AlterConfigOp(CLEANER_BACKOFF, "16000")]}) == {cluster_default: None}
        assert _eventually(admin, broker, CLEANER_BACKOFF, lambda v: v[0] == "16000") == (
            "16000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        ours = _our_values(admin, broker)
        peer_values = _peer_values(peer, CConfigResource(CResourceType.BROKER, str(node)))
        # Sensitive values are null in both; every name, value and source agrees.
        assert ours == peer_values
    finally:
        admin.run(admin.incremental_alter_configs,
                  {cluster_default: [AlterConfigOp(CLEANER_BACKOFF, op=AlterConfigOpType.DELETE)]})
    assert _eventually(admin, broker, CLEANER_BACKOFF, lambda v: v[1] == ConfigSource.DEFAULT_CONFIG)[1] == (
        ConfigSource.DEFAULT_CONFIG)


@pytest.mark.requires_kafka("4.0", "group configs (KIP-848)")
def test_group_configs(admin):
    group = ConfigResource(ConfigResourceType.GROUP, f"cfg-group-{uuid.uuid4().hex[:8]}")
    assert admin.run(admin.incremental_alter_configs, {group: [AlterConfigOp(GROUP_SESSION_TIMEOUT, "30000")]}) == {
        group: None}
    assert _eventually(admin, group, GROUP_SESSION_TIMEOUT, lambda v: v[0] == "30000") == (
        "30000", ConfigSource.GROUP_CONFIG)


def test_bad_arguments_name_the_argument(admin):
    with pytest.raises(TypeError, match="'resources'"):
        admin.describe_configs([("topic", "t")], lambda r, e: None)
    with pytest.raises(ValueError, match="'type'"):
        ConfigResource(7, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'name'"):
        ConfigResource(ConfigResourceType.TOPIC, "")
    with pytest.raises(ValueError, match="needs a str 'value'"):
        AlterConfigOp("retention.ms")
    with pytest.raises(TypeError, match="'changes'"):
        admin.incremental_alter_configs([ConfigResource(ConfigResourceType.TOPIC, "t")], lambda r, e: None)
    with pytest.raises(TypeError, match=r"'changes\[.*\]' entries must be AlterConfigOp"):
        admin.incremental_alter_configs({ConfigResource(ConfigResourceType.TOPIC, "t"): [("a", "b")]},
                                        lambda r, e: None)
