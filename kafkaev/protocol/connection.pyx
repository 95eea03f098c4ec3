# cython: language_level=3
"""One pipelined connection to one Kafka broker, as an asyncio protocol (EV::Kafka::Conn's role).

Requests are encoded straight into one WriteBuffer and written once per loop iteration;
responses are framed by their Int32 size prefix in a BufferedProtocol receive buffer and matched
FIFO against the in-flight queue by correlation id. The public API is documented in connection.pyi.
"""

import asyncio
import functools
import logging
import random
import socket
import ssl
import warnings
import uuid
import weakref
from collections import deque

cimport cython

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memmove
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from kafkaev.protocol.probes cimport (
    PROBES_COMPILED,
    STAGE_CALLBACK,
    STAGE_ENCODE,
    STAGE_FRAME,
    STAGE_READ,
    STAGE_WRITE,
    mark,
)
from kafkaev.protocol.codec cimport (
    API_ADD_OFFSETS_TO_TXN,
    API_ADD_PARTITIONS_TO_TXN,
    API_API_VERSIONS,
    API_CONSUMER_GROUP_HEARTBEAT,
    API_CREATE_PARTITIONS,
    API_CREATE_TOPICS,
    API_DELETE_RECORDS,
    API_DELETE_TOPICS,
    API_DESCRIBE_CLUSTER,
    API_DESCRIBE_CONFIGS,
    API_DESCRIBE_GROUPS,
    API_END_TXN,
    API_FETCH,
    API_FIND_COORDINATOR,
    API_HEARTBEAT,
    API_INIT_PRODUCER_ID,
    API_JOIN_GROUP,
    API_LEAVE_GROUP,
    API_LIST_GROUPS,
    API_LIST_OFFSETS,
    API_METADATA,
    API_OFFSET_COMMIT,
    API_OFFSET_FETCH,
    API_OFFSET_FOR_LEADER_EPOCH,
    API_PRODUCE,
    API_SASL_AUTHENTICATE,
    API_SASL_HANDSHAKE,
    API_SYNC_GROUP,
    API_TXN_OFFSET_COMMIT,
    NO_LEADER_EPOCH,
    EncodedBatch,
    ReadBuffer,
    WriteBuffer,
    decode_response_body,
    decode_response_header,
    encode_request,
    read_buffer_over,
)

from kafkaev.protocol import codec
from kafkaev import errors
from kafkaev.backoff import Backoff, BackoffPolicy
from kafkaev.error_sink import report_error
from kafkaev.protocol.defaults import (
    DEFAULT_CLIENT_ID,
    DEFAULT_RECONNECT_BACKOFF_MAX_MS,
    DEFAULT_RECONNECT_BACKOFF_MS,
    DEFAULT_REQUEST_TIMEOUT_MS,
    MAX_BUSY_POLL_US,
)
from kafkaev.errors import KafkaError, ProtocolError
from kafkaev.protocol.sasl import SASLFailure, authenticator_for
from kafkaev.runner import default_loop
from kafkaev.security import InsecureCredentialsWarning, SASLConfig, ssl_context

include "connection_api_keys.pxi"
include "connection_busy_poll.pxi"

# kafkaev.log names the areas; this one is the connection's (connects, losses, throttling).
connection_log = logging.getLogger("kafkaev.connection")

DEFAULT_WRITE_HIGH_WATER = 4 * 1024 * 1024
DEFAULT_WRITE_LOW_WATER = 1024 * 1024
DEFAULT_MAX_RESPONSE_SIZE = 1024 * 1024 * 1024
# Coalesced writes go out at once past this size instead of waiting for the loop iteration
# to end: a producer flushing many batches should not build one huge buffer first.
FLUSH_THRESHOLD = 256 * 1024
# Frames up to this size are framed in the shared receive buffer; larger ones get a buffer of
# their exact size that the socket reads into directly (no quadratic concatenation).
cdef Py_ssize_t RECV_BUFFER_SIZE = 256 * 1024
# A large frame's buffer is allocated at the announced size up to this much (a Fetch
# response of a few partitions at the default max_partition_fetch_bytes fits): one buffer,
# no copy. Past it the buffer doubles as data arrives, so a garbage size prefix cannot
# reserve more than this before the bytes really come.
cdef Py_ssize_t LARGE_FRAME_UPFRONT = 4 * 1024 * 1024
cdef Py_ssize_t SIZE_PREFIX = 4
cdef int32_t MAX_CORRELATION_ID = 0x7FFFFFFF
# The loop may run a timer up to its clock resolution early.
cdef double TIMER_SLACK = 0.002
# Round trips are counted in a fixed histogram, bucket i holding those below 2**i microseconds
# (the last one everything longer): one increment per response, percentiles read at snapshot
# time (kafkaev/stats/collect.py).
cdef enum:
    RTT_BUCKETS = 32
RTT_BUCKET_COUNT = RTT_BUCKETS
CLIENT_SOFTWARE_NAME = "kafkaev"

cdef enum ConnState:
    ST_DISCONNECTED = 0
    ST_CONNECTING = 1
    ST_HANDSHAKING = 2
    ST_READY = 3
    ST_CLOSED = 4

STATE_NAMES = ("disconnected", "connecting", "handshaking", "ready", "closed")

# KIP-368 re-authentication of a READY connection: new requests are held back (encoded, in order)
# while the ones already sent are answered, then the SASL exchange runs again, then the held
# requests go out. A broker answers one socket's requests in order, so nothing is reordered.
cdef enum ReauthPhase:
    REAUTH_NONE = 0
    REAUTH_DRAINING = 1     # waiting for the requests sent before it began
    REAUTH_EXCHANGING = 2   # SaslHandshake / SaslAuthenticate on the wire

# Re-authenticate between 85% and 95% of the session's lifetime, as the Java client does: late
# enough not to waste exchanges, early enough to drain a long-poll Fetch before the broker's deadline.
REAUTH_WINDOW_START = 0.85
REAUTH_WINDOW_WIDTH = 0.10

cdef dict CODEC_VERSIONS = dict(codec.SUPPORTED_VERSIONS)
# What negotiation may pick: the codec's range, capped where the client stops short of it.
cdef dict CLIENT_VERSIONS = {
    key: (lo, min(hi, CLIENT_VERSION_CAPS.get(key, hi))) for key, (lo, hi) in CODEC_VERSIONS.items()
}


cdef class _InFlight:
    """A request written (or about to be) whose response is awaited."""
    cdef:
        int32_t correlation_id
        int16_t api_key
        int16_t version
        object cb
        double deadline
        uint64_t sent_us            # monotonic clock, for the round-trip histogram


cdef inline uint64_t _now_us() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return <uint64_t>ts.tv_sec * 1000000 + <uint64_t>(ts.tv_nsec // 1000)


cdef inline int _rtt_bucket(uint64_t micros) noexcept nogil:
    cdef int bucket = 0
    while micros and bucket < RTT_BUCKETS - 1:
        micros >>= 1
        bucket += 1
    return bucket


cdef inline _InFlight _new_inflight(int32_t correlation_id, int16_t api_key, int16_t version, object cb,
                                    double deadline):
    cdef _InFlight entry = _InFlight.__new__(_InFlight)
    entry.correlation_id = correlation_id
    entry.api_key = api_key
    entry.version = version
    entry.cb = cb
    entry.deadline = deadline
    entry.sent_us = _now_us()
    return entry


cdef str _request_name(int16_t api_key, int16_t version):
    return f"{api_name(api_key)} v{version}"


# --- argument checks: bad input fails at once, naming the argument -------------------------

cdef inline int _check_str(str what, object value) except -1:
    if type(value) is not str:
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return 0


cdef inline int _check_opt_str(str what, object value) except -1:
    if value is not None and type(value) is not str:
        raise TypeError(f"{what} must be a str or None, not {type(value).__name__}")
    return 0


cdef inline int64_t _check_int(str what, object value, int64_t lo, int64_t hi) except? -1:
    if type(value) is not int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if value < lo or value > hi:
        raise ValueError(f"{what} must be in [{lo}, {hi}], got {value}")
    return value


cdef inline int _check_cb(object cb) except -1:
    if not callable(cb):
        raise TypeError(f"cb must be callable, not {type(cb).__name__}")
    return 0


cdef int32_t INT32_MAX = 0x7FFFFFFF
cdef int32_t INT32_MIN = -0x80000000
cdef int64_t INT64_MAX = 0x7FFFFFFFFFFFFFFF
cdef int64_t INT64_MIN = -INT64_MAX - 1


cdef inline int32_t _int32(str what, object value) except? -1:
    return <int32_t>_check_int(what, value, INT32_MIN, INT32_MAX)


cdef inline int32_t _partition(str what, object value) except? -1:
    return <int32_t>_check_int(what, value, 0, INT32_MAX)


cdef inline int64_t _int64(str what, object value) except? -1:
    return _check_int(what, value, INT64_MIN, INT64_MAX)


cdef inline int _check_records(object records) except -1:
    if not isinstance(records, (bytes, bytearray, memoryview, EncodedBatch)):
        raise TypeError(f"records must be an EncodedBatch or bytes-like (an encoded RecordBatch), "
                        f"not {type(records).__name__}")
    return 0


class _ProtocolProxy(asyncio.BufferedProtocol):
    """The transport's protocol: forwards to the Connection through a weak reference, so that a
    Connection nobody references can be collected (and close its socket) even though the loop
    keeps its transport alive."""

    __slots__ = ("_conn_ref",)

    def __init__(self, BaseConnection conn):
        self._conn_ref = weakref.ref(conn)

    def connection_made(self, transport):
        cdef BaseConnection conn = self._conn_ref()
        if conn is None:
            transport.abort()
            return
        conn._connection_made(self, transport)

    def get_buffer(self, Py_ssize_t sizehint):
        cdef BaseConnection conn = self._conn_ref()
        if conn is None:
            return bytearray(1)
        return conn._get_buffer()

    def buffer_updated(self, Py_ssize_t nbytes):
        cdef BaseConnection conn = self._conn_ref()
        if conn is not None:
            conn._buffer_updated(self, nbytes)

    def eof_received(self):
        return False  # close our side too; connection_lost reports it

    def connection_lost(self, exc):
        cdef BaseConnection conn = self._conn_ref()
        if conn is not None:
            conn._connection_lost(self, exc)

    def pause_writing(self):
        cdef BaseConnection conn = self._conn_ref()
        if conn is not None:
            conn._set_writable(self, False)

    def resume_writing(self):
        cdef BaseConnection conn = self._conn_ref()
        if conn is not None:
            conn._set_writable(self, True)


async def _open_socket(BaseConnection conn, object loop, str host, int port, object ssl_ctx,
                       double timeout):
    """Resolve host without blocking the loop and try every address in turn (KIP-302)."""
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        raise KafkaError(errors.TRANSPORT, f"cannot resolve {host}:{port}: {exc}") from None
    if not infos:
        raise KafkaError(errors.TRANSPORT, f"{host} resolves to no address")
    failures = []
    for family, type_, proto, _, sockaddr in infos:
        sock = socket.socket(family, type_, proto)
        try:
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await loop.sock_connect(sock, sockaddr)
            await loop.create_connection(
                lambda: _ProtocolProxy(conn), sock=sock, ssl=ssl_ctx,
                server_hostname=host if ssl_ctx is not None else None,
                ssl_handshake_timeout=timeout if ssl_ctx is not None else None)
        except ssl.SSLError as exc:  # before OSError, its base: only the handshake raises it
            sock.close()
            raise KafkaError(errors.SSL, f"TLS handshake with {host}:{port} failed: {exc}") from None
        except OSError as exc:
            sock.close()
            failures.append(f"{sockaddr[0]}: {exc.strerror or exc}")
            continue
        except BaseException:
            sock.close()
            raise
        return
    raise KafkaError(errors.TRANSPORT, f"cannot connect to {host}:{port}: {'; '.join(failures)}")


cdef class BaseConnection:
    """Connection machinery: connect, handshake, framing, pipelining, timeouts, failure.
    The typed request helpers are in Connection (connection_requests.pxi)."""

    cdef:
        object _loop
        object _transport
        object _proxy               # the _ProtocolProxy of the current transport
        object _client_id
        double _request_timeout     # seconds
        object _ssl_ctx
        object _sasl
        object _sasl_auth           # the running SASL exchange
        int _auth_generation        # bumped by every exchange and teardown: a late token is dropped
        int _reauth_phase           # ReauthPhase
        bint _auth_bypass           # the SASL request being sent goes out even while others are held
        object _reauth_timer        # when re-authentication is due, then its deadline
        WriteBuffer _held_wbuf      # requests made while re-authenticating, encoded in order
        object _held_inflight       # their _InFlight entries
        list _held_after_flush      # acks=0 produces among them
        bint _auto_reconnect
        object _reconnect_backoff   # kafkaev.backoff.Backoff over reconnect_backoff_ms/_max_ms
        object _reconnect_handle
        Py_ssize_t _high_water
        Py_ssize_t _low_water
        Py_ssize_t _max_response_size
        int _state
        bint _writable
        bint _user_closed
        int32_t _next_correlation_id
        object _inflight            # deque of _InFlight
        list _after_flush           # callbacks of acks=0 produces, completed by the write
        WriteBuffer _wbuf
        bint _flush_scheduled
        int16_t _probe_api          # the last request's API key, for the write's probe mark
        object _timer               # one TimerHandle for all request deadlines
        double _timer_at
        object _connect_cb
        object _connect_timer
        object _connect_task
        double _connect_timeout
        object _host
        object _port
        dict _api_versions
        dict _finalized_features    # {feature name: finalized max level}, from ApiVersions v3+
        int16_t _versions[API_KEY_LIMIT]   # negotiated version, -1 = unusable
        # Receive side: frames up to RECV_BUFFER_SIZE are framed in _rbuf; a larger frame is
        # read straight into _big, sized for the whole frame up to LARGE_FRAME_UPFRONT (no
        # copy at all), beyond that doubling as data arrives up to the frame's exact size:
        # linear copying, and memory follows what the broker really sent, not what its size
        # prefix claims.
        bytearray _rbuf
        object _rview
        Py_ssize_t _rpos
        Py_ssize_t _rend
        bytearray _big
        object _big_view
        Py_ssize_t _big_filled
        Py_ssize_t _big_size          # the frame's size; len(_big) grows towards it
        object __weakref__
        object _weak_self
        # A transport disconnect() closed while it still held bytes to send (acks=0 produces
        # already reported written): close() sends them first. wait_closed() waits for that.
        object _draining
        object _draining_proxy
        list _drain_waiters
        object _drain_timer

    # Counters for the life of the object (across reconnects).
    cdef readonly uint64_t requests_sent
    cdef readonly uint64_t responses_received
    cdef readonly uint64_t writes
    cdef readonly uint64_t bytes_sent
    cdef readonly uint64_t bytes_received
    cdef readonly uint64_t throttle_time_ms   # summed over every response that carried one
    cdef readonly uint64_t throttled_responses
    cdef uint64_t _rtt_counts[RTT_BUCKETS]
    cdef readonly uint64_t reauthentications

    cdef public object on_connect
    cdef public object on_error
    cdef public object on_disconnect
    cdef public object on_writable
    cdef public object node_id
    # Armed on every read and write (ClientConfig.busy_poll_us); None: the loop sleeps as usual.
    cdef public BusyPoll busy_poll

    def __init__(self, loop=None, *, client_id=DEFAULT_CLIENT_ID, request_timeout_ms=DEFAULT_REQUEST_TIMEOUT_MS,
                 tls=None, sasl=None, auto_reconnect=False, reconnect_backoff_ms=DEFAULT_RECONNECT_BACKOFF_MS,
                 reconnect_backoff_max_ms=DEFAULT_RECONNECT_BACKOFF_MAX_MS, write_high_water=DEFAULT_WRITE_HIGH_WATER,
                 write_low_water=DEFAULT_WRITE_LOW_WATER,
                 max_response_size=DEFAULT_MAX_RESPONSE_SIZE):
        _check_opt_str("client_id", client_id)
        self._request_timeout = _check_int("request_timeout_ms", request_timeout_ms, 1, INT32_MAX) / 1000.0
        self._ssl_ctx = ssl_context(tls)
        if sasl is not None and not isinstance(sasl, SASLConfig):
            raise TypeError(f"sasl must be a SASLConfig or None, not {type(sasl).__name__}")
        self._reconnect_backoff = Backoff(BackoffPolicy(
            _check_int("reconnect_backoff_ms", reconnect_backoff_ms, 1, INT32_MAX),
            _check_int("reconnect_backoff_max_ms", reconnect_backoff_max_ms, reconnect_backoff_ms, INT32_MAX)))
        self._high_water = _check_int("write_high_water", write_high_water, 1, INT64_MAX)
        self._low_water = _check_int("write_low_water", write_low_water, 0, write_high_water)
        self._max_response_size = _check_int("max_response_size", max_response_size, 1024, INT32_MAX)
        # kafkaev's default loop, as Client's: the one kafkaev.run() turns.
        self._loop = loop if loop is not None else default_loop()
        self._client_id = client_id
        self._sasl = sasl
        self._auto_reconnect = bool(auto_reconnect)
        self._state = ST_DISCONNECTED
        self._writable = True
        self._inflight = deque()
        self._after_flush = []
        self._drain_waiters = []
        self._wbuf = WriteBuffer()
        self._held_wbuf = WriteBuffer()
        self._held_inflight = deque()
        self._held_after_flush = []
        self._api_versions = {}
        self._finalized_features = {}
        self._reset_versions()
        self._rbuf = bytearray(RECV_BUFFER_SIZE)
        self._rview = memoryview(self._rbuf)
        self._weak_self = weakref.ref(self)
        self.node_id = UNKNOWN_NODE_ID

    def __del__(self):
        # A Connection nobody references closes its socket (the proxy holds it only weakly).
        if self._transport is not None:
            warnings.warn(f"unclosed kafkaev.Connection to {self._host}:{self._port}", ResourceWarning,
                          source=self)
            self._transport.abort()
            self._transport = None

    # --- properties -------------------------------------------------------------------------

    @property
    def state(self):
        return STATE_NAMES[self._state]

    @property
    def connected(self):
        return self._state == ST_READY

    @property
    def pending(self):
        return (len(self._inflight) + len(self._after_flush) + len(self._held_inflight)
                + len(self._held_after_flush))

    @property
    def writable(self):
        return self._writable

    @property
    def api_versions(self):
        return dict(self._api_versions)

    @property
    def finalized_features(self):
        return dict(self._finalized_features)

    @property
    def host(self):
        return self._host

    @property
    def port(self):
        return self._port

    @property
    def client_id(self):
        return self._client_id

    def __repr__(self):
        return (f"<kafkaev.Connection {self._host}:{self._port} node={self.node_id} "
                f"{STATE_NAMES[self._state]} pending={self.pending}>")

    def version_for(self, api_key):
        cdef int key = _check_int("api_key", api_key, 0, API_KEY_LIMIT - 1)
        if self._state != ST_READY and self._state != ST_HANDSHAKING:
            raise KafkaError(errors.STATE, f"version_for({api_name(key)}): connection is {self.state}")
        if self._versions[key] < 0:
            raise self._unsupported(key)
        return self._versions[key]

    cdef object _unsupported(self, int key):
        broker = self._api_versions.get(key)
        ours = CLIENT_VERSIONS.get(key)
        if ours is None:
            detail = "kafkaev has no codec for it"
        elif broker is None:
            detail = "the broker does not support it"
        else:
            detail = f"broker versions {broker[0]}-{broker[1]}, kafkaev {ours[0]}-{ours[1]}"
        return KafkaError(errors.UNSUPPORTED_VERSION,
                          f"{api_name(key)} (api key {key}) unusable with {self._host}:{self._port}: {detail}")

    cdef void _reset_versions(self):
        cdef int i
        for i in range(API_KEY_LIMIT):
            self._versions[i] = NOT_NEGOTIATED

    # --- connect / disconnect ---------------------------------------------------------------

    def connect(self, host, port, timeout=10.0, cb=None):
        _check_str("host", host)
        if not host:
            raise ValueError("host must not be empty")
        _check_int("port", port, 1, 65535)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if cb is not None:
            _check_cb(cb)
        if self._state in (ST_CONNECTING, ST_HANDSHAKING, ST_READY):
            if cb is not None:
                self._loop.call_soon(cb, self, KafkaError(
                    errors.STATE, f"connect({host}:{port}): connection is already {self.state}"))
            return
        if self._sasl is not None and self._ssl_ctx is None:
            warnings.warn(
                f"SASL {self._sasl.mechanism} credentials for {self._sasl.identity} go to {host}:{port} "
                f"over a plaintext connection", InsecureCredentialsWarning, stacklevel=2)
        self._host = host
        self._port = port
        self._connect_timeout = float(timeout)
        self._connect_cb = cb
        self._user_closed = False
        self._reconnect_backoff.reset()
        self._start_connect()

    cdef void _start_connect(self):
        self._reconnect_handle = None
        self._state = ST_CONNECTING
        self._writable = True
        self._connect_timer = self._loop.call_later(self._connect_timeout, self._on_connect_timeout)
        task = self._loop.create_task(_open_socket(
            self, self._loop, self._host, self._port, self._ssl_ctx, self._connect_timeout))
        task.add_done_callback(self._on_open_done)
        self._connect_task = task

    def _on_open_done(self, task):
        if task is not self._connect_task:
            return
        self._connect_task = None
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        if not isinstance(exc, KafkaError):
            exc = KafkaError(errors.TRANSPORT, f"cannot connect to {self._host}:{self._port}: {exc!r}")
        self._fail(exc)

    def _on_connect_timeout(self):
        self._connect_timer = None
        if self._state != ST_CONNECTING and self._state != ST_HANDSHAKING:
            return
        phase = "TCP/TLS connect" if self._state == ST_CONNECTING else (
            "SASL authentication" if self._sasl_auth is not None else "ApiVersions handshake")
        self._fail(KafkaError(errors.TIMED_OUT, f"connect to {self._host}:{self._port} timed out after "
                                                f"{self._connect_timeout:g}s during {phase}"))

    def wait_closed(self, cb, *, timeout_ms=None):
        """``cb(None)`` once the socket disconnect() closed has sent every byte it still held,
        at once if it held none; ``cb(KafkaError)`` if it could not: lost, or still sending
        after ``timeout_ms`` (default request_timeout_ms), when it is aborted."""
        _check_cb(cb)
        cdef double timeout_s = self._request_timeout if timeout_ms is None else (
            _check_int("timeout_ms", timeout_ms, 0, INT32_MAX) / 1000.0)
        if self._draining is None:
            self._loop.call_soon(cb, None)
            return
        self._drain_waiters.append(cb)
        if self._drain_timer is None:  # it also keeps this connection alive until then
            self._drain_timer = self._loop.call_later(timeout_s, self._drain_timed_out)

    def _drain_timed_out(self):
        self._drain_timer = None
        transport = self._draining
        if transport is None:
            return
        self._drained(KafkaError(errors.TIMED_OUT, f"connection to {self._host}:{self._port} still had "
                                                   f"{transport.get_write_buffer_size()} bytes to send when "
                                                   "closing timed out"))
        transport.abort()

    cdef void _drained(self, object err):
        self._draining = None
        self._draining_proxy = None
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None
        waiters, self._drain_waiters = self._drain_waiters, []
        for cb in waiters:
            try:
                cb(err)
            except BaseException as exc:
                self._report(exc)

    def disconnect(self):
        cdef int prev = self._state
        self._user_closed = True
        if self._reconnect_handle is not None:
            self._reconnect_handle.cancel()
            self._reconnect_handle = None
        if prev == ST_CLOSED:
            return
        err = KafkaError(errors.DESTROY, f"connection to {self._host}:{self._port} closed by disconnect()")
        self._teardown(ST_CLOSED)
        self._fail_pending(err, None)
        self._finish_connect(err)
        if prev == ST_READY:
            self._emit_disconnect(None)

    cdef void _teardown(self, int new_state):
        """Drop the transport, timers and buffers; pending entries stay for the caller to fail."""
        self._state = new_state
        transport = self._transport
        proxy = self._proxy
        self._transport = None
        self._proxy = None
        if transport is not None:
            if new_state == ST_CLOSED:
                if transport.get_write_buffer_size():
                    self._draining = transport
                    self._draining_proxy = proxy
                transport.close()
            else:
                transport.abort()
        if self._connect_task is not None:
            task = self._connect_task
            self._connect_task = None
            task.cancel()
        if self._connect_timer is not None:
            self._connect_timer.cancel()
            self._connect_timer = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._sasl_auth = None
        self._auth_generation += 1
        self._reauth_phase = REAUTH_NONE
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        self._held_wbuf.reset()
        self._wbuf.reset()
        self._flush_scheduled = False
        self._rpos = 0
        self._rend = 0
        self._big = None
        self._big_view = None
        self._writable = True

    cdef void _fail_pending(self, object err, object timeout_err):
        """Every pending callback gets (None, err) once; entries past their deadline get timeout_err."""
        cdef _InFlight entry
        cdef double now = 0
        entries = self._inflight
        after = self._after_flush
        self._inflight = deque()
        self._after_flush = []
        if self._held_inflight or self._held_after_flush:
            # Sent after everything in flight: failed after it, in the order they were made.
            entries.extend(self._held_inflight)
            after.extend(self._held_after_flush)
            self._held_inflight = deque()
            self._held_after_flush = []
        if timeout_err is not None:
            now = self._loop.time() + TIMER_SLACK
        for entry in entries:
            if timeout_err is not None and entry.deadline <= now:
                self._invoke(entry.cb, None, timeout_err)
            else:
                self._invoke(entry.cb, None, err)
        for cb in after:
            self._invoke(cb, None, err)

    cdef void _finish_connect(self, object err):
        cb = self._connect_cb
        self._connect_cb = None
        if cb is not None:
            try:
                cb(self, err)
            except BaseException as exc:
                self._report(exc)

    cdef void _fail(self, object err, object timeout_err=None):
        """The connection failed: close it, fail everything pending once, tell the handlers,
        reconnect if asked to."""
        cdef int prev = self._state
        if prev == ST_CLOSED or prev == ST_DISCONNECTED:
            return
        self._teardown(ST_DISCONNECTED)
        self._fail_pending(err, timeout_err)
        self._finish_connect(timeout_err if timeout_err is not None else err)
        self._emit_error(timeout_err if timeout_err is not None else err)
        if prev == ST_READY:
            connection_log.warning("lost the connection to %s:%s (node %s): %s",
                                   self._host, self._port, self.node_id, err)
            self._emit_disconnect(err)
        if self._auto_reconnect and not self._user_closed and self._state == ST_DISCONNECTED:
            self._schedule_reconnect()

    cdef void _schedule_reconnect(self):
        # The client's one backoff (kafkaev/backoff.py); a pooled connection never gets here:
        # the pool turns auto_reconnect off and backs off itself.
        self._reconnect_handle = self._loop.call_later(self._reconnect_backoff.next_delay_s(), self._reconnect)

    def _reconnect(self):
        self._reconnect_handle = None
        if self._user_closed or self._state != ST_DISCONNECTED:
            return
        self._start_connect()

    # --- handlers ---------------------------------------------------------------------------

    cdef void _report(self, object exc):
        """A user callback raised: hand the exception to on_error, else the loop's handler."""
        report_error(self._loop, self.on_error, self._source(), exc)

    cdef str _source(self):
        return f"kafkaev.Connection {self._host}:{self._port}"

    cdef inline void _invoke(self, object cb, object result, object err):
        try:
            cb(result, err)
        except BaseException as exc:
            self._report(exc)

    cdef void _emit_error(self, object err):
        report_error(self._loop, self.on_error, self._source(), err)

    cdef void _emit_disconnect(self, object err):
        handler = self.on_disconnect
        if handler is not None:
            try:
                handler(err)
            except BaseException as exc:
                self._report(exc)

    # --- transport events (through _ProtocolProxy) ------------------------------------------

    cdef void _connection_made(self, object proxy, object transport):
        if self._state != ST_CONNECTING or self._transport is not None:
            transport.abort()  # a stale attempt: we already connected, gave up or closed
            return
        self._transport = transport
        self._proxy = proxy
        transport.set_write_buffer_limits(high=self._high_water, low=self._low_water)
        self._state = ST_HANDSHAKING
        self._rpos = 0
        self._rend = 0
        self._next_correlation_id = 0
        self._reset_versions()
        self._api_versions = {}
        self._finalized_features = {}
        self._versions[API_API_VERSIONS] = CODEC_VERSIONS[API_API_VERSIONS][1]
        self._send_api_versions(CODEC_VERSIONS[API_API_VERSIONS][1])

    cdef void _connection_lost(self, object proxy, object exc):
        if proxy is not None and proxy is self._draining_proxy:
            self._drained(None if exc is None else KafkaError(
                errors.TRANSPORT, f"connection to {self._host}:{self._port} lost while closing: {exc}"))
            return
        if proxy is not self._proxy:
            return
        if exc is None:
            detail = "closed by the broker"
        elif isinstance(exc, ssl.SSLError):
            self._fail(KafkaError(errors.SSL, f"TLS connection to {self._host}:{self._port} failed: {exc}"))
            return
        else:
            detail = str(exc) or type(exc).__name__
        self._fail(KafkaError(errors.TRANSPORT, f"connection to {self._host}:{self._port} lost: {detail}"))

    cdef void _set_writable(self, object proxy, bint writable):
        if proxy is not self._proxy or self._writable == writable:
            return
        self._writable = writable
        handler = self.on_writable
        if handler is not None:
            try:
                handler(writable)
            except BaseException as exc:
                self._report(exc)

    # --- receive: framing -------------------------------------------------------------------

    cdef object _get_buffer(self):
        if self._big is not None:
            if self._big_filled == len(self._big):
                self._grow_big(1)
            return self._big_view[self._big_filled:]
        if self._rend == RECV_BUFFER_SIZE:
            self._compact()
        return self._rview[self._rend:]

    cdef void _grow_big(self, Py_ssize_t need):
        """Make room in the large-frame buffer: the whole frame at once when it is at most
        LARGE_FRAME_UPFRONT, else double it (at least `need` free bytes, at most the frame's
        size). A new bytearray each time: the transport may still hold a view of the old. Not
        zero-filled: the socket writes every byte before the frame is read."""
        cdef Py_ssize_t capacity = 0 if self._big is None else len(self._big)
        cdef Py_ssize_t target = max(capacity * 2, LARGE_FRAME_UPFRONT, self._big_filled + need)
        if target > self._big_size:
            target = self._big_size
        bigger = PyByteArray_FromStringAndSize(NULL, target)
        if self._big_filled:
            memcpy(PyByteArray_AS_STRING(bigger), PyByteArray_AS_STRING(self._big), self._big_filled)
        self._big = bigger
        self._big_view = memoryview(bigger)

    cdef void _compact(self):
        cdef char *base = PyByteArray_AS_STRING(self._rbuf)
        cdef Py_ssize_t left = self._rend - self._rpos
        if self._rpos > 0:
            if left > 0:
                memmove(base, base + self._rpos, left)
            self._rpos = 0
            self._rend = left

    cdef void _buffer_updated(self, object proxy, Py_ssize_t nbytes):
        if proxy is not self._proxy:
            return
        if PROBES_COMPILED:
            mark(STAGE_READ, (<_InFlight>self._inflight[0]).api_key if self._inflight else -1)
        if self.busy_poll is not None:
            self.busy_poll.arm()
        self.bytes_received += nbytes
        if self._big is not None:
            self._big_filled += nbytes
            if self._big_filled != self._big_size:
                return
            frame = self._big
            self._big = None
            self._big_view = None
            self._on_frame(frame, PyByteArray_AS_STRING(frame), len(frame))
        else:
            self._rend += nbytes
            self._parse_frames()
        # Whichever path the last answer came by (a large Fetch response is framed apart).
        if self._reauth_phase == REAUTH_DRAINING and not self._inflight and self._transport is not None:
            self._begin_reauth_exchange()

    cdef void _parse_frames(self):
        cdef char *base
        cdef const uint8_t *p
        cdef int32_t size
        cdef Py_ssize_t avail
        while self._transport is not None:
            avail = self._rend - self._rpos
            if avail < SIZE_PREFIX:
                break
            base = PyByteArray_AS_STRING(self._rbuf)
            p = <const uint8_t *>(base + self._rpos)
            size = <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | p[3])
            if size < 4 or size > self._max_response_size:
                # Checked before allocating anything: a garbage prefix must not cost memory.
                self._fail(ProtocolError(
                    f"response frame from {self._host}:{self._port} announces {size} bytes "
                    f"(allowed 4..{self._max_response_size}, see max_response_size)"))
                return
            if avail - SIZE_PREFIX >= size:
                frame = PyBytes_FromStringAndSize(base + self._rpos + SIZE_PREFIX, size)
                self._rpos += SIZE_PREFIX + size
                self._on_frame(frame, PyBytes_AS_STRING(frame), size)
                continue
            if size > RECV_BUFFER_SIZE - SIZE_PREFIX:
                # Too big for the shared buffer: give it its own, exactly sized.
                self._big_size = size
                self._big_filled = 0
                self._grow_big(avail - SIZE_PREFIX)
                memcpy(PyByteArray_AS_STRING(self._big), base + self._rpos + SIZE_PREFIX,
                       avail - SIZE_PREFIX)
                self._big_filled = avail - SIZE_PREFIX
                self._rpos = 0
                self._rend = 0
                return
            break
        if self._rpos == self._rend:
            self._rpos = 0
            self._rend = 0
        elif self._rpos > 0:
            self._compact()

    cdef void _on_frame(self, object frame, const char *data, Py_ssize_t size):
        cdef _InFlight entry
        cdef ReadBuffer reader
        cdef int32_t correlation_id
        cdef int16_t version
        if not self._inflight:
            self._fail(ProtocolError(
                f"{self._host}:{self._port} sent a response ({size} bytes) with no request pending"))
            return
        entry = self._inflight.popleft()
        if PROBES_COMPILED:
            mark(STAGE_FRAME, entry.api_key)
        self.responses_received += 1
        self._rtt_counts[_rtt_bucket(_now_us() - entry.sent_us)] += 1
        reader = read_buffer_over(frame, data, size, response_label(entry.api_key, entry.version))
        version = entry.version
        try:
            correlation_id = decode_response_header(reader, entry.api_key, version)
        except KafkaError as exc:
            self._inflight.appendleft(entry)
            self._fail(exc)
            return
        if correlation_id != entry.correlation_id:
            self._inflight.appendleft(entry)
            self._fail(ProtocolError(
                f"{_request_name(entry.api_key, version)} response from {self._host}:{self._port} carries "
                f"correlation id {correlation_id}, expected {entry.correlation_id}"))
            return
        try:
            response = decode_response_body(reader, entry.api_key, version)
        except KafkaError as exc:
            self._invoke(entry.cb, None, exc)
            return
        except Exception as exc:
            self._invoke(entry.cb, None, ProtocolError(
                f"{_request_name(entry.api_key, version)} response: {type(exc).__name__}: {exc}"))
            return
        throttle = getattr(response, "throttle_time_ms", 0)
        if throttle > 0:
            self._throttled(entry.api_key, throttle)
        if PROBES_COMPILED:
            mark(STAGE_CALLBACK, entry.api_key)
        self._invoke(entry.cb, response, None)

    cdef void _throttled(self, int16_t api_key, object throttle_ms):
        self.throttle_time_ms += throttle_ms
        self.throttled_responses += 1
        connection_log.info("throttled: %s:%s (node %s) held a %s response back %d ms (a quota)",
                            self._host, self._port, self.node_id, api_name(api_key), throttle_ms)

    def rtt_histogram(self):
        """Round trips since the object was made: bucket i counts those under 2**i µs (the
        last bucket, everything longer)."""
        return [self._rtt_counts[i] for i in range(RTT_BUCKETS)]

    # --- send: encoding, coalescing, deadlines ----------------------------------------------

    cdef int _send(self, int16_t api_key, int16_t version, object body, object cb,
                   double timeout_s, bint expect_response) except -1:
        cdef WriteBuffer buf = self._wbuf
        cdef int32_t correlation_id = self._next_correlation_id
        cdef _InFlight entry
        cdef double deadline
        cdef bint idle
        if self._reauth_phase != REAUTH_NONE and not self._auth_bypass:
            return self._send_held(api_key, version, body, cb, timeout_s, expect_response)
        # Nothing waiting on this socket and nothing encoded yet: the broker is idle, so the
        # request goes out now. Otherwise it joins the write at the end of the loop iteration.
        # An acks=0 produce is never answered, so it cannot tell an idle broker: it stays
        # coalesced, completed from the loop's flush (written at once, its callbacks took one
        # more turn each, and the acks=0 run's CPU per record rose beyond noise in A/B pairs).
        idle = (expect_response and not self._inflight and not self._flush_scheduled
                and buf.total_length() == 0)
        # encode_request rewinds its own half-written frame on failure: the buffer holds
        # other requests too.
        encode_request(buf, api_key, version, correlation_id, self._client_id, body)
        if PROBES_COMPILED:
            mark(STAGE_ENCODE, api_key)
            self._probe_api = api_key
        self._next_correlation_id = 0 if correlation_id == MAX_CORRELATION_ID else correlation_id + 1
        self.requests_sent += 1
        if expect_response:
            deadline = self._loop.time() + timeout_s
            self._inflight.append(_new_inflight(correlation_id, api_key, version, cb, deadline))
            if self._timer is None or deadline < self._timer_at:
                self._arm_timer(deadline)
        else:
            self._after_flush.append(cb)
        if idle or buf.total_length() >= FLUSH_THRESHOLD:
            self._flush(False)
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_soon)
        return 0

    cdef int _send_held(self, int16_t api_key, int16_t version, object body, object cb,
                        double timeout_s, bint expect_response) except -1:
        """_send while re-authenticating: encoded now, in order, written once it is done."""
        cdef int32_t correlation_id = self._next_correlation_id
        encode_request(self._held_wbuf, api_key, version, correlation_id, self._client_id, body)
        self._next_correlation_id = 0 if correlation_id == MAX_CORRELATION_ID else correlation_id + 1
        self.requests_sent += 1
        if expect_response:
            self._held_inflight.append(_new_inflight(correlation_id, api_key, version, cb,
                                                     self._loop.time() + timeout_s))
        else:
            self._held_after_flush.append(cb)
        return 0

    def _flush_soon(self):
        self._flush_scheduled = False
        self._flush(True)

    cdef void _flush(self, bint from_loop):
        cdef WriteBuffer buf = self._wbuf
        cdef Py_ssize_t size = buf.total_length()
        if size == 0 or self._transport is None:
            return
        chunks = buf.chunks()
        buf.reset()
        if PROBES_COMPILED:
            mark(STAGE_WRITE, self._probe_api)
        if len(chunks) == 1:
            self._transport.write(chunks[0])
        else:
            # Record batches go out as they are (writev), not copied into one block.
            self._transport.writelines(chunks)
        if self.busy_poll is not None:
            self.busy_poll.arm()
        self.writes += 1
        self.bytes_sent += size
        if self._after_flush:
            done = self._after_flush
            self._after_flush = []
            if from_loop:
                for cb in done:
                    self._invoke(cb, None, None)
            else:
                # Never call back from inside the call that issued the request.
                self._loop.call_soon(self._complete_unacked, done)

    def _complete_unacked(self, list done):
        for cb in done:
            self._invoke(cb, None, None)

    cdef void _arm_timer(self, double deadline):
        # The timer stays armed when the queue drains (cheaper than cancel + re-arm per round
        # trip); it holds the connection only weakly so that it does not keep it alive.
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = self._loop.call_at(deadline, _timer_fired, self._weak_self)

    cdef void _on_timer(self):
        cdef _InFlight entry
        cdef _InFlight expired = None
        cdef double now = self._loop.time() + TIMER_SLACK
        cdef double earliest = 0
        self._timer = None
        for entry in self._inflight:
            if entry.deadline <= now:
                expired = entry
                break
            if earliest == 0 or entry.deadline < earliest:
                earliest = entry.deadline
        if expired is not None:
            # A late response could not be matched safely any more: close the connection.
            timeout_err = KafkaError(errors.TIMED_OUT, (
                f"{_request_name(expired.api_key, expired.version)} request to {self._host}:{self._port} "
                f"got no response in time"))
            self._fail(KafkaError(errors.TRANSPORT, (
                f"connection to {self._host}:{self._port} closed: a request timed out")), timeout_err)
        elif earliest > 0:
            self._arm_timer(earliest)

    # --- handshake: ApiVersions, then SASL --------------------------------------------------

    cdef void _send_api_versions(self, int16_t version):
        body = codec.ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME,
                                         client_software_version=_proto_version())
        self._send(API_API_VERSIONS, version, body, self._on_api_versions, self._connect_timeout, True)

    cdef bint _handshake_step_lost(self, object err):
        """True when a handshake answer must not be acted on: the connection left the handshake
        (or the re-authentication) meanwhile, or the request failed (which fails the connection, once)."""
        if self._state != ST_HANDSHAKING and self._reauth_phase != REAUTH_EXCHANGING:
            return True
        if err is not None:
            self._fail(err)
            return True
        return False

    def _on_api_versions(self, response, err):
        if self._handshake_step_lost(err):
            return
        code = response.error_code
        if code == errors.UNSUPPORTED_VERSION:
            broker_max = NOT_NEGOTIATED  # until the answer names ApiVersions' own range
            for api in response.api_keys:
                if api.api_key == API_API_VERSIONS:
                    broker_max = api.max_version
            if 0 <= broker_max < self._versions[API_API_VERSIONS]:
                self._versions[API_API_VERSIONS] = broker_max
                self._send_api_versions(broker_max)
                return
            self._fail(KafkaError(errors.UNSUPPORTED_VERSION,
                                  f"{self._host}:{self._port} accepts no ApiVersions version kafkaev speaks"))
            return
        if code != errors.NONE:
            self._fail(KafkaError(code, f"ApiVersions from {self._host}:{self._port}"))
            return
        ranges = {}
        for api in response.api_keys:
            ranges[api.api_key] = (api.min_version, api.max_version)
        self._api_versions = ranges
        self._finalized_features = {f.name: f.max_version_level for f in (response.finalized_features or ())}
        self._reset_versions()
        for key, (broker_min, broker_max) in ranges.items():
            spoken = CLIENT_VERSIONS.get(key)
            if spoken is None or not 0 <= key < API_KEY_LIMIT:
                continue
            best = min(broker_max, spoken[1])
            if best >= max(broker_min, spoken[0]):
                self._versions[key] = best
        if self._sasl is not None:
            self._start_sasl()
        else:
            self._ready()

    cdef void _start_sasl(self):
        if self._versions[API_SASL_HANDSHAKE] < 1 or self._versions[API_SASL_AUTHENTICATE] < 0:
            self._fail(KafkaError(errors.AUTHENTICATION,
                                  f"{self._host}:{self._port} does not offer SaslHandshake v1/SaslAuthenticate"))
            return
        self._auth_generation += 1
        if self._sasl.tokens is not None:
            # OAUTHBEARER: the token first (the shared cache may have to ask its provider).
            self._sasl.tokens.get(self._loop, functools.partial(self._on_token, self._auth_generation))
            return
        self._sasl_auth = authenticator_for(self._sasl)
        self._send_sasl_handshake()

    def _on_token(self, generation, token, err):
        if generation != self._auth_generation or self._handshake_step_lost(None):
            return
        if err is not None:
            self._fail(KafkaError(errors.AUTHENTICATION, f"{self._host}:{self._port}: {err.message}"))
            return
        self._sasl_auth = authenticator_for(self._sasl, token)
        self._send_sasl_handshake()

    cdef void _send_sasl_handshake(self):
        body = codec.SaslHandshakeRequest(mechanism=self._sasl.mechanism)
        self._auth_bypass = True
        try:
            self._send(API_SASL_HANDSHAKE, self._versions[API_SASL_HANDSHAKE], body, self._on_sasl_handshake,
                       self._connect_timeout, True)
        finally:
            self._auth_bypass = False

    def _on_sasl_handshake(self, response, err):
        if self._handshake_step_lost(err):
            return
        if response.error_code != errors.NONE:
            self._fail(KafkaError(errors.AUTHENTICATION, (
                f"{self._host}:{self._port} does not enable SASL mechanism {self._sasl.mechanism} "
                f"(enabled: {', '.join(response.mechanisms) or 'none'}; "
                f"{errors.error_name(response.error_code)})")))
            return
        self._send_sasl_bytes(self._sasl_auth.first())

    cdef void _send_sasl_bytes(self, bytes payload):
        body = codec.SaslAuthenticateRequest(auth_bytes=payload)
        self._auth_bypass = True
        try:
            self._send(API_SASL_AUTHENTICATE, self._versions[API_SASL_AUTHENTICATE], body,
                       self._on_sasl_authenticate, self._connect_timeout, True)
        finally:
            self._auth_bypass = False

    def _on_sasl_authenticate(self, response, err):
        if self._handshake_step_lost(err):
            return
        if response.error_code != errors.NONE:
            refusal = getattr(self._sasl_auth, "refusal", None)
            if refusal and refusal in (response.error_message or ""):
                refusal = None  # the broker's message says it already
            self._fail(KafkaError(errors.AUTHENTICATION, (
                f"SASL {self._sasl.mechanism} {'re-' if self._reauth_phase else ''}authentication of "
                f"{self._sasl.identity} at {self._host}:{self._port} failed: "
                f"{errors.error_name(response.error_code)}: {response.error_message or 'no detail'}"
                f"{f' (broker: {refusal})' if refusal else ''}")))
            return
        try:
            reply = self._sasl_auth.step(bytes(response.auth_bytes or b""))
        except SASLFailure as exc:
            self._fail(KafkaError(errors.AUTHENTICATION, f"{self._host}:{self._port}: {exc}"))
            return
        if reply is not None:
            self._send_sasl_bytes(reply)
        elif self._sasl_auth.done:
            self._sasl_auth = None
            self._schedule_reauth(response.session_lifetime_ms)
            if self._reauth_phase == REAUTH_EXCHANGING:
                self._reauth_done()
            else:
                self._ready()
        else:
            self._fail(KafkaError(errors.AUTHENTICATION, f"{self._host}:{self._port}: SASL exchange incomplete"))

    # --- KIP-368 re-authentication ---------------------------------------------------------

    cdef void _schedule_reauth(self, int64_t session_lifetime_ms):
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        if session_lifetime_ms <= 0 or not self._sasl.reauthenticate:
            return
        delay = session_lifetime_ms / 1000.0 * (REAUTH_WINDOW_START + random.random() * REAUTH_WINDOW_WIDTH)
        self._reauth_timer = self._loop.call_later(delay, _reauth_due, self._weak_self)

    cdef void _on_reauth_due(self):
        self._reauth_timer = None
        if self._state != ST_READY or self._reauth_phase != REAUTH_NONE:
            return
        self._reauth_phase = REAUTH_DRAINING
        # What is encoded already is in _inflight: it goes out now, ahead of the exchange.
        self._flush(True)
        self._reauth_timer = self._loop.call_later(self._connect_timeout, _reauth_deadline, self._weak_self)
        if not self._inflight:
            self._begin_reauth_exchange()

    cdef void _begin_reauth_exchange(self):
        self._reauth_phase = REAUTH_EXCHANGING
        self._start_sasl()

    cdef void _on_reauth_deadline(self):
        self._reauth_timer = None
        if self._reauth_phase == REAUTH_NONE:
            return
        self._fail(KafkaError(errors.TIMED_OUT, (
            f"re-authentication with {self._host}:{self._port} did not finish within "
            f"{self._connect_timeout:g}s")))

    cdef void _reauth_done(self):
        """The new session is set up: the requests held meanwhile go out, in the order made."""
        cdef _InFlight entry
        cdef Py_ssize_t size = self._held_wbuf.total_length()
        self.reauthentications += 1
        self._reauth_phase = REAUTH_NONE
        if not size or self._transport is None:
            return
        self._flush(True)  # nothing, normally: the exchange's requests are all answered
        held = self._held_inflight
        after = self._held_after_flush
        self._held_inflight = deque()
        self._held_after_flush = []
        chunks = self._held_wbuf.chunks()
        self._held_wbuf.reset()
        self._inflight.extend(held)
        self._transport.writelines(chunks)
        self.writes += 1
        self.bytes_sent += size
        for entry in held:
            if self._timer is None or entry.deadline < self._timer_at:
                self._arm_timer(entry.deadline)
        for cb in after:
            self._invoke(cb, None, None)

    cdef void _ready(self):
        self._state = ST_READY
        connection_log.debug("connected to %s:%s (node %s)%s", self._host, self._port, self.node_id,
                             "" if self._sasl is None else f" as SASL {self._sasl.mechanism} user {self._sasl.username!r}")
        self._reconnect_backoff.reset()
        if self._connect_timer is not None:
            self._connect_timer.cancel()
            self._connect_timer = None
        self._finish_connect(None)
        handler = self.on_connect
        if handler is not None and self._state == ST_READY:
            try:
                handler()
            except BaseException as exc:
                self._report(exc)

    # --- generic request --------------------------------------------------------------------

    cdef int _version_or_fail(self, int key, object cb) except -2:
        """The negotiated version of key, or -1 after scheduling cb with the reason."""
        if self._state != ST_READY:
            self._loop.call_soon(self._invoke_soon, cb, KafkaError(
                errors.STATE, f"{api_name(key)} request: connection to {self._host}:{self._port} is "
                              f"{STATE_NAMES[self._state]}"))
            return -1
        if self._versions[key] < 0:
            self._loop.call_soon(self._invoke_soon, cb, self._unsupported(key))
            return -1
        return self._versions[key]

    def _invoke_soon(self, cb, err):
        self._invoke(cb, None, err)

    cdef inline double _timeout(self, object timeout_ms) except -1:
        if timeout_ms is None:
            return self._request_timeout
        return _check_int("timeout_ms", timeout_ms, 1, INT32_MAX) / 1000.0

    def request(self, api_key, body, cb, *, version=None, timeout_ms=None):
        cdef int key = _check_int("api_key", api_key, 0, API_KEY_LIMIT - 1)
        cdef int v
        _check_cb(cb)
        if key not in CODEC_VERSIONS:
            raise ValueError(f"api_key {key}: kafkaev has no codec for it")
        if body is None:
            raise TypeError("body must be a request object from kafkaev.protocol.codec, not None")
        cdef double timeout_s = self._timeout(timeout_ms)
        v = self._version_or_fail(key, cb)
        if v < 0:
            return
        if version is not None:
            v = _check_int("version", version, 0, 0x7FFF)
            broker = self._api_versions.get(key)
            ours = CODEC_VERSIONS[key]
            if broker is None or not (broker[0] <= v <= broker[1] and ours[0] <= v <= ours[1]):
                self._loop.call_soon(self._invoke_soon, cb, KafkaError(errors.UNSUPPORTED_VERSION, (
                    f"{api_name(key)} v{v}: broker {self._host}:{self._port} supports {broker}, "
                    f"kafkaev {ours}")))
                return
        expect_response = not (key == API_PRODUCE and getattr(body, "acks", -1) == 0)
        self._send(key, v, body, cb, timeout_s, expect_response)



def _timer_fired(weak_conn):
    cdef BaseConnection conn = weak_conn()
    if conn is not None:
        conn._on_timer()


def _reauth_due(weak_conn):
    cdef BaseConnection conn = weak_conn()
    if conn is not None:
        conn._on_reauth_due()


def _reauth_deadline(weak_conn):
    cdef BaseConnection conn = weak_conn()
    if conn is not None:
        conn._on_reauth_deadline()


def _proto_version():
    from kafkaev import __version__
    return __version__


include "connection_requests.pxi"
