# Connection: BaseConnection plus one typed helper per Kafka request the cluster client needs.
# Each helper checks its arguments (TypeError/ValueError at once, naming the argument), builds
# the generated request object and sends it at the negotiated version; cb(response, err).
# Included from connection.pyx.

include "connection_records.pxi"

# The Produce request's structs, built by the produce path without the keyword constructor
# (ProducePartition checked every value when it was made).
_built_unchecked = codec.built_unchecked
_ProduceRequest = codec.ProduceRequest
_TopicProduceData = codec.TopicProduceData
_PartitionProduceData = codec.PartitionProduceData


cdef class Connection(BaseConnection):
    """One pipelined connection to one Kafka broker; see kafkaev/protocol/connection.pyi for the contract."""

    # --- cluster metadata -------------------------------------------------------------------

    def api_versions_request(self, cb):
        _check_cb(cb)
        cdef int v = self._version_or_fail(API_API_VERSIONS, cb)
        if v >= 0:
            body = codec.ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME,
                                        client_software_version=_proto_version())
            self._send(API_API_VERSIONS, v, body, cb, self._request_timeout, True)

    def metadata(self, topics, cb, *, allow_auto_topic_creation=True):
        cdef list entries = None
        _check_cb(cb)
        if topics is not None:
            if isinstance(topics, str):
                raise TypeError("topics must be an iterable of str or None, not a str")
            entries = []
            for name in topics:
                _check_str("topics entry", name)
                entries.append(codec.MetadataRequestTopic(name=name))
        cdef int v = self._version_or_fail(API_METADATA, cb)
        if v < 0:
            return
        req = codec.MetadataRequest(topics=entries, allow_auto_topic_creation=bool(allow_auto_topic_creation))
        self._send(API_METADATA, v, req, cb, self._request_timeout, True)

    # --- produce ----------------------------------------------------------------------------

    def produce(self, topic, partition, records, cb, *, acks=ACKS_ALL, timeout_ms=30000, transactional_id=None,
                topic_id=None):
        _check_cb(cb)
        self._produce((ProducePartition(topic, partition, records, topic_id),), cb, acks, timeout_ms,
                      transactional_id)

    def produce_batch(self, batches, cb, *, acks=ACKS_ALL, timeout_ms=30000, transactional_id=None,
                      max_version=None):
        _check_cb(cb)
        self._produce(batches, cb, acks, timeout_ms, transactional_id,
                      -1 if max_version is None else <int>_check_int("max_version", max_version, 0, 0x7FFF))

    cdef int _produce(self, object batches, object cb, object acks, object timeout_ms,
                      object transactional_id, int max_version=-1) except -1:
        cdef dict by_topic = {}
        cdef _TopicNames names_by_id = _TopicNames()
        cdef set seen = set()
        cdef bint all_ids = True
        cdef ProducePartition batch
        cdef int16_t ack = <int16_t>_check_int("acks", acks, -1, 1)
        cdef int32_t timeout = <int32_t>_check_int("timeout_ms", timeout_ms, 0, INT32_MAX)
        _check_opt_str("transactional_id", transactional_id)
        for entry in batches:
            if type(entry) is not ProducePartition:
                raise TypeError(f"batches entries must be ProducePartition, not {type(entry).__name__}")
            batch = <ProducePartition>entry
            if batch.topic_id is None:
                all_ids = False
            key = (batch.topic, batch.partition)
            if key in seen:
                # The broker keeps one batch per partition and request: a second would be lost.
                raise ValueError(f"batches: {batch.topic}[{batch.partition}] appears twice; "
                                 f"send one batch per partition")
            seen.add(key)
            topic_data = by_topic.get(batch.topic)
            if topic_data is None:
                # The topic's first entry names it, by its id too (_TopicNames: once per topic).
                topic_data = _built_unchecked(_TopicProduceData, batch.topic,
                                              batch.topic_id if batch.topic_id is not None else ZERO_UUID, [])
                by_topic[batch.topic] = topic_data
                if batch.topic_id is not None:
                    names_by_id.add(batch.topic_id, batch.topic)
            topic_data.partition_data.append(_built_unchecked(_PartitionProduceData, batch.partition, batch.records))
        if not by_topic:
            raise ValueError("batches must not be empty")
        cdef int v = self._version_or_fail(API_PRODUCE, cb)
        if v < 0:
            return 0
        if 0 <= max_version < v:
            # e.g. transactions v1 stay below Produce v12, whose answers imply KIP-890's v2
            v = max_version
            if self._api_versions[API_PRODUCE][0] > v:
                self._loop.call_soon(self._invoke_soon, cb, KafkaError(errors.UNSUPPORTED_VERSION, (
                    f"Produce: {self._host}:{self._port} accepts no version up to v{max_version}")))
                return 0
        if not all_ids and v > PRODUCE_LAST_VERSION_WITH_NAMES:
            v = PRODUCE_LAST_VERSION_WITH_NAMES
            if self._api_versions[API_PRODUCE][0] > v:
                self._loop.call_soon(self._invoke_soon, cb, KafkaError(errors.UNSUPPORTED_VERSION, (
                    f"Produce: {self._host}:{self._port} requires topic ids (v13+); pass topic_id")))
                return 0
        if v > PRODUCE_LAST_VERSION_WITH_NAMES and ack != 0:
            cb = _NameTopicsById(cb, names_by_id, False)
        req = _built_unchecked(_ProduceRequest, transactional_id, ack, timeout, list(by_topic.values()))
        # The broker may hold the response for up to timeout_ms waiting for replicas.
        self._send(API_PRODUCE, v, req, cb, self._request_timeout + timeout / 1000.0, ack != 0)
        return 0

    # --- fetch ------------------------------------------------------------------------------

    def fetch(self, topic, partition, offset, cb, *, max_wait_ms=500, min_bytes=1, max_bytes=52428800,
              partition_max_bytes=1048576, isolation_level=0, current_leader_epoch=NO_LEADER_EPOCH):
        position = FetchPosition(topic, partition, offset, max_bytes=partition_max_bytes,
                                 current_leader_epoch=current_leader_epoch)
        self.fetch_multi((position,), cb, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
                         isolation_level=isolation_level)

    def fetch_multi(self, partitions, cb, *, max_wait_ms=500, min_bytes=1, max_bytes=52428800,
                    isolation_level=0, session_id=0, session_epoch=-1, forgotten=(), session_topic_ids=None,
                    rack_id=""):
        cdef dict by_topic = {}
        cdef _TopicNames names_by_id = _TopicNames()
        cdef bint all_ids = True
        cdef FetchPosition position
        cdef ForgottenPartitions gone
        _check_cb(cb)
        cdef int32_t wait_ms = <int32_t>_check_int("max_wait_ms", max_wait_ms, 0, INT32_MAX)
        cdef int32_t min_b = _int32("min_bytes", min_bytes)
        cdef int32_t max_b = _int32("max_bytes", max_bytes)
        cdef int8_t isolation = <int8_t>_check_int("isolation_level", isolation_level, 0, 1)
        cdef int32_t sess_id = _int32("session_id", session_id)
        cdef int32_t sess_epoch = _int32("session_epoch", session_epoch)
        _check_str("rack_id", rack_id)
        for entry in partitions:
            if type(entry) is not FetchPosition:
                raise TypeError(f"partitions entries must be FetchPosition, not {type(entry).__name__}")
            position = <FetchPosition>entry
            if position.topic_id is None:
                all_ids = False
            fetch_topic = by_topic.get(position.topic)
            if fetch_topic is None:
                fetch_topic = codec.FetchTopic(
                    topic=position.topic,
                    topic_id=position.topic_id if position.topic_id is not None else ZERO_UUID, partitions=[])
                by_topic[position.topic] = fetch_topic
                if position.topic_id is not None:  # once per topic, as in _produce
                    names_by_id.add(position.topic_id, position.topic)
            fetch_topic.partitions.append(codec.FetchPartition(
                partition=position.partition, fetch_offset=position.offset,
                partition_max_bytes=position.max_bytes, current_leader_epoch=position.current_leader_epoch,
                last_fetched_epoch=position.last_fetched_epoch))
        forgotten_list = []
        for entry in forgotten:
            if type(entry) is not ForgottenPartitions:
                raise TypeError(f"forgotten entries must be ForgottenPartitions, not {type(entry).__name__}")
            gone = <ForgottenPartitions>entry
            if gone.topic_id is None:
                all_ids = False
            else:
                names_by_id.add(gone.topic_id, gone.topic)
            forgotten_list.append(codec.ForgottenTopic(
                topic=gone.topic, topic_id=gone.topic_id if gone.topic_id is not None else ZERO_UUID,
                partitions=list(gone.partitions)))
        cdef int v = self._version_or_fail(API_FETCH, cb)
        if v < 0:
            return
        if not all_ids and v > FETCH_LAST_VERSION_WITH_NAMES:
            v = FETCH_LAST_VERSION_WITH_NAMES
            if self._api_versions[API_FETCH][0] > v:
                self._loop.call_soon(self._invoke_soon, cb, KafkaError(errors.UNSUPPORTED_VERSION, (
                    f"Fetch: {self._host}:{self._port} requires topic ids (v13+); pass topic_id")))
                return
        if v > FETCH_LAST_VERSION_WITH_NAMES:
            # An incremental answer may also carry partitions the session holds but this
            # request does not list: their topics are named by the ids they were fetched with.
            if session_topic_ids is not None:
                for topic, topic_id in session_topic_ids.items():
                    names_by_id.add(topic_id, topic)
            cb = _NameTopicsById(cb, names_by_id, True)
        req = codec.FetchRequest(
            replica_id=CLIENT_REPLICA_ID, max_wait_ms=wait_ms, min_bytes=min_b, max_bytes=max_b,
            isolation_level=isolation, session_id=sess_id, session_epoch=sess_epoch,
            topics=list(by_topic.values()), forgotten_topics_data=forgotten_list, rack_id=rack_id)
        # The broker legitimately holds a fetch for max_wait_ms before answering.
        self._send(API_FETCH, v, req, cb, self._request_timeout + wait_ms / 1000.0, True)
        # Written now, not coalesced until the loop iteration ends: the consumer sends its next
        # Fetch before it hands the last response's records over, so that the broker reads its
        # log while the callbacks run.
        self._flush(False)

    def list_offsets(self, partitions, cb, *, isolation_level=0):
        cdef OffsetLookup lookup
        _check_cb(cb)
        cdef int8_t isolation = <int8_t>_check_int("isolation_level", isolation_level, 0, 1)
        topics = []
        for topic, lookups in _by_topic(partitions, OffsetLookup, "partitions").items():
            parts = []
            for lookup in lookups:
                parts.append(codec.ListOffsetsPartition(
                    partition_index=lookup.partition, timestamp=lookup.timestamp,
                    current_leader_epoch=lookup.current_leader_epoch))
            topics.append(codec.ListOffsetsTopic(name=topic, partitions=parts))
        cdef int v = self._version_or_fail(API_LIST_OFFSETS, cb)
        if v >= 0:
            body = codec.ListOffsetsRequest(replica_id=CLIENT_REPLICA_ID, isolation_level=isolation, topics=topics,
                                        timeout_ms=int(self._request_timeout * 1000))
            self._send(API_LIST_OFFSETS, v, body, cb, self._request_timeout, True)

    def offset_for_leader_epoch(self, partitions, cb):
        cdef EpochLookup lookup
        _check_cb(cb)
        topics = []
        for topic, lookups in _by_topic(partitions, EpochLookup, "partitions").items():
            parts = []
            for lookup in lookups:
                parts.append(codec.OffsetForLeaderPartition(
                    partition=lookup.partition, current_leader_epoch=lookup.current_leader_epoch,
                    leader_epoch=lookup.leader_epoch))
            topics.append(codec.OffsetForLeaderTopic(topic=topic, partitions=parts))
        cdef int v = self._version_or_fail(API_OFFSET_FOR_LEADER_EPOCH, cb)
        if v >= 0:
            body = codec.OffsetForLeaderEpochRequest(replica_id=CONSUMER_REPLICA_ID, topics=topics)
            self._send(API_OFFSET_FOR_LEADER_EPOCH, v, body, cb, self._request_timeout, True)

    # --- groups -----------------------------------------------------------------------------

    def find_coordinator(self, key, cb, *, key_type=0):
        _check_str("key", key)
        _check_cb(cb)
        cdef int8_t kind = <int8_t>_check_int("key_type", key_type, 0, 1)
        cdef int v = self._version_or_fail(API_FIND_COORDINATOR, cb)
        if v >= 0:
            # v0-3 carry one key, v4+ a list: fill both, the encoder writes what the version has.
            body = codec.FindCoordinatorRequest(key=key, key_type=kind, coordinator_keys=[key])
            self._send(API_FIND_COORDINATOR, v, body, cb, self._request_timeout, True)

    def join_group(self, group_id, member_id, protocol_type, protocols, cb, *, session_timeout_ms=45000,
                   rebalance_timeout_ms=300000, group_instance_id=None, reason=None):
        _check_str("group_id", group_id)
        _check_str("member_id", member_id)
        _check_str("protocol_type", protocol_type)
        _check_cb(cb)
        cdef int32_t session = <int32_t>_check_int("session_timeout_ms", session_timeout_ms, 1, INT32_MAX)
        cdef int32_t rebalance = <int32_t>_check_int("rebalance_timeout_ms", rebalance_timeout_ms, 1, INT32_MAX)
        _check_opt_str("group_instance_id", group_instance_id)
        _check_opt_str("reason", reason)
        protos = _list_of(protocols, codec.JoinGroupRequestProtocol, "protocols")
        cdef int v = self._version_or_fail(API_JOIN_GROUP, cb)
        if v >= 0:
            body = codec.JoinGroupRequest(group_id=group_id, session_timeout_ms=session,
                                      rebalance_timeout_ms=rebalance, member_id=member_id,
                                      group_instance_id=group_instance_id, protocol_type=protocol_type,
                                      protocols=protos, reason=reason)
            # The coordinator answers only when the rebalance completes.
            self._send(API_JOIN_GROUP, v, body, cb, self._request_timeout + rebalance / 1000.0, True)

    def sync_group(self, group_id, generation_id, member_id, assignments, cb, *, group_instance_id=None,
                   protocol_type=None, protocol_name=None):
        _check_str("group_id", group_id)
        cdef int32_t generation = _int32("generation_id", generation_id)
        _check_str("member_id", member_id)
        _check_cb(cb)
        _check_opt_str("group_instance_id", group_instance_id)
        _check_opt_str("protocol_type", protocol_type)
        _check_opt_str("protocol_name", protocol_name)
        assigned = _list_of(assignments, codec.SyncGroupRequestAssignment, "assignments")
        cdef int v = self._version_or_fail(API_SYNC_GROUP, cb)
        if v >= 0:
            body = codec.SyncGroupRequest(group_id=group_id, generation_id=generation, member_id=member_id,
                                      group_instance_id=group_instance_id, protocol_type=protocol_type,
                                      protocol_name=protocol_name, assignments=assigned)
            self._send(API_SYNC_GROUP, v, body, cb, self._request_timeout, True)

    def heartbeat(self, group_id, generation_id, member_id, cb, *, group_instance_id=None):
        _check_str("group_id", group_id)
        cdef int32_t generation = _int32("generation_id", generation_id)
        _check_str("member_id", member_id)
        _check_cb(cb)
        _check_opt_str("group_instance_id", group_instance_id)
        cdef int v = self._version_or_fail(API_HEARTBEAT, cb)
        if v >= 0:
            body = codec.HeartbeatRequest(group_id=group_id, generation_id=generation, member_id=member_id,
                                      group_instance_id=group_instance_id)
            self._send(API_HEARTBEAT, v, body, cb, self._request_timeout, True)

    def leave_group(self, group_id, members, cb):
        _check_str("group_id", group_id)
        _check_cb(cb)
        identities = _list_of(members, codec.MemberIdentity, "members")
        if not identities:
            raise ValueError("members must not be empty")
        cdef int v = self._version_or_fail(API_LEAVE_GROUP, cb)
        if v >= 0:
            # v0-2 leave one member by id; v3+ take the list.
            body = codec.LeaveGroupRequest(group_id=group_id, member_id=identities[0].member_id,
                                       members=identities)
            self._send(API_LEAVE_GROUP, v, body, cb, self._request_timeout, True)

    def offset_commit(self, group_id, generation_id, member_id, offsets, cb, *, group_instance_id=None):
        _check_str("group_id", group_id)
        cdef int32_t generation = _int32("generation_id", generation_id)
        _check_str("member_id", member_id)
        _check_cb(cb)
        _check_opt_str("group_instance_id", group_instance_id)
        cdef OffsetToCommit commit
        topics = []
        for topic, commits in _by_topic(offsets, OffsetToCommit, "offsets").items():
            parts = []
            for commit in commits:
                parts.append(codec.OffsetCommitRequestPartition(
                    partition_index=commit.partition, committed_offset=commit.offset,
                    committed_leader_epoch=commit.leader_epoch, committed_metadata=commit.metadata))
            topics.append(codec.OffsetCommitRequestTopic(name=topic, partitions=parts))
        cdef int v = self._version_or_fail(API_OFFSET_COMMIT, cb)
        if v >= 0:
            body = codec.OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=generation,
                                         member_id=member_id, group_instance_id=group_instance_id,
                                         retention_time_ms=-1, topics=topics)
            self._send(API_OFFSET_COMMIT, v, body, cb, self._request_timeout, True)

    def offset_fetch(self, group_id, partitions, cb, *, require_stable=False, member_id=None, member_epoch=-1):
        _check_str("group_id", group_id)
        _check_cb(cb)
        _check_opt_str("member_id", member_id)
        cdef int32_t epoch = _int32("member_epoch", member_epoch)
        old_topics = None
        new_topics = None
        if partitions is not None:
            old_topics = []
            new_topics = []
            for topic, indexes in _partitions_by_topic(partitions, "partitions").items():
                old_topics.append(codec.OffsetFetchRequestTopic(name=topic, partition_indexes=indexes))
                new_topics.append(codec.OffsetFetchRequestTopics(name=topic, partition_indexes=list(indexes)))
        cdef int v = self._version_or_fail(API_OFFSET_FETCH, cb)
        if v >= 0:
            # v0-7 name one group at top level, v8+ take a list of groups: fill both.
            # v9+ name the consumer-protocol member (KIP-848), so a stale member's read is refused.
            group = codec.OffsetFetchRequestGroup(group_id=group_id, member_id=member_id, member_epoch=epoch,
                                              topics=new_topics)
            body = codec.OffsetFetchRequest(group_id=group_id, topics=old_topics, groups=[group],
                                        require_stable=bool(require_stable))
            self._send(API_OFFSET_FETCH, v, body, cb, self._request_timeout, True)

    def consumer_group_heartbeat(self, request, cb):
        if type(request) is not codec.ConsumerGroupHeartbeatRequest:
            raise TypeError(f"request must be a ConsumerGroupHeartbeatRequest, not {type(request).__name__}")
        _check_str("group_id", request.group_id)
        _check_str("member_id", request.member_id)
        _int32("member_epoch", request.member_epoch)
        _check_cb(cb)
        cdef int v = self._version_or_fail(API_CONSUMER_GROUP_HEARTBEAT, cb)
        if v >= 0:
            self._send(API_CONSUMER_GROUP_HEARTBEAT, v, request, cb, self._request_timeout, True)

    def describe_groups(self, group_ids, cb):
        _check_cb(cb)
        if isinstance(group_ids, str):
            raise TypeError("group_ids must be an iterable of str, not a str")
        groups = list(group_ids)
        for g in groups:
            _check_str("group_ids entry", g)
        cdef int v = self._version_or_fail(API_DESCRIBE_GROUPS, cb)
        if v >= 0:
            body = codec.DescribeGroupsRequest(groups=groups, include_authorized_operations=False)
            self._send(API_DESCRIBE_GROUPS, v, body, cb, self._request_timeout, True)

    def list_groups(self, cb, *, states=(), types=()):
        _check_cb(cb)
        states_filter = list(states)
        types_filter = list(types)
        for s in states_filter:
            _check_str("states entry", s)
        for t in types_filter:
            _check_str("types entry", t)
        cdef int v = self._version_or_fail(API_LIST_GROUPS, cb)
        if v >= 0:
            body = codec.ListGroupsRequest(states_filter=states_filter, types_filter=types_filter)
            self._send(API_LIST_GROUPS, v, body, cb, self._request_timeout, True)

    # --- transactions -----------------------------------------------------------------------

    def init_producer_id(self, cb, *, transactional_id=None, transaction_timeout_ms=60000, producer_id=-1,
                         producer_epoch=-1):
        _check_cb(cb)
        _check_opt_str("transactional_id", transactional_id)
        cdef int32_t txn_timeout = <int32_t>_check_int("transaction_timeout_ms", transaction_timeout_ms, 0, INT32_MAX)
        cdef int64_t pid = _int64("producer_id", producer_id)
        cdef int16_t epoch = <int16_t>_check_int("producer_epoch", producer_epoch, -1, 0x7FFF)
        cdef int v = self._version_or_fail(API_INIT_PRODUCER_ID, cb)
        if v >= 0:
            body = codec.InitProducerIdRequest(transactional_id=transactional_id,
                                           transaction_timeout_ms=txn_timeout, producer_id=pid,
                                           producer_epoch=epoch)
            self._send(API_INIT_PRODUCER_ID, v, body, cb, self._request_timeout, True)

    def add_partitions_to_txn(self, transactional_id, producer_id, producer_epoch, partitions, cb):
        _check_str("transactional_id", transactional_id)
        cdef int64_t pid = _int64("producer_id", producer_id)
        cdef int16_t epoch = <int16_t>_check_int("producer_epoch", producer_epoch, 0, 0x7FFF)
        _check_cb(cb)
        topics = []
        for topic, indexes in _partitions_by_topic(partitions, "partitions").items():
            topics.append(codec.AddPartitionsToTxnTopic(name=topic, partitions=indexes))
        cdef int v = self._version_or_fail(API_ADD_PARTITIONS_TO_TXN, cb)
        if v < 0:
            return
        body = codec.AddPartitionsToTxnRequest(v3_and_below_transactional_id=transactional_id,
                                           v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                                           v3_and_below_topics=topics)
        self._send(API_ADD_PARTITIONS_TO_TXN, v, body, cb, self._request_timeout, True)

    def add_offsets_to_txn(self, transactional_id, producer_id, producer_epoch, group_id, cb):
        _check_str("transactional_id", transactional_id)
        cdef int64_t pid = _int64("producer_id", producer_id)
        cdef int16_t epoch = <int16_t>_check_int("producer_epoch", producer_epoch, 0, 0x7FFF)
        _check_str("group_id", group_id)
        _check_cb(cb)
        cdef int v = self._version_or_fail(API_ADD_OFFSETS_TO_TXN, cb)
        if v >= 0:
            body = codec.AddOffsetsToTxnRequest(transactional_id=transactional_id, producer_id=pid,
                                            producer_epoch=epoch, group_id=group_id)
            self._send(API_ADD_OFFSETS_TO_TXN, v, body, cb, self._request_timeout, True)

    def end_txn(self, transactional_id, producer_id, producer_epoch, commit, cb):
        _check_str("transactional_id", transactional_id)
        cdef int64_t pid = _int64("producer_id", producer_id)
        cdef int16_t epoch = <int16_t>_check_int("producer_epoch", producer_epoch, 0, 0x7FFF)
        if not isinstance(commit, bool):
            raise TypeError(f"commit must be a bool, not {type(commit).__name__}")
        _check_cb(cb)
        cdef int v = self._version_or_fail(API_END_TXN, cb)
        if v >= 0:
            body = codec.EndTxnRequest(transactional_id=transactional_id, producer_id=pid, producer_epoch=epoch,
                                   committed=commit)
            self._send(API_END_TXN, v, body, cb, self._request_timeout, True)

    def txn_offset_commit(self, transactional_id, group_id, producer_id, producer_epoch, offsets, cb, *,
                          generation_id=-1, member_id="", group_instance_id=None):
        _check_str("transactional_id", transactional_id)
        _check_str("group_id", group_id)
        cdef int64_t pid = _int64("producer_id", producer_id)
        cdef int16_t epoch = <int16_t>_check_int("producer_epoch", producer_epoch, 0, 0x7FFF)
        _check_cb(cb)
        cdef int32_t generation = _int32("generation_id", generation_id)
        _check_str("member_id", member_id)
        _check_opt_str("group_instance_id", group_instance_id)
        cdef OffsetToCommit commit
        topics = []
        for topic, commits in _by_topic(offsets, OffsetToCommit, "offsets").items():
            parts = []
            for commit in commits:
                parts.append(codec.TxnOffsetCommitRequestPartition(
                    partition_index=commit.partition, committed_offset=commit.offset,
                    committed_leader_epoch=commit.leader_epoch, committed_metadata=commit.metadata))
            topics.append(codec.TxnOffsetCommitRequestTopic(name=topic, partitions=parts))
        cdef int v = self._version_or_fail(API_TXN_OFFSET_COMMIT, cb)
        if v >= 0:
            body = codec.TxnOffsetCommitRequest(transactional_id=transactional_id, group_id=group_id,
                                            producer_id=pid, producer_epoch=epoch,
                                            generation_id_or_member_epoch=generation,
                                            member_id=member_id, group_instance_id=group_instance_id,
                                            topics=topics)
            self._send(API_TXN_OFFSET_COMMIT, v, body, cb, self._request_timeout, True)

    # --- admin ------------------------------------------------------------------------------

    def create_topics(self, topics, cb, *, timeout_ms=30000, validate_only=False):
        _check_cb(cb)
        cdef int32_t timeout = <int32_t>_check_int("timeout_ms", timeout_ms, 0, INT32_MAX)
        cdef NewTopic topic
        creatable = []
        for entry in topics:
            if type(entry) is not NewTopic:
                raise TypeError(f"topics entries must be NewTopic, not {type(entry).__name__}")
            topic = <NewTopic>entry
            configs = [codec.CreatableTopicConfig(name=k, value=val) for k, val in topic.configs.items()]
            creatable.append(codec.CreatableTopic(
                name=topic.name, num_partitions=topic.num_partitions,
                replication_factor=topic.replication_factor, assignments=[], configs=configs))
        cdef int v = self._version_or_fail(API_CREATE_TOPICS, cb)
        if v >= 0:
            body = codec.CreateTopicsRequest(topics=creatable, timeout_ms=timeout, validate_only=bool(validate_only))
            self._send(API_CREATE_TOPICS, v, body, cb, self._request_timeout + timeout / 1000.0, True)

    def delete_topics(self, names, cb, *, timeout_ms=30000):
        _check_cb(cb)
        cdef int32_t timeout = <int32_t>_check_int("timeout_ms", timeout_ms, 0, INT32_MAX)
        if isinstance(names, str):
            raise TypeError("names must be an iterable of str, not a str")
        topic_names = list(names)
        for n in topic_names:
            _check_str("names entry", n)
        cdef int v = self._version_or_fail(API_DELETE_TOPICS, cb)
        if v >= 0:
            # v0-5 list names, v6+ name-or-id states: fill both.
            body = codec.DeleteTopicsRequest(topics=[codec.DeleteTopicState(name=n) for n in topic_names],
                                         topic_names=topic_names, timeout_ms=timeout)
            self._send(API_DELETE_TOPICS, v, body, cb, self._request_timeout + timeout / 1000.0, True)

    def create_partitions(self, totals, cb, *, timeout_ms=30000, validate_only=False):
        _check_cb(cb)
        cdef int32_t timeout = <int32_t>_check_int("timeout_ms", timeout_ms, 0, INT32_MAX)
        entries = []
        for name, count in totals.items():
            _check_str("totals topic", name)
            entries.append(codec.CreatePartitionsTopic(
                name=name, count=_check_int(f"totals[{name!r}]", count, 1, INT32_MAX), assignments=None))
        cdef int v = self._version_or_fail(API_CREATE_PARTITIONS, cb)
        if v >= 0:
            body = codec.CreatePartitionsRequest(topics=entries, timeout_ms=timeout, validate_only=bool(validate_only))
            self._send(API_CREATE_PARTITIONS, v, body, cb, self._request_timeout + timeout / 1000.0, True)

    def delete_records(self, before_offsets, cb, *, timeout_ms=30000):
        _check_cb(cb)
        cdef int32_t timeout = <int32_t>_check_int("timeout_ms", timeout_ms, 0, INT32_MAX)
        by_topic = {}
        for tp, before in before_offsets.items():
            if not isinstance(tp, TopicPartition):
                raise TypeError(f"before_offsets keys must be TopicPartition, not {type(tp).__name__}")
            by_topic.setdefault(tp.topic, []).append(codec.DeleteRecordsPartition(
                partition_index=tp.partition, offset=_int64(f"before_offsets[{tp}]", before)))
        topics = [codec.DeleteRecordsTopic(name=topic, partitions=parts) for topic, parts in by_topic.items()]
        cdef int v = self._version_or_fail(API_DELETE_RECORDS, cb)
        if v >= 0:
            body = codec.DeleteRecordsRequest(topics=topics, timeout_ms=timeout)
            self._send(API_DELETE_RECORDS, v, body, cb, self._request_timeout + timeout / 1000.0, True)

    def describe_configs(self, resources, cb, *, include_synonyms=False, include_documentation=False):
        _check_cb(cb)
        entries = _list_of(resources, codec.DescribeConfigsResource, "resources")
        cdef int v = self._version_or_fail(API_DESCRIBE_CONFIGS, cb)
        if v >= 0:
            body = codec.DescribeConfigsRequest(resources=entries, include_synonyms=bool(include_synonyms),
                                            include_documentation=bool(include_documentation))
            self._send(API_DESCRIBE_CONFIGS, v, body, cb, self._request_timeout, True)
