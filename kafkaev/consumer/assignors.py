"""Partition assignors of the classic consumer group protocol.

The group leader runs the assignor that the coordinator selected; every
member must produce and accept the same ConsumerProtocol payloads as the
Java client and librdkafka, so the algorithms follow theirs:

* ``range``: per topic, contiguous ranges over the sorted members;
* ``roundrobin``: all partitions, sorted, dealt one by one over the sorted members;
* ``cooperative-sticky`` (KIP-429): balanced, keeps every partition with the
  member that reports owning it, and never hands a partition straight from one
  member to another in the same generation: the owner revokes it first, rejoins,
  and the next generation assigns it.

Stickiness comes only from what each member reports in its subscription
(owned partitions and generation), never from memory of a previous leader:
the leader changes between generations.

Rack awareness (KIP-881): a member reports its rack in the subscription, the leader
knows each partition's replicas' racks from the metadata. ``range`` then gives each
member, within its usual share, the partitions with a replica in its rack first;
``cooperative-sticky`` places unowned partitions on a member in a matching rack when
that keeps the balance. Without racks on both sides both behave as without KIP-881.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafkaev.types import TopicPartition

# A generation no member can have had (Java's DEFAULT_GENERATION).
NO_GENERATION = -1

_INT32 = struct.Struct(">i")

# The racks of each partition's replicas (KIP-881), from the leader's metadata.
PartitionRacks = Mapping[TopicPartition, frozenset[str]]


@dataclass(slots=True)
class MemberSubscription:
    """One member's JoinGroup metadata, decoded."""

    member_id: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = NO_GENERATION
    group_instance_id: str | None = None
    user_data: bytes | None = None
    rack: str | None = None

    def sort_key(self) -> tuple[int, str]:
        # Java's MemberInfo order: static members first, by instance id; then by member id.
        if self.group_instance_id is not None:
            return (0, self.group_instance_id)
        return (1, self.member_id)


@dataclass(slots=True)
class GroupAssignment:
    """The leader's answer: partitions per member id (every member present, maybe empty)."""

    partitions: dict[str, list[TopicPartition]] = field(default_factory=dict)

    def of(self, member_id: str) -> list[TopicPartition]:
        return self.partitions.get(member_id, [])


class Assignor:
    """Base of the assignors: a name on the wire and the assignment algorithm."""

    name: str = ""
    cooperative: bool = False

    def user_data(self, generation: int) -> bytes | None:
        """The UserData of this member's subscription for this assignor."""
        return None

    def assign(
        self, partition_counts: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> GroupAssignment:
        raise NotImplementedError

    def assign_with_racks(
        self, partition_counts: Mapping[str, int], members: Sequence[MemberSubscription], racks: PartitionRacks
    ) -> GroupAssignment:
        """``assign`` knowing where each partition's replicas are (KIP-881); an assignor that
        does not use racks ignores them."""
        return self.assign(partition_counts, members)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _empty_assignment(members: Sequence[MemberSubscription]) -> GroupAssignment:
    return GroupAssignment({m.member_id: [] for m in members})


def _rack_aware(consumers: Sequence[MemberSubscription], partitions: Sequence[TopicPartition],
                racks: PartitionRacks) -> bool:
    """Racks matter when every member has one and some partition's replicas have racks."""
    return all(m.rack for m in consumers) and any(racks.get(tp) for tp in partitions)


class RangeAssignor(Assignor):
    name = "range"

    def assign(
        self, partition_counts: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> GroupAssignment:
        return self.assign_with_racks(partition_counts, members, {})

    def assign_with_racks(
        self, partition_counts: Mapping[str, int], members: Sequence[MemberSubscription], racks: PartitionRacks
    ) -> GroupAssignment:
        result = _empty_assignment(members)
        ordered = sorted(members, key=MemberSubscription.sort_key)
        topics = sorted({t for m in members for t in m.topics})
        for topic in topics:
            count = partition_counts.get(topic, 0)
            consumers = [m for m in ordered if topic in m.topics]
            if count <= 0 or not consumers:
                continue
            per_member, extra = divmod(count, len(consumers))
            shares = [per_member + (1 if index < extra else 0) for index in range(len(consumers))]
            partitions = [TopicPartition(topic, p) for p in range(count)]
            if not _rack_aware(consumers, partitions, racks):
                start = 0
                for member, length in zip(consumers, shares, strict=True):
                    result.partitions[member.member_id].extend(partitions[start:start + length])
                    start += length
                continue
            # KIP-881: each member's share filled with partitions in its rack first (lowest
            # numbers first), the rest in order to the members still short of their share.
            unassigned = list(partitions)
            for member, length in zip(consumers, shares, strict=True):
                local = [tp for tp in unassigned if member.rack in racks.get(tp, frozenset())][:length]
                result.partitions[member.member_id].extend(local)
                unassigned = [tp for tp in unassigned if tp not in set(local)]
            for member, length in zip(consumers, shares, strict=True):
                owned = result.partitions[member.member_id]
                missing = length - sum(1 for tp in owned if tp.topic == topic)
                owned.extend(unassigned[:missing])
                del unassigned[:missing]
                owned.sort()
        return result


class RoundRobinAssignor(Assignor):
    name = "roundrobin"

    def assign(
        self, partition_counts: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> GroupAssignment:
        result = _empty_assignment(members)
        ordered = sorted(members, key=MemberSubscription.sort_key)
        if not ordered:
            return result
        topics = sorted({t for m in members for t in m.topics})
        cursor = 0
        for topic in topics:
            for partition in range(partition_counts.get(topic, 0)):
                # The next member in the circle that subscribes to this topic.
                for step in range(len(ordered)):
                    member = ordered[(cursor + step) % len(ordered)]
                    if topic in member.topics:
                        result.partitions[member.member_id].append(TopicPartition(topic, partition))
                        cursor = (cursor + step + 1) % len(ordered)
                        break
        return result


def member_generation(member: MemberSubscription) -> int:
    """The generation a member's owned partitions belong to.

    Subscriptions v2+ carry it in GenerationId; older cooperative-sticky
    members put it in UserData as one Int32 (Java's CooperativeStickyAssignor).
    """
    if member.generation != NO_GENERATION:
        return member.generation
    data = member.user_data
    if data is not None and len(data) == _INT32.size:
        return int(_INT32.unpack(data)[0])
    return NO_GENERATION


def valid_ownership(
    partition_counts: Mapping[str, int], members: Sequence[MemberSubscription]
) -> dict[TopicPartition, str]:
    """Who currently owns each partition, by the members' own reports.

    A claim counts when the topic exists, the partition is in range, the member
    still subscribes to the topic, and no member with a higher generation claims
    the same partition. Two claims from the same generation contradict each other
    and both are dropped (the partition is treated as unowned).
    """
    owner: dict[TopicPartition, str] = {}
    owner_generation: dict[TopicPartition, int] = {}
    contested: set[TopicPartition] = set()
    for member in members:
        generation = member_generation(member)
        subscribed = set(member.topics)
        for tp in member.owned:
            if tp.topic not in subscribed or not 0 <= tp.partition < partition_counts.get(tp.topic, 0):
                continue
            previous = owner_generation.get(tp)
            if previous is None or generation > previous:
                owner[tp] = member.member_id
                owner_generation[tp] = generation
                contested.discard(tp)
            elif generation == previous:
                contested.add(tp)
    for tp in contested:
        del owner[tp]
    return owner


class CooperativeStickyAssignor(Assignor):
    """KIP-429's cooperative-sticky assignor."""

    name = "cooperative-sticky"
    cooperative = True

    def user_data(self, generation: int) -> bytes | None:
        # Java members of old versions read the generation from here.
        return _INT32.pack(generation)

    def assign(
        self, partition_counts: Mapping[str, int], members: Sequence[MemberSubscription]
    ) -> GroupAssignment:
        return self.assign_with_racks(partition_counts, members, {})

    def assign_with_racks(
        self, partition_counts: Mapping[str, int], members: Sequence[MemberSubscription], racks: PartitionRacks
    ) -> GroupAssignment:
        previous_owner = valid_ownership(partition_counts, members)
        target = sticky_balanced(partition_counts, members, previous_owner, racks)
        # A partition moving between two members is withheld for one generation:
        # its owner sees it revoked, releases it, and rejoins; then it is unowned.
        result = _empty_assignment(members)
        for member_id, partitions in target.items():
            result.partitions[member_id] = [
                tp for tp in partitions if previous_owner.get(tp, member_id) == member_id
            ]
        return result


def sticky_balanced(
    partition_counts: Mapping[str, int],
    members: Sequence[MemberSubscription],
    previous_owner: Mapping[TopicPartition, str],
    racks: PartitionRacks | None = None,
) -> dict[str, list[TopicPartition]]:
    """A balanced assignment that moves as few owned partitions as it can.

    Every member keeps what it owns; unowned partitions go to the least loaded
    eligible member; then partitions move from the most loaded to the least
    loaded eligible member until no move narrows a gap of two or more. With equal
    subscriptions every member ends with floor or ceil of partitions/members.
    Newly placed partitions move before owned ones. With ``racks`` (KIP-881) an unowned
    partition goes to the least loaded member in one of its replicas' racks when that member
    is no more loaded than the least loaded eligible one plus one and below the fair share.
    """
    ordered = sorted(members, key=MemberSubscription.sort_key)
    subscribed = {m.member_id: frozenset(m.topics) for m in ordered}
    rank = {m.member_id: index for index, m in enumerate(ordered)}
    assignment: dict[str, list[TopicPartition]] = {m.member_id: [] for m in ordered}
    for tp in sorted(previous_owner):
        assignment[previous_owner[tp]].append(tp)
    all_partitions = [
        TopicPartition(topic, p)
        for topic in sorted({t for m in ordered for t in m.topics})
        for p in range(partition_counts.get(topic, 0))
    ]

    def eligible(tp: TopicPartition) -> list[str]:
        return [m.member_id for m in ordered if tp.topic in subscribed[m.member_id]]

    def least_loaded(candidates: list[str]) -> str:
        return min(candidates, key=lambda mid: (len(assignment[mid]), rank[mid]))

    rack_of = {m.member_id: m.rack for m in ordered}
    use_racks = bool(racks) and _rack_aware(ordered, all_partitions, racks or {})
    fair_share = -(-len(all_partitions) // max(len(ordered), 1))  # ceil

    for tp in all_partitions:
        if tp not in previous_owner:
            candidates = eligible(tp)
            if not candidates:
                continue
            chosen = least_loaded(candidates)
            if use_racks:
                replica_racks = (racks or {}).get(tp, frozenset())
                local = [mid for mid in candidates if rack_of[mid] in replica_racks]
                if local:
                    nearest = least_loaded(local)
                    if len(assignment[nearest]) < fair_share and \
                            len(assignment[nearest]) <= len(assignment[chosen]) + 1:
                        chosen = nearest
            assignment[chosen].append(tp)

    candidates_of = {tp: eligible(tp) for tp in all_partitions}
    moved = True
    while moved:
        moved = False
        for donor in sorted(assignment, key=lambda mid: (-len(assignment[mid]), rank[mid])):
            donor_load = len(assignment[donor])
            # Owned partitions go last: moving them costs a revocation.
            movable = sorted(
                assignment[donor],
                key=lambda tp: (previous_owner.get(tp) == donor, tp.topic, -tp.partition),
            )
            for tp in movable:
                receivers = [mid for mid in candidates_of[tp] if len(assignment[mid]) <= donor_load - 2]
                if receivers:
                    receiver = least_loaded(receivers)
                    assignment[donor].remove(tp)
                    assignment[receiver].append(tp)
                    moved = True
                    break
            if moved:
                break
    for partitions in assignment.values():
        partitions.sort()
    return assignment


ASSIGNORS: dict[str, type[Assignor]] = {
    RangeAssignor.name: RangeAssignor,
    RoundRobinAssignor.name: RoundRobinAssignor,
    CooperativeStickyAssignor.name: CooperativeStickyAssignor,
}


def make_assignors(spec: Sequence[str | Assignor]) -> tuple[Assignor, ...]:
    """Assignor instances from names or instances, in preference order."""
    if isinstance(spec, str) or not isinstance(spec, Sequence) or not spec:
        raise ValueError(
            f"subscribe: 'assignors' must be a non-empty sequence of names from {sorted(ASSIGNORS)} "
            f"or Assignor instances, got {spec!r}"
        )
    result: list[Assignor] = []
    for item in spec:
        if isinstance(item, Assignor):
            result.append(item)
        elif isinstance(item, str) and item in ASSIGNORS:
            result.append(ASSIGNORS[item]())
        else:
            raise ValueError(f"subscribe: unknown assignor {item!r} in 'assignors'; known: {sorted(ASSIGNORS)}")
    names = [a.name for a in result]
    if len(set(names)) != len(names):
        raise ValueError(f"subscribe: duplicate assignor names in 'assignors': {names}")
    return tuple(result)
