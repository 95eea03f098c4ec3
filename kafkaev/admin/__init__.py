"""Cluster administration: topics, configs, groups and their offsets, ACLs, SCRAM credentials,
transactions, the cluster itself.

``Admin`` has the client's callback style: every operation takes ``cb(result, err)`` and calls
it exactly once, with one typed result object. ``err`` is a ``KafkaError`` for a failure of the
whole operation (no broker reachable, timeout); per-topic, per-partition or per-group outcomes
are inside ``result``, because one bad name must not hide what happened to the others. Bad
arguments raise TypeError/ValueError at once, naming the argument.

    admin = kafkaev.Admin("127.0.0.1:9092")
    admin.create_topics([NewTopic("orders", 6, 1)], lambda result, err: ...)

It runs on the given loop (or a new uvloop one); ``run(op, *args)`` drives the loop until the
operation finishes, for scripts and the command line. Each concern is one module of this
package; ``Admin`` is all of them on one set of connections.
"""

from __future__ import annotations

from ..cluster.metadata import TopicInfo
from .acls import (
    AclAdmin,
    AclBinding,
    AclBindingFilter,
    AclDeletion,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from .cluster import BrokerDescription, ClusterAdmin, ClusterDescription, ElectionType, FeatureRange
from .configs import (
    AlterConfigOp,
    AlterConfigOpType,
    ConfigAdmin,
    ConfigDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
)
from .core import COORDINATOR_GROUP, COORDINATOR_TRANSACTION, ResultCallback
from .groups import (
    ConsumerGroupDescription,
    ConsumerGroupMember,
    GroupDescription,
    GroupListing,
    GroupMember,
)
from .offsets import (
    CommittedOffset,
    ListedOffset,
    OffsetAdmin,
    OffsetReset,
    OffsetSpec,
    PartitionLag,
    PartitionReset,
    ResetKind,
)
from .scram import (
    ScramAdmin,
    ScramCredentialInfo,
    ScramDeletion,
    ScramMechanism,
    ScramUpsertion,
    UserScramCredentials,
)
from .topics import (
    DEFAULT_PARTITIONS,
    DEFAULT_REPLICATION,
    HIGH_WATERMARK,
    DeletedRecords,
    NewPartitions,
    NewTopic,
    TopicAdmin,
)
from .transactions import (
    PartitionProducers,
    ProducerState,
    TransactionAdmin,
    TransactionDescription,
    TransactionListing,
)


class Admin(TopicAdmin, ConfigAdmin, OffsetAdmin, AclAdmin, ScramAdmin, TransactionAdmin, ClusterAdmin):
    """Cluster administration over kafkaev connections: ``Admin(brokers, **options)`` takes the
    Client's options, or ``Admin(client)`` shares a client's brokers, loop, security and
    connection settings (timeouts, backoffs, metadata ages, debug areas; ``CLIENT_CONNECTION_OPTIONS``)."""


__all__ = [
    "COORDINATOR_GROUP", "COORDINATOR_TRANSACTION", "DEFAULT_PARTITIONS", "DEFAULT_REPLICATION", "HIGH_WATERMARK",
    "AclBinding", "AclBindingFilter", "AclDeletion", "AclOperation", "AclPermissionType", "Admin",
    "AlterConfigOp", "AlterConfigOpType", "BrokerDescription", "ClusterDescription", "CommittedOffset",
    "ConfigDescription", "ConfigEntry", "ConfigResource", "ConfigResourceType", "ConfigSource", "ConfigSynonym",
    "ConsumerGroupDescription", "ConsumerGroupMember", "DeletedRecords", "ElectionType", "FeatureRange",
    "GroupDescription", "GroupListing", "GroupMember", "ListedOffset", "NewPartitions", "NewTopic", "OffsetReset",
    "OffsetSpec", "PartitionLag", "PartitionProducers", "PartitionReset", "PatternType", "ProducerState",
    "ResetKind", "ResourceType", "ResultCallback", "ScramCredentialInfo", "ScramDeletion", "ScramMechanism",
    "ScramUpsertion", "TopicInfo", "TransactionDescription", "TransactionListing", "UserScramCredentials",
]
