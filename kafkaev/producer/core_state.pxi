# The producer's state: what a record touches on its way into a batch (the topic, its
# partitions, each partition's open batch, the sticky partition of keyless records), each
# partition's queue of closed batches with the ready set, and the buffer-memory budget.
#
# cdef classes, so produce() reads their fields as C struct members. Each object keeps its
# own invariants: the Python policy layer (accumulator, sender) reads the fields and changes
# the queues, the ready set and the budget only through their methods.

cpdef enum:
    NO_PARTITION = -1   # StickyPartition.current when the next keyless record must choose
    NO_SEQUENCE = -1    # ProducerBatch.base_seq before its first (idempotent) send
    NO_LEADER = -1      # PartitionState.leader while the metadata names none
    NO_EPOCH = -1       # unknown leader epoch / producer epoch
    NO_RECORD_LIMIT = 0  # MemoryBudget's record_limit when records are not counted against one

cpdef enum ProducerLifecycle:
    OPEN = 0        # produce() appends
    CLOSING = 1     # close() is failing what was not sent: produce() raises STATE
    CLOSED = 2      # nothing left: produce() raises STATE


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
    cdef readonly Py_ssize_t reserved   # bytes of buffer_memory held; changed only by MemoryBudget
    # Its records count in MemoryBudget.records until it completes (from reserve or transfer;
    # changed only by MemoryBudget). A test's bare batch does not.
    cdef readonly bint counted
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
                 tuple order=None):
        self._start(batch_id, part, builder, created, deadline, (batch_id,) if order is None else order)

    cdef void _start(self, Py_ssize_t batch_id, PartitionState part, builder, double created, double deadline,
                     tuple order):
        """Every field as a new batch has it (``Batches.open_batch`` makes one without ``__init__``)."""
        self.id = batch_id
        self.order = order
        self.part = part
        self.builder = builder
        self.deliveries = Deliveries()
        self.created = created
        self.deadline = deadline
        self.reserved = 0  # until MemoryBudget.reserve
        self.counted = False
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
    """Producer state of one topic-partition: its open batch, its queue and sequencing."""

    cdef readonly str topic
    cdef readonly Py_ssize_t partition
    cdef readonly TopicState tstate
    cdef readonly ProducerBatch batch   # open batch, still taking records, or None
    cdef readonly PartitionQueue queue  # closed batches waiting to be sent, and those in flight
    cdef public int leader
    cdef public int leader_epoch
    cdef public int64_t next_seq
    cdef public double retry_at         # loop time before which the queue is not sent (retry backoff)
    # Idempotence: a batch failed retriably; send nothing new until every batch in flight
    # is answered, then resend the queue in sequence order.
    cdef public bint retrying
    # Statistics (kafkaev/stats): what the broker acknowledged, counted once per batch.
    cdef readonly unsigned long long records_delivered
    cdef readonly unsigned long long bytes_delivered
    cdef readonly unsigned long long batches_delivered

    def __init__(self, TopicState tstate not None, Py_ssize_t partition, ReadySet ready not None):
        self.topic = tstate.name
        self.partition = partition
        self.tstate = tstate
        self.batch = None
        self.queue = PartitionQueue(self, ready)
        self.leader = NO_LEADER
        self.leader_epoch = NO_EPOCH
        self.next_seq = 0
        self.retry_at = 0.0
        self.retrying = False

    cpdef void open_batch(self, ProducerBatch batch) except *:
        """``batch`` becomes the partition's open batch. One at a time: a second would be
        orphaned, its records never sent and its memory never given back."""
        if self.batch is not None:
            raise RuntimeError(f"{self!r} already has an open batch")
        if batch.part is not self:
            raise ValueError(f"{batch!r} belongs to another partition")
        self.batch = batch

    cpdef bint close_open_batch(self, ProducerBatch batch):
        """Stop taking records into ``batch``; False when it is no longer the open batch
        (closed meanwhile, when it filled up)."""
        if self.batch is not batch:
            return False
        self.batch = None
        return True

    cpdef void count_delivered(self, ProducerBatch batch):
        """``batch`` was acknowledged: its records and encoded bytes count as delivered."""
        self.records_delivered += batch.record_count
        self.bytes_delivered += batch.reserved
        self.batches_delivered += 1

    def __repr__(self):
        return f"<PartitionState {self.topic}[{self.partition}] leader={self.leader}>"


@cython.final
cdef class ReadySet:
    """The partitions that have a closed batch to send, in the order they became ready (the
    order the sender visits them). Only their ``PartitionQueue`` adds or removes them, so a
    partition is in the set exactly while its queue is not empty."""

    cdef dict _parts    # PartitionState -> None: an ordered set

    def __cinit__(self):
        self._parts = {}

    def __len__(self):
        return len(self._parts)

    def __contains__(self, part):
        return part in self._parts

    def __iter__(self):
        # a snapshot: sending or failing a batch changes the set while the caller walks it
        return iter(list(self._parts))

    cdef inline void _add(self, PartitionState part):
        self._parts[part] = None  # already there: keeps its place

    cdef inline void _discard(self, PartitionState part):
        self._parts.pop(part, None)


@cython.final
cdef class PartitionQueue:
    """One partition's closed batches: queued (in sequence order, not sent or to be resent)
    and in flight (sent, awaiting an answer, in send order). Its partition is in the ready
    set exactly while something is queued."""

    cdef readonly PartitionState part
    cdef ReadySet _ready
    cdef object _queued     # deque of ProducerBatch
    cdef object _in_flight  # deque of ProducerBatch

    def __init__(self, PartitionState part not None, ReadySet ready not None):
        self.part = part
        self._ready = ready
        self._queued = deque()
        self._in_flight = deque()

    def __len__(self):
        """Batches queued (not in flight)."""
        return len(self._queued)

    def __iter__(self):
        """The queued batches, in sequence order."""
        return iter(self._queued)

    @property
    def head(self):
        """The next batch to send (IndexError when nothing is queued)."""
        return self._queued[0]

    @property
    def in_flight_count(self):
        return len(self._in_flight)

    @property
    def last_in_flight(self):
        """The batch sent last and not yet answered (IndexError when none is)."""
        return self._in_flight[len(self._in_flight) - 1]  # no [-1]: compiled with wraparound=False

    @property
    def in_flight(self):
        """The batches in flight, in send order (a copy: answers change them)."""
        return tuple(self._in_flight)

    @property
    def ready(self):
        return self.part in self._ready

    cdef inline int _check(self, ProducerBatch batch) except -1:
        if batch.part is not self.part:
            raise ValueError(f"{batch!r} belongs to another partition")
        return 0

    cpdef void append(self, ProducerBatch batch) except *:
        """A batch just closed: it goes last, after everything already queued."""
        self._check(batch)
        self._queued.append(batch)
        self._ready._add(self.part)

    cpdef void requeue(self, ProducerBatch batch) except *:
        """A batch to send again (a retry, or a split's half) takes its place in sequence
        (``order``) order, before every batch that follows it."""
        cdef Py_ssize_t i = 0
        self._check(batch)
        queued = self._queued
        for queued_batch in queued:
            if (<ProducerBatch>queued_batch).order > batch.order:
                break
            i += 1
        queued.insert(i, batch)
        self._ready._add(self.part)

    cpdef ProducerBatch send_head(self):
        """The head batch goes out: it moves to the in-flight batches."""
        batch = self._queued.popleft()  # IndexError when nothing is queued
        self._in_flight.append(batch)
        if not self._queued:
            self._ready._discard(self.part)
        return batch

    cpdef ProducerBatch drop_head(self):
        """Take the head batch out without sending it (it expired, or the producer closes)."""
        batch = self._queued.popleft()
        if not self._queued:
            self._ready._discard(self.part)
        return batch

    cpdef void answered(self, ProducerBatch batch) except *:
        """``batch`` is no longer in flight (answered, or its request failed)."""
        in_flight = self._in_flight
        if in_flight and in_flight[0] is batch:
            in_flight.popleft()  # answers come in send order
        else:
            try:
                in_flight.remove(batch)
            except ValueError:
                pass

    def __repr__(self):
        return (f"<PartitionQueue {self.part.topic}[{self.part.partition}] queued={len(self._queued)} "
                f"in_flight={len(self._in_flight)}>")


@cython.final
cdef class MemoryBudget:
    """``buffer_memory`` and ``buffer_records``: the bytes and the records produced and not yet
    completed.

    Two accounts share the byte limit. ``reserved``: what batches hold, from the capacity they
    open with, raised step by step as they fill (``extend``), then their encoded size once
    built, until they complete. ``held``: records
    waiting for their topic's metadata, at their own size until they are appended or failed.
    Neither ever goes below 0. A new batch or a held record is refused when it would take the
    two together above the limit (records waiting for metadata count, as in librdkafka); the one excess allowed is a re-admitted batch (its records were
    admitted when produced) and a built batch's encoded size above its capacity.

    ``records`` counts every record from ``produce()`` until its batch completes, waiting for
    metadata or in a batch; the producer's per-record path adds one per appended record
    (``ProducerCore``), ``hold`` one per waiting record, and ``release`` takes a batch's
    ``record_count`` back. A record is refused once ``records`` reaches ``record_limit``
    (``buffer_records``; 0 is no limit); a re-admitted one never is."""

    # int64_t, not Py_ssize_t: each Py_ssize_t argument adds a call site of the helper that
    # converts produce()'s partition number, and with more of them the compiler stopped
    # inlining it there (+16 instructions a record, callgrind)
    cdef readonly int64_t limit
    cdef readonly int64_t reserved
    cdef readonly int64_t held
    cdef readonly int64_t record_limit  # INT64_MAX for no limit
    cdef readonly int64_t records

    def __init__(self, int64_t limit, int64_t record_limit=NO_RECORD_LIMIT):
        if limit < 0:
            raise ValueError(f"buffer_memory must be >= 0, got {limit}")
        if record_limit < 0:
            raise ValueError(f"buffer_records must be >= 0, got {record_limit}")
        self.limit = limit
        self.reserved = 0
        self.held = 0
        self.record_limit = INT64_MAX if record_limit == NO_RECORD_LIMIT else record_limit
        self.records = 0

    cpdef bint records_full(self) noexcept:
        """Is a new record refused (``records`` at ``buffer_records``)? Re-admitted ones never are."""
        return self.records >= self.record_limit

    cpdef void count_record(self) noexcept:
        """One more record appended to a batch (the per-record path's only bookkeeping here;
        a C call from ProducerCore, the class being final)."""
        self.records += 1

    def refusal(self):
        """Why a record or a batch is refused now: what each account holds against its limit."""
        return (f"buffer_memory ({self.limit} bytes) or buffer_records "
                f"({'no limit' if self.record_limit == INT64_MAX else self.record_limit}) is full: "
                f"{self.reserved} bytes are in batches waiting to be sent or acknowledged, {self.held} wait "
                f"for topic metadata, {self.records} records in all; let the event loop run, then produce again")

    cpdef bint can_reserve(self, int64_t size):
        """Would a batch of ``size`` bytes fit beside what batches reserve and waiting records hold?"""
        return self.reserved + self.held + size <= self.limit

    cpdef void reserve(self, ProducerBatch batch, int64_t size, bint readmitted=False) except *:
        """``batch``, just opened with a capacity of ``size`` bytes, holds them until it completes.
        OverflowError when they do not fit, unless ``readmitted``: its records were admitted
        against the limit when they were produced, and failing them now would break that."""
        if size < 0:
            raise ValueError(f"a batch cannot hold {size} bytes")
        if batch.reserved:
            raise RuntimeError(f"{batch!r} already holds {batch.reserved} bytes")
        if not readmitted and self.reserved + self.held + size > self.limit:
            raise OverflowError(f"{size} bytes do not fit: {self.reserved} reserved and {self.held} held "
                                f"of {self.limit}")
        self.reserved += size
        batch.reserved = size
        batch.counted = True

    cpdef bint extend(self, ProducerBatch batch, int64_t extra) except -1:
        """``batch``, still open, grows by ``extra`` bytes: True when they fit beside what the
        others hold (then it holds them until it completes), False (nothing changes) when not."""
        if extra < 0:
            raise ValueError(f"a batch cannot grow by {extra} bytes")
        if self.reserved + self.held + extra > self.limit:
            return False
        self.reserved += extra
        batch.reserved += extra
        return True

    cpdef void rebase(self, ProducerBatch batch, int64_t size) except *:
        """``batch`` was built: from now on it holds its encoded ``size``, not its capacity."""
        if size < 0:
            raise ValueError(f"a batch cannot hold {size} bytes")
        self.reserved += size - batch.reserved
        batch.reserved = size

    cpdef void transfer(self, ProducerBatch source, ProducerBatch target) except *:
        """What ``source`` holds passes to ``target`` (a split batch to its first half), and
        with it the counting of records: ``source`` is never released."""
        if target.reserved:
            raise RuntimeError(f"{target!r} already holds {target.reserved} bytes")
        target.reserved = source.reserved
        source.reserved = 0
        target.counted = source.counted
        source.counted = False

    cpdef void release(self, ProducerBatch batch) except *:
        """``batch`` completed (acknowledged, failed or empty): its bytes and its records
        (``record_count``, set when it closed) are free again. Releasing it twice gives nothing
        back the second time."""
        if batch.reserved > self.reserved:
            raise RuntimeError(f"{batch!r} releases {batch.reserved} bytes, only {self.reserved} reserved")
        if batch.counted and batch.record_count > self.records:
            raise RuntimeError(f"{batch!r} releases {batch.record_count} records, only {self.records} counted")
        self.reserved -= batch.reserved
        batch.reserved = 0
        if batch.counted:
            self.records -= batch.record_count
            batch.counted = False

    cpdef bint hold(self, int64_t size) except -1:
        """A record of ``size`` bytes waits for its topic's metadata: False (nothing held)
        when it does not fit beside what batches reserve and other records hold, or the
        records are at their limit."""
        if size < 0:
            raise ValueError(f"a record cannot hold {size} bytes")
        if self.reserved + self.held + size > self.limit or self.records_full():
            return False
        self.held += size
        self.records += 1
        return True

    cpdef void unhold(self, int64_t size, int64_t records) except *:
        """``records`` records that held ``size`` bytes in all stopped waiting (appended, and
        counted again there, or failed)."""
        if not 0 <= size <= self.held:
            raise RuntimeError(f"unholding {size} bytes, only {self.held} held")
        if not 0 <= records <= self.records:
            raise RuntimeError(f"unholding {records} records, only {self.records} counted")
        self.held -= size
        self.records -= records

    def __repr__(self):
        return (f"<MemoryBudget reserved={self.reserved} held={self.held} limit={self.limit} "
                f"records={self.records}>")


@cython.final
cdef class TopicState:
    """Producer state of one topic: its partitions and the sticky partition for keyless records."""

    cdef readonly str name
    cdef readonly list parts            # PartitionState by partition number; only grows
    cdef readonly Py_ssize_t num_partitions
    cdef readonly StickyPartition sticky
    cdef readonly list available        # partitions with a leader
    cdef ReadySet _ready                # where its partitions' queues say they have batches to send

    def __init__(self, str name not None, ReadySet ready not None):
        self.name = name
        self._ready = ready
        self.parts = []
        self.num_partitions = 0
        self.sticky = StickyPartition()
        self.available = []

    def update(self, leaders):
        """Apply (leader, leader_epoch) per partition from metadata; partitions only grow."""
        cdef PartitionState part
        for p in range(len(self.parts), len(leaders)):
            self.parts.append(PartitionState(self, p, self._ready))
        for part, (leader, epoch) in zip(self.parts, leaders):
            part.leader = leader
            part.leader_epoch = epoch
        self.num_partitions = len(self.parts)
        self.available = [part.partition for part in self.parts if part.leader >= 0]
