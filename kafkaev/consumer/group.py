"""Classic consumer group membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

States: UNJOINED -> JOINING -> SYNCING -> STABLE, back to JOINING on a rebalance.

* The rebalance protocol follows the assignor the coordinator selected: cooperative
  (KIP-429) keeps fetching owned partitions through the rebalance, revokes only
  what the new assignment takes away, and rejoins once right after that so the
  released partitions can be assigned; eager revokes everything before joining.
* Heartbeats run on their own timer over the GROUP connection while STABLE.
  A heartbeat answered REBALANCE_IN_PROGRESS starts a rejoin; ILLEGAL_GENERATION /
  UNKNOWN_MEMBER_ID mean the partitions are already someone else's: on_lost, then
  rejoin; FENCED_INSTANCE_ID (another process took our group_instance_id) is fatal.
  No successful heartbeat for session_timeout_ms also means the partitions are lost.
* Auto-commit runs on its own timer and before every revocation; it only ever
  sends offsets above what is known to be committed.
* Rebalance triggers: a member change (the coordinator tells via the heartbeat),
  a subscription change, a partition count change seen in metadata, and under a
  regex subscription a change in the set of topics the pattern matches (the client
  matches it against the metadata of every topic).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafkaev.backoff import Backoff
from kafkaev.cluster.metadata import ClusterMetadata
from kafkaev.errors import (
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    STATE,
    UNKNOWN_MEMBER_ID,
    KafkaError,
    error_name,
)
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection
from kafkaev.types import TopicPartition

from .assignors import NO_GENERATION, Assignor, MemberSubscription, PartitionRacks
from .context import MISSING_TOPIC_ERRORS, ConsumerContext
from .coordinator import retriable_group_error
from .membership import GroupMemberBase, GroupOptions, GroupState, TopicSelection
from .protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

LEAVE_REASON = "the consumer is leaving the group"

log = logging.getLogger("kafkaev.group")  # kafkaev/log.py names the areas


class GroupMember(GroupMemberBase):
    def __init__(self, ctx: ConsumerContext, options: GroupOptions, *, require_stable: bool,
                 on_partitions_changed: Callable[[], None]) -> None:
        super().__init__(ctx, options, require_stable=require_stable, on_partitions_changed=on_partitions_changed,
                         heartbeat_interval_ms=options.heartbeat_interval_ms)
        self.generation = NO_GENERATION
        self.protocol_name: str | None = None
        self.topics = options.selection.topics  # the subscribed names, or those the pattern matches
        self._rejoin_needed = False
        self._join_in_flight = False
        self._last_heartbeat_ok = ctx.loop.time()
        # JoinGroup/SyncGroup retry on their own backoff until an assignment lands.
        self._join_backoff = Backoff(ctx.config.retry_backoff)
        self._partition_counts: dict[str, int] = {}
        self._joined_topics: frozenset[str] = frozenset()

    # --- public -------------------------------------------------------------------------------------
    @property
    def generation_id(self) -> int:
        return self.generation

    @property
    def cooperative(self) -> bool:
        assignor = self._assignor(self.protocol_name)
        return assignor is not None and assignor.cooperative

    def set_selection(self, selection: TopicSelection) -> None:
        """A new subscription: rejoin so the group learns it."""
        self.options.selection = selection
        selection.track(self.ctx.metadata)
        self.ctx.metadata.refresh(lambda _md, _err: self.request_rejoin())

    def _matching_topics(self) -> frozenset[str]:
        return self.options.selection.matching(self.ctx.metadata.current)

    def request_rejoin(self) -> None:
        if self.state in (GroupState.FAILED, GroupState.CLOSED):
            return
        if self.state is GroupState.STABLE:
            self._start_rebalance()
        else:
            self._rejoin_needed = True

    def membership_lost(self, code: int) -> None:
        """A commit or heartbeat was refused for membership reasons."""
        if code == FENCED_INSTANCE_ID:
            self._fatal(KafkaError(code, f"group {self.group_id!r}: group_instance_id "
                                         f"{self.group_instance_id!r} is used by another member"))
            return
        if code == REBALANCE_IN_PROGRESS:
            self.request_rejoin()
            return
        self._drop_generation(code)
        self.request_rejoin()

    def _drop_generation(self, code: int = NONE) -> None:
        """The coordinator no longer counts this member in its generation: the partitions are
        someone else's by now (on_lost), and after UNKNOWN_MEMBER_ID it joins as a new member."""
        if code == UNKNOWN_MEMBER_ID:
            self.member_id = ""
        self.generation = NO_GENERATION
        self.ownership.lose()

    def _no_generation(self) -> str | None:
        return "no generation to commit with (rebalancing)" if self.generation == NO_GENERATION else None

    def leave(self, cb: Callable[[KafkaError | None], object] | None) -> None:
        """Commit (auto_commit), revoke, LeaveGroup (dynamic members) and stop; cb(err) once."""
        if self.state is GroupState.CLOSED:
            if cb is not None:
                self.ctx.loop.call_soon(self.ctx.call, cb, None)
            return
        was_member = self.generation != NO_GENERATION and bool(self.member_id)

        def after_revoke() -> None:
            self._stop_timers()
            self.state = GroupState.CLOSED
            if not was_member or self.group_instance_id is not None:
                # A static member's partitions wait for it for session_timeout_ms (KIP-345).
                self.link.close()
                if cb is not None:
                    self.ctx.call(cb, None)
                return
            self._send_leave(cb)

        # Heartbeats go on while on_revoke's Future runs: the member is still in the group.
        self._give_up_all(after_revoke, commit=was_member)

    # --- join / sync ------------------------------------------------------------------------------------
    def _start_rebalance(self) -> None:
        self._stop_heartbeat()
        if self.cooperative or not self.owned:
            self._join()
            return

        # Eager: commit and revoke everything before joining.
        self.state = GroupState.JOINING
        self._give_up_all(self._join, commit=True)

    def _join(self) -> None:
        if self.state in (GroupState.FAILED, GroupState.CLOSED) or self._join_in_flight:
            return
        if self.rebalance_clock.start():
            log.info("group %r: rebalancing (member %r, generation %d)", self.group_id, self.member_id,
                     self.generation)
        self.state = GroupState.JOINING
        self._rejoin_needed = False
        self._join_in_flight = True
        topics = self.topics = self._matching_topics()
        self._joined_topics = topics
        protocols = [
            codec.JoinGroupRequestProtocol(
                name=a.name,
                metadata=encode_subscription(topics, self.owned, self.generation, a.user_data(self.generation),
                                             rack=self.options.client_rack))
            for a in self.options.assignors
        ]

        def join(conn: Connection) -> None:
            log.debug("group %r: JoinGroup to %s:%s (member %r, topics %s)", self.group_id, conn.host, conn.port,
                      self.member_id, sorted(topics))
            conn.join_group(self.group_id, self.member_id, PROTOCOL_TYPE, protocols, self._on_join,
                            session_timeout_ms=self.options.session_timeout_ms,
                            rebalance_timeout_ms=self.options.rebalance_timeout_ms,
                            group_instance_id=self.group_instance_id)

        self.link.send(join, self._join_failed)

    def _join_failed(self, err: KafkaError) -> None:
        self._join_in_flight = False
        if self.state in (GroupState.CLOSED, GroupState.FAILED):
            return
        if retriable_group_error(err, self.link):
            self._join_later()
        else:
            self._fatal(err)

    def _join_later(self) -> None:
        self.ctx.loop.call_later(self._join_backoff.next_delay_s(), self._join)

    def _on_join(self, resp: codec.JoinGroupResponse | None, err: KafkaError | None) -> None:
        if err is not None:
            self.link.forget()
            self._join_failed(err)
            return
        assert resp is not None  # no error: an answer
        if self.state is not GroupState.JOINING:
            self._join_in_flight = False
            return
        code = resp.error_code
        log.debug("group %r: JoinGroup answered %s: generation %d, member %r, leader %r, protocol %r",
                  self.group_id, error_name(code), resp.generation_id, resp.member_id, resp.leader,
                  resp.protocol_name)
        if code == NONE:
            self.member_id = resp.member_id
            self.generation = resp.generation_id
            self.protocol_name = resp.protocol_name
            self.state = GroupState.SYNCING
            if resp.leader == resp.member_id and not getattr(resp, "skip_assignment", False):
                self._lead(resp)
            else:
                self._sync([])
            return
        self._join_in_flight = False
        if code == MEMBER_ID_REQUIRED:
            # KIP-394: the coordinator handed out our member id; join again with it at once.
            self.member_id = resp.member_id
            self._join()
        elif code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self._drop_generation(code)
            self._join()
        elif code == REBALANCE_IN_PROGRESS:
            self._join()
        elif self.link.on_error_code(code):
            self._join_later()
        else:
            self._fatal(KafkaError(code, f"JoinGroup of group {self.group_id!r}"))

    def _assignor(self, name: str | None) -> Assignor | None:
        for a in self.options.assignors:
            if a.name == name:
                return a
        return None

    def _lead(self, resp: codec.JoinGroupResponse) -> None:
        """This member leads: assign everyone's partitions."""
        assignor = self._assignor(resp.protocol_name)
        try:
            if assignor is None:
                raise KafkaError(STATE, f"the coordinator selected assignor {resp.protocol_name!r}, "
                                        "which this member did not offer")
            members = [decode_subscription(m.member_id, m.group_instance_id, bytes(m.metadata))
                       for m in resp.members]
        except KafkaError as exc:
            self._join_in_flight = False
            self._fatal(exc)
            return
        topics = {t for m in members for t in m.topics}
        self.ctx.metadata.add_topics(topics)
        generation = self.generation

        def with_metadata(_md: ClusterMetadata | None, err: KafkaError | None) -> None:
            if self.state is not GroupState.SYNCING or self.generation != generation:
                self._join_in_flight = False
                return
            counts = self._partition_counts_of(topics)
            assignment = assignor.assign_with_racks(counts, members, self._partition_racks(topics))
            payloads = [codec.SyncGroupRequestAssignment(member_id=m.member_id,
                                                         assignment=encode_assignment(assignment.of(m.member_id)))
                        for m in members]
            self._sync(payloads)

        if self._partition_counts_of(topics).keys() == topics:
            # Every member's topic is in the metadata already: assign from it now, as the Java
            # leader does (a partition count that changes later is a rebalance of its own,
            # on_metadata); a refresh first would add a round trip to every rebalance.
            with_metadata(None, None)
        else:
            self.ctx.metadata.refresh(with_metadata)

    def _partition_racks(self, topics: set[str]) -> PartitionRacks:
        """KIP-881: the racks of each partition's replicas, as the metadata names them."""
        current = self.ctx.metadata.current
        racks: dict[TopicPartition, frozenset[str]] = {}
        for topic in topics:
            info = current.topics.get(topic)
            for p in info.partitions if info is not None else ():
                found = frozenset(b.rack for r in p.replicas if (b := current.brokers.get(r)) is not None and b.rack)
                if found:
                    racks[TopicPartition(topic, p.partition)] = found
        return racks

    def _partition_counts_of(self, topics: set[str] | frozenset[str]) -> dict[str, int]:
        counts = {}
        for topic in topics:
            info = self.ctx.metadata.current.topics.get(topic)
            # A transient topic error (an election) keeps the known count; only a missing
            # topic drops out, so a deletion is a change but a hiccup is not.
            if info is not None and info.partitions and info.error_code not in MISSING_TOPIC_ERRORS:
                counts[topic] = info.num_partitions
        return counts

    def _sync(self, payloads: list[codec.SyncGroupRequestAssignment]) -> None:
        generation = self.generation

        def sync(conn: Connection) -> None:
            log.debug("group %r: SyncGroup generation %d (member %r, %d assignments)", self.group_id, generation,
                      self.member_id, len(payloads))
            conn.sync_group(self.group_id, generation, self.member_id, payloads,
                            lambda resp, e: self._on_sync(resp, e, generation),
                            group_instance_id=self.group_instance_id, protocol_type=PROTOCOL_TYPE,
                            protocol_name=self.protocol_name)

        self.link.send(sync, lambda err: self._on_sync(None, err, generation))

    def _on_sync(self, resp: codec.SyncGroupResponse | None, err: KafkaError | None, generation: int) -> None:
        self._join_in_flight = False
        if self.state is not GroupState.SYNCING:
            return
        if generation != self.generation:
            # The generation was lost while syncing (a commit refused it): this answer is
            # stale, and nothing else would take the member out of SYNCING; join again.
            self.state = GroupState.JOINING
            self._join()
            return
        if err is not None:
            self.link.forget()
            self.state = GroupState.JOINING
            self._join_failed(err)
            return
        assert resp is not None  # no error: an answer
        code = resp.error_code
        log.debug("group %r: SyncGroup answered %s (generation %d)", self.group_id, error_name(code), generation)
        if code != NONE:
            self.state = GroupState.JOINING
            if code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
                self._drop_generation(code)
                self._join()
            elif code == REBALANCE_IN_PROGRESS:
                self._join()
            elif code == FENCED_INSTANCE_ID:
                self.membership_lost(code)
            elif self.link.on_error_code(code):
                self._join_later()
            else:
                self._fatal(KafkaError(code, f"SyncGroup of group {self.group_id!r}"))
            return
        try:
            assigned = decode_assignment(bytes(resp.assignment))
        except KafkaError as exc:
            self._fatal(exc)
            return
        self._apply_assignment(assigned)

    def _apply_assignment(self, assigned: list[TopicPartition]) -> None:
        new = set(assigned)
        old = set(self.owned)
        revoked = sorted(old - new)
        added = sorted(new - old)
        self.state = GroupState.STABLE
        self._join_backoff.reset()
        self._rebalance_done(added, revoked)
        self._last_heartbeat_ok = self.ctx.loop.time()
        self._partition_counts = self._partition_counts_of(self.topics)
        revoking = None
        if revoked:
            # Cooperative: commit what was read of the partitions that move, then let them go.
            if self.options.auto_commit:
                self.commit_positions(revoked, self._report_err, only_advanced=True)
            revoking = self.ownership.revoke(revoked)
        if added:
            self._assign(added)
        self._arm_heartbeat(0.0)
        if revoked and self.cooperative:
            # KIP-429: rejoin so the partitions just released go to their new owners.
            self._rejoin_needed = True
        # The rejoin waits for on_revoke's Future: the generation must stay the one its commits use.
        self._after(revoking, self._rejoin_if_needed)

    def _rejoin_if_needed(self) -> None:
        if self.state is not GroupState.STABLE:
            return  # lost, closed or already rejoining while on_revoke's Future ran
        if self._rejoin_needed or self._matching_topics() != self._joined_topics:
            self._rejoin_needed = False
            self._start_rebalance()

    def _rebalance_done(self, added: list[TopicPartition], revoked: list[TopicPartition]) -> None:
        took_ms = self.rebalance_clock.finish()
        log.info("group %r: generation %d stable after %.0f ms: %d partitions assigned, %d revoked, %d owned",
                 self.group_id, self.generation, took_ms, len(added), len(revoked),
                 len(set(self.owned) - set(revoked)) + len(added))

    def _owner_check(self) -> Callable[[], bool]:
        generation = self.generation

        def still_owner() -> bool:
            return self.state is GroupState.STABLE and self.generation == generation

        return still_owner

    # --- heartbeat -----------------------------------------------------------------------------------
    def _heartbeat(self) -> None:
        self._heartbeat_handle = None
        if self.state is not GroupState.STABLE:
            return
        if self.ctx.loop.time() - self._last_heartbeat_ok > self.options.session_timeout_ms / 1000.0:
            # The coordinator has expired this session by now: the partitions are gone.
            self._drop_generation()
            self._start_rebalance()
            return
        if self._heartbeat_in_flight:
            self._arm_heartbeat(self._interval_s)
            return
        self._heartbeat_sent()
        generation = self.generation

        def heartbeat(conn: Connection) -> None:
            log.debug("group %r: Heartbeat generation %d (member %r)", self.group_id, generation, self.member_id)
            conn.heartbeat(self.group_id, generation, self.member_id,
                           lambda resp, e: self._on_heartbeat(resp, e, generation),
                           group_instance_id=self.group_instance_id)

        self.link.send(heartbeat, lambda err: self._on_heartbeat(None, err, generation))

    def _on_heartbeat(self, resp: codec.HeartbeatResponse | None, err: KafkaError | None, generation: int) -> None:
        self._heartbeat_in_flight = False
        if self.state is not GroupState.STABLE or generation != self.generation:
            return
        if err is not None:
            self.link.forget()
            # Try again soon: the session keeps running on the coordinator meanwhile.
            self._arm_heartbeat(self._heartbeat_backoff.next_delay_s())
            return
        assert resp is not None  # no error: an answer
        code = resp.error_code
        log.debug("group %r: Heartbeat answered %s (generation %d)", self.group_id, error_name(code), generation)
        if code == NONE:
            self._heartbeat_ok()
            self._arm_next_heartbeat()
        elif code == REBALANCE_IN_PROGRESS:
            self._heartbeat_ok()
            self._start_rebalance()
        elif code in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID):
            self.membership_lost(code)
        elif self.link.on_error_code(code):
            self._arm_heartbeat(self._heartbeat_backoff.next_delay_s())
        else:
            self.ctx.report(KafkaError(code, f"Heartbeat of group {self.group_id!r}"))
            self._arm_next_heartbeat()

    def _heartbeat_ok(self) -> None:
        self._last_heartbeat_ok = self.ctx.loop.time()
        self._heartbeat_backoff.reset()

    # --- metadata ------------------------------------------------------------------------------------
    def on_metadata(self) -> None:
        """A partition count change of a subscribed topic, or a change in the topics a pattern
        matches, means a new assignment is due."""
        if self.state is not GroupState.STABLE:
            return
        if self._matching_topics() != self._joined_topics:
            self._start_rebalance()
            return
        counts = self._partition_counts_of(self.topics)
        if counts != self._partition_counts:
            self._partition_counts = counts
            self._start_rebalance()

    # --- ending --------------------------------------------------------------------------------------
    def _send_leave(self, cb: Callable[[KafkaError | None], object] | None) -> None:
        def done(_resp: codec.LeaveGroupResponse | None, err: KafkaError | None) -> None:
            self.link.close()
            self.member_id = ""
            self.generation = NO_GENERATION
            if cb is not None:
                self.ctx.call(cb, err)

        def leave(conn: Connection) -> None:
            log.debug("group %r: LeaveGroup (member %r)", self.group_id, self.member_id)
            conn.leave_group(
                self.group_id,
                [codec.MemberIdentity(member_id=self.member_id, group_instance_id=self.group_instance_id)],
                done,
            )

        self.link.send(leave, lambda err: done(None, err))


__all__ = ["GroupMember", "GroupOptions", "GroupState", "MemberSubscription"]
