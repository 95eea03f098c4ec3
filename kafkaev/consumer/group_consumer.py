"""The consumer group protocol (KIP-848): membership by ConsumerGroupHeartbeat alone.

The broker runs the assignor (``remote_assignor``, or its default) and sends each member
its target assignment by topic id; the member reconciles towards it and says what it owns
in a later heartbeat. States: UNJOINED -> JOINING (epoch 0 sent) -> STABLE.

* Join: a member id made here, epoch 0, every field of the request. Then heartbeats at the
  interval the broker answers with; a field is sent only when it changed, except that the
  first heartbeat after any error is complete again (the coordinator may have moved).
* Reconciliation is incremental: the partitions the target drops are revoked first (their
  positions committed under auto_commit, and the acknowledgement waits for that commit, so
  the next owner reads it), then the new ones are taken; a heartbeat right after says what
  is owned now. Assigned topic ids are named through Metadata; a topic not known yet is
  waited for (the rest of the assignment goes ahead).
* FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: the partitions are someone else's already:
  ``on_lost`` (no commit), then a rejoin at epoch 0 with the same member id.
  UNRELEASED_INSTANCE_ID (the static member's previous process has not left),
  FENCED_INSTANCE_ID (another process took the instance id) and the broker refusing the
  request itself are fatal, reported once. STALE_MEMBER_EPOCH concerns commits
  (offsets.py retries them with the epoch the next heartbeat brings).
* Leave: epoch -1, or -2 for a static member, whose partitions wait for it for the
  session timeout and come back when it rejoins with the same instance id.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from kafkaev.errors import FENCED_MEMBER_EPOCH, NONE, UNKNOWN_MEMBER_ID, KafkaError
from kafkaev.protocol import codec
from kafkaev.types import TopicPartition

from .context import ConsumerContext
from .coordinator import retriable_group_error
from .membership import (
    JOIN_EPOCH,
    LEAVE_EPOCH_DYNAMIC,
    LEAVE_EPOCH_STATIC,
    GroupMemberBase,
    GroupOptions,
    GroupState,
    TopicSelection,
)

log = logging.getLogger("kafkaev.group")  # kafkaev/log.py names the areas

# The heartbeat interval until the broker's first answer sets it.
INITIAL_HEARTBEAT_INTERVAL_MS = 5000
# Errors after which the member goes on with the same epoch: it keeps its partitions.
FENCING_ERRORS = frozenset({FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID})


class ConsumerGroupMember(GroupMemberBase):
    def __init__(self, ctx: ConsumerContext, options: GroupOptions, *, require_stable: bool,
                 on_partitions_changed: Callable[[], None]) -> None:
        super().__init__(ctx, options, require_stable=require_stable, on_partitions_changed=on_partitions_changed,
                         heartbeat_interval_ms=INITIAL_HEARTBEAT_INTERVAL_MS)
        # KIP-1082: the member makes its id and keeps it for its lifetime, rejoins included.
        self.member_id = str(uuid.uuid4())
        self.member_epoch = JOIN_EPOCH
        # The broker's latest assignment (partitions by topic id), until reconciled to.
        self._target: dict[uuid.UUID, frozenset[int]] | None = None
        self._reconciling = False
        # What the last answered heartbeat told the broker; None: send it (again).
        self._sent_selection: TopicSelection | None = None
        self._sent_owned: frozenset[TopicPartition] | None = None
        self._full_request = True
        self._heartbeat_due = False  # something to tell the broker as soon as the one in flight is answered
        # Counts the joins: an answer to a heartbeat sent before the latest (re)join is stale.
        self._joins = 0
        self._leave_cb: Callable[[KafkaError | None], object] | None = None
        self._leaving = False  # leave() called: no new work, revoking and committing
        self._leave_due = False  # the leave heartbeat is to be sent
        # The partitions the broker is told this member owns: the owned ones once a
        # reconciliation has finished (a revocation is acknowledged only after its commit).
        self._reported: frozenset[TopicPartition] = frozenset()

    # --- the Membership interface -----------------------------------------------------------------
    @property
    def generation_id(self) -> int:
        """What OffsetCommit v9+ carries in generation_id_or_member_epoch: the member epoch."""
        return self.member_epoch

    @property
    def member_epoch_for_fetch(self) -> int:
        return self.member_epoch

    def set_selection(self, selection: TopicSelection) -> None:
        """A new subscription: the next heartbeat (sent now) carries it."""
        self.options.selection = selection
        selection.track(self.ctx.metadata)
        self.ctx.metadata.refresh()
        self._heartbeat_soon()

    def membership_lost(self, code: int) -> None:
        """A commit was refused for membership reasons."""
        if code in FENCING_ERRORS:
            self._fenced()

    def _no_generation(self) -> str | None:
        return "no member epoch to commit with (joining)" if self.member_epoch <= JOIN_EPOCH else None

    def leave(self, cb: Callable[[KafkaError | None], object] | None) -> None:
        """Commit (auto_commit), revoke, heartbeat with the leave epoch, stop; cb(err) once."""
        if self.state is GroupState.CLOSED or self._leaving:
            if cb is not None:
                self.ctx.loop.call_soon(self.ctx.call, cb, None)
            return
        self._leaving = True
        self._stop_timers()
        was_member = self.member_epoch > JOIN_EPOCH

        def after_revoke() -> None:
            if not was_member or self.state is GroupState.FAILED:
                self._close(cb, None)
                return
            self._leave_cb = cb
            self._leave_due = True
            self._heartbeat()

        self._give_up_all(after_revoke, commit=was_member)

    def on_metadata(self) -> None:
        """Topic ids of the target may have names now."""
        if self._target is not None and not self._reconciling and self.state is GroupState.STABLE:
            self._reconcile()

    # --- heartbeat --------------------------------------------------------------------------------
    def _join(self) -> None:
        if self.state in (GroupState.FAILED, GroupState.CLOSED) or self._leaving:
            return
        self.state = GroupState.JOINING
        self.member_epoch = JOIN_EPOCH
        if self.rebalance_clock.start():
            log.info("group %r: joining (member %r)", self.group_id, self.member_id)
        self._full_request = True
        self._joins += 1
        self._heartbeat()

    def _heartbeat_soon(self) -> None:
        if self.state not in (GroupState.JOINING, GroupState.STABLE):
            return
        if self._heartbeat_in_flight:
            self._heartbeat_due = True
        else:
            self._arm_heartbeat(0.0)

    def _leave_epoch(self) -> int:
        return LEAVE_EPOCH_STATIC if self.group_instance_id is not None else LEAVE_EPOCH_DYNAMIC

    def _request(self) -> codec.ConsumerGroupHeartbeatRequest:
        """This heartbeat: the identity always; the rest only when new (everything after an error)."""
        options = self.options
        if self._leaving:
            return codec.ConsumerGroupHeartbeatRequest(
                group_id=self.group_id, member_id=self.member_id, member_epoch=self._leave_epoch(),
                instance_id=self.group_instance_id, rebalance_timeout_ms=-1)
        full = self._full_request or self.member_epoch == JOIN_EPOCH
        selection = options.selection
        req = codec.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.member_epoch,
            instance_id=self.group_instance_id if full else None,
            rack_id=options.client_rack if full else None,
            rebalance_timeout_ms=options.rebalance_timeout_ms if full else -1,
            server_assignor=options.remote_assignor if full else None)
        if full or selection != self._sent_selection:
            if selection.regex is not None:
                req.subscribed_topic_regex = selection.regex
                req.subscribed_topic_names = []  # v0 needs names; the regex wins from v1
            else:
                req.subscribed_topic_names = sorted(selection.topics)
        if full or self._reported != self._sent_owned:
            req.topic_partitions = self._by_topic_id(self._reported)
        return req

    def _by_topic_id(self, owned: frozenset[TopicPartition]) -> list[codec.ConsumerGroupHeartbeatRequestTopicPartitions]:
        grouped: dict[uuid.UUID, list[int]] = {}
        for tp in owned:
            topic_id = self.ctx.topic_id(tp.topic)
            if topic_id is not None:
                grouped.setdefault(topic_id, []).append(tp.partition)
        return [codec.ConsumerGroupHeartbeatRequestTopicPartitions(topic_id=t, partitions=sorted(p))
                for t, p in grouped.items()]

    def _heartbeat(self) -> None:
        self._heartbeat_handle = None
        if self.state in (GroupState.FAILED, GroupState.CLOSED):
            return
        if self._heartbeat_in_flight:
            self._heartbeat_due = True
            return
        self._heartbeat_sent()
        self._heartbeat_due = False
        req = self._request()
        sent_selection = self.options.selection
        sent_owned = self._reported
        joins = self._joins
        if req.member_epoch < JOIN_EPOCH:
            self._leave_due = False
        if log.isEnabledFor(logging.DEBUG):
            log.debug("group %r: ConsumerGroupHeartbeat (member %r, epoch %d, %s owned)", self.group_id,
                      self.member_id, req.member_epoch,
                      "-" if req.topic_partitions is None else sum(len(t.partitions) for t in req.topic_partitions))

        def answered(resp: codec.ConsumerGroupHeartbeatResponse | None, err: KafkaError | None) -> None:
            self._heartbeat_in_flight = False
            if joins != self._joins and req.member_epoch >= JOIN_EPOCH:
                # Sent before the member was fenced and rejoined: its answer says nothing now.
                if self._heartbeat_due or self._leave_due:
                    self._heartbeat()
                return
            if req.member_epoch < JOIN_EPOCH:
                self._on_leave_answer(resp, err)
            else:
                self._on_heartbeat(resp, err, req, sent_selection, sent_owned)

        self.link.send(lambda conn: conn.consumer_group_heartbeat(req, answered), lambda err: answered(None, err))

    def _on_heartbeat(self, resp: codec.ConsumerGroupHeartbeatResponse | None, err: KafkaError | None,
                      req: codec.ConsumerGroupHeartbeatRequest, sent_selection: TopicSelection,
                      sent_owned: frozenset[TopicPartition]) -> None:
        if self.state in (GroupState.FAILED, GroupState.CLOSED) or self._leaving:
            if self._leave_due:
                self._heartbeat()  # leave now that the heartbeat before it was answered
            return
        if err is not None:
            self.link.forget()  # no answer: the connection broke or timed out
        elif resp is not None and resp.error_code != NONE:
            code = resp.error_code
            err = KafkaError(code, f"ConsumerGroupHeartbeat of group {self.group_id!r}"
                                   + (f": {resp.error_message}" if resp.error_message else ""))
        if err is not None:
            self._heartbeat_failed(err, req)
            return
        assert resp is not None  # no error: an answer
        if log.isEnabledFor(logging.DEBUG):
            log.debug("group %r: ConsumerGroupHeartbeat answered (member %r, epoch %d, interval %d ms, "
                      "assignment %s)", self.group_id, self.member_id, resp.member_epoch, resp.heartbeat_interval_ms,
                      "-" if resp.assignment is None else sum(len(t.partitions)
                                                              for t in resp.assignment.topic_partitions))
        self._heartbeat_backoff.reset()
        self._full_request = False
        self._sent_selection = sent_selection
        if req.topic_partitions is not None:
            self._sent_owned = sent_owned
        if resp.member_id:
            self.member_id = resp.member_id
        self.member_epoch = resp.member_epoch
        self._interval_s = resp.heartbeat_interval_ms / 1000.0
        if self.state is GroupState.JOINING:
            self.state = GroupState.STABLE
        if resp.assignment is not None:
            self._target = {t.topic_id: frozenset(t.partitions) for t in resp.assignment.topic_partitions}
            self._reconcile()
        if self._heartbeat_due or self._changed_since_sent():
            self._arm_heartbeat(0.0)
        else:
            self._arm_next_heartbeat()

    def _changed_since_sent(self) -> bool:
        return self._reported != self._sent_owned or self.options.selection != self._sent_selection

    def _heartbeat_failed(self, err: KafkaError, req: codec.ConsumerGroupHeartbeatRequest) -> None:
        code = err.code
        if code in FENCING_ERRORS:
            self._fenced()
            return
        if self.link.on_error_code(code) or retriable_group_error(err, self.link):
            self._full_request = True
            self._arm_heartbeat(self._heartbeat_backoff.next_delay_s())
            return
        # UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, INVALID_REQUEST,
        # INVALID_REGULAR_EXPRESSION, GROUP_MAX_SIZE_REACHED, authorization: no retry helps.
        self._fatal(err)

    def _fenced(self) -> None:
        """The coordinator gave our partitions away: on_lost without a commit, rejoin at epoch 0."""
        if self.state in (GroupState.FAILED, GroupState.CLOSED) or self._leaving:
            return
        self._target = None
        self.ownership.lose()
        self._reported = frozenset()
        self._sent_owned = None
        self._join()

    # --- reconciliation ---------------------------------------------------------------------------
    def _names_by_id(self) -> dict[uuid.UUID, str]:
        return {info.topic_id: name for name, info in self.ctx.metadata.current.topics.items()
                if info.topic_id is not None}

    def _reconcile(self) -> None:
        """Move towards the target: revoke what it drops (after committing it), then take the rest."""
        if self._reconciling or self._target is None or self.state is not GroupState.STABLE:
            return
        names = self._names_by_id()
        wanted: set[TopicPartition] = set()
        unknown = False
        for topic_id, partitions in self._target.items():
            name = names.get(topic_id)
            if name is None:
                unknown = True  # a topic this client has no metadata for yet: waited for
                continue
            wanted.update(TopicPartition(name, p) for p in partitions)
        if unknown:
            self.ctx.metadata.request_refresh()
        owned = set(self.owned)
        revoked = sorted(owned - wanted)
        added = sorted(wanted - owned)
        if not unknown:
            self._target = None
        if not revoked and not added:
            if self._target is None and self.rebalance_clock.running:
                self._rebalance_done()
            return
        self.rebalance_clock.start()
        log.debug("group %r: member %r revokes %s, takes %s", self.group_id, self.member_id,
                  [tp.partition for tp in revoked], [tp.partition for tp in added])
        self._reconciling = True
        epoch = self.member_epoch

        def after_commit(err: KafkaError | None) -> None:
            self._reconciling = False
            self._report_err(err)
            if self.state is not GroupState.STABLE or self._leaving or self.member_epoch < epoch:
                return  # fenced or leaving meanwhile: that path dealt with the partitions
            if added:
                self._assign(added)
            self._reported = frozenset(self.owned)
            self._heartbeat_soon()  # acknowledge
            if self._target is not None:
                self._reconcile()
            else:
                self._rebalance_done()

        if not revoked:
            after_commit(None)
            return
        # The broker hears of the revocation once the revoked partitions' commit is answered and
        # on_revoke's Future (a handler runner finishing them) is done, whichever comes last.
        self._commit_and_revoke(revoked, after_commit, commit=True)

    def _rebalance_done(self) -> None:
        took_ms = self.rebalance_clock.finish()
        log.info("group %r: epoch %d reconciled after %.0f ms: %d partitions owned", self.group_id,
                 self.member_epoch, took_ms, len(self.owned))

    def _owner_check(self) -> Callable[[], bool]:
        member_id = self.member_id

        def still_owner() -> bool:
            return self.state is GroupState.STABLE and self.member_id == member_id and not self._leaving

        return still_owner

    def _may_auto_commit(self) -> bool:
        return super()._may_auto_commit() and not self._reconciling

    # --- ending -----------------------------------------------------------------------------------
    def _on_leave_answer(self, resp: codec.ConsumerGroupHeartbeatResponse | None, err: KafkaError | None) -> None:
        if err is None and resp is not None and resp.error_code not in (NONE, *FENCING_ERRORS):
            err = KafkaError(resp.error_code, f"leaving group {self.group_id!r}")
        self._close(self._leave_cb, err)

    def _close(self, cb: Callable[[KafkaError | None], object] | None, err: KafkaError | None) -> None:
        self._leave_cb = None
        self._stop_timers()
        self.state = GroupState.CLOSED
        self.member_epoch = self._leave_epoch()
        self.link.close()
        if cb is not None:
            self.ctx.call(cb, err)


__all__ = ["ConsumerGroupMember"]
