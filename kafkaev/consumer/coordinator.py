"""The consumer group's coordinator: a ``CoordinatorLink`` (kafkaev/cluster/coordinator.py)
for the group id over GROUP connections, and which group errors are simply retried."""

from __future__ import annotations

from kafkaev.cluster.coordinator import COORDINATOR_ERRORS, CoordinatorLink, CoordinatorType
from kafkaev.cluster.pool import Role
from kafkaev.errors import TIMED_OUT, KafkaError

from .context import ConsumerContext

__all__ = ["COORDINATOR_ERRORS", "CoordinatorLink", "group_coordinator", "retriable_group_error"]


def group_coordinator(ctx: ConsumerContext, group_id: str) -> CoordinatorLink:
    """The link to ``group_id``'s coordinator, on the pool's GROUP connections."""
    return CoordinatorLink(ctx.config, ctx.loop, ctx.metadata, ctx.pool, group_id, CoordinatorType.GROUP, Role.GROUP)


def retriable_group_error(err: KafkaError) -> bool:
    """Errors after which the same group request is simply tried again later."""
    return err.retriable or err.code in COORDINATOR_ERRORS or err.code == TIMED_OUT
