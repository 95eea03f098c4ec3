"""Every option of ``kafkaev.Client``, validated once at construction.

``ClientConfig`` is a frozen, slotted dataclass: the rest of the client reads plain
attributes (no dict lookups on hot paths) and a bad option fails in the constructor
with a message naming the argument, never later inside a callback.
"""

from __future__ import annotations

import asyncio
import difflib
import math
import ssl
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from .backoff import BackoffPolicy
from .local_broker import default_brokers
from .log import parse_debug
from .protocol.defaults import (
    DEFAULT_CLIENT_ID,
    DEFAULT_RECONNECT_BACKOFF_MAX_MS,
    DEFAULT_RECONNECT_BACKOFF_MS,
    DEFAULT_REQUEST_TIMEOUT_MS,
    MAX_BUSY_POLL_US,
)
from .security import SASLConfig, TLSConfig
from .types import (
    ACKS_ALL,
    ACKS_LEADER,
    ACKS_NONE,
    ISOLATION_READ_COMMITTED,
    ISOLATION_READ_UNCOMMITTED,
)

DEFAULT_PORT = 9092

# RecordBatch attribute bits 0-2: the compression codec.
COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
COMPRESSION_CODECS: dict[str | None, int] = {
    None: COMPRESSION_NONE,
    "none": COMPRESSION_NONE,
    "gzip": COMPRESSION_GZIP,
    "snappy": COMPRESSION_SNAPPY,
    "lz4": COMPRESSION_LZ4,
    "zstd": COMPRESSION_ZSTD,
}

ISOLATION_LEVELS = {
    "read_uncommitted": ISOLATION_READ_UNCOMMITTED,
    "read_committed": ISOLATION_READ_COMMITTED,
}
AUTO_OFFSET_RESETS = ("earliest", "latest", "error")
KNOWN_ASSIGNORS = ("cooperative-sticky", "range", "roundrobin")

# The broker's default message.max.bytes: the largest record batch it accepts.
DEFAULT_MAX_REQUEST_SIZE = 1048588
# A batch may grow to 1 MiB (librdkafka's batch.size is 1,000,000 bytes): the broker appends
# large batches at far less cost per record, and a batch reserves memory only as it fills.
DEFAULT_BATCH_SIZE = 1024 * 1024
# What a new batch reserves from buffer_memory (and its builder allocates) before it grows:
# the Java client's whole batch.size. A batch grows by doubling, each step reserved as its
# records reach it, up to batch_size: a partition sending a few records a linger period
# holds this much, a busy one grows to a full batch within a few steps.
BATCH_FIRST_STEP = 16384
# What a new batch reserves instead once open batches hold half of buffer_memory: about what
# its builder first allocates (a 512-byte buffer, doubled once). Over thousands of partitions
# (2,048 at the defaults) whole first steps alone filled buffer_memory with a record or two
# each, and every other partition was refused.
BATCH_MIN_FIRST_STEP = 1024
# Records produced and not yet completed, at most (librdkafka's queue.buffering.max.messages
# default). Bytes alone let small records pile up: at 100 bytes buffer_memory's 32 MiB is about
# 300,000 records, and a producer that outruns the broker keeps the budget full.
DEFAULT_BUFFER_RECORDS = 100_000
# The idempotent producer keeps at most this many batches in flight per partition:
# the broker caches only the last five batch sequences per producer and partition.
MAX_IN_FLIGHT_IDEMPOTENT = 5
# More produce connections than this per broker only add sockets: a broker node has a handful
# of request threads, and the default num.io.threads is 8.
MAX_PRODUCE_CONNECTIONS = 8
# A broker appends one request per connection at a time: three lanes let it append three
# partitions' batches at once (1.8-2.4x the acknowledged rate at 10,000-byte values in
# same-run pairs). A lane opens only when a partition is given it, so a producer writing to one
# partition per broker still opens one.
DEFAULT_PRODUCE_CONNECTIONS = 3


def _fail(name: str, expected: str, value: object) -> ValueError:
    return ValueError(f"kafkaev.Client: '{name}' must be {expected}, got {value!r}")


def _check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    # bool is an int subclass; Client(linger_ms=True) is a mistake, not 1 ms.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"kafkaev.Client: '{name}' must be an int, got {type(value).__name__}")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise _fail(name, f"an int {bound}", value)
    return value


def _check_number(name: str, value: object, minimum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"kafkaev.Client: '{name}' must be a number, got {type(value).__name__}")
    if not value >= minimum:  # also rejects NaN
        raise _fail(name, f"a number >= {minimum}", value)
    return float(value)


def _check_callable(name: str, value: object) -> Callable[..., Any] | None:
    if value is not None and not callable(value):
        raise TypeError(f"kafkaev.Client: '{name}' must be callable or None, got {type(value).__name__}")
    return value  # type: ignore[return-value]


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"kafkaev.Client: '{name}' must be a bool, got {type(value).__name__}")
    return value


def parse_brokers(brokers: object) -> tuple[tuple[str, int], ...]:
    """``"h1:9092,h2:9093"``, ``["h1:9092", ("h2", 9093)]`` -> ``(("h1", 9092), ("h2", 9093))``.

    IPv6 literals go in brackets (``"[::1]:9092"``); a missing port means 9092.
    """
    if isinstance(brokers, str):
        items: Iterable[object] = [b for b in brokers.split(",") if b.strip()]
    elif isinstance(brokers, (list, tuple)):
        items = brokers
    else:
        raise TypeError(
            f"kafkaev.Client: 'brokers' must be a 'host:port,...' string or a list, got {type(brokers).__name__}"
        )
    parsed: list[tuple[str, int]] = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 2:
            host, port = item
        elif isinstance(item, str):
            text = item.strip()
            if text.startswith("["):
                host, _, rest = text[1:].partition("]")
                port = rest[1:] if rest.startswith(":") else DEFAULT_PORT
            elif text.count(":") == 1:
                host, port = text.split(":")
            else:
                host, port = text, DEFAULT_PORT
        else:
            raise _fail("brokers", "'host:port' strings or (host, port) tuples", item)
        try:
            port_number = int(port)
        except (TypeError, ValueError):
            raise _fail("brokers", "'host:port' with a numeric port", item) from None
        if not isinstance(host, str) or not host or not 0 < port_number < 65536:
            raise _fail("brokers", "'host:port' with a host and a port in 1..65535", item)
        parsed.append((host, port_number))
    if not parsed:
        raise _fail("brokers", "at least one 'host:port'", brokers)
    return tuple(parsed)


def _seconds_to_ms(name: str, seconds: object) -> int:
    value = _check_number(name, seconds, 0)
    if not math.isfinite(value):
        raise _fail(name, "a finite number of seconds", seconds)
    # a positive period must not round down to 0, which would disable it
    return max(round(value * 1000), 1) if value > 0 else 0


GROUP_PROTOCOLS = ("classic", "consumer")
# Options of the classic group protocol only, with their defaults: under "consumer" the broker
# runs the assignor and sets the session timeout and the heartbeat interval.
CLASSIC_DEFAULTS: dict[str, object] = {
    "assignors": ("cooperative-sticky", "range"),
    "session_timeout_ms": 45000,
    "heartbeat_interval_ms": 3000,
}
CLASSIC_ONLY_OPTIONS = tuple(CLASSIC_DEFAULTS)


# Old option name -> (its replacement, converter(old name, old value)), accepted for one release.
DEPRECATED_OPTIONS: dict[str, tuple[str, Callable[[str, object], Any]]] = {
    "metadata_refresh_s": ("metadata_max_age_ms", _seconds_to_ms),
}


# Names other Kafka clients use (the Java client and librdkafka's dotted ones, aiokafka's and
# kafka-python's underscored ones), normalised by _normalise_name, -> what to write in kafkaev.
# A user porting a config gets "did you mean 'brokers'?", not a bare "unknown option". A value
# that is not an option name is said as it is.
_TLS_HINT = "use tls=kafkaev.TLSConfig(cafile=..., certfile=..., keyfile=...)"
_SASL_HINT = "use sasl=kafkaev.SASLConfig(mechanism=..., username=..., password=...)"
_BYTES_HINT = "kafkaev has no serializers: produce() takes bytes and a Message carries bytes"
FOREIGN_OPTIONS: dict[str, str] = {
    "bootstrap_servers": "brokers",
    "metadata_broker_list": "brokers",
    "security_protocol": "use tls=... for SSL, sasl=... for SASL_PLAINTEXT, both for SASL_SSL",
    "sasl_mechanism": _SASL_HINT,
    "sasl_mechanisms": _SASL_HINT,
    "sasl_username": _SASL_HINT,
    "sasl_password": _SASL_HINT,
    "sasl_plain_username": _SASL_HINT,
    "sasl_plain_password": _SASL_HINT,
    "sasl_jaas_config": _SASL_HINT,
    "ssl_context": "tls",
    "ssl_cafile": _TLS_HINT,
    "ssl_ca_location": _TLS_HINT,
    "ssl_certfile": _TLS_HINT,
    "ssl_certificate_location": _TLS_HINT,
    "ssl_keyfile": _TLS_HINT,
    "ssl_key_location": _TLS_HINT,
    "ssl_key_password": _TLS_HINT,
    "ssl_password": _TLS_HINT,
    "ssl_check_hostname": _TLS_HINT,
    "ssl_endpoint_identification_algorithm": _TLS_HINT,
    "enable_idempotence": "idempotent",
    "compression_type": "compression",
    "compression_codec": "compression",
    "queue_buffering_max_ms": "linger_ms",
    "batch_num_messages": "batch_size",
    "max_in_flight_requests_per_connection": "max_in_flight",
    "message_timeout_ms": "delivery_timeout_ms",
    "retries": "delivery_timeout_ms",
    "request_required_acks": "acks",
    "message_max_bytes": "max_request_size",
    "queue_buffering_max_kbytes": "buffer_memory",
    "queue_buffering_max_messages": "buffer_records",
    "allow_auto_create_topics": "allow_auto_topic_creation",
    "enable_auto_commit": "auto_commit",
    "partition_assignment_strategy": "assignors",
    "max_poll_interval_ms": "rebalance_timeout_ms",
    "fetch_message_max_bytes": "max_partition_fetch_bytes",
    "fetch_wait_max_ms": "fetch_max_wait_ms",
    "socket_timeout_ms": "request_timeout_ms",
    "socket_connection_setup_timeout_ms": "connect_timeout_ms",
    "check_crc": "check_crcs",
    "error_cb": "on_error",
    "key_serializer": _BYTES_HINT,
    "value_serializer": _BYTES_HINT,
    "key_deserializer": _BYTES_HINT,
    "value_deserializer": _BYTES_HINT,
}


def _normalise_name(name: str) -> str:
    # "bootstrap.servers", "bootstrap-servers" and "BOOTSTRAP_SERVERS" are one name.
    return name.strip().lower().replace(".", "_").replace("-", "_")


def _unknown_option_hint(name: str, known: set[str]) -> str:
    """What to say after "unknown option 'name'": kafkaev's name for another client's option,
    the kafkaev spelling of a dotted or dashed name, or else the closest known spelling."""
    normal = _normalise_name(name)
    foreign = FOREIGN_OPTIONS.get(normal)
    if foreign is not None:
        return f"; did you mean '{foreign}'?" if foreign in known else f"; {foreign}"
    if normal in known:
        return f"; did you mean '{normal}'?"
    close = difflib.get_close_matches(normal, known, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """All options of ``kafkaev.Client``; ``docs/options.md`` says what each one does."""

    # --- connection and cluster ---
    brokers: Any = None  # None: local_broker.default_brokers() ($KAFKAEV_BROKERS, the local broker, 127.0.0.1:9092)
    client_id: str = DEFAULT_CLIENT_ID
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    connect_timeout_ms: int = 10000
    reconnect_backoff_ms: int = DEFAULT_RECONNECT_BACKOFF_MS
    reconnect_backoff_max_ms: int = DEFAULT_RECONNECT_BACKOFF_MAX_MS
    metadata_max_age_ms: int = 300000  # periodic refresh; 0 disables it
    metadata_min_refresh_ms: int = 100  # refreshes closer together than this are coalesced
    tls: Any = None  # None, True (system CAs), ssl.SSLContext or kafkaev.TLSConfig -> SSLContext | TLSConfig | None
    sasl: Any = None  # kafkaev.SASLConfig or {"mechanism":, "username":, "password":} -> SASLConfig | None
    loop: asyncio.AbstractEventLoop | None = None
    on_error: Callable[[BaseException], Any] | None = None
    on_connect: Callable[[], Any] | None = None
    debug: str | None = None  # "group,metadata" or "all": DEBUG records of those areas (kafkaev/log.py)
    stats_interval_ms: int = 0  # stats_cb(ClientStats) this often; 0: never
    stats_cb: Callable[[Any], Any] | None = None
    # After each socket read or write the loop spins, not sleeps, this long; 0: never (a core's cost)
    busy_poll_us: int = 0

    # --- producer ---
    acks: int = ACKS_ALL
    linger_ms: float = 5.0
    batch_size: int = DEFAULT_BATCH_SIZE  # a limit: a batch reserves memory as it fills (producer/accumulator.py)
    compression: str | None = None
    idempotent: bool = False
    partitioner: Callable[[str, bytes | None, int], int] | None = None
    delivery_timeout_ms: int = 120000
    max_in_flight: int = 5  # produce requests in flight per partition
    produce_connections: int = DEFAULT_PRODUCE_CONNECTIONS  # per broker, at most; a partition always uses the same one
    buffer_memory: int = 32 * 1024 * 1024
    buffer_records: int = DEFAULT_BUFFER_RECORDS  # records produced and not completed, at most; 0: no limit
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    allow_auto_topic_creation: bool = True
    metadata_wait_ms: int = 60000  # how long records for an unknown topic wait for it
    transactional_id: str | None = None  # makes the client a transactional producer
    transaction_timeout_ms: int = 60000  # the coordinator aborts a transaction open longer than this

    # --- consumer ---
    on_message: Callable[[Any], Any] | None = None
    on_batch: Callable[[list[Any]], Any] | None = None
    fetch_max_wait_ms: int = 500
    fetch_min_bytes: int = 1
    fetch_max_bytes: int = 52428800
    max_partition_fetch_bytes: int = 1048576
    isolation_level: str = "read_uncommitted"
    check_crcs: bool = True
    # KIP-392 (Fetch) and KIP-848/KIP-881 (group assignment): the rack this client runs in.
    client_rack: str | None = None
    # kafkaev.aio: fetched records not yet handed out, at most (then fetching waits)
    max_buffered_bytes: int = 32 * 1024 * 1024

    # --- consumer group: defaults for subscribe() ---
    group_id: str | None = None
    group_protocol: str = "classic"
    remote_assignor: str | None = None
    group_instance_id: str | None = None
    assignors: tuple[str, ...] = ("cooperative-sticky", "range")
    session_timeout_ms: int = 45000
    rebalance_timeout_ms: int = 300000
    heartbeat_interval_ms: int = 3000
    auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    auto_offset_reset: str = "earliest"

    # --- derived at construction ---
    bootstrap: tuple[tuple[str, int], ...] = field(init=False, default=())
    debug_areas: tuple[str, ...] = field(init=False, default=())
    compression_type: int = field(init=False, default=COMPRESSION_NONE)
    isolation: int = field(init=False, default=ISOLATION_READ_UNCOMMITTED)
    # The backoff shapes every connect and every retried request follow (kafkaev/backoff.py).
    reconnect_backoff: BackoffPolicy = field(init=False)
    retry_backoff: BackoffPolicy = field(init=False)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> ClientConfig:
        """Like ``ClientConfig(**kwargs)`` but an unknown option names itself and a close match,
        and a deprecated option is converted to its replacement with a DeprecationWarning."""
        known = {f.name for f in fields(cls) if f.init}
        for old, (new, convert) in DEPRECATED_OPTIONS.items():
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"kafkaev.Client: '{old}' is a deprecated spelling of '{new}'; give only '{new}'")
                # stacklevel 3: the warning points at the Client(...) or Admin(...) call
                warnings.warn(f"kafkaev.Client: '{old}' is deprecated; use '{new}' instead", DeprecationWarning, stacklevel=3)
                kwargs[new] = convert(old, kwargs.pop(old))
        for name in kwargs:
            if name not in known:
                raise TypeError(f"kafkaev.Client: unknown option '{name}'{_unknown_option_hint(name, known)}")
        if kwargs.get("transactional_id") is not None and kwargs.get("idempotent", True) is not True:
            raise ValueError("kafkaev.Client: 'idempotent' must be True (or left out) with a transactional_id: "
                             f"a transactional producer is idempotent, got {kwargs['idempotent']!r}")
        return cls(**kwargs)

    def __post_init__(self) -> None:
        put = object.__setattr__  # frozen: normalised values are set once, here
        if self.brokers is None:
            put(self, "brokers", default_brokers())
        put(self, "bootstrap", parse_brokers(self.brokers))
        if not isinstance(self.client_id, str):
            raise TypeError(f"kafkaev.Client: 'client_id' must be a str, got {type(self.client_id).__name__}")
        _check_int("request_timeout_ms", self.request_timeout_ms, 1)
        _check_int("connect_timeout_ms", self.connect_timeout_ms, 1)
        _check_int("reconnect_backoff_ms", self.reconnect_backoff_ms, 0)
        _check_int("reconnect_backoff_max_ms", self.reconnect_backoff_max_ms, self.reconnect_backoff_ms)
        _check_int("metadata_max_age_ms", self.metadata_max_age_ms, 0)
        put(self, "reconnect_backoff", BackoffPolicy(self.reconnect_backoff_ms, self.reconnect_backoff_max_ms))
        _check_int("metadata_min_refresh_ms", self.metadata_min_refresh_ms, 0)
        if self.tls is True:
            put(self, "tls", TLSConfig())
        elif self.tls is False:
            put(self, "tls", None)
        elif not (self.tls is None or isinstance(self.tls, (ssl.SSLContext, TLSConfig))):
            raise TypeError(
                "kafkaev.Client: 'tls' must be None, a bool, an ssl.SSLContext or a kafkaev.TLSConfig, "
                f"got {type(self.tls).__name__}"
            )
        if isinstance(self.sasl, dict):
            try:
                put(self, "sasl", SASLConfig(**self.sasl))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"kafkaev.Client: 'sasl': {exc}") from None
        elif not (self.sasl is None or isinstance(self.sasl, SASLConfig)):
            raise TypeError(
                f"kafkaev.Client: 'sasl' must be None, a dict or a kafkaev.SASLConfig, got {type(self.sasl).__name__}"
            )
        if self.loop is not None and not isinstance(self.loop, asyncio.AbstractEventLoop):
            raise TypeError(f"kafkaev.Client: 'loop' must be an asyncio event loop, got {type(self.loop).__name__}")
        _check_callable("on_error", self.on_error)
        _check_callable("on_connect", self.on_connect)
        put(self, "debug_areas", parse_debug(self.debug))
        _check_int("stats_interval_ms", self.stats_interval_ms, 0)
        _check_callable("stats_cb", self.stats_cb)
        _check_int("busy_poll_us", self.busy_poll_us, 0, MAX_BUSY_POLL_US)
        if (self.stats_cb is None) != (self.stats_interval_ms == 0):
            raise _fail("stats_interval_ms", "above 0 exactly when stats_cb is given (0 without one)",
                        self.stats_interval_ms)

        acks = self.acks
        if acks == "all":
            put(self, "acks", ACKS_ALL)
        elif isinstance(acks, bool) or acks not in (ACKS_NONE, ACKS_LEADER, ACKS_ALL):
            raise _fail("acks", "0, 1, -1 or 'all'", acks)
        put(self, "linger_ms", _check_number("linger_ms", self.linger_ms, 0))
        _check_int("batch_size", self.batch_size, 1)
        codec = self.compression.lower() if isinstance(self.compression, str) else self.compression
        if codec not in COMPRESSION_CODECS:
            raise _fail("compression", "None, 'gzip', 'snappy', 'lz4' or 'zstd'", self.compression)
        put(self, "compression", None if codec == "none" else codec)
        put(self, "compression_type", COMPRESSION_CODECS[codec])
        _check_bool("idempotent", self.idempotent)
        if self.transactional_id is not None:
            if not isinstance(self.transactional_id, str) or not self.transactional_id:
                raise _fail("transactional_id", "a non-empty str or None", self.transactional_id)
            if self.acks != ACKS_ALL:
                raise ValueError(f"kafkaev.Client: 'acks' must be -1 ('all') with a transactional_id "
                                 f"(transactions need every in-sync replica), got {self.acks!r}")
            put(self, "idempotent", True)  # a transactional producer is idempotent
        _check_int("transaction_timeout_ms", self.transaction_timeout_ms, 1)
        _check_callable("partitioner", self.partitioner)
        _check_int("delivery_timeout_ms", self.delivery_timeout_ms, 1)
        if self.idempotent:
            _check_int("max_in_flight", self.max_in_flight, 1, MAX_IN_FLIGHT_IDEMPOTENT)
            if self.acks != ACKS_ALL:
                raise _fail("acks", "-1 ('all') when idempotent=True", self.acks)
        else:
            _check_int("max_in_flight", self.max_in_flight, 1)
        _check_int("produce_connections", self.produce_connections, 1, MAX_PRODUCE_CONNECTIONS)
        _check_int("max_request_size", self.max_request_size, 64)
        if self.batch_size > self.max_request_size:
            raise _fail("batch_size", f"at most max_request_size ({self.max_request_size})", self.batch_size)
        _check_int("buffer_memory", self.buffer_memory, 1)
        # a new batch's first step must fit; batches then grow only as far as the budget allows
        first_step = min(self.batch_size, BATCH_FIRST_STEP)
        if self.buffer_memory < first_step:
            raise _fail("buffer_memory", f"at least {first_step} (a new batch's first step: "
                        f"min(batch_size, {BATCH_FIRST_STEP}))", self.buffer_memory)
        _check_int("buffer_records", self.buffer_records, 0)
        _check_int("retry_backoff_ms", self.retry_backoff_ms, 0)
        _check_int("retry_backoff_max_ms", self.retry_backoff_max_ms, self.retry_backoff_ms)
        put(self, "retry_backoff", BackoffPolicy(self.retry_backoff_ms, self.retry_backoff_max_ms))
        _check_bool("allow_auto_topic_creation", self.allow_auto_topic_creation)
        _check_int("metadata_wait_ms", self.metadata_wait_ms, 0)

        _check_callable("on_message", self.on_message)
        _check_callable("on_batch", self.on_batch)
        _check_int("fetch_max_wait_ms", self.fetch_max_wait_ms, 0)
        _check_int("fetch_min_bytes", self.fetch_min_bytes, 0)
        _check_int("fetch_max_bytes", self.fetch_max_bytes, 1)
        _check_int("max_partition_fetch_bytes", self.max_partition_fetch_bytes, 1)
        if self.isolation_level not in ISOLATION_LEVELS:
            raise _fail("isolation_level", "'read_uncommitted' or 'read_committed'", self.isolation_level)
        put(self, "isolation", ISOLATION_LEVELS[self.isolation_level])
        _check_bool("check_crcs", self.check_crcs)
        _check_int("max_buffered_bytes", self.max_buffered_bytes, 1)

        for name in ("group_id", "group_instance_id", "client_rack", "remote_assignor"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value):
                raise _fail(name, "a non-empty str or None", value)
        assignors = self.assignors
        if isinstance(assignors, str):
            assignors = (assignors,)
        if not isinstance(assignors, (list, tuple)) or not assignors:
            raise _fail("assignors", f"a non-empty sequence of {KNOWN_ASSIGNORS}", self.assignors)
        for name in assignors:
            if name not in KNOWN_ASSIGNORS:
                raise _fail("assignors", f"names from {KNOWN_ASSIGNORS}", name)
        put(self, "assignors", tuple(assignors))
        _check_int("session_timeout_ms", self.session_timeout_ms, 1)
        _check_int("rebalance_timeout_ms", self.rebalance_timeout_ms, 1)
        _check_int("heartbeat_interval_ms", self.heartbeat_interval_ms, 1)
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise _fail("heartbeat_interval_ms", f"below session_timeout_ms ({self.session_timeout_ms})",
                        self.heartbeat_interval_ms)
        if self.group_protocol not in GROUP_PROTOCOLS:
            raise _fail("group_protocol", "'classic' or 'consumer'", self.group_protocol)
        if self.group_protocol == "consumer":
            # As librdkafka: what the broker decides under KIP-848 is an error to set.
            for name in CLASSIC_ONLY_OPTIONS:
                if getattr(self, name) != CLASSIC_DEFAULTS[name]:
                    raise ValueError(f"option '{name}' is not supported with group_protocol='consumer' "
                                     "(the broker sets it)")
        elif self.remote_assignor is not None:
            raise ValueError("option 'remote_assignor' needs group_protocol='consumer'")
        _check_bool("auto_commit", self.auto_commit)
        _check_int("auto_commit_interval_ms", self.auto_commit_interval_ms, 1)
        if self.auto_offset_reset not in AUTO_OFFSET_RESETS:
            raise _fail("auto_offset_reset", "'earliest', 'latest' or 'error'", self.auto_offset_reset)
