# The latency probes' C interface: a timestamp per stage of one record's way through the
# client, compiled in only by a KAFKAEV_PROBES=1 build (setup.py). Call sites read
#     if PROBES_COMPILED: mark(STAGE_WRITE, api_key)
# so a normal build's C compiler drops the call and its branch altogether.

cdef extern from *:
    """
    #ifndef KAFKAEV_PROBES
    #define KAFKAEV_PROBES 0
    #endif
    """
    const bint PROBES_COMPILED "KAFKAEV_PROBES"

# The stages, in the order one record meets them (bench/breakdown.py names them).
cdef enum Stage:
    STAGE_PRODUCE = 0   # ProducerCore.produce() entered
    STAGE_ENCODE = 1    # a request encoded into the connection's write buffer (tag: API key)
    STAGE_WRITE = 2     # the write buffer handed to the transport (tag: the last request's API key)
    STAGE_READ = 3      # bytes read from the socket (tag: the API key of the oldest request waiting)
    STAGE_FRAME = 4     # a response frame complete, before it is decoded (tag: API key)
    STAGE_CALLBACK = 5  # a decoded response handed to its callback (tag: API key)
    STAGE_DELIVER = 6   # on_message about to be called for a record

cdef void mark(int stage, int tag) noexcept
