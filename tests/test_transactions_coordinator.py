"""The transaction coordinator's faults, which a real broker will not produce on demand, on the
scripted fake cluster: NOT_COORDINATOR and a lost connection send the client to look the
coordinator up again (FindCoordinator key type 1), CONCURRENT_TRANSACTIONS and a loading
coordinator are retried; and the state machine's transitions on their own."""

from __future__ import annotations

import pickle

import pytest
from consumer_helpers import call
from fake_broker import ErrorAnswer, FakeCluster, HangUp
from producer_helpers import Delivery, close

from kafkaev.client import Client
from kafkaev.cluster.coordinator import CoordinatorType
from kafkaev.errors import (
    CONCURRENT_TRANSACTIONS,
    COORDINATOR_LOAD_IN_PROGRESS,
    NONE,
    NOT_COORDINATOR,
    PRODUCER_FENCED,
    STATE,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    TRANSPORT,
    KafkaError,
)
from kafkaev.producer.transaction import (
    CONCURRENT_TRANSACTIONS_BACKOFF_S,
    OFFSETS_AFTER_MARKERS_BACKOFF_S,
    Transaction,
    TxnState,
    concurrent_transactions_delay_s,
)
from kafkaev.protocol import codec
from kafkaev.protocol.codec import ApiKey
from kafkaev.types import ConsumerGroupMetadata

TOPIC = "txn-topic"
TXN_ID = "txn-fake"


def _coordinator_answers(cluster: FakeCluster, nodes: list[int]) -> None:
    """FindCoordinator answers name ``nodes`` in turn, then the last one for good."""
    answers = list(nodes)

    def answer(req):
        node = cluster.nodes[answers.pop(0) if len(answers) > 1 else answers[0]]
        keys = req.body.coordinator_keys or [req.body.key]
        return codec.FindCoordinatorResponse(
            throttle_time_ms=0, error_code=NONE, error_message=None, node_id=node.node_id, host=node.host,
            port=node.port, coordinators=[codec.Coordinator(key=k, node_id=node.node_id, host=node.host,
                                                            port=node.port, error_code=NONE, error_message=None)
                                          for k in keys])

    cluster.script(ApiKey.FIND_COORDINATOR, answer)


def _added(req, code: int = NONE):
    return codec.AddPartitionsToTxnResponse(throttle_time_ms=0, error_code=NONE, results_by_topic_v3_and_below=[
        codec.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
            codec.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=code)
            for p in t.partitions]) for t in req.body.v3_and_below_topics])


def _ended(_req, code: int = NONE):
    return codec.EndTxnResponse(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)


def _fenced(req):
    return _ended(req, PRODUCER_FENCED)


def _transaction_lookups(cluster: FakeCluster) -> list[str]:
    return [r.body.key or r.body.coordinator_keys[0] for r in cluster.requests_of(ApiKey.FIND_COORDINATOR)
            if r.body.key_type == CoordinatorType.TRANSACTION]


def test_init_follows_a_moved_coordinator_and_retries_concurrent_transactions(loop, fake_cluster):
    cluster = fake_cluster(1, 2)
    _coordinator_answers(cluster, [1, 2])
    cluster.script(ApiKey.INIT_PRODUCER_ID, ErrorAnswer(NOT_COORDINATOR), node=1)
    cluster.script(ApiKey.INIT_PRODUCER_ID, ErrorAnswer(CONCURRENT_TRANSACTIONS), node=2, times=1)
    cluster.script(ApiKey.INIT_PRODUCER_ID, ErrorAnswer(COORDINATOR_LOAD_IN_PROGRESS), node=2, times=1)
    client = Client(cluster.bootstrap, loop=loop, transactional_id=TXN_ID, retry_backoff_ms=5)
    (err,) = call(loop, client.init_transactions)
    assert err is None, err
    assert _transaction_lookups(cluster) == [TXN_ID, TXN_ID, TXN_ID]  # after NOT_COORDINATOR and the load
    inits = cluster.requests_of(ApiKey.INIT_PRODUCER_ID)
    assert [r.node_id for r in inits] == [1, 2, 2, 2]
    assert all(r.body.transactional_id == TXN_ID for r in inits)
    assert client._producer.txn.txn.state is TxnState.READY
    close(client, loop)


def test_a_lost_coordinator_connection_is_found_again_and_the_transaction_commits(loop, fake_cluster):
    cluster = fake_cluster(1)
    cluster.create_topic(TOPIC, 1)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, _added)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, HangUp(), times=1)  # the first answer is lost
    cluster.script(ApiKey.END_TXN, _ended)
    client = Client(cluster.bootstrap, loop=loop, transactional_id=TXN_ID, retry_backoff_ms=5, linger_ms=1)
    (err,) = call(loop, client.init_transactions)
    assert err is None, err
    assert client._producer.txn.version == 1  # the fake finalizes no transaction.version
    client.begin_transaction()
    delivery = Delivery(3)
    for n in range(3):
        client.produce(TOPIC, None, b"%d" % n, delivery.cb(n), partition=0)
    (err,) = call(loop, client.commit_transaction)
    assert err is None, err
    delivery.assert_each_once()
    assert not delivery.errors
    adds = cluster.requests_of(ApiKey.ADD_PARTITIONS_TO_TXN)
    assert len(adds) == 2
    assert len(_transaction_lookups(cluster)) == 2  # looked up again after the lost connection
    # The partition was added before its first batch went out (v1), and that batch is transactional.
    produce = cluster.requests_of(ApiKey.PRODUCE)
    # By arrival order (uvloop's clock counts whole milliseconds, so both can carry one time).
    arrival = [id(request) for request in cluster.requests]
    assert produce and arrival.index(id(produce[0])) > arrival.index(id(adds[-1]))
    assert adds[-1].answered_at is not None and adds[-1].answered_at <= produce[0].received_at
    assert produce[0].body.transactional_id == TXN_ID
    assert produce[0].version <= 11  # transactions v1 stay below KIP-890's Produce v12
    (end,) = cluster.requests_of(ApiKey.END_TXN)
    assert end.body.committed is True and end.version <= 4
    close(client, loop)


def test_an_authorization_failure_is_fatal_and_named_by_later_calls(loop, fake_cluster):
    cluster = fake_cluster(1)
    cluster.script(ApiKey.INIT_PRODUCER_ID, ErrorAnswer(TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    client = Client(cluster.bootstrap, loop=loop, transactional_id=TXN_ID, retry_backoff_ms=5)
    (err,) = call(loop, client.init_transactions)
    assert isinstance(err, KafkaError) and err.code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED and err.fatal
    assert client._producer.txn.txn.state is TxnState.FATAL_ERROR
    with pytest.raises(KafkaError, match="init_transactions: refused.*TRANSACTIONAL_ID_AUTHORIZATION_FAILED") as info:
        client.init_transactions(lambda e: None)
    assert info.value.fatal and info.value.code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    close(client, loop)


# --- the state machine alone -------------------------------------------------------------------------------
def test_every_state_refuses_what_does_not_fit_it():
    txn = Transaction("t")
    with pytest.raises(KafkaError, match="begin_transaction: not allowed in state UNINITIALIZED") as info:
        txn.begin()
    assert info.value.code == STATE and not info.value.fatal
    txn.to(TxnState.INITIALIZING)
    txn.to(TxnState.READY)
    txn.begin()
    assert txn.in_transaction and txn.sending
    with pytest.raises(KafkaError, match="already open"):
        txn.begin()
    failure = KafkaError(NOT_COORDINATOR, "x")
    txn.abortable(failure)
    assert txn.state is TxnState.ABORTABLE_ERROR and not txn.sending
    with pytest.raises(KafkaError, match="must be aborted") as info:
        txn.require("commit_transaction", TxnState.IN_TRANSACTION)
    assert info.value.txn_requires_abort
    txn.to(TxnState.ABORTING)
    txn.finished()
    assert txn.state is TxnState.READY and txn.error is None and not txn.started
    txn.fatal(KafkaError(TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    with pytest.raises(KafkaError, match="refused") as info:
        txn.begin()
    assert info.value.fatal and info.value.code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    with pytest.raises(RuntimeError, match="FATAL_ERROR cannot become READY"):
        txn.to(TxnState.READY)


def test_an_error_in_aborting_does_not_reopen_the_transaction():
    txn = Transaction("t")
    for state in (TxnState.INITIALIZING, TxnState.READY, TxnState.IN_TRANSACTION, TxnState.ABORTING):
        txn.to(state)
    txn.abortable(KafkaError(NOT_COORDINATOR))  # a record failing while the abort waits for it
    assert txn.state is TxnState.ABORTING


def test_a_fence_answered_to_a_commits_retry_is_settled_by_the_abort(loop, fake_cluster):
    """The coordinator moved with the commit's outcome unknown, and the retry was answered
    PRODUCER_FENCED (a 4.x coordinator does so when it aborted the transaction meanwhile): not
    fatal yet; the abort succeeds, the epoch moves on and the client goes on."""
    cluster = fake_cluster(1)
    cluster.create_topic(TOPIC, 1)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, _added)
    cluster.script(ApiKey.END_TXN, _ended)
    cluster.script(ApiKey.END_TXN, _fenced, times=1)
    cluster.script(ApiKey.END_TXN, HangUp(), times=1)
    client = Client(cluster.bootstrap, loop=loop, transactional_id=TXN_ID, retry_backoff_ms=5, linger_ms=1)
    (err,) = call(loop, client.init_transactions)
    assert err is None, err
    epoch = client._producer._sender.identity.producer_epoch
    client.begin_transaction()
    client.produce(TOPIC, None, b"x", partition=0)
    (err,) = call(loop, client.commit_transaction)
    assert isinstance(err, KafkaError) and err.txn_requires_abort and not err.fatal, err
    assert err.txn_outcome_unknown and "outcome is unknown" in str(err), err  # the commit may have landed
    (err,) = call(loop, client.abort_transaction)
    assert err is None, err
    assert client._producer._sender.identity.producer_epoch == epoch + 1  # v1: bumped after the abort
    client.begin_transaction()
    client.produce(TOPIC, None, b"y", partition=0)
    (err,) = call(loop, client.commit_transaction)
    assert err is None, err
    ends = [r.body.committed for r in cluster.requests_of(ApiKey.END_TXN)]
    assert ends == [True, True, False, True]
    close(client, loop)


def test_a_fence_answered_to_a_first_commit_is_fatal(loop, fake_cluster):
    cluster = fake_cluster(1)
    cluster.create_topic(TOPIC, 1)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, _added)
    cluster.script(ApiKey.END_TXN, _fenced)
    client = Client(cluster.bootstrap, loop=loop, transactional_id=TXN_ID, retry_backoff_ms=5, linger_ms=1)
    (err,) = call(loop, client.init_transactions)
    assert err is None, err
    client.begin_transaction()
    client.produce(TOPIC, None, b"x", partition=0)
    (err,) = call(loop, client.commit_transaction)
    assert isinstance(err, KafkaError) and err.code == PRODUCER_FENCED and err.fatal, err
    assert client._producer.txn.txn.state is TxnState.FATAL_ERROR
    close(client, loop)


# --- a lost EndTxn answer --------------------------------------------------------------------------------
def _commit_one_record(loop, cluster: FakeCluster, **options):
    """A v1 transactional client that commits one record; its client and the commit's error."""
    cluster.create_topic(TOPIC, 1)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, _added)
    client = Client(cluster.bootstrap, loop=loop, transactional_id=TXN_ID, retry_backoff_ms=5, linger_ms=1, **options)
    (err,) = call(loop, client.init_transactions)
    assert err is None, err
    client.begin_transaction()
    delivery = Delivery(1)
    client.produce(TOPIC, None, b"x", delivery.cb(0), partition=0)
    (err,) = call(loop, client.commit_transaction)
    delivery.assert_each_once()
    assert not delivery.errors
    return client, err


def _end_txn_requests(cluster: FakeCluster) -> list[bool]:
    return [r.body.committed for r in cluster.requests_of(ApiKey.END_TXN)]


def test_a_lost_commit_answer_is_retried_and_the_commit_lands(loop, fake_cluster):
    """EndTxn is idempotent at the coordinator: the client sends it again on a new connection, as
    the Java client does, and the commit succeeds with no unknown outcome."""
    cluster = fake_cluster(1)
    cluster.script(ApiKey.END_TXN, _ended)
    cluster.script(ApiKey.END_TXN, HangUp(), times=1)  # received, its answer lost
    client, err = _commit_one_record(loop, cluster)
    assert err is None, err
    assert _end_txn_requests(cluster) == [True, True]
    assert client._producer.txn.txn.state is TxnState.READY
    close(client, loop)


def test_a_commit_whose_answers_are_all_lost_says_its_outcome_is_unknown(loop, fake_cluster):
    """Every EndTxn(commit) is written and its connection closes before the answer: once
    delivery_timeout_ms is over the commit fails, flagged txn_outcome_unknown (it may have
    committed), requiring an abort, which then goes through."""
    cluster = fake_cluster(1)
    cluster.script(ApiKey.END_TXN, _ended)
    cluster.script(ApiKey.END_TXN, lambda req: HangUp() if req.body.committed else None)
    client, err = _commit_one_record(loop, cluster, delivery_timeout_ms=400)
    assert isinstance(err, KafkaError), err
    assert err.txn_outcome_unknown and err.txn_requires_abort and not err.fatal, err
    assert str(err).count("commit_transaction") == 1 and "outcome is unknown" in str(err), err
    ends = _end_txn_requests(cluster)
    assert len(ends) >= 2 and all(ends), ends  # retried until the deadline
    txn = client._producer.txn.txn
    assert txn.state is TxnState.ABORTABLE_ERROR and txn.error is err
    with pytest.raises(KafkaError, match="abort_transaction") as refused:
        client.commit_transaction(lambda e: None)
    assert refused.value.txn_requires_abort
    (err,) = call(loop, client.abort_transaction)
    assert err is None, err
    assert _end_txn_requests(cluster)[-1] is False
    assert txn.state is TxnState.READY
    close(client, loop)


def test_a_commit_refused_by_the_coordinator_has_a_known_outcome(loop, fake_cluster):
    """Answers that say the commit did not happen (here NOT_COORDINATOR until the deadline) are
    no unknown outcome."""
    cluster = fake_cluster(1)
    cluster.script(ApiKey.END_TXN, lambda req: _ended(req, NOT_COORDINATOR))
    client, err = _commit_one_record(loop, cluster, delivery_timeout_ms=400)
    assert isinstance(err, KafkaError) and err.code == NOT_COORDINATOR, err
    assert err.txn_requires_abort and not err.txn_outcome_unknown, err
    assert len(_end_txn_requests(cluster)) >= 2
    close(client, loop)


def test_the_unknown_outcome_flag_survives_pickling():
    err = KafkaError(TRANSPORT, "lost", txn_requires_abort=True, txn_outcome_unknown=True)
    again = pickle.loads(pickle.dumps(err))
    assert again.txn_outcome_unknown and again.txn_requires_abort and again.message == "lost"
    assert not KafkaError(TRANSPORT).txn_outcome_unknown


# --- CONCURRENT_TRANSACTIONS at a transaction's start ------------------------------------------------------
# A retry backoff no retry at the start of a transaction may wait: the short delay
# (CONCURRENT_TRANSACTIONS_BACKOFF_S) is taken instead, far below it even on a loaded machine.
LONG_BACKOFF_MS = 4000
WELL_BELOW_BACKOFF_S = LONG_BACKOFF_MS / 1000 / 2


def test_concurrent_transactions_delays_double_from_their_first_and_stay_under_the_backoff():
    usual_s = 0.1
    assert [concurrent_transactions_delay_s(n, usual_s) for n in range(3)] == [
        CONCURRENT_TRANSACTIONS_BACKOFF_S, 2 * CONCURRENT_TRANSACTIONS_BACKOFF_S, 4 * CONCURRENT_TRANSACTIONS_BACKOFF_S]
    # A TxnOffsetCommit past the markers' bound starts lower: its coordinator answers at once.
    assert OFFSETS_AFTER_MARKERS_BACKOFF_S < CONCURRENT_TRANSACTIONS_BACKOFF_S
    assert concurrent_transactions_delay_s(0, usual_s, OFFSETS_AFTER_MARKERS_BACKOFF_S) == OFFSETS_AFTER_MARKERS_BACKOFF_S
    assert concurrent_transactions_delay_s(20, usual_s, OFFSETS_AFTER_MARKERS_BACKOFF_S) == usual_s


def _slow_backoff_client(loop, cluster: FakeCluster) -> Client:
    cluster.create_topic(TOPIC, 1)
    cluster.script(ApiKey.END_TXN, _ended)
    client = Client(cluster.bootstrap, loop=loop, transactional_id=TXN_ID, retry_backoff_ms=LONG_BACKOFF_MS,
                    retry_backoff_max_ms=LONG_BACKOFF_MS, linger_ms=1)
    (err,) = call(loop, client.init_transactions)
    assert err is None, err
    return client


def _commit_records(loop, client: Client, count: int) -> None:
    client.begin_transaction()
    delivery = Delivery(count)
    for n in range(count):
        client.produce(TOPIC, None, b"%d" % n, delivery.cb(n), partition=0)
    (err,) = call(loop, client.commit_transaction)
    assert err is None, err
    delivery.assert_each_once()
    assert not delivery.errors


def test_the_first_add_of_a_transaction_retries_concurrent_transactions_at_once(loop, fake_cluster):
    """v1: the previous transaction is still completing, so the first AddPartitionsToTxn is
    answered CONCURRENT_TRANSACTIONS: sent again after milliseconds, not after the backoff."""
    cluster = fake_cluster(1)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, _added)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, lambda req: _added(req, CONCURRENT_TRANSACTIONS), times=1)
    client = _slow_backoff_client(loop, cluster)
    _commit_records(loop, client, 3)
    first, again = cluster.requests_of(ApiKey.ADD_PARTITIONS_TO_TXN)
    assert again.received_at - first.received_at < WELL_BELOW_BACKOFF_S
    close(client, loop)


def test_a_produce_refused_with_concurrent_transactions_is_retried_at_once(loop, fake_cluster):
    """The broker could not add the partition yet (v2's implicit add answers so once its own
    retries are over): the batch goes again after milliseconds, once, not after the backoff."""
    cluster = fake_cluster(1)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, _added)
    cluster.fail_next_append(CONCURRENT_TRANSACTIONS)
    client = _slow_backoff_client(loop, cluster)
    _commit_records(loop, client, 3)
    first, again = cluster.requests_of(ApiKey.PRODUCE)
    assert again.received_at - first.received_at < WELL_BELOW_BACKOFF_S
    assert cluster.log(TOPIC, 0).values() == [b"0", b"1", b"2"]  # written once, in order
    close(client, loop)


def _offsets_committed(req, code: int = NONE):
    return codec.TxnOffsetCommitResponse(throttle_time_ms=0, topics=[
        codec.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            codec.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions]) for t in req.body.topics])


def test_offsets_refused_with_concurrent_transactions_are_sent_again_at_once(loop, fake_cluster):
    """The offsets' group is added while the previous transaction completes: TxnOffsetCommit
    answered CONCURRENT_TRANSACTIONS goes again after milliseconds, not after the backoff."""
    cluster = fake_cluster(1)
    cluster.script(ApiKey.ADD_PARTITIONS_TO_TXN, _added)
    cluster.script(ApiKey.ADD_OFFSETS_TO_TXN, lambda req: codec.AddOffsetsToTxnResponse(throttle_time_ms=0,
                                                                                          error_code=NONE))
    cluster.script(ApiKey.TXN_OFFSET_COMMIT, _offsets_committed)
    cluster.script(ApiKey.TXN_OFFSET_COMMIT, lambda req: _offsets_committed(req, CONCURRENT_TRANSACTIONS), times=1)
    client = _slow_backoff_client(loop, cluster)
    client.begin_transaction()
    client.produce(TOPIC, None, b"out", partition=0)
    meta = ConsumerGroupMetadata("eos-group", 3, "member-1")
    (err,) = call(loop, lambda cb: client.send_offsets_to_transaction({("in", 0): 7}, meta, cb))
    assert err is None, err
    (err,) = call(loop, client.commit_transaction)
    assert err is None, err
    first, again = cluster.requests_of(ApiKey.TXN_OFFSET_COMMIT)
    assert again.received_at - first.received_at < WELL_BELOW_BACKOFF_S
    assert again.body.generation_id_or_member_epoch == 3 and again.body.topics[0].partitions[0].committed_offset == 7
    close(client, loop)
