# What a record touches on its way into a batch: the topic, its partitions, each
# partition's open batch, the sticky partition of keyless records.
#
# cdef classes, so produce() reads their fields as C struct members; the Python policy
# layer (accumulator, sender) uses the same fields as ordinary attributes.

cpdef enum:
    NO_PARTITION = -1   # StickyPartition.current when the next keyless record must choose
    NO_SEQUENCE = -1    # ProducerBatch.base_seq before its first (idempotent) send
    NO_LEADER = -1      # PartitionState.leader while the metadata names none
    NO_EPOCH = -1       # unknown leader epoch / producer epoch


@cython.final
cdef class StickyPartition:
    """The sticky partition of one topic for keyless records (KIP-480)."""

    cdef readonly Py_ssize_t current
    cdef Py_ssize_t _last           # the partition just left: the next choice avoids it
    cdef object _rand

    def __cinit__(self):
        self.current = NO_PARTITION
        self._last = NO_PARTITION
        self._rand = random.Random()

    cpdef Py_ssize_t choose(self, Py_ssize_t num_partitions, available) except -1:
        """Pick a new sticky partition, different from the last one when there is a choice.
        ``available`` lists partitions with a leader; when none has, any partition will do
        (records wait in the accumulator for a leader)."""
        cdef Py_ssize_t avoid, choice
        candidates = available if available else range(num_partitions)
        if len(candidates) == 1:
            choice = candidates[0]
        else:
            avoid = self.current if self.current != NO_PARTITION else self._last
            choice = avoid
            while choice == avoid:
                choice = candidates[self._rand.randrange(len(candidates))]
        self.current = choice
        return choice

    cpdef void release(self, Py_ssize_t partition):
        """The batch of ``partition`` closed: the next keyless record picks a new partition."""
        if partition == self.current:
            self._last = partition
            self.current = NO_PARTITION


@cython.final
cdef class ProducerBatch:
    """One RecordBatch for one partition, from its first record until it completes."""

    cdef readonly Py_ssize_t id         # creation order
    # The partition's send (and sequence) order: (id,) as appended. The halves of a batch
    # split after MESSAGE_TOO_LARGE extend their original's with 0 and 1, so they take its
    # place among the others, however deep the splitting goes.
    cdef readonly tuple order
    cdef readonly PartitionState part
    cdef public object builder          # RecordBatchBuilder (or a test's stand-in); None once completed
    cdef public Deliveries deliveries   # callbacks of the records that have one
    cdef readonly double created        # loop time
    cdef readonly double deadline       # loop time after which the records fail with MSG_TIMED_OUT
    cdef public Py_ssize_t reserved     # bytes of buffer_memory held
    # The EncodedBatch, built once at first send and resent as is (re-stamped after an epoch
    # bump); a large uncompressed one holds its builder's buffer.
    cdef public object data
    cdef public Py_ssize_t record_count
    cdef public int64_t base_seq
    cdef public int producer_epoch
    cdef public int attempts
    cdef public object last_error       # KafkaError of the last failed attempt, or None
    # The last attempt ended without an answer (connection lost, request timed out):
    # the broker may have written it.
    cdef public bint outcome_unknown

    def __init__(self, Py_ssize_t batch_id, PartitionState part not None, builder, double created, double deadline,
                 Py_ssize_t reserved, tuple order=None):
        self.id = batch_id
        self.order = (batch_id,) if order is None else order
        self.part = part
        self.builder = builder
        self.deliveries = Deliveries()
        self.created = created
        self.deadline = deadline
        self.reserved = reserved
        self.data = None
        self.record_count = 0
        self.base_seq = NO_SEQUENCE
        self.producer_epoch = NO_EPOCH
        self.attempts = 0
        self.last_error = None
        self.outcome_unknown = False

    @property
    def split(self):
        """One half of a batch the broker refused as too large. Halves go out one at a time,
        and so does what follows them: with two in flight the second could be written while
        the first is refused again (a broker takes any first sequence from a producer id it
        has no state for, and the split just bumped the epoch)."""
        return len(self.order) > 1

    def __repr__(self):
        return f"<ProducerBatch {self.id} {self.part.topic}[{self.part.partition}] records={self.record_count}>"


@cython.final
cdef class PartitionState:
    """Producer state of one topic-partition: its open batch, queued batches and sequencing."""

    cdef readonly str topic
    cdef readonly Py_ssize_t partition
    cdef readonly TopicState tstate
    cdef public ProducerBatch batch     # open batch, still taking records, or None
    cdef readonly object queue          # deque: closed batches in sequence order, not in flight
    cdef readonly object in_flight      # deque: sent, awaiting an answer, in send order
    cdef public int leader
    cdef public int leader_epoch
    cdef public int64_t next_seq
    cdef public double retry_at         # loop time before which the queue is not sent (retry backoff)
    # Idempotence: a batch failed retriably; send nothing new until every batch in flight
    # is answered, then resend the queue in sequence order.
    cdef public bint retrying

    def __init__(self, TopicState tstate not None, Py_ssize_t partition):
        self.topic = tstate.name
        self.partition = partition
        self.tstate = tstate
        self.batch = None
        self.queue = deque()
        self.in_flight = deque()
        self.leader = NO_LEADER
        self.leader_epoch = NO_EPOCH
        self.next_seq = 0
        self.retry_at = 0.0
        self.retrying = False

    def __repr__(self):
        return f"<PartitionState {self.topic}[{self.partition}] leader={self.leader}>"


@cython.final
cdef class TopicState:
    """Producer state of one topic: its partitions and the sticky partition for keyless records."""

    cdef readonly str name
    cdef readonly list parts            # PartitionState by partition number; only grows
    cdef readonly Py_ssize_t num_partitions
    cdef readonly StickyPartition sticky
    cdef readonly list available        # partitions with a leader

    def __init__(self, str name not None):
        self.name = name
        self.parts = []
        self.num_partitions = 0
        self.sticky = StickyPartition()
        self.available = []

    def update(self, leaders):
        """Apply (leader, leader_epoch) per partition from metadata; partitions only grow."""
        cdef PartitionState part
        for p in range(len(self.parts), len(leaders)):
            self.parts.append(PartitionState(self, p))
        for part, (leader, epoch) in zip(self.parts, leaders):
            part.leader = leader
            part.leader_epoch = epoch
        self.num_partitions = len(self.parts)
        self.available = [part.partition for part in self.parts if part.leader >= 0]
