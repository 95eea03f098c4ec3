"""Fake Kafka brokers on loopback sockets, for behaviour a real one will not produce on demand.

Every request frame is decoded with kafkaev's own codecs, so the code under test is the real
``Connection`` (and, above it, the real ``ConnectionPool``, ``Metadata``, producer and consumer):

``FakeCluster``
    One or more nodes, each with a node id and a listener on a 127.0.0.1 ephemeral port, sharing
    one scripted cluster: topics, partitions, leaders, leader epochs, topic ids and partition logs.
    Every request is answered by the newest matching script (``FakeCluster.script``), else by a
    default that behaves like a broker: ApiVersions, Metadata, Produce (base offsets per partition
    and the idempotent producer's sequence checks), Fetch (from the partition logs; a long poll
    waits for records), ListOffsets, FindCoordinator, InitProducerId, and a coordinator's OffsetCommit,
    OffsetFetch, Heartbeat and LeaveGroup (JoinGroup and SyncGroup are scripted). Every request is recorded
    (``FakeCluster.requests``) and every accepted connection (``FakeCluster.connections``).
    A script answers with a generated response object or an action: ``ErrorAnswer``, ``RawBytes``,
    ``Silence``, ``NoAnswer``, ``Delay``, ``HangUp``; ``clear_scripts()`` forgets them all. A node can
    ``refuse_connections()``, ``drop_connections()``, and ``proxy_to(address)``: from then on each
    new connection is piped to a real broker (the broker came back, at this node's address). The ``fake_cluster`` fixture (conftest.py) starts one on the test's loop.
``FakeBroker``
    A one-node FakeCluster for the connection's own fault tests: ApiVersions and Metadata (an empty
    cluster) answered like a real broker, and a ``responder`` that scripts the bytes of every reply
    (truncated, garbage, a wrong correlation id, a huge size prefix), silence, or a close.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import struct
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkaev import errors
from kafkaev.protocol import codec
from kafkaev.protocol.codec import ApiKey

API_METADATA = 3
API_API_VERSIONS = 18
UNSUPPORTED_VERSION = 35
SIZE_PREFIX = struct.Struct(">i")
PIPE_CHUNK = 1 << 16  # bytes a proxied connection copies at a time


def api_versions_body(max_api_versions: int | None = None) -> object:
    keys = []
    for api_key, (low, high) in sorted(codec.SUPPORTED_VERSIONS.items()):
        if api_key == API_API_VERSIONS and max_api_versions is not None:
            high = max_api_versions
        keys.append(codec.ApiVersion(api_key=api_key, min_version=low, max_version=high))
    return codec.ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)


# --- FakeCluster: a scripted cluster of one or more nodes ------------------------------------------
FIRST_PRODUCER_ID = 1000
NO_LOG_APPEND_TIME = -1
UNKNOWN_AUTHORIZED_OPERATIONS = -2147483648
CLUSTER_ID = "fake-cluster"
BASE_OFFSET = struct.Struct(">q")  # a RecordBatch starts with its base offset, outside the CRC
# RecordBatch v2 header: base offset, length, partition leader epoch, magic, CRC, attributes, last
# offset delta, base and max timestamps, producer id, producer epoch, base sequence, record count.
BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")


# What a script may answer a request with, besides a generated response object (sent as it is) or
# None (not this script's business: the next older script, or the default, answers).
@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """The default answer's shape with ``code`` in every error field (each partition's, or the
    top-level one for APIs without partitions)."""

    code: int


@dataclass(frozen=True, slots=True)
class Silence:
    """No answer, ever: the connection stops reading, as a hung broker does."""


@dataclass(frozen=True, slots=True)
class NoAnswer:
    """Nothing written for this request; the connection goes on reading (an acks=0 Produce's lot)."""


@dataclass(frozen=True, slots=True)
class Delay:
    """Wait ``seconds`` (holding back this connection's later requests, as a broker does), then
    answer with ``then`` (None: the default answer)."""

    seconds: float
    then: Action | None = None


@dataclass(frozen=True, slots=True)
class HangUp:
    """Close the connection instead of answering. ``after_applying``: the default handling runs
    first (a Produce is written to the log), so only the answer is lost."""

    after_applying: bool = False


@dataclass(frozen=True, slots=True)
class RawBytes:
    """Written to the socket as they are, in place of an answer (truncated frames, garbage, a wrong
    correlation id); then ``then``: Silence or HangUp, or None to go on serving."""

    data: bytes
    then: Silence | HangUp | None = None


Action = ErrorAnswer | RawBytes | Silence | NoAnswer | Delay | HangUp | codec.MessageStruct


@dataclass(slots=True)
class ReceivedRequest:
    """One request frame a node read, decoded."""

    node_id: int
    connection: int  # ConnectionRecord.serial of the socket it came on
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the generated request object
    received_at: float  # loop time
    answered_at: float | None = None  # loop time the answer was written; None: not answered


@dataclass(slots=True)
class ConnectionRecord:
    """One socket a node accepted."""

    serial: int
    node_id: int
    opened_at: float  # loop time of the accept
    client_id: str | None = None  # from its first request
    refused: bool = False  # the node was refusing: closed after reading the first request


Script = Callable[[ReceivedRequest], "Action | None"]


@dataclass(slots=True)
class _ScriptEntry:
    api_key: int
    node_id: int | None
    script: Script
    remaining: int | None  # answers left; None: every matching request


@dataclass(slots=True)
class StoredBatch:
    """One record batch in a partition log, with the header fields the broker's checks read."""

    raw: bytes
    base_offset: int
    next_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def values(self) -> list[bytes | None]:
        return [record.value for [batch] in [codec.decode_record_batches(self.raw)] for record in batch.records]


def stored_batch(raw: bytes, base_offset: int | None = None) -> StoredBatch:
    """``raw`` (one RecordBatch v2) as stored, its base offset rewritten to ``base_offset`` when
    given, as a broker assigns offsets on append (the CRC does not cover it). Only the header is
    read: a test may put a corrupt batch in on purpose."""
    if base_offset is not None:
        raw = BASE_OFFSET.pack(base_offset) + bytes(raw[BASE_OFFSET.size:])
    header = BATCH_HEADER.unpack_from(raw)
    base, last_offset_delta, producer_id, producer_epoch, base_sequence, count = (
        header[0], header[6], header[9], header[10], header[11], header[12])
    return StoredBatch(bytes(raw), base, base + last_offset_delta + 1, producer_id, producer_epoch, base_sequence,
                       count)


@dataclass(slots=True)
class ProducedBatch:
    """One batch of a Produce request, as the broker read it."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    values: list[bytes | None]


@dataclass(slots=True)
class Divergence:
    """What the next Fetch of a partition answers instead of records (KIP-320)."""

    epoch: int
    end_offset: int


@dataclass
class PartitionLog:
    """A partition as the cluster holds it: leader, epoch and the batches written so far."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int = 0
    batches: list[StoredBatch] = field(default_factory=list)
    next_divergence: Divergence | None = None
    _cluster: FakeCluster | None = None

    @property
    def end_offset(self) -> int:
        return self.batches[-1].next_offset if self.batches else 0

    def values(self) -> list[bytes | None]:
        return [value for batch in self.batches for value in batch.values]

    def append_raw(self, raw: bytes) -> None:
        """Put an encoded batch in as it is (its own base offset); held Fetches are answered."""
        self.batches.append(stored_batch(raw))
        self._wake()

    def replace(self, raws: Iterable[bytes]) -> None:
        """The log becomes ``raws`` (an unclean leader change rewrote it); held Fetches are answered."""
        self.batches = [stored_batch(raw) for raw in raws]
        self._wake()

    def diverge_on_next_fetch(self, epoch: int, end_offset: int) -> None:
        self.next_divergence = Divergence(epoch, end_offset)

    def _wake(self) -> None:
        if self._cluster is not None:
            self._cluster.wake_held_fetches()


@dataclass
class TopicState:
    name: str
    topic_id: uuid.UUID | None  # None: the metadata answers the zero id (a broker before topic ids)
    partitions: list[PartitionLog]
    error_code: int = errors.NONE


@dataclass(frozen=True, slots=True)
class AppendFault:
    """The next append ``matches`` accepts is refused with ``code`` (once)."""

    code: int
    matches: Callable[[int, ProducedBatch], bool]  # (node id, batch)


class Refusal(enum.Enum):
    ACCEPTING = "accepting"
    REFUSING = "refusing"


@dataclass
class FakeNode:
    """One broker of a FakeCluster: a node id and a listener."""

    node_id: int
    cluster: FakeCluster
    listed: bool = True  # in Metadata answers' broker list
    rack: str | None = None
    port: int = 0
    refusal: Refusal = Refusal.ACCEPTING
    proxied_to: tuple[str, int] | None = None  # a real broker new connections are piped to
    _server: asyncio.AbstractServer | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def refuse_connections(self) -> None:
        """New connections fail their handshake: the node reads the first request (so the attempt
        is recorded with its client id) and closes the socket without answering. The listener stays
        open so that every attempt is seen; to the client this is a failed connect (TRANSPORT)."""
        self.refusal = Refusal.REFUSING

    def accept_connections(self) -> None:
        self.refusal = Refusal.ACCEPTING

    def drop_connections(self) -> None:
        """Close every open socket of this node (the broker went away under them)."""
        for writer in list(self._writers):
            writer.close()

    def proxy_to(self, address: str) -> None:
        """The broker came back as the one at ``address`` ("host:port"): the sockets open now are
        closed (the old process is gone) and each new connection is piped there, byte for byte."""
        host, port = address.rsplit(":", 1)
        self.proxied_to = (host, int(port))
        self.drop_connections()

    def attempts(self, client_id: str | None = None) -> list[ConnectionRecord]:
        """The connections this node accepted (refused ones too), oldest first."""
        return [c for c in self.cluster.connections
                if c.node_id == self.node_id and (client_id is None or c.client_id == client_id)]


class FakeCluster:
    """Several FakeNodes with one scripted cluster state. Start it with ``await start()`` (or
    ``async with``); ``bootstrap`` is the nodes' addresses for ``ClientConfig(brokers=...)``."""

    def __init__(self, node_ids: Sequence[int] = (1,)) -> None:
        self.nodes: dict[int, FakeNode] = {n: FakeNode(n, self) for n in node_ids}
        self.topics: dict[str, TopicState] = {}
        self.requests: list[ReceivedRequest] = []
        self.connections: list[ConnectionRecord] = []
        self.append_faults: list[AppendFault] = []
        self.coordinator_id = min(node_ids)
        self.committed: dict[tuple[str, str, int], int] = {}  # (group, topic, partition) -> offset
        self.committed_epochs: dict[tuple[str, str, int], int] = {}  # the same key -> its leader epoch
        self.held_fetches = 0  # Fetches waiting for records
        self._scripts: list[_ScriptEntry] = []
        self._serials = itertools.count(1)
        self._producer_ids = itertools.count(FIRST_PRODUCER_ID)
        self._producer_state: dict[tuple[int, str, int], tuple[int, int]] = {}  # -> (epoch, last sequence)
        self._wake: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed_by_client = asyncio.Event()  # set once a client closed a socket

    # --- lifetime ------------------------------------------------------------------------------
    async def start(self) -> FakeCluster:
        for node in self.nodes.values():
            node._server = await asyncio.start_server(
                lambda r, w, node=node: self._serve(node, r, w), node.host, 0)
            node.port = node._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        for node in self.nodes.values():
            node.drop_connections()
            if node._server is not None:
                node._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for node in self.nodes.values():
            if node._server is not None:
                await node._server.wait_closed()

    async def __aenter__(self) -> FakeCluster:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def bootstrap(self) -> str:
        return ",".join(node.address for node in self.nodes.values())

    # --- the cluster's state -------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int = 1, *, leaders: Sequence[int] | None = None,
                     leader_epoch: int = 0, topic_id: uuid.UUID | None | bool = True) -> TopicState:
        """``leaders``: each partition's leader (default: the nodes in turn); ``topic_id`` True for
        a fresh random id, None for none."""
        ids = sorted(self.nodes)
        chosen = list(leaders) if leaders is not None else [ids[p % len(ids)] for p in range(partitions)]
        tid = uuid.uuid4() if topic_id is True else (topic_id or None)
        state = TopicState(name, tid, [PartitionLog(name, p, chosen[p], leader_epoch, _cluster=self)
                                       for p in range(partitions)])
        self.topics[name] = state
        return state

    def log(self, topic: str, partition: int) -> PartitionLog:
        return self.topics[topic].partitions[partition]

    def move_leader(self, topic: str, partition: int, leader: int) -> None:
        log = self.log(topic, partition)
        log.leader, log.leader_epoch = leader, log.leader_epoch + 1

    def forget_producers(self) -> None:
        """The brokers lose every producer's state (its records were removed by retention)."""
        self._producer_state.clear()

    def fail_next_append(self, code: int, matches: Callable[[int, ProducedBatch], bool] = lambda n, b: True) -> None:
        self.append_faults.append(AppendFault(code, matches))

    def wake_held_fetches(self) -> None:
        """Answer the Fetches held for want of records again, as the logs now stand."""
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    # --- scripts and records -------------------------------------------------------------------
    def script(self, api_key: int, reply: Action | Script, *, node: int | None = None,
               times: int | None = None) -> None:
        """Answer ``api_key`` requests (to ``node`` only, when given) with ``reply``: an Action, or a
        function of the ReceivedRequest returning one (None passes the request on). ``times``: for
        that many requests only. The newest script is asked first, the default answer last."""
        script: Script = reply if callable(reply) and not isinstance(reply, codec.MessageStruct) else (
            lambda _req, fixed=reply: fixed)
        self._scripts.insert(0, _ScriptEntry(int(api_key), node, script, times))

    def clear_scripts(self) -> None:
        """Forget every script: the default answers from now on."""
        self._scripts.clear()

    def requests_of(self, api_key: int, node: int | None = None) -> list[ReceivedRequest]:
        return [r for r in self.requests if r.api_key == api_key and (node is None or r.node_id == node)]

    # --- serving -------------------------------------------------------------------------------
    async def _serve(self, node: FakeNode, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        node._writers.add(writer)
        record = ConnectionRecord(next(self._serials), node.node_id, loop.time(),
                                  refused=node.refusal is Refusal.REFUSING)
        self.connections.append(record)
        try:
            if node.proxied_to is not None:
                await _pipe(reader, writer, *node.proxied_to)
                return
            while True:
                (size,) = SIZE_PREFIX.unpack(await reader.readexactly(SIZE_PREFIX.size))
                api_key, version, correlation_id, client_id, body = codec.decode_request_frame(
                    await reader.readexactly(size))
                if record.client_id is None:
                    record.client_id = client_id
                if record.refused:
                    return
                req = ReceivedRequest(node.node_id, record.serial, api_key, version, correlation_id, client_id,
                                      body, loop.time())
                self.requests.append(req)
                if not await self._answer(node, req, self._scripted(node, req), writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            self.closed_by_client.set()  # the client went away
        except asyncio.CancelledError:
            return  # stop(): end quietly, so that asyncio's stream callback finds no exception to report
        finally:
            node._writers.discard(writer)
            self._tasks.discard(task)
            writer.close()

    def _scripted(self, node: FakeNode, req: ReceivedRequest) -> Action | None:
        for entry in list(self._scripts):
            if entry.api_key != req.api_key or entry.node_id not in (None, node.node_id):
                continue
            action = entry.script(req)
            if action is None:
                continue
            if entry.remaining is not None:
                entry.remaining -= 1
                if entry.remaining == 0:
                    self._scripts.remove(entry)
            return action
        return None

    async def _answer(self, node: FakeNode, req: ReceivedRequest, action: Action | None,
                      writer: asyncio.StreamWriter) -> bool:
        """Carry out ``action`` (None: the default); False once the connection is to end."""
        while isinstance(action, Delay):
            await asyncio.sleep(action.seconds)
            action = action.then
        if isinstance(action, Silence):
            await asyncio.Event().wait()  # until stop() cancels this connection
        if isinstance(action, HangUp):
            if action.after_applying:
                self._default(node, req)
            return False
        if isinstance(action, NoAnswer):
            return True
        if isinstance(action, RawBytes):
            writer.write(action.data)
            req.answered_at = asyncio.get_running_loop().time()
            await writer.drain()
            return True if action.then is None else await self._answer(node, req, action.then, writer)
        else:
            body: Any
            if isinstance(action, ErrorAnswer):
                body = self._error_answer(node, req, action.code)
            elif action is None:
                body = self._default(node, req)
                while body is _HOLD:
                    self.held_fetches += 1
                    if self._wake is None:
                        self._wake = asyncio.Event()
                    try:
                        await self._wake.wait()
                    finally:
                        self.held_fetches -= 1
                    body = self._default(node, req)
                if isinstance(body, NoAnswer):
                    return True
            else:
                body = action
            writer.write(codec.encode_response_frame(req.api_key, req.version, req.correlation_id, body))
        req.answered_at = asyncio.get_running_loop().time()
        await writer.drain()
        return True

    # --- default answers -----------------------------------------------------------------------
    def _default(self, node: FakeNode, req: ReceivedRequest) -> Any:
        handler = _DEFAULTS.get(req.api_key)
        if handler is None:
            raise AssertionError(f"fake cluster: nothing scripted for {codec.API_NAMES.get(req.api_key)} "
                                 f"(api key {req.api_key}) and no default answer")
        return handler(self, node, req)

    def _error_answer(self, node: FakeNode, req: ReceivedRequest, code: int) -> Any:
        if req.api_key == ApiKey.PRODUCE:
            body = self._produce(node, req, refuse_with=code)  # nothing written
        elif req.api_key == ApiKey.FETCH:
            body = self._fetch(node, req, force=True)
        else:
            body = self._default(node, req)
        if isinstance(body, NoAnswer):
            raise AssertionError("fake cluster: an acks=0 Produce gets no answer, not an error")
        _set_error_codes(body, code)
        return body

    def _api_versions(self, node: FakeNode, req: ReceivedRequest) -> Any:
        return api_versions_body()

    def _broker_list(self) -> list[Any]:
        return [codec.MetadataResponseBroker(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
                for n in self.nodes.values() if n.listed]

    def _metadata(self, node: FakeNode, req: ReceivedRequest) -> Any:
        wanted = req.body.topics
        names = list(self.topics) if wanted is None else [t.name for t in wanted]
        topics = []
        for name in names:
            state = self.topics.get(name)
            if state is None:
                topics.append(codec.MetadataResponseTopic(error_code=errors.UNKNOWN_TOPIC_OR_PARTITION, name=name,
                                                          topic_id=codec.ZERO_UUID, partitions=[]))
                continue
            topics.append(codec.MetadataResponseTopic(
                error_code=state.error_code, name=name, topic_id=state.topic_id or codec.ZERO_UUID,
                is_internal=False, topic_authorized_operations=UNKNOWN_AUTHORIZED_OPERATIONS,
                partitions=[codec.MetadataResponsePartition(
                    error_code=errors.NONE, partition_index=p.partition, leader_id=p.leader,
                    leader_epoch=p.leader_epoch, replica_nodes=[p.leader], isr_nodes=[p.leader],
                    offline_replicas=[]) for p in state.partitions]))
        return codec.MetadataResponse(throttle_time_ms=0, brokers=self._broker_list(), cluster_id=CLUSTER_ID,
                                      controller_id=self.coordinator_id, topics=topics, error_code=errors.NONE)

    def _topic_named(self, name: str, topic_id: uuid.UUID) -> TopicState | None:
        if topic_id != codec.ZERO_UUID:
            return next((t for t in self.topics.values() if t.topic_id == topic_id), None)
        return self.topics.get(name)

    def _produce(self, node: FakeNode, req: ReceivedRequest, refuse_with: int | None = None) -> Any:
        answers = []
        moved = False
        for topic_data in req.body.topic_data:
            state = self._topic_named(topic_data.name, topic_data.topic_id)
            rows = []
            for part in topic_data.partition_data:
                row = codec.PartitionProduceResponse(index=part.index, error_code=errors.NONE, base_offset=-1,
                                                     log_append_time_ms=NO_LOG_APPEND_TIME, log_start_offset=0)
                if refuse_with is not None:
                    row.error_code = refuse_with
                elif state is None or part.index >= len(state.partitions):
                    row.error_code = (errors.UNKNOWN_TOPIC_ID if topic_data.topic_id != codec.ZERO_UUID
                                      else errors.UNKNOWN_TOPIC_OR_PARTITION)
                else:
                    log = state.partitions[part.index]
                    row.error_code, row.base_offset = self._append(node, log, bytes(part.records))
                    if row.error_code == errors.NOT_LEADER_OR_FOLLOWER:
                        moved = True
                        row.current_leader = codec.ProduceResponseLeaderIdAndEpoch(
                            leader_id=log.leader, leader_epoch=log.leader_epoch)
                rows.append(row)
            answers.append(codec.TopicProduceResponse(name=topic_data.name, topic_id=topic_data.topic_id,
                                                      partition_responses=rows))
        if req.body.acks == 0:
            return NoAnswer()
        endpoints = [codec.ProduceResponseNodeEndpoint(node_id=n.node_id, host=n.host, port=n.port, rack=n.rack)
                     for n in self.nodes.values() if n.listed] if moved else []
        return codec.ProduceResponse(responses=answers, throttle_time_ms=0, node_endpoints=endpoints)

    def _append(self, node: FakeNode, log: PartitionLog, raw: bytes) -> tuple[int, int]:
        """(error code, base offset) of one batch's append, with the broker's idempotence checks."""
        batch = stored_batch(raw)
        produced = produced_batch(log.topic, log.partition, raw)
        for fault in self.append_faults:
            if fault.matches(node.node_id, produced):
                self.append_faults.remove(fault)
                return fault.code, -1
        if log.leader != node.node_id:
            return errors.NOT_LEADER_OR_FOLLOWER, -1
        if batch.producer_id >= 0:
            key = (batch.producer_id, log.topic, log.partition)
            known = self._producer_state.get(key)
            if known is None:
                if batch.base_sequence != 0:
                    return errors.UNKNOWN_PRODUCER_ID, -1
            else:
                epoch, last = known
                if batch.producer_epoch < epoch:
                    return errors.INVALID_PRODUCER_EPOCH, -1
                if batch.producer_epoch > epoch:
                    if batch.base_sequence != 0:
                        return errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
                elif any((b.producer_id, b.producer_epoch, b.base_sequence)
                         == (batch.producer_id, batch.producer_epoch, batch.base_sequence) for b in log.batches):
                    return errors.DUPLICATE_SEQUENCE_NUMBER, -1
                elif batch.base_sequence != _next_sequence(last, 1):
                    return errors.OUT_OF_ORDER_SEQUENCE_NUMBER, -1
            self._producer_state[key] = (batch.producer_epoch,
                                         _next_sequence(batch.base_sequence, batch.record_count - 1))
        base = log.end_offset
        log.batches.append(stored_batch(raw, base))
        self.wake_held_fetches()
        return errors.NONE, base

    def _fetch(self, node: FakeNode, req: ReceivedRequest, force: bool = False) -> Any:
        """Every batch at or past each partition's fetch offset; _HOLD when no partition has any
        (a long poll: answered once records arrive, however long its max_wait_ms)."""
        topics = []
        anything = force
        for fetch_topic in req.body.topics:
            state = self._topic_named(fetch_topic.topic, fetch_topic.topic_id)
            rows = []
            for part in fetch_topic.partitions:
                row = codec.PartitionData(partition_index=part.partition, error_code=errors.NONE, high_watermark=-1,
                                          last_stable_offset=-1, log_start_offset=-1, records=b"")
                if state is None or part.partition >= len(state.partitions):
                    row.error_code = (errors.UNKNOWN_TOPIC_ID if fetch_topic.topic_id != codec.ZERO_UUID
                                      else errors.UNKNOWN_TOPIC_OR_PARTITION)
                    anything = True
                elif state.partitions[part.partition].leader != node.node_id:
                    row.error_code = errors.NOT_LEADER_OR_FOLLOWER
                    anything = True
                else:
                    log = state.partitions[part.partition]
                    row.high_watermark = row.last_stable_offset = log.end_offset
                    row.log_start_offset = 0
                    if log.next_divergence is not None:
                        divergence, log.next_divergence = log.next_divergence, None
                        row.diverging_epoch = codec.FetchResponseEpochEndOffset(
                            epoch=divergence.epoch, end_offset=divergence.end_offset)
                        anything = True
                    else:
                        row.records = b"".join(b.raw for b in log.batches if b.next_offset > part.fetch_offset)
                        anything = anything or bool(row.records)
                rows.append(row)
            topics.append(codec.FetchableTopicResponse(topic=fetch_topic.topic, topic_id=fetch_topic.topic_id,
                                                       partitions=rows))
        if not anything:
            return _HOLD
        return codec.FetchResponse(throttle_time_ms=0, error_code=errors.NONE, session_id=0, responses=topics)

    def _list_offsets(self, node: FakeNode, req: ReceivedRequest) -> Any:
        """Earliest (-2) is 0, anything else the log end."""
        topics = []
        for topic in req.body.topics:
            state = self.topics.get(topic.name)
            rows = []
            for part in topic.partitions:
                if state is None or part.partition_index >= len(state.partitions):
                    rows.append(codec.ListOffsetsPartitionResponse(
                        partition_index=part.partition_index, error_code=errors.UNKNOWN_TOPIC_OR_PARTITION,
                        timestamp=-1, offset=-1, leader_epoch=-1))
                    continue
                log = state.partitions[part.partition_index]
                rows.append(codec.ListOffsetsPartitionResponse(
                    partition_index=part.partition_index, error_code=errors.NONE, timestamp=-1,
                    offset=0 if part.timestamp == -2 else log.end_offset, leader_epoch=log.leader_epoch))
            topics.append(codec.ListOffsetsTopicResponse(name=topic.name, partitions=rows))
        return codec.ListOffsetsResponse(throttle_time_ms=0, topics=topics)

    def _find_coordinator(self, node: FakeNode, req: ReceivedRequest) -> Any:
        coordinator = self.nodes[self.coordinator_id]
        keys = req.body.coordinator_keys or [req.body.key]
        return codec.FindCoordinatorResponse(
            throttle_time_ms=0, error_code=errors.NONE, error_message=None, node_id=coordinator.node_id,
            host=coordinator.host, port=coordinator.port,
            coordinators=[codec.Coordinator(key=key, node_id=coordinator.node_id, host=coordinator.host,
                                            port=coordinator.port, error_code=errors.NONE, error_message=None)
                          for key in keys])

    def _init_producer_id(self, node: FakeNode, req: ReceivedRequest) -> Any:
        """A new id at epoch 0, or (KIP-360) the same id at the next epoch when one is given."""
        if req.body.producer_id >= 0:
            producer_id, epoch = req.body.producer_id, req.body.producer_epoch + 1
        else:
            producer_id, epoch = next(self._producer_ids), 0
        return codec.InitProducerIdResponse(throttle_time_ms=0, error_code=errors.NONE, producer_id=producer_id,
                                            producer_epoch=epoch)

    # A group coordinator's bookkeeping; JoinGroup and SyncGroup, the protocol itself, are left to scripts.
    def _offset_commit(self, node: FakeNode, req: ReceivedRequest) -> Any:
        """Accepts every offset and keeps it in ``committed``."""
        topics = []
        for topic in req.body.topics:
            for part in topic.partitions:
                key = (req.body.group_id, topic.name, part.partition_index)
                self.committed[key] = part.committed_offset
                self.committed_epochs[key] = part.committed_leader_epoch
            topics.append(codec.OffsetCommitResponseTopic(name=topic.name, topic_id=topic.topic_id, partitions=[
                codec.OffsetCommitResponsePartition(partition_index=part.partition_index, error_code=errors.NONE)
                for part in topic.partitions]))
        return codec.OffsetCommitResponse(throttle_time_ms=0, topics=topics)

    def _offset_fetch(self, node: FakeNode, req: ReceivedRequest) -> Any:
        """What ``committed`` holds (-1 for nothing), in the one-group (v0-7) or groups (v8+) layout."""
        def rows(group_id: str, topics: list[Any]) -> list[tuple[str, list[Any]]]:
            found = []
            for topic in topics:
                found.append((topic.name, [codec.OffsetFetchResponsePartitions(
                    partition_index=p, committed_offset=self.committed.get((group_id, topic.name, p), -1),
                    committed_leader_epoch=self.committed_epochs.get((group_id, topic.name, p), -1), metadata=None,
                    error_code=errors.NONE)
                    for p in topic.partition_indexes]))
            return found

        if req.version < 8:
            return codec.OffsetFetchResponse(throttle_time_ms=0, error_code=errors.NONE, topics=[
                codec.OffsetFetchResponseTopic(name=name, partitions=[codec.OffsetFetchResponsePartition(
                    partition_index=p.partition_index, committed_offset=p.committed_offset,
                    committed_leader_epoch=p.committed_leader_epoch, metadata=None, error_code=errors.NONE)
                    for p in parts])
                for name, parts in rows(req.body.group_id, req.body.topics or [])])
        return codec.OffsetFetchResponse(throttle_time_ms=0, groups=[codec.OffsetFetchResponseGroup(
            group_id=group.group_id, error_code=errors.NONE,
            topics=[codec.OffsetFetchResponseTopics(name=name, partitions=parts)
                    for name, parts in rows(group.group_id, group.topics or [])])
            for group in req.body.groups])

    def _heartbeat(self, node: FakeNode, req: ReceivedRequest) -> Any:
        return codec.HeartbeatResponse(throttle_time_ms=0, error_code=errors.NONE)

    def _leave_group(self, node: FakeNode, req: ReceivedRequest) -> Any:
        members = [codec.MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                        error_code=errors.NONE) for m in (req.body.members or [])]
        return codec.LeaveGroupResponse(throttle_time_ms=0, error_code=errors.NONE, members=members)


_HOLD = object()  # a Fetch with nothing to return yet

_DEFAULTS: dict[int, Callable[[FakeCluster, FakeNode, ReceivedRequest], Any]] = {
    ApiKey.API_VERSIONS: FakeCluster._api_versions,
    ApiKey.METADATA: FakeCluster._metadata,
    ApiKey.PRODUCE: FakeCluster._produce,
    ApiKey.FETCH: FakeCluster._fetch,
    ApiKey.LIST_OFFSETS: FakeCluster._list_offsets,
    ApiKey.FIND_COORDINATOR: FakeCluster._find_coordinator,
    ApiKey.INIT_PRODUCER_ID: FakeCluster._init_producer_id,
    ApiKey.OFFSET_COMMIT: FakeCluster._offset_commit,
    ApiKey.OFFSET_FETCH: FakeCluster._offset_fetch,
    ApiKey.HEARTBEAT: FakeCluster._heartbeat,
    ApiKey.LEAVE_GROUP: FakeCluster._leave_group,
}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int) -> None:
    """Copy bytes both ways between the accepted socket and a new one to ``host:port`` until
    either side closes."""
    upstream_reader, upstream_writer = await asyncio.open_connection(host, port)

    async def copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(PIPE_CHUNK):
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()

    try:
        await asyncio.gather(copy(reader, upstream_writer), copy(upstream_reader, writer))
    finally:
        upstream_writer.close()


def in_turn(*scripts: Script) -> Script:
    """A script that hands each request to the next of ``scripts``, the last one for all after."""
    remaining = list(scripts)

    def answer(req: ReceivedRequest) -> Action | None:
        script = remaining.pop(0) if len(remaining) > 1 else remaining[0]
        return script(req)

    return answer


def _next_sequence(sequence: int, increment: int) -> int:
    return (sequence + increment) % (1 << 31)


def _set_error_codes(message: Any, code: int) -> None:
    """``code`` into every ``error_code`` field of a response, nested ones included."""
    if not isinstance(message, codec.MessageStruct):
        return
    for name in type(message)._fields:
        value = getattr(message, name)
        if name == "error_code":
            setattr(message, name, code)
        elif isinstance(value, list):
            for item in value:
                _set_error_codes(item, code)
        else:
            _set_error_codes(value, code)


def produced_batch(topic: str, partition: int, raw: bytes) -> ProducedBatch:
    [decoded] = codec.decode_record_batches(raw)
    return ProducedBatch(topic, partition, decoded.producer_id, decoded.producer_epoch, decoded.base_sequence,
                         [record.value for record in decoded.records])


def produced_batches(req: ReceivedRequest, cluster: FakeCluster) -> list[ProducedBatch]:
    """The batches of a Produce request, topics named (a v13+ request names them by id)."""
    found = []
    for topic_data in req.body.topic_data:
        state = cluster._topic_named(topic_data.name, topic_data.topic_id)
        name = state.name if state is not None else topic_data.name
        for part in topic_data.partition_data:
            found.append(produced_batch(name, part.index, bytes(part.records)))
    return found


# --- FakeBroker: one node, every reply scripted by a responder -------------------------------------
FakeRequest = ReceivedRequest


@dataclass(slots=True)
class Reply:
    """What the fake broker does with one request: write ``data`` (may be empty), then close the
    connection if ``close`` is set; ``stall`` stops reading and answering altogether."""

    data: bytes = b""
    close: bool = False
    stall: bool = False

    def action(self) -> Action:
        then = HangUp() if self.close else Silence() if self.stall else None
        if self.data:
            return RawBytes(self.data, then)
        return then if then is not None else NoAnswer()


Responder = Callable[[FakeRequest], Reply]


def normal_reply(req: FakeRequest) -> Reply:
    """A well-formed answer to ApiVersions or Metadata (an empty cluster)."""
    if req.api_key == API_API_VERSIONS:
        body = api_versions_body()
    elif req.api_key == API_METADATA:
        body = codec.MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="fake", controller_id=-1,
                                      topics=[])
    else:
        raise AssertionError(f"fake broker: no normal reply for api key {req.api_key}")
    return Reply(codec.encode_response_frame(req.api_key, req.version, req.correlation_id, body))


class FakeBroker:
    """A one-node FakeCluster whose every reply comes from ``responder`` (default: normal_reply),
    for the connection's own fault tests: raw bytes, a close or a stall per request."""

    def __init__(self, responder: Responder = normal_reply) -> None:
        self.cluster = FakeCluster((1,))
        self.responder = responder
        for api_key in codec.REQUEST_CLASSES:
            self.cluster.script(api_key, lambda req: self.responder(req).action())

    @property
    def port(self) -> int:
        return self.cluster.nodes[1].port

    @property
    def requests(self) -> list[FakeRequest]:
        return self.cluster.requests

    @property
    def connections(self) -> int:
        return len(self.cluster.connections)

    @property
    def closed_by_peer(self) -> asyncio.Event:
        return self.cluster.closed_by_client

    async def start(self) -> FakeBroker:
        await self.cluster.start()
        return self

    async def stop(self) -> None:
        await self.cluster.stop()

    async def __aenter__(self) -> FakeBroker:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()


def reply_frame(req: FakeRequest, body: object, *, correlation_id: int | None = None) -> bytes:
    cid = req.correlation_id if correlation_id is None else correlation_id
    return codec.encode_response_frame(req.api_key, req.version, cid, body)


def unsupported_api_versions_v0(req: FakeRequest, max_version: int) -> bytes:
    """An ApiVersions UNSUPPORTED_VERSION answer in the v0 layout (what a broker sends when it does not
    know the request's version), listing only ApiVersions 0..max_version."""
    body = codec.ApiVersionsResponse(
        error_code=UNSUPPORTED_VERSION,
        api_keys=[codec.ApiVersion(api_key=API_API_VERSIONS, min_version=0, max_version=max_version)])
    return codec.encode_response_frame(API_API_VERSIONS, 0, req.correlation_id, body)
