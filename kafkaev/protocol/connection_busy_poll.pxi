# Busy polling (ClientConfig.busy_poll_us): after a connection's socket read or write, the
# event loop keeps turning without sleeping for a while, so the broker's answer is read as soon
# as it lands instead of after the thread is woken from epoll_wait.
#
# Why: a sleeping thread pays the wake-up (the scheduler, on a virtual machine an idle vCPU's
# exit) and then runs the client's whole answer path with cold caches. On the bench's 2-core
# box that was ~50 us of a ~180 us one-record round trip, more than all of kafkaev's own work
# on it; a loop that never slept read answers sooner than a blocking raw socket does
# (DESIGN.md, "Latency breakdown"). The price is a core spinning for the window after every
# read or write, so it is off unless asked for.

cdef extern from "<sched.h>" nogil:
    int sched_yield()


@cython.final
cdef class BusyPoll:
    """Keeps ``loop`` turning, without sleeping in its poll, for ``window_us`` microseconds
    after the last ``arm()``. One per client, shared by its connections (``busy_poll``), which
    arm it on every socket read and write.

    It spins by queueing one callback that queues itself again: a loop with a callback ready
    polls its sockets with no timeout, asyncio's own loop and uvloop alike. Past the window the
    callback is not queued again and the loop sleeps as usual."""

    cdef object _loop
    cdef uint64_t _window_us        # 0 once closed: arm() does nothing
    cdef uint64_t _until_us         # _now_us()'s clock; the spin stops once it is past
    cdef object _turn               # the queued _spin, or None while the loop may sleep
    cdef object _spin_cb            # self._spin, bound once
    cdef readonly uint64_t turns    # loop turns spun: what the window cost

    def __init__(self, loop not None, window_us):
        self._window_us = _check_int("busy_poll_us", window_us, 1, MAX_BUSY_POLL_US)
        self._loop = loop
        self._until_us = 0
        self._turn = None
        self._spin_cb = self._spin
        self.turns = 0

    @property
    def window_us(self):
        return self._window_us

    @property
    def spinning(self):
        """A spin is queued: the loop will not sleep before its next turn."""
        return self._turn is not None

    cpdef int arm(self) except -1:
        """A socket was read or written: spin until ``window_us`` from now."""
        if self._window_us == 0:
            return 0
        self._until_us = _now_us() + self._window_us
        if self._turn is None:
            self._turn = self._loop.call_soon(self._spin_cb)
        return 0

    def _spin(self):
        self.turns += 1
        # A spin takes only a core nobody else wants: a broker thread on this machine that is
        # ready to run goes first (a test broker's tails grew 1.5-3x under a loop spinning without it).
        sched_yield()
        if _now_us() < self._until_us:
            self._turn = self._loop.call_soon(self._spin_cb)
        else:
            self._turn = None

    def close(self):
        """Stop spinning, now and for good (the client closed)."""
        self._window_us = 0
        if self._turn is not None:
            self._turn.cancel()
            self._turn = None

    def __repr__(self):
        return f"<BusyPoll window_us={self.window_us} spinning={self.spinning} turns={self.turns}>"
