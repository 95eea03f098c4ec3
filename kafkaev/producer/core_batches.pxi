# The bookkeeping of every batch from open to completion: its id and reservation, the open
# batches in creation order, what they reserve, the spare builders, the count not yet
# completed. Over 1,000 partitions most batches carry a record or two, and this work, done
# once per batch in Python, cost as much as the records' own path (DESIGN.md, "The
# producer's state"). When a batch opens, grows, closes and goes out is still decided by the
# accumulator (accumulator.py), which calls these methods and supplies two hooks.

cpdef enum:
    # Emptied builders kept for the next batches: their grown buffers are reused instead of
    # being reallocated (and page-faulted in) batch after batch. Each holds up to batch_size
    # bytes outside buffer_memory.
    SPARE_BUILDERS_MAX = 4


cdef ProducerBatch _fresh_batch(Py_ssize_t batch_id, PartitionState part, builder, double created, double deadline):
    """``ProducerBatch(batch_id, part, builder, created, deadline)`` without parsing arguments."""
    cdef ProducerBatch batch = ProducerBatch.__new__(ProducerBatch)
    batch._start(batch_id, part, builder, created, deadline, (batch_id,))
    return batch


cdef inline Py_ssize_t _builder_records(builder) except -1:
    if type(builder) is RecordBatchBuilder:
        return (<RecordBatchBuilder>builder)._record_count
    return builder.record_count


@cython.final
cdef class Batches:
    """Every batch of one producer from the moment it opens until it completes.

    ``open_batch`` opens one with ``first_step`` bytes of ``budget`` (or its first record's
    size; ``min_first_step`` once the open batches reserve ``crowded_at``), ``grow`` doubles
    what it may hold up to ``batch_size`` while the budget allows, ``close`` queues it for the
    sender (or releases it when empty), ``complete`` and ``release`` give back what it holds
    and keep its builder for a later batch. ``open`` lists the open batches in creation order:
    appended here, taken from by the accumulator's linger. ``on_first_open(now)`` is called
    when a batch opens while none was listed (the linger timer starts); ``on_first_step(batch)``,
    when set, is asked before a batch grows past its first step and returns True when it
    closed the batch instead (linger_ms=0 sends it at once). ``on_release()``, called after a
    release while ``room_waited``, wakes whoever waits for buffer room."""

    cdef readonly MemoryBudget budget
    cdef readonly object open           # deque of ProducerBatch, creation order (may hold closed ones)
    cdef readonly Py_ssize_t incomplete # opened and not yet completed (open, queued or in flight)
    cdef readonly int64_t open_reserved # what the open batches reserve
    cdef readonly int64_t first_step    # what a new batch reserves
    cdef readonly int64_t min_first_step
    cdef readonly int64_t crowded_at    # open_reserved past which new batches open with min_first_step
    cdef readonly int64_t batch_size
    cdef public bint room_waited        # the accumulator has buffer-room waiters: call on_release
    cdef Py_ssize_t _last_id
    cdef list _spare                    # emptied builders, at most SPARE_BUILDERS_MAX
    cdef object _new_builder            # (compression_type, capacity) -> builder
    cdef bint _recycles                 # only RecordBatchBuilders are kept (reset() empties one)
    cdef int _compression
    cdef double _delivery_timeout_s
    cdef object _clock                  # the loop's time()
    cdef object _on_first_open
    cdef object _on_first_step
    cdef object _on_release

    def __init__(self, MemoryBudget budget not None, int64_t batch_size, int64_t first_step, int64_t min_first_step,
                 int64_t crowded_at, int compression, double delivery_timeout_s, clock, new_builder, bint recycles,
                 on_first_open, on_first_step, on_release):
        self.budget = budget
        self.open = deque()
        self.incomplete = 0
        self.open_reserved = 0
        self.batch_size = batch_size
        self.first_step = first_step
        self.min_first_step = min_first_step
        self.crowded_at = crowded_at
        self.room_waited = False
        self._last_id = 0
        self._spare = []
        self._new_builder = new_builder
        self._recycles = recycles
        self._compression = compression
        self._delivery_timeout_s = delivery_timeout_s
        self._clock = clock
        self._on_first_open = on_first_open
        self._on_first_step = on_first_step
        self._on_release = on_release

    @property
    def spare_builders(self):
        """The emptied builders kept for later batches (a copy)."""
        return list(self._spare)

    cpdef ProducerBatch open_batch(self, PartitionState part, int64_t record_size, bint readmitted=False):
        """Open a batch for ``part`` able to take a record of ``record_size`` bytes, as its
        open batch. ``readmitted``: for a record that already waited for its topic, admitted
        against buffer_memory then, so not refused for memory now. Raises ``refusal``'s error
        when the budget has no room."""
        cdef int64_t least = record_size + BATCH_HEADER_SIZE
        cdef int64_t capacity = max(self.first_step, least)
        cdef double now
        cdef bint first
        if self.open_reserved + capacity > self.crowded_at:
            # Open batches hold half the budget: thousands of partitions, each with a record or
            # two. The least step, so that first steps do not fill the budget and refuse the
            # rest. A budget taken by batches in flight instead still gets whole steps (or
            # waits): opened smaller under that pressure, batches would go out small.
            capacity = max(self.min_first_step, least)
        if not readmitted and not self.budget.can_reserve(capacity):
            raise self.refusal(record_size, least)
        now = self._clock()
        spare = self._spare
        if spare and capacity <= self.first_step:
            builder = spare.pop()
            builder.max_batch_size = capacity  # its buffer may be larger: only what is reserved is used
        else:
            builder = self.new_builder(capacity)
        self._last_id += 1
        batch = _fresh_batch(self._last_id, part, builder, now, now + self._delivery_timeout_s)
        self.budget.reserve(batch, capacity, readmitted)
        self.open_reserved += capacity
        self.incomplete += 1
        part.open_batch(batch)
        first = not self.open
        self.open.append(batch)
        if first:
            self._on_first_open(now)
        return batch

    cpdef bint grow(self, ProducerBatch batch) except -1:
        """``batch``, open, has no room for its next record: raise its limit to the next step
        (double, at most ``batch_size``) if ``budget`` has room for the difference. False
        when it is at ``batch_size``, the budget is short, or ``on_first_step`` closed it."""
        cdef int64_t limit, target
        builder = batch.builder
        limit = builder.max_batch_size
        if self._on_first_step is not None and limit >= self.first_step and self._on_first_step(batch):
            return False
        target = min(limit * 2, self.batch_size)
        if target <= limit or not self.budget.extend(batch, target - limit):
            return False
        self.open_reserved += target - limit
        builder.max_batch_size = target
        return True

    cpdef void close(self, ProducerBatch batch) except *:
        """Stop appending to ``batch`` and queue it for the sender (an empty one is released)."""
        cdef PartitionState part = batch.part
        if not part.close_open_batch(batch):
            return
        self.open_reserved -= batch.reserved
        part.tstate.sticky.release(part.partition)
        batch.record_count = _builder_records(batch.builder)
        if batch.record_count == 0:
            self.release(batch)
            return
        part.queue.append(batch)

    cpdef void release(self, ProducerBatch batch) except *:
        """``batch`` completed (acknowledged, failed or empty): give back its memory, and its
        builder for a later batch."""
        self.budget.release(batch)
        self.incomplete -= 1
        if self.room_waited:
            self._on_release()
        builder = batch.builder
        if builder is not None:
            batch.builder = None
            batch.data = None  # may be a view of the builder's buffer, which it then takes back
            self.recycle(builder)

    cpdef void complete(self, ProducerBatch batch, int64_t base_offset, int64_t log_append_time, report) except *:
        """``batch`` was written at ``base_offset``: it leaves its partition's flight, counts
        as delivered, gives back what it holds, and its records' callbacks run (what one raises
        goes to ``report``)."""
        cdef PartitionState part = batch.part
        part.queue.answered(batch)
        part.count_delivered(batch)  # before release: the batch's reserved bytes are its size
        self.release(batch)
        batch.deliveries.complete(part.topic, part.partition, base_offset, log_append_time, report)

    cpdef object new_builder(self, int64_t capacity):
        """An empty builder of the producer's compression taking up to ``capacity`` bytes."""
        return self._new_builder(self._compression, capacity)

    cpdef void recycle(self, builder) except *:
        """The builder of a completed batch: kept, emptied, for a later batch (not one sized
        for a record above batch_size)."""
        if (self._recycles and PyList_GET_SIZE(self._spare) < SPARE_BUILDERS_MAX
                and builder.max_batch_size <= self.batch_size):
            builder.reset()
            self._spare.append(builder)

    cpdef void split_in_two(self) noexcept:
        """A batch was replaced by its two halves: one more batch to complete."""
        self.incomplete += 1

    def refusal(self, int64_t record_size, int64_t needed):
        """What a record of ``record_size`` bytes refused for memory raises, ``needed`` bytes
        of buffer_memory being the least it takes: MESSAGE_TOO_LARGE when that is more than
        buffer_memory holds at all (waiting for room would wait forever), else
        BufferFullError."""
        if needed > self.budget.limit:
            return KafkaError(MESSAGE_TOO_LARGE, f"produce: record of {record_size} bytes needs {needed} bytes of "
                                                 f"buffer_memory, more than all of it ({self.budget.limit})")
        return BufferFullError(self.budget.refusal())

    def __repr__(self):
        return (f"<Batches open={len(self.open)} incomplete={self.incomplete} open_reserved={self.open_reserved} "
                f"{self.budget!r}>")
