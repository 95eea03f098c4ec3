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
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, TypeVar

from kafkaev.errors import KafkaError
from kafkaev.protocol import codec
from kafkaev.protocol.codec import EncodedBatch
from kafkaev.security import SASLConfig, TLSConfig
from kafkaev.types import TopicPartition

_Response = TypeVar("_Response")
# cb(response, err): response is None exactly when err is set (and for an acks=0 Produce).
ResponseCallback = Callable[[_Response | None, KafkaError | None], object]
Callback = ResponseCallback[codec.MessageStruct]
State = Literal["disconnected", "connecting", "handshaking", "ready", "closed"]
Records = EncodedBatch | bytes | bytearray | memoryview  # one encoded RecordBatch (or several, as bytes)

DEFAULT_WRITE_HIGH_WATER: int  # 4 MiB
DEFAULT_WRITE_LOW_WATER: int  # 1 MiB
DEFAULT_MAX_RESPONSE_SIZE: int  # 1 GiB
FLUSH_THRESHOLD: int  # coalesced writes go out at once past this many bytes
RTT_BUCKET_COUNT: int  # buckets of Connection.rtt_histogram()
MAX_BUSY_POLL_US: int  # BusyPoll's longest window: a second

class BusyPoll:
    """Keeps ``loop`` turning, without sleeping in its poll, for ``window_us`` microseconds after
    the last ``arm()`` (``ClientConfig.busy_poll_us``). The connections that share it arm it on
    every socket read and write; past the window the loop sleeps as usual."""

    def __init__(self, loop: asyncio.AbstractEventLoop, window_us: int) -> None: ...  # 1..MAX_BUSY_POLL_US
    @property
    def window_us(self) -> int: ...
    @property
    def spinning(self) -> bool:
        """A spin is queued: the loop will not sleep before its next turn."""
    @property
    def turns(self) -> int:
        """Loop turns spun so far: what the window cost."""
    def arm(self) -> int:
        """Spin until ``window_us`` from now (returns 0)."""
    def close(self) -> None:
        """Stop spinning, now and for good."""

class Connection:
    # Settable by the cluster layer; informational for the connection itself.
    node_id: int
    """The broker's node id, set by whoever made the connection (the cluster layer); the connection
    itself only shows it in messages."""
    # Counters over the object's life (across reconnects).
    @property
    def requests_sent(self) -> int:
        """Requests written since the object was made, across reconnects."""
    @property
    def responses_received(self) -> int:
        """Responses matched to their requests since the object was made, across reconnects."""
    @property
    def writes(self) -> int:  # socket writes: requests of one loop iteration share one
        """Socket writes since the object was made: the requests of one loop iteration share one
        write."""
    @property
    def bytes_sent(self) -> int:
        """Bytes written to the socket since the object was made, across reconnects."""
    @property
    def bytes_received(self) -> int:
        """Bytes read from the socket since the object was made, across reconnects."""
    @property
    def throttle_time_ms(self) -> int:
        """The throttle times (a quota) of every response that carried one, summed, in ms."""
    @property
    def throttled_responses(self) -> int:
        """Responses that carried a throttle time above 0."""
    def rtt_histogram(self) -> list[int]:
        """Round trips since the object was made, in ``RTT_BUCKET_COUNT`` fixed buckets: bucket i
        counts those under 2**i microseconds, the last one everything longer."""
    @property
    def reauthentications(self) -> int:
        """KIP-368 re-authentications completed on this object."""
    # Handlers (None to clear).
    on_connect: Callable[[], object] | None  # ready: socket open, ApiVersions negotiated, SASL done
    """Called with no arguments each time the connection becomes ready (socket open, ApiVersions
    negotiated, SASL done), also after an automatic reconnect; None clears it."""
    on_error: Callable[[BaseException], object] | None  # KafkaError, or an exception a user callback raised
    """Called with a KafkaError the connection has no callback for (a lost connection while idle),
    or with an exception a user callback raised; None: the loop's exception handler gets them."""
    on_disconnect: Callable[[KafkaError | None], object] | None  # None after a clean disconnect()
    """Called once when an open connection closes: with None after disconnect(), with the KafkaError
    that closed it otherwise."""
    on_writable: Callable[[bool], object] | None  # False above write_high_water, True once below low water
    """Back-pressure: called with False once more than ``write_high_water`` bytes wait to be
    written, with True once they drain below ``write_low_water``."""
    busy_poll: BusyPoll | None
    """Armed on every socket read and write: the loop spins, not sleeps, for its window after
    each (``ClientConfig.busy_poll_us``). None: the loop sleeps as usual."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop | None = None,  # None: kafkaev's default loop, which kafkaev.run() turns
        *,
        client_id: str | None = ...,  # DEFAULT_CLIENT_ID (kafkaev.protocol.defaults)
        request_timeout_ms: int = ...,  # DEFAULT_REQUEST_TIMEOUT_MS
        tls: TLSConfig | ssl.SSLContext | None = None,
        sasl: SASLConfig | None = None,
        auto_reconnect: bool = False,
        reconnect_backoff_ms: int = ...,  # DEFAULT_RECONNECT_BACKOFF_MS
        reconnect_backoff_max_ms: int = ...,  # DEFAULT_RECONNECT_BACKOFF_MAX_MS
        write_high_water: int = ...,
        write_low_water: int = ...,
        max_response_size: int = ...,
    ) -> None:
        """A connection not connected yet. ``loop=None`` is kafkaev's default loop, the one
        ``kafkaev.run()`` turns. ``tls`` and ``sasl`` secure it (a TLSConfig is read when the
        connection is made, so a missing file raises here); ``auto_reconnect`` reconnects after a
        loss with the backoff of ``reconnect_backoff_ms`` up to ``reconnect_backoff_max_ms``;
        ``write_high_water``/``write_low_water`` bound the bytes waiting to be written (see
        ``on_writable``); a response larger than ``max_response_size`` closes the connection with
        PROTOCOL."""

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
    def state(self) -> State:
        """``"disconnected"``, ``"connecting"``, ``"handshaking"`` (TLS, ApiVersions, SASL),
        ``"ready"`` or ``"closed"`` (after disconnect())."""
    @property
    def connected(self) -> bool:  # state == "ready"
        """``state == "ready"``: requests are accepted."""
    @property
    def pending(self) -> int:  # requests awaiting a response
        """Requests sent and not answered yet."""
    @property
    def writable(self) -> bool:  # see on_writable
        """False between ``on_writable(False)`` and ``on_writable(True)``: more than
        ``write_high_water`` bytes wait to be written."""
    @property
    def api_versions(self) -> dict[int, tuple[int, int]]:  # {api_key: (min, max)} as the broker reported
        """``{api_key: (min_version, max_version)}`` as the broker reported them in ApiVersions;
        empty before the handshake."""
    @property
    def finalized_features(self) -> dict[str, int]:
        """The broker's finalized feature levels from ApiVersions v3+, ``{name: max level}``;
        empty before the handshake and on brokers without features."""
    @property
    def host(self) -> str | None:
        """The host given to connect(), or None before."""
    @property
    def port(self) -> int | None:
        """The port given to connect(), or None before."""
    @property
    def client_id(self) -> str | None:
        """The client id sent in every request header."""
    def version_for(self, api_key: int) -> int:
        """Highest version both sides support (capped at the codecs' newest). Raises KafkaError
        (UNSUPPORTED_VERSION) at once if the broker lacks the API or the ranges do not overlap,
        KafkaError(STATE) before the handshake finished."""

    # --- generic ------------------------------------------------------------------------------
    def request(
        self,
        api_key: int,
        body: codec.MessageStruct,
        cb: Callback,
        *,
        version: int | None = None,
        timeout_ms: int | None = None,
    ) -> None:
        """Send a generated request object (e.g. ``codec.MetadataRequest(...)``). ``version``
        defaults to ``version_for(api_key)``; an explicit version outside both ranges fails
        with UNSUPPORTED_VERSION. ``timeout_ms`` defaults to request_timeout_ms."""

    # --- typed helpers (cb(response, err) with the generated response object) ---------------
    def api_versions_request(self, cb: ResponseCallback[codec.ApiVersionsResponse]) -> None:
        """ApiVersions: the versions the broker supports per API (the handshake already sent one;
        ``api_versions`` holds its answer)."""
    def metadata(
        self,
        topics: Iterable[str] | None,
        cb: ResponseCallback[codec.MetadataResponse],
        *,
        allow_auto_topic_creation: bool = True,
    ) -> None:  # topics None = all topics
        """Metadata for ``topics`` (None: every topic): brokers, controller, and per topic its id
        and partitions with leader, epoch, replicas and ISR. ``allow_auto_topic_creation`` lets
        the broker create a topic it does not have, when it is configured to."""
    def produce(
        self,
        topic: str,
        partition: int,
        records: Records,
        cb: ResponseCallback[codec.ProduceResponse],
        *,
        acks: int = -1,
        timeout_ms: int = 30000,
        transactional_id: str | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> None:
        """``records`` = an encoded RecordBatch (``RecordBatchBuilder.finish()``) or its bytes. acks=0: no response is awaited; cb(None, None)
        right after the socket write. With ``topic_id`` the request may use Produce v13+, which
        names the topic by id; the answer names it again (see produce_batch)."""
    def produce_batch(
        self,
        batches: Iterable[ProducePartition],
        cb: ResponseCallback[codec.ProduceResponse],
        *,
        acks: int = -1,
        timeout_ms: int = 30000,
        transactional_id: str | None = None,
        max_version: int | None = None,
    ) -> None:
        """One batch per partition in ONE request, grouped by topic in order of first appearance;
        v13+ (topics by id) only when every entry has a topic_id. A v13+ answer's topics get their
        ``name`` back from the ids the request sent. ``max_version`` caps the negotiated version
        (a transactional producer on transactions v1 stays below v12)."""
    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        cb: ResponseCallback[codec.FetchResponse],
        *,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 52428800,
        partition_max_bytes: int = 1048576,
        isolation_level: int = 0,
        current_leader_epoch: int = -1,
    ) -> None:
        """Fetch one partition from ``offset``: the broker waits up to ``max_wait_ms`` for
        ``min_bytes``; ``isolation_level`` 0 reads uncommitted, 1 committed records;
        ``current_leader_epoch`` (KIP-320) makes a stale leader answer FENCED_LEADER_EPOCH. The
        deadline is request_timeout_ms + max_wait_ms."""
    def fetch_multi(
        self,
        partitions: Iterable[FetchPosition],
        cb: ResponseCallback[codec.FetchResponse],
        *,
        max_wait_ms: int = 500,
        min_bytes: int = 1,
        max_bytes: int = 52428800,
        isolation_level: int = 0,
        session_id: int = 0,
        session_epoch: int = -1,
        forgotten: Iterable[ForgottenPartitions] = (),
        session_topic_ids: Mapping[str, uuid.UUID] | None = None,
        rack_id: str = "",
    ) -> None:
        """Fetch v13+ addresses topics by id: it is used only when every partition (and forgotten
        entry) carries a topic_id; otherwise the request is capped at v12 (names). A v13+ answer's
        topics get their ``topic`` back from the ids the request sent, and from
        ``session_topic_ids`` ({topic: id} of what the incremental session holds beyond the
        partitions listed). The request deadline is request_timeout_ms + max_wait_ms."""
    def list_offsets(
        self,
        partitions: Iterable[OffsetLookup],
        cb: ResponseCallback[codec.ListOffsetsResponse],
        *,
        isolation_level: int = 0,
    ) -> None:
        """ListOffsets: per partition the offset for a timestamp (``OffsetLookup``; -1 the end
        offset, -2 the first), with the timestamp of the record found."""
    def find_coordinator(
        self, key: str, cb: ResponseCallback[codec.FindCoordinatorResponse], *, key_type: int = 0
    ) -> None:  # 0 group, 1 transaction
        """FindCoordinator: the broker coordinating a group (``key_type=0``) or a transactional id
        (``key_type=1``)."""
    def join_group(
        self,
        group_id: str,
        member_id: str,
        protocol_type: str,
        protocols: Iterable[codec.JoinGroupRequestProtocol],
        cb: ResponseCallback[codec.JoinGroupResponse],
        *,
        session_timeout_ms: int = 45000,
        rebalance_timeout_ms: int = 300000,
        group_instance_id: str | None = None,
        reason: str | None = None,
    ) -> None:  # deadline = request_timeout_ms + rebalance_timeout_ms
        """JoinGroup (classic protocol): join or rejoin ``group_id`` with the member's
        ``protocols``; an empty ``member_id`` first gets MEMBER_ID_REQUIRED and the id to rejoin
        with. The deadline is request_timeout_ms + ``rebalance_timeout_ms``, since the broker
        answers only once the group rebalanced."""
    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        assignments: Iterable[codec.SyncGroupRequestAssignment],
        cb: ResponseCallback[codec.SyncGroupResponse],
        *,
        group_instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> None:
        """SyncGroup: the leader sends every member's assignment, the others send none; each gets
        its own."""
    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        cb: ResponseCallback[codec.HeartbeatResponse],
        *,
        group_instance_id: str | None = None,
    ) -> None:
        """Heartbeat: keeps the member in its generation; REBALANCE_IN_PROGRESS says to rejoin."""
    def leave_group(
        self, group_id: str, members: Iterable[codec.MemberIdentity], cb: ResponseCallback[codec.LeaveGroupResponse]
    ) -> None:
        """LeaveGroup: the ``members`` leave at once instead of after their session timeout."""
    def offset_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        offsets: Iterable[OffsetToCommit],
        cb: ResponseCallback[codec.OffsetCommitResponse],
        *,
        group_instance_id: str | None = None,
    ) -> None:
        """OffsetCommit: commit ``offsets`` (``OffsetToCommit``: the next offset to read, with its
        leader epoch and metadata) for the member of that generation; generation -1 and an empty
        member id commit for a group with no members."""
    def offset_fetch(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition] | None,
        cb: ResponseCallback[codec.OffsetFetchResponse],
        *,
        require_stable: bool = False,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> None:  # None = all partitions the group committed
        """OffsetFetch: the group's committed offsets of ``partitions`` (None: every partition it
        committed); ``require_stable`` waits for pending transactional commits
        (UNSTABLE_OFFSET_COMMIT until then); ``member_id``/``member_epoch``: a KIP-848 member's
        (v9+)."""
    def consumer_group_heartbeat(
        self,
        request: codec.ConsumerGroupHeartbeatRequest,
        cb: ResponseCallback[codec.ConsumerGroupHeartbeatResponse],
    ) -> None:
        """ConsumerGroupHeartbeat (KIP-848): join, heartbeat or leave a consumer-protocol group."""
    def offset_for_leader_epoch(
        self, partitions: Iterable[EpochLookup], cb: ResponseCallback[codec.OffsetForLeaderEpochResponse]
    ) -> None:
        """OffsetForLeaderEpoch (KIP-320): per partition, the end offset of a leader epoch, to find
        where a log diverged after a truncation."""
    def init_producer_id(
        self,
        cb: ResponseCallback[codec.InitProducerIdResponse],
        *,
        transactional_id: str | None = None,
        transaction_timeout_ms: int = 60000,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        """InitProducerId: a producer id and epoch for an idempotent producer, or for
        ``transactional_id`` (fencing earlier instances); passing the current
        ``producer_id``/``producer_epoch`` bumps the epoch (KIP-360)."""
    def add_partitions_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        cb: ResponseCallback[codec.AddPartitionsToTxnResponse],
    ) -> None:
        """AddPartitionsToTxn: add ``partitions`` to the ongoing transaction before producing to
        them."""
    def add_offsets_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        cb: ResponseCallback[codec.AddOffsetsToTxnResponse],
    ) -> None:
        """AddOffsetsToTxn: include ``group_id``'s offsets in the transaction (before
        txn_offset_commit)."""
    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        cb: ResponseCallback[codec.EndTxnResponse],
    ) -> None:
        """EndTxn: commit (``commit=True``) or abort the ongoing transaction."""
    def txn_offset_commit(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Iterable[OffsetToCommit],
        cb: ResponseCallback[codec.TxnOffsetCommitResponse],
        *,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
    ) -> None:
        """TxnOffsetCommit: commit a group's offsets as part of the transaction, sent to the group's
        coordinator; the generation and member id let the broker fence a zombie consumer
        (KIP-447)."""
    def create_topics(
        self,
        topics: Iterable[NewTopic],
        cb: ResponseCallback[codec.CreateTopicsResponse],
        *,
        timeout_ms: int = 30000,
        validate_only: bool = False,
    ) -> None:
        """CreateTopics: create ``topics`` (``NewTopic``: name, partitions, replication factor,
        configs; -1 for the broker's defaults); ``validate_only`` checks without creating. Per-
        topic errors are in the response."""
    def delete_topics(
        self, names: Iterable[str], cb: ResponseCallback[codec.DeleteTopicsResponse], *, timeout_ms: int = 30000
    ) -> None:
        """DeleteTopics: delete the topics named; per-topic errors are in the response."""
    def create_partitions(
        self,
        totals: Mapping[str, int],
        cb: ResponseCallback[codec.CreatePartitionsResponse],
        *,
        timeout_ms: int = 30000,
        validate_only: bool = False,
    ) -> None:  # {topic: new total partition count}
        """CreatePartitions: raise each topic's partition count to the total given (``{topic: new
        total}``)."""
    def delete_records(
        self,
        before_offsets: Mapping[TopicPartition, int],
        cb: ResponseCallback[codec.DeleteRecordsResponse],
        *,
        timeout_ms: int = 30000,
    ) -> None:  # {partition: offset records below which go}; -1 = high watermark
        """DeleteRecords: per partition, delete every record below the offset given (-1: the high
        watermark); sent to each partition's leader."""
    def describe_configs(
        self,
        resources: Iterable[codec.DescribeConfigsResource],
        cb: ResponseCallback[codec.DescribeConfigsResponse],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
    ) -> None:  # resource_type 2 topic / 4 broker; configuration_keys None for all
        """DescribeConfigs: the configs of topics (``resource_type`` 2) and brokers (4), every key
        when ``configuration_keys`` is None; ``include_synonyms`` adds where each value comes
        from."""
    def describe_groups(self, group_ids: Iterable[str], cb: ResponseCallback[codec.DescribeGroupsResponse]) -> None:
        """DescribeGroups: state, protocol and members (with their assignments) of classic groups,
        asked of their coordinator."""
    def list_groups(
        self,
        cb: ResponseCallback[codec.ListGroupsResponse],
        *,
        states: Iterable[str] = (),
        types: Iterable[str] = (),
    ) -> None:
        """ListGroups: the groups this broker coordinates, filtered by ``states`` and ``types``
        (classic, consumer) when given."""

# --- typed request records: each checks its fields once, when made (TypeError/ValueError
# naming Record.field); the helpers group them into the generated request objects ------------

class ProducePartition:
    """One partition's encoded RecordBatch in a Produce request."""
    topic: str
    partition: int
    records: EncodedBatch
    topic_id: uuid.UUID | None
    def __init__(self, topic: str, partition: int, records: EncodedBatch, topic_id: uuid.UUID | None = None) -> None: ...

class FetchPosition:
    """Where to read one partition in a Fetch request."""
    topic: str
    partition: int
    offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int  # KIP-320 (v12+): lets the leader answer diverging_epoch after truncation
    topic_id: uuid.UUID | None
    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int,
        current_leader_epoch: int = -1,
        last_fetched_epoch: int = -1,
        topic_id: uuid.UUID | None = None,
    ) -> None: ...

class ForgottenPartitions:
    """Partitions of one topic an incremental Fetch session drops."""
    topic: str
    partitions: list[int]
    topic_id: uuid.UUID | None
    def __init__(self, topic: str, partitions: Iterable[int], topic_id: uuid.UUID | None = None) -> None: ...

class OffsetLookup:
    """One partition in a ListOffsets request; timestamp -1 latest, -2 earliest."""
    topic: str
    partition: int
    timestamp: int
    current_leader_epoch: int
    def __init__(self, topic: str, partition: int, timestamp: int, current_leader_epoch: int = -1) -> None: ...

class EpochLookup:
    """One partition in an OffsetForLeaderEpoch request."""
    topic: str
    partition: int
    leader_epoch: int
    current_leader_epoch: int
    def __init__(self, topic: str, partition: int, leader_epoch: int, current_leader_epoch: int = -1) -> None: ...

class OffsetToCommit:
    """One partition's offset in an OffsetCommit or TxnOffsetCommit request."""
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    def __init__(
        self, topic: str, partition: int, offset: int, leader_epoch: int = -1, metadata: str | None = None
    ) -> None: ...

class NewTopic:
    """One topic in a CreateTopics request; -1 takes the broker's default."""
    name: str
    num_partitions: int
    replication_factor: int
    configs: dict[str, str | None]
    def __init__(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
    ) -> None: ...
