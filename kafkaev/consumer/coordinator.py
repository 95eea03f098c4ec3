"""The consumer group's coordinator: a ``CoordinatorLink`` (kafkaev/cluster/coordinator.py)
for the group id over GROUP connections, and which group errors are simply retried."""

from __future__ import annotations

from kafkaev.cluster.coordinator import COORDINATOR_ERRORS, CoordinatorLink, CoordinatorType
from kafkaev.cluster.pool import Role
from kafkaev.errors import DESTROY, TIMED_OUT, KafkaError

from .context import ConsumerContext

__all__ = ["COORDINATOR_ERRORS", "CoordinatorLink", "group_coordinator", "retriable_group_error"]


def group_coordinator(ctx: ConsumerContext, group_id: str) -> CoordinatorLink:
    """The link to ``group_id``'s coordinator, on the pool's GROUP connections."""
    return CoordinatorLink(ctx.config, ctx.loop, ctx.metadata, ctx.pool, group_id, CoordinatorType.GROUP, Role.GROUP)


def retriable_group_error(err: KafkaError, link: CoordinatorLink) -> bool:
    """Errors after which the same group request is simply tried again later. DESTROY while
    the link is usable is a request cut off by ``forget()``: another request on the shared
    coordinator connection learnt that the coordinator moved, and the link finds it again."""
    if err.code == DESTROY:
        return link.usable
    return err.retriable or err.code in COORDINATOR_ERRORS or err.code == TIMED_OUT
