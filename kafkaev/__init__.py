"""kafkaev: a fast, callback-driven Apache Kafka client on uvloop."""

from typing import TYPE_CHECKING, Any

from kafkaev import errors
from kafkaev.errors import KafkaError, ProtocolError, error_name
from kafkaev.security import OAuthBearerToken, SASLConfig, TLSConfig
from kafkaev.types import (
    OFFSET_BEGINNING,
    OFFSET_END,
    ConsumerGroupMetadata,
    OffsetAndMetadata,
    RecordMetadata,
    TopicPartition,
)

__version__ = "0.1.0"

__all__ = [
    "OFFSET_BEGINNING", "OFFSET_END", "BufferFullError", "Client", "KafkaError", "ProtocolError", "RecordMetadata",
    "Message", "OffsetAndMetadata", "TopicPartition", "crc32c", "error_name", "errors", "murmur2", "run", "stop",
    "Connection", "SASLConfig", "TLSConfig", "OAuthBearerToken", "OIDCClientCredentials", "Admin", "NewTopic",
    "Assignor", "RangeAssignor", "RoundRobinAssignor", "CooperativeStickyAssignor", "MemberSubscription",
    "GroupAssignment", "ConsumerGroupMetadata", "Runner", "RunnerConfigError", "ConsumerStats", "Health",
]

# Client-layer names that need the compiled extensions, imported on first use like the codec names.
_CLIENT_NAMES = {
    "Client": "kafkaev.client",
    "BufferFullError": "kafkaev.producer",
    "run": "kafkaev.runner",
    "stop": "kafkaev.runner",
    "Connection": "kafkaev.protocol.connection",
    "Admin": "kafkaev.admin",
    "NewTopic": "kafkaev.admin",
    "OIDCClientCredentials": "kafkaev.oidc",
    # Partition assignors, for subscribe(assignors=...) and custom assignors.
    "Assignor": "kafkaev.consumer.assignors",
    "RangeAssignor": "kafkaev.consumer.assignors",
    "RoundRobinAssignor": "kafkaev.consumer.assignors",
    "CooperativeStickyAssignor": "kafkaev.consumer.assignors",
    "MemberSubscription": "kafkaev.consumer.assignors",
    "GroupAssignment": "kafkaev.consumer.assignors",
    # The handler runner: ordered, at-least-once processing with retries and a dead-letter topic.
    "Runner": "kafkaev.handlers",
    "RunnerConfigError": "kafkaev.handlers",
    "ConsumerStats": "kafkaev.handlers",
    "Health": "kafkaev.handlers",
}

# Names served by the compiled codec module, imported on first use so that
# `import kafkaev` (and the CLI's usage errors) work before the extension is built.
_PROTO_NAMES = frozenset({"Message", "crc32c", "murmur2"})


if TYPE_CHECKING:
    # Type checkers see the real names (kafkaev.Client is the class, not Any); at run time they
    # are imported on first use below: importing them all at once costs about 220 ms more than
    # `import kafkaev` (40 ms), mostly the codec module building its message classes, and uvloop.
    from kafkaev.admin import Admin, NewTopic
    from kafkaev.client import Client
    from kafkaev.consumer.assignors import (
        Assignor,
        CooperativeStickyAssignor,
        GroupAssignment,
        MemberSubscription,
        RangeAssignor,
        RoundRobinAssignor,
    )
    from kafkaev.handlers import ConsumerStats, Health, Runner, RunnerConfigError
    from kafkaev.oidc import OIDCClientCredentials
    from kafkaev.producer import BufferFullError
    from kafkaev.protocol.codec import Message, crc32c, murmur2
    from kafkaev.protocol.connection import Connection
    from kafkaev.runner import run, stop
else:
    # Not seen by type checkers, so a misspelt kafkaev.Clinet is an error there, not Any.
    def __getattr__(name: str) -> Any:
        return _import_lazily(name)


def _import_lazily(name: str) -> Any:
    if name in _PROTO_NAMES:
        from kafkaev.protocol import codec

        value = getattr(codec, name)
        globals()[name] = value
        return value
    if name in _CLIENT_NAMES:
        import importlib

        value = getattr(importlib.import_module(_CLIENT_NAMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kafkaev' has no attribute {name!r}")
