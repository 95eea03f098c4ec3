# Typed request records: what the cluster client hands the request helpers for each partition
# (or topic) of a request, in place of positional tuples. A record checks its fields once, when
# it is made (TypeError/ValueError naming Record.field); the helpers then read them as C fields
# and group them into the generated request objects without checking them again.
# Included from connection_requests.pxi.

from kafkaev.types import ACKS_ALL, TopicPartition


cdef inline int _check_topic_id(str what, object value) except -1:
    if value is not None and not isinstance(value, uuid.UUID):
        raise TypeError(f"{what} must be a uuid.UUID or None, not {type(value).__name__}")
    return 0


cdef class ProducePartition:
    """One partition's encoded RecordBatch in a Produce request (``produce_batch``)."""

    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly object records
    cdef readonly object topic_id  # uuid.UUID or None: with every topic's id, Produce v13+

    def __init__(self, topic, partition, records, topic_id=None):
        _check_str("ProducePartition.topic", topic)
        _check_records(records)
        _check_topic_id("ProducePartition.topic_id", topic_id)
        self.topic = topic
        self.partition = _partition("ProducePartition.partition", partition)
        self.records = records
        self.topic_id = topic_id

    def __repr__(self):
        return f"ProducePartition({self.topic!r}, {self.partition}, <{len(self.records)} bytes>)"


cdef class FetchPosition:
    """Where to read one partition in a Fetch request (``fetch_multi``)."""

    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int64_t offset
    cdef readonly int32_t max_bytes
    cdef readonly int32_t current_leader_epoch
    cdef readonly int32_t last_fetched_epoch  # KIP-320: the epoch of the batch before offset
    cdef readonly object topic_id  # uuid.UUID or None: with every topic's id, Fetch v13+

    def __init__(self, topic, partition, offset, *, max_bytes, current_leader_epoch=NO_LEADER_EPOCH,
                 last_fetched_epoch=NO_LEADER_EPOCH, topic_id=None):
        _check_str("FetchPosition.topic", topic)
        _check_topic_id("FetchPosition.topic_id", topic_id)
        self.topic = topic
        self.partition = _partition("FetchPosition.partition", partition)
        self.offset = _int64("FetchPosition.offset", offset)
        self.max_bytes = _int32("FetchPosition.max_bytes", max_bytes)
        self.current_leader_epoch = _int32("FetchPosition.current_leader_epoch", current_leader_epoch)
        self.last_fetched_epoch = _int32("FetchPosition.last_fetched_epoch", last_fetched_epoch)
        self.topic_id = topic_id

    def __repr__(self):
        return f"FetchPosition({self.topic!r}, {self.partition}, {self.offset})"


cdef class ForgottenPartitions:
    """Partitions of one topic an incremental Fetch session drops (``fetch_multi(forgotten=...)``)."""

    cdef readonly str topic
    cdef readonly list partitions
    cdef readonly object topic_id

    def __init__(self, topic, partitions, topic_id=None):
        _check_str("ForgottenPartitions.topic", topic)
        _check_topic_id("ForgottenPartitions.topic_id", topic_id)
        self.topic = topic
        self.partitions = [_partition("ForgottenPartitions.partitions entry", p) for p in partitions]
        self.topic_id = topic_id

    def __repr__(self):
        return f"ForgottenPartitions({self.topic!r}, {self.partitions})"


cdef class OffsetLookup:
    """One partition in a ListOffsets request: the offset at timestamp (-1 latest, -2 earliest)."""

    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int64_t timestamp
    cdef readonly int32_t current_leader_epoch

    def __init__(self, topic, partition, timestamp, current_leader_epoch=NO_LEADER_EPOCH):
        _check_str("OffsetLookup.topic", topic)
        self.topic = topic
        self.partition = _partition("OffsetLookup.partition", partition)
        self.timestamp = _int64("OffsetLookup.timestamp", timestamp)
        self.current_leader_epoch = _int32("OffsetLookup.current_leader_epoch", current_leader_epoch)

    def __repr__(self):
        return f"OffsetLookup({self.topic!r}, {self.partition}, {self.timestamp})"


cdef class EpochLookup:
    """One partition in an OffsetForLeaderEpoch request: where leader_epoch ends on the leader."""

    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int32_t leader_epoch
    cdef readonly int32_t current_leader_epoch

    def __init__(self, topic, partition, leader_epoch, current_leader_epoch=NO_LEADER_EPOCH):
        _check_str("EpochLookup.topic", topic)
        self.topic = topic
        self.partition = _partition("EpochLookup.partition", partition)
        self.leader_epoch = _int32("EpochLookup.leader_epoch", leader_epoch)
        self.current_leader_epoch = _int32("EpochLookup.current_leader_epoch", current_leader_epoch)

    def __repr__(self):
        return f"EpochLookup({self.topic!r}, {self.partition}, {self.leader_epoch})"


cdef class OffsetToCommit:
    """One partition's offset in an OffsetCommit or TxnOffsetCommit request."""

    cdef readonly str topic
    cdef readonly int32_t partition
    cdef readonly int64_t offset
    cdef readonly int32_t leader_epoch
    cdef readonly str metadata

    def __init__(self, topic, partition, offset, leader_epoch=NO_LEADER_EPOCH, metadata=None):
        _check_str("OffsetToCommit.topic", topic)
        _check_opt_str("OffsetToCommit.metadata", metadata)
        self.topic = topic
        self.partition = _partition("OffsetToCommit.partition", partition)
        self.offset = _int64("OffsetToCommit.offset", offset)
        self.leader_epoch = _int32("OffsetToCommit.leader_epoch", leader_epoch)
        self.metadata = metadata

    def __repr__(self):
        return f"OffsetToCommit({self.topic!r}, {self.partition}, {self.offset})"


cdef class NewTopic:
    """One topic in a CreateTopics request; -1 takes the broker's default."""

    cdef readonly str name
    cdef readonly int32_t num_partitions
    cdef readonly int16_t replication_factor
    cdef readonly dict configs

    def __init__(self, name, num_partitions=BROKER_DEFAULT, replication_factor=BROKER_DEFAULT, configs=None):
        _check_str("NewTopic.name", name)
        self.name = name
        self.num_partitions = <int32_t>_check_int("NewTopic.num_partitions", num_partitions, BROKER_DEFAULT, INT32_MAX)
        self.replication_factor = <int16_t>_check_int("NewTopic.replication_factor", replication_factor,
                                                      BROKER_DEFAULT, 0x7FFF)
        self.configs = {} if configs is None else dict(configs)
        for key, value in self.configs.items():
            _check_str("NewTopic.configs key", key)
            _check_opt_str("NewTopic.configs value", value)

    def __repr__(self):
        return f"NewTopic({self.name!r}, {self.num_partitions}, {self.replication_factor})"


cdef dict _by_topic(object records, type record_type, str what):
    """{topic: [record, ...]} in the order topics first appear, each entry a record_type."""
    cdef dict grouped = {}
    for record in records:
        if type(record) is not record_type:
            raise TypeError(f"{what} entries must be {record_type.__name__}, not {type(record).__name__}")
        topic = record.topic
        entries = grouped.get(topic)
        if entries is None:
            grouped[topic] = [record]
        else:
            (<list>entries).append(record)
    return grouped


cdef list _list_of(object items, type item_type, str what):
    """items as a list, each a generated message object of item_type: the encoder checks its fields."""
    cdef list entries = list(items)
    for entry in entries:
        if type(entry) is not item_type:
            raise TypeError(f"{what} entries must be codec.{item_type.__name__}, not {type(entry).__name__}")
    return entries


cdef dict _partitions_by_topic(object partitions, str what):
    """{topic: [partition, ...]} from TopicPartition entries, in the order topics first appear."""
    cdef dict grouped = {}
    for tp in partitions:
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"{what} entries must be TopicPartition, not {type(tp).__name__}")
        _check_str(f"{what} topic", tp.topic)
        indexes = grouped.get(tp.topic)
        if indexes is None:
            indexes = grouped[tp.topic] = []
        (<list>indexes).append(_partition(f"{what} partition", tp.partition))
    return grouped


cdef class _TopicNames:
    """The topics a Produce or Fetch request named by id, to name its answer's topics again.
    Most requests name one topic: its id is kept apart and matched by identity first, since ids
    decode to cached ``uuid.UUID`` objects and a UUID hashes and compares in Python (~1 µs per
    request and answer, on the one-record round trip). A dict holds the others."""

    cdef object first_id
    cdef str first_name
    cdef dict others  # {uuid.UUID: topic}, once a second topic is named

    cdef void add(self, object topic_id, str name):
        """``topic_id`` names ``name`` (an id names one topic: a second mention changes nothing)."""
        if self.first_id is None:
            self.first_id = topic_id
            self.first_name = name
        elif topic_id is not self.first_id:
            if self.others is None:
                self.others = {}
            self.others.setdefault(topic_id, name)

    cdef str name_of(self, object topic_id):
        if topic_id is self.first_id:
            return self.first_name
        if self.others is not None:
            found = self.others.get(topic_id)
            if found is not None:
                return <str>found
        if self.first_id is not None and topic_id == self.first_id:
            return self.first_name
        return ""


cdef class _NameTopicsById:
    """Calls cb(response, err) once each answered topic that Produce or Fetch v13+ names by id
    only is named again, by the id the request gave it: the one place ids turn back into names,
    through what was sent, not the current metadata (which may already hold a recreated topic's
    new id)."""

    cdef object cb
    cdef _TopicNames names
    cdef bint fetch  # FetchableTopicResponse.topic, else TopicProduceResponse.name

    def __cinit__(self, object cb, _TopicNames names, bint fetch):
        self.cb = cb
        self.names = names
        self.fetch = fetch

    def __call__(self, resp, err):
        if resp is not None:
            for t in resp.responses:
                if self.fetch:
                    if not t.topic:
                        t.topic = self.names.name_of(t.topic_id)
                elif not t.name:
                    t.name = self.names.name_of(t.topic_id)
        self.cb(resp, err)
