"""Groups: list them on every broker, describe them (classic and consumer protocol), delete them.

A classic group is described by DescribeGroups; a consumer-protocol group (KIP-848) by
ConsumerGroupDescribe, which has the member epochs and the target assignments. A broker answers
ConsumerGroupDescribe for a classic group with GROUP_ID_NOT_FOUND (and, with the consumer protocol
off, with UNSUPPORTED_VERSION), so ``describe_consumer_groups`` asks DescribeGroups for those, as
confluent-kafka does, and says which type each group is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import GROUP_ID_NOT_FOUND, NONE, UNSUPPORTED_VERSION, KafkaError
from ..protocol import codec
from ..protocol.connection import Connection
from ..types import TopicPartition
from .core import AdminCore, Gather, ResultCallback, Sink, check_names, error_or_none, send_request

DEAD_STATE = "Dead"  # a group with no members and no offsets left
CLASSIC = "classic"  # group types, as ListGroups v5 names them
CONSUMER = "consumer"
NO_EPOCH = -1  # a classic member has no member epoch, a classic group no group epoch
# ConsumerGroupDescribe's answers for a group it cannot describe as a consumer-protocol group: a
# classic (or unknown) group, or a broker whose consumer protocol is off (3.9 answers the group
# with UNSUPPORTED_VERSION). DescribeGroups is asked instead.
NOT_A_CONSUMER_GROUP = frozenset({GROUP_ID_NOT_FOUND, UNSUPPORTED_VERSION})
Result = TypeVar("Result")  # one group's answer


@dataclass(frozen=True, slots=True, order=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str
    group_type: str  # "classic", "consumer", "share", ... ("" from a broker before ListGroups v5)
    coordinator: int


@dataclass(slots=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartition] = field(default_factory=list)


@dataclass(slots=True)
class GroupDescription:
    """A classic group, as DescribeGroups tells it."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: int
    members: list[GroupMember] = field(default_factory=list)
    error: KafkaError | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...] = ()
    member_epoch: int = NO_EPOCH  # consumer protocol only
    target_assignment: tuple[TopicPartition, ...] = ()  # consumer protocol: where it is heading
    subscribed_topics: tuple[str, ...] = ()
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    """A group of either protocol: ``group_type`` is "consumer" (ConsumerGroupDescribe) or
    "classic" (DescribeGroups); ``assignor`` is the server assignor or the classic protocol name."""

    group_id: str
    group_type: str
    state: str
    coordinator: int
    members: tuple[ConsumerGroupMember, ...] = ()
    assignor: str = ""
    group_epoch: int = NO_EPOCH
    assignment_epoch: int = NO_EPOCH
    protocol_type: str = ""
    error: KafkaError | None = None


class GroupAdmin(AdminCore):
    """Group administration."""

    def list_groups(self, cb: ResultCallback[list[GroupListing]], *, states: Iterable[str] = (),
                    types: Iterable[str] = ()) -> None:
        """``cb([GroupListing], err)``: the groups of every broker (each coordinates some), only
        those in ``states`` / of ``types`` when given."""
        state_filter = check_names("states", states, allow_empty=True)
        type_filter = check_names("types", types, allow_empty=True)
        done = self._once(cb)

        def flatten(per_broker: list[list[GroupListing]] | None, err: KafkaError | None) -> None:
            done(None if per_broker is None else [g for listing in per_broker for g in listing], err)

        def send(conn: Connection, node_id: int, gather: Gather[list[GroupListing]]) -> None:
            def on_response(resp: codec.ListGroupsResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None:
                    gather.fail(err)
                elif resp.error_code != NONE:
                    gather.fail(KafkaError(resp.error_code, f"ListGroups on broker {node_id}"))
                else:
                    gather.add([GroupListing(g.group_id, g.protocol_type, g.group_state, g.group_type, node_id)
                                for g in resp.groups])

            conn.list_groups(on_response, states=state_filter, types=type_filter)

        self._on_every_broker(flatten, send)

    def _each_group(self, group_ids: list[str], done: ResultCallback[dict[str, Result]],
                    one: Callable[[str, Gather[tuple[str, Result]]], None]) -> None:
        def merge(parts: list[tuple[str, Result]] | None, err: KafkaError | None) -> None:
            done(None if parts is None else dict(parts), err)

        gather = Gather[tuple[str, Result]](len(group_ids), merge)
        for group_id in group_ids:
            one(group_id, gather)

    def describe_groups(self, group_ids: Iterable[str], cb: ResultCallback[dict[str, GroupDescription]]) -> None:
        """``cb({group_id: GroupDescription}, err)`` through DescribeGroups (the classic
        protocol's view); a group-level error is in ``.error``."""
        wanted = check_names("group_ids", group_ids)
        self._each_group(wanted, self._once(cb), self._describe_classic)

    def _describe_classic(self, group_id: str, gather: Sink[tuple[str, GroupDescription]]) -> None:
        def attempt(conn: Connection, node_id: int,
                    outcome: Callable[[GroupDescription | None, KafkaError | None, int], None]) -> None:
            def on_response(resp: codec.DescribeGroupsResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None or not resp.groups:
                    outcome(None, err, NONE)
                    return
                g = resp.groups[0]
                outcome(_description(g, node_id), None, g.error_code)

            conn.describe_groups([group_id], on_response)

        def finish(desc: GroupDescription | None, err: KafkaError | None) -> None:
            if desc is None:
                gather.fail(err)
            else:
                gather.add((group_id, desc))

        self._coordinated(group_id, finish, attempt)

    def describe_consumer_groups(self, group_ids: Iterable[str],
                                 cb: ResultCallback[dict[str, ConsumerGroupDescription]]) -> None:
        """``cb({group_id: ConsumerGroupDescription}, err)`` for groups of either protocol:
        ConsumerGroupDescribe first, DescribeGroups for the classic ones."""
        wanted = check_names("group_ids", group_ids)
        self._each_group(wanted, self._once(cb), self._describe_either)

    def _describe_either(self, group_id: str, gather: Gather[tuple[str, ConsumerGroupDescription]]) -> None:
        def attempt(conn: Connection, node_id: int,
                    outcome: Callable[[ConsumerGroupDescription | None, KafkaError | None, int], None]) -> None:
            def on_response(resp: codec.ConsumerGroupDescribeResponse | None, err: KafkaError | None) -> None:
                if err is not None and err.code == UNSUPPORTED_VERSION:
                    outcome(None, None, GROUP_ID_NOT_FOUND)  # a broker without KIP-848: classic only
                elif resp is None or err is not None or not resp.groups:
                    outcome(None, err, NONE)
                else:
                    g = resp.groups[0]
                    outcome(_consumer_description(g, node_id), None, g.error_code)

            send_request(conn, codec.ConsumerGroupDescribeRequest(group_ids=[group_id]),
                         codec.ConsumerGroupDescribeResponse, on_response)

        def finish(desc: ConsumerGroupDescription | None, err: KafkaError | None) -> None:
            if err is not None:
                gather.fail(err)
            elif desc is not None and (desc.error is None or desc.error.code not in NOT_A_CONSUMER_GROUP):
                gather.add((group_id, desc))
            else:
                self._describe_classic(group_id, _AsConsumer(group_id, gather))

        self._coordinated(group_id, finish, attempt)

    def delete_groups(self, group_ids: Iterable[str], cb: ResultCallback[dict[str, KafkaError | None]]) -> None:
        """``cb({group_id: KafkaError | None}, err)``, None where the group and its offsets were
        deleted (NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND for an unknown one)."""
        wanted = check_names("group_ids", group_ids)
        self._each_group(wanted, self._once(cb), self._delete_one)

    def _delete_one(self, group_id: str, gather: Gather[tuple[str, KafkaError | None]]) -> None:
        def attempt(conn: Connection, _node: int,
                    outcome: Callable[[KafkaError | None, KafkaError | None, int], None]) -> None:
            def on_response(resp: codec.DeleteGroupsResponse | None, err: KafkaError | None) -> None:
                if resp is None or err is not None or not resp.results:
                    outcome(None, err, NONE)
                    return
                r = resp.results[0]
                outcome(error_or_none(r.error_code, r.error_message), None, r.error_code)

            send_request(conn, codec.DeleteGroupsRequest(groups_names=[group_id]), codec.DeleteGroupsResponse,
                         on_response)

        def finish(result: KafkaError | None, err: KafkaError | None) -> None:
            if err is not None:
                gather.fail(err)
            else:
                gather.add((group_id, result))

        self._coordinated(group_id, finish, attempt)


class _AsConsumer:
    """Adds a classic group's DescribeGroups answer to a describe_consumer_groups gathering."""

    __slots__ = ("group_id", "gather")

    def __init__(self, group_id: str, gather: Gather[tuple[str, ConsumerGroupDescription]]) -> None:
        self.group_id = group_id
        self.gather = gather

    def add(self, part: tuple[str, GroupDescription]) -> None:
        d = part[1]
        members = tuple(ConsumerGroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                            tuple(m.assignment)) for m in d.members)
        self.gather.add((self.group_id, ConsumerGroupDescription(
            d.group_id, CLASSIC, d.state, d.coordinator, members, d.protocol, protocol_type=d.protocol_type,
            error=d.error)))

    def fail(self, err: KafkaError | None) -> None:
        self.gather.fail(err)


def _partitions(assignment: codec.ConsumerGroupDescribeResponseAssignment | None) -> tuple[TopicPartition, ...]:
    if assignment is None:
        return ()
    return tuple(sorted(TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions))


def _consumer_description(g: codec.ConsumerGroupDescribeResponseDescribedGroup, node_id: int
                          ) -> ConsumerGroupDescription:
    members = tuple(ConsumerGroupMember(
        m.member_id, m.instance_id, m.client_id, m.client_host, _partitions(m.assignment), m.member_epoch,
        _partitions(m.target_assignment), tuple(m.subscribed_topic_names or ()), m.rack_id) for m in g.members)
    return ConsumerGroupDescription(g.group_id, CONSUMER, g.group_state, node_id, members, g.assignor_name,
                                    g.group_epoch, g.assignment_epoch, CONSUMER,
                                    error_or_none(g.error_code, g.error_message))


def _description(g: codec.DescribedGroup, node_id: int) -> GroupDescription:
    from ..protocol.codec import decode_consumer_protocol_assignment

    members = []
    for m in g.members:
        assignment: list[TopicPartition] = []
        if g.protocol_type == "consumer" and m.member_assignment:
            try:
                decoded = decode_consumer_protocol_assignment(m.member_assignment)
                assignment = [TopicPartition(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions]
            except KafkaError:
                assignment = []  # a non-standard assignor's bytes: show the member without it
        members.append(GroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, assignment))
    code = g.error_code
    if code == NONE and g.group_state == DEAD_STATE and not members and not g.protocol_type:
        # How brokers before KIP-1043 (DescribeGroups v5 and below) answer for a group they
        # never heard of; v6 says GROUP_ID_NOT_FOUND. Either way the caller sees the latter.
        code = GROUP_ID_NOT_FOUND
    message = f"group {g.group_id!r} does not exist" if code == GROUP_ID_NOT_FOUND else g.error_message
    return GroupDescription(g.group_id, g.group_state, g.protocol_type, g.protocol_data, node_id, members,
                            error_or_none(code, message))

