"""One pipelined connection to one Kafka broker (kafkaev.protocol.connection.Connection, public as kafkaev.Connection).

Contract in short:

* Every request method takes ``cb(response, err)`` and calls it exactly once, always from the
  event loop (never from inside the call that issued the request).
* ``response`` is the generated response object from ``kafkaev.protocol.codec`` (snake_case schema fields).
  Broker error codes inside the response (``error_code`` fields) are NOT turned into ``err``:
  the caller inspects them.
* ``err`` is a ``kafkaev.errors.KafkaError`` with a client-side code for transport failure
  (``TRANSPORT``), client-side request timeout (``TIMED_OUT``), malformed frame (``PROTOCOL``,
  a ``ProtocolError``), wrong state (``STATE``: the connection is not ready), an API/version the
  broker does not support (``UNSUPPORTED_VERSION``), or a request dropped by ``disconnect()``
  (``DESTROY``).
* Requests are accepted only while ``state == "ready"``; otherwise they fail fast with ``STATE``
  (also while auto-reconnect is re-establishing the connection). They are not queued.
* Arguments of the wrong type or out of range raise ``TypeError``/``ValueError`` at once,
  naming the argument.
* A request timeout closes the connection (a late response could not be matched safely): the
  timed-out request fails with ``TIMED_OUT``, every other pending request with ``TRANSPORT``.
* Requests issued in one loop iteration are encoded into one buffer and written with one
  socket write (or earlier once the buffer passes 256 KiB).
* A user callback that raises does not break the connection nor skip other callbacks: the
  exception is passed to ``on_error`` (or to the loop's exception handler when ``on_error`` is
  not set).
"""

import asyncio
import ssl
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from kafkaev.errors import KafkaError
from kafkaev.protocol.codec import EncodedBatch
from kafkaev.security import SASLConfig, TLSConfig

Callback = Callable[[Any, KafkaError | None], object]
State = Literal["disconnected", "connecting", "handshaking", "ready", "closed"]
Records = EncodedBatch | bytes | bytearray | memoryview  # one encoded RecordBatch (or several, as bytes)

DEFAULT_WRITE_HIGH_WATER: int  # 4 MiB
DEFAULT_WRITE_LOW_WATER: int  # 1 MiB
DEFAULT_MAX_RESPONSE_SIZE: int  # 1 GiB
FLUSH_THRESHOLD: int  # coalesced writes go out at once past this many bytes

class Connection:
    # Settable by the cluster layer; informational for the connection itself.
    node_id: int
    # Counters over the object's life (across reconnects).
    @property
    def requests_sent(self) -> int: ...
    @property
    def responses_received(self) -> int: ...
    @property
    def writes(self) -> int: ...  # socket writes: requests of one loop iteration share one
    @property
    def bytes_sent(self) -> int: ...
    # Handlers (None to clear).
    on_connect: Callable[[], object] | None  # ready: socket open, ApiVersions negotiated, SASL done
    on_error: Callable[[BaseException], object] | None  # KafkaError, or an exception a user callback raised
    on_disconnect: Callable[[KafkaError | None], object] | None  # None after a clean disconnect()
    on_writable: Callable[[bool], object] | None  # False above write_high_water, True once below low water

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop | None = None,
        *,
        client_id: str | None = "kafkaev",
        request_timeout_ms: int = 30000,
        tls: TLSConfig | ssl.SSLContext | None = None,
        sasl: SASLConfig | None = None,
        auto_reconnect: bool = False,
        reconnect_backoff_ms: int = 100,
        reconnect_backoff_max_ms: int = 10000,
        write_high_water: int = ...,
        write_low_water: int = ...,
        max_response_size: int = ...,
    ) -> None: ...

    # --- lifetime -----------------------------------------------------------------------------
    def connect(
        self,
        host: str,
        port: int,
        timeout: float = 10.0,
        cb: Callable[[Connection, KafkaError | None], object] | None = None,
    ) -> None:
        """Resolve host without blocking, try every address (KIP-302), TLS handshake if configured,
        ApiVersions (falling back when the broker answers UNSUPPORTED_VERSION), SASL if configured.
        ``cb(conn, None)`` once ready, or ``cb(conn, KafkaError)`` once on failure (TRANSPORT,
        TIMED_OUT, SSL, AUTHENTICATION, PROTOCOL, STATE if already connecting/connected).
        With auto_reconnect, the first connect failing also triggers reconnect attempts; ``cb`` is
        still called once (for the first attempt) and on_connect on every later success."""
    def disconnect(self) -> None:
        """Clean and idempotent. Pending callbacks get ``(None, KafkaError(DESTROY))`` once; the
        connect cb, if still waiting, gets ``KafkaError(DESTROY)``. Stops auto-reconnect.
        on_disconnect(None) is called if the connection was open. Bytes the socket still
        held (acks=0 produces already reported written) are sent before it closes."""
    def wait_closed(self, cb: Callable[[KafkaError | None], object], *, timeout_ms: int | None = None) -> None:
        """``cb(None)`` once the socket disconnect() closed has sent what it still held (at once
        if nothing); ``cb(KafkaError)`` if it was lost first or still sending after
        ``timeout_ms`` (default request_timeout_ms), when it is aborted."""

    @property
    def state(self) -> State: ...
    @property
    def connected(self) -> bool: ...  # state == "ready"
    @property
    def pending(self) -> int: ...  # requests awaiting a response
    @property
    def writable(self) -> bool: ...  # see on_writable
    @property
    def api_versions(self) -> dict[int, tuple[int, int]]: ...  # {api_key: (min, max)} as the broker reported
    @property
    def host(self) -> str | None: ...
    @property
    def port(self) -> int | None: ...
    @property
    def client_id(self) -> str | None: ...
    def version_for(self, api_key: int) -> int:
        """Highest version both sides support (capped at the codecs' newest). Raises KafkaError
        (UNSUPPORTED_VERSION) at once if the broker lacks the API or the ranges do not overlap,
        KafkaError(STATE) before the handshake finished."""

    # --- generic ------------------------------------------------------------------------------
    def request(
        self,
        api_key: int,
        body: Any,
        cb: Callback,
        *,
        version: int | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        """Send a generated request object (e.g. ``codec.MetadataRequest(...)``). ``version``
        defaults to ``version_for(api_key)``; an explicit version outside both ranges fails
        with UNSUPPORTED_VERSION. ``timeout_ms`` defaults to request_timeout_ms."""

    # --- typed helpers (cb(response, err) with the generated response object) ---------------
    def api_versions_request(self, cb: Callback) -> None: ...
    def metadata(
        self, topics: Iterable[str] | None, cb: Callback, *, allow_auto_topic_creation: bool = True
    ) -> None: ...  # topics None = all topics
    def produce(
        self,
        topic: str,
        partition: int,
        records: Records,
        cb: Callback,
        *,
        acks: int = -1,
        timeout_ms: int = 30000,
        transactional_id: str | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> None:
        """``records`` = an encoded RecordBatch (``RecordBatchBuilder.finish()``) or its bytes. acks=0: no response is awaited; cb(None, None)
        right after the socket write. With ``topic_id`` the request may use Produce v13+, which
        names the topic by id (its response too); without, it stays at v12."""
    def produce_batch(
        self,
        batches: Iterable[
            tuple[str, int, Records] | tuple[str, int, Records, uuid.UUID | None]
        ],
        cb: Callback,
        *,
        acks: int = -1,
        timeout_ms: int = 30000,
        transactional_id: str | None = None,
    ) -> None: ...  # (topic, partition, records[, topic_id]) in ONE request; grouped by topic in order of first appearance; v13+ only when every entry has a topic_id
    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        cb: Callback,
        *,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 52428800,
        partition_max_bytes: int = 1048576,
        isolation_level: int = 0,
        current_leader_epoch: int = -1,
    ) -> None: ...
    def fetch_multi(
        self,
        partitions: Iterable[tuple[Any, ...]],
        cb: Callback,
        *,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 52428800,
        isolation_level: int = 0,
        session_id: int = 0,
        session_epoch: int = -1,
        forgotten: Iterable[tuple[str, Sequence[int]] | tuple[str, Sequence[int], Any]] = (),
    ) -> None:
        """partitions: (topic, partition, offset, partition_max_bytes, current_leader_epoch[, topic_id
        [, last_fetched_epoch]]); topic_id may be None; last_fetched_epoch (KIP-320, v12+) lets the
        broker answer a diverging_epoch when the log was truncated below offset.
        Fetch v13+ addresses topics by id: it is used only when every partition carries a
        topic_id (uuid.UUID); otherwise the request is capped at v12 (names).
        The request deadline is request_timeout_ms + max_wait_ms."""
    def list_offsets(
        self, partitions: Iterable[tuple[str, int, int, int]], cb: Callback, *, isolation_level: int = 0
    ) -> None: ...  # (topic, partition, timestamp, current_leader_epoch); timestamp -1 latest, -2 earliest
    def find_coordinator(self, key: str, cb: Callback, *, key_type: int = 0) -> None: ...  # 0 group, 1 transaction
    def join_group(
        self,
        group_id: str,
        member_id: str,
        protocol_type: str,
        protocols: Iterable[tuple[str, bytes]],
        cb: Callback,
        *,
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        group_instance_id: str | None = None,
        reason: str | None = None,
    ) -> None: ...  # deadline = request_timeout_ms + rebalance_timeout_ms
    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: Iterable[tuple[str, bytes]],
        cb: Callback,
        *,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> None: ...
    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, cb: Callback, *, group_instance_id: str | None = None
    ) -> None: ...
    def leave_group(
        self, group_id: str, members: Iterable[tuple[str, str | None]], cb: Callback
    ) -> None: ...  # (member_id, group_instance_id)
    def offset_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        offsets: Iterable[tuple[str, int, int, int, str | None]],
        cb: Callback,
        *,
        group_instance_id: str | None = None,
    ) -> None: ...  # (topic, partition, offset, leader_epoch, metadata)
    def offset_fetch(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None,
        cb: Callback,
        *,
        require_stable: bool = False,
    ) -> None: ...  # None = all partitions the group committed
    def offset_for_leader_epoch(
        self, partitions: Iterable[tuple[str, int, int, int]], cb: Callback
    ) -> None: ...  # (topic, partition, current_leader_epoch, leader_epoch)
    def init_producer_id(
        self,
        cb: Callback,
        *,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None: ...
    def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[tuple[str, int]],
        cb: Callback,
    ) -> None: ...
    def add_offsets_to_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str, cb: Callback
    ) -> None: ...
    def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool, cb: Callback
    ) -> None: ...
    def txn_offset_commit(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Iterable[tuple[str, int, int, int, str | None]],
        cb: Callback,
        *,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
    ) -> None: ...  # offsets: (topic, partition, offset, leader_epoch, metadata)
    def create_topics(
        self,
        topics: Iterable[tuple[str, int, int, Mapping[str, str | None]]],
        cb: Callback,
        *,
        timeout_ms: int = 30000,
        validate_only: bool = False,
    ) -> None: ...  # (name, num_partitions, replication_factor, {config: value}); -1 = broker default
    def delete_topics(self, names: Iterable[str], cb: Callback, *, timeout_ms: int = 30000) -> None: ...
    def create_partitions(
        self,
        topics: Iterable[tuple[str, int]],
        cb: Callback,
        *,
        timeout_ms: int = 30000,
        validate_only: bool = False,
    ) -> None: ...  # (topic, new_total_count)
    def delete_records(
        self, partitions: Iterable[tuple[str, int, int]], cb: Callback, *, timeout_ms: int = 30000
    ) -> None: ...  # (topic, partition, before_offset); -1 = high watermark
    def describe_configs(
        self,
        resources: Iterable[tuple[int, str, Sequence[str] | None]],
        cb: Callback,
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
    ) -> None: ...  # (resource_type 2 topic / 4 broker, name, keys or None for all)
    def describe_cluster(self, cb: Callback) -> None: ...
    def describe_groups(self, group_ids: Iterable[str], cb: Callback) -> None: ...
    def list_groups(self, cb: Callback, *, states: Iterable[str] = (), types: Iterable[str] = ()) -> None: ...
    def consumer_group_heartbeat(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        cb: Callback,
        *,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        subscribed_topic_names: Sequence[str] | None = None,
        subscribed_topic_regex: str | None = None,
        server_assignor: str | None = None,
        topic_partitions: Iterable[tuple[Any, Sequence[int]]] | None = None,
    ) -> None: ...  # KIP-848; topic_partitions: (topic_id uuid.UUID, [partitions])
