"""What differs between the Apache Kafka versions the harness starts: which of the newest features
each has, and the feature levels ``kafka-storage format`` is given for them (config.py writes the
server properties that only some versions know).

Read from the jars (``kafka-storage version-mapping``, ``org.apache.kafka.server.common.Feature``)
and from the finalized features a freshly formatted broker reports in ApiVersions:

========================  =======  =======  =====  ===========================================
feature                   4.4.0    4.1.1    3.9.1  what it turns on
========================  =======  =======  =====  ===========================================
metadata.version          33       27       21     (4.4-IV2, 4.1-IV1, 3.9-IV0)
transaction.version       2        2        0      transactions v2 (KIP-890)
group.version             1        1        0      the consumer group protocol (KIP-848)
share.version             2        **0**    -      share groups (KIP-932)
streams.version           1        0        -      streams groups (KIP-1071)
========================  =======  =======  =====  ===========================================

On 4.4 every one of them is on by default, and ``group.coordinator.rebalance.protocols`` defaults
to ``classic,consumer,streams`` (4.1 too; share groups need no protocol entry since 4.1): the
harness sets nothing for them. On 4.1 share groups are a preview the format leaves off, so it is
given ``--feature share.version=1`` (4.1's production level). 3.9 gets no ``--feature`` flag and
no 4.x-only property: its consumer protocol and share groups were early access, not for tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "4.4.0"; a minimum given to requires_kafka may leave the patch out ("4.0").
VERSION_PATTERN = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


class KafkaVersionError(ValueError):
    """A Kafka version string that is not ``major.minor[.patch]``."""


@dataclass(frozen=True, order=True, slots=True)
class KafkaVersion:
    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> KafkaVersion:
        match = VERSION_PATTERN.fullmatch(text.strip())
        if match is None:
            raise KafkaVersionError(f"{text!r} is not a Kafka version such as 4.4.0")
        major, minor, patch = match.groups()
        return cls(int(major), int(minor), int(patch or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


# The oldest broker whose KRaft setup (static controller.quorum.voters, then format) the harness writes.
OLDEST_SUPPORTED = KafkaVersion(3, 9)
KAFKA_4_0 = KafkaVersion(4, 0)
KAFKA_4_1 = KafkaVersion(4, 1)
KAFKA_4_2 = KafkaVersion(4, 2)


def broker_version(text: str) -> KafkaVersion:
    """A released version, in full (``4.4.0``), that the harness can start."""
    version = KafkaVersion.parse(text)
    if text.strip() != str(version):
        raise KafkaVersionError(f"{text!r}: name a released version in full, such as {version}")
    if version < OLDEST_SUPPORTED:
        raise KafkaVersionError(
            f"{text!r}: the test harness starts Apache Kafka {OLDEST_SUPPORTED.major}."
            f"{OLDEST_SUPPORTED.minor} and newer"
        )
    return version


@dataclass(frozen=True, slots=True)
class BrokerFeature:
    """A feature the harness makes usable from ``since`` on: finalized at ``level`` or above."""

    name: str
    level: int
    since: KafkaVersion
    description: str

    def enabled_on(self, version: KafkaVersion) -> bool:
        return version >= self.since


TRANSACTIONS_V2 = BrokerFeature("transaction.version", 2, KAFKA_4_0, "transactions v2 (KIP-890)")
CONSUMER_GROUP_PROTOCOL = BrokerFeature(
    "group.version", 1, KAFKA_4_0, "the consumer group protocol (KIP-848)"
)
SHARE_GROUPS = BrokerFeature("share.version", 1, KAFKA_4_1, "share groups (KIP-932)")
NEWEST_FEATURES = (TRANSACTIONS_V2, CONSUMER_GROUP_PROTOCOL, SHARE_GROUPS)


def enabled_features(version: KafkaVersion) -> tuple[BrokerFeature, ...]:
    """The features a cluster of ``version`` started by the harness has finalized."""
    return tuple(feature for feature in NEWEST_FEATURES if feature.enabled_on(version))


def format_feature_levels(version: KafkaVersion) -> dict[str, int]:
    """The ``--feature`` levels ``kafka-storage format`` needs beyond its defaults for ``version``."""
    if KAFKA_4_1 <= version < KAFKA_4_2:
        # 4.1 formats share.version=0 (share groups in preview); from 4.2, where they are generally
        # available, format turns them on itself (4.4: share.version=2).
        return {SHARE_GROUPS.name: SHARE_GROUPS.level}
    return {}


def format_feature_arguments(version: KafkaVersion) -> list[str]:
    arguments: list[str] = []
    for name, level in format_feature_levels(version).items():
        arguments += ["--feature", f"{name}={level}"]
    return arguments
