"""ACL denials on the secured cluster (StandardAuthorizer), as ``kafkaev-limited`` (an OAuth client
allowed the ``allowed-`` topics and groups only): each denial reaches the place that asked, once,
with its error code and a clear message, and is not retried (a bounded number of requests). A
transactional id is allowed by the same prefix: a denied one fails ``init_transactions`` once, fatally."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka.admin import AclOperation, ResourceType
from consumer_helpers import Received, call
from producer_helpers import Delivery, produce_all, wait_for
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev import errors
from kafkaev.admin import Admin
from kafkaev.client import Client
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection
from kafkaev.security import SASLConfig, TLSConfig
from kafkaev.testing.secured import LIMITED_CLIENT_ID, LIMITED_CLIENT_SECRET, Grant

LIMITED = f"User:{LIMITED_CLIENT_ID}"
ALLOWED_PREFIX = "allowed-"
RECORDS = 50
# Metadata refreshes and the produce requests of RECORDS records to two topics, with slack: a
# client retrying a denial would pass this within a second.
REQUEST_BOUND = 60
TIMEOUT_S = 30.0
BROKER_RESOURCE = 4  # DescribeConfigs resource type of a broker


@pytest.fixture(scope="module")
def limited(secured_kafka):
    secured_kafka.allow(
        *(Grant(LIMITED, ResourceType.TOPIC, ALLOWED_PREFIX, op, prefixed=True)
          for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)),
        Grant(LIMITED, ResourceType.GROUP, ALLOWED_PREFIX, AclOperation.READ, prefixed=True),
        *(Grant(LIMITED, ResourceType.TRANSACTIONAL_ID, ALLOWED_PREFIX, op, prefixed=True)
          for op in (AclOperation.WRITE, AclOperation.DESCRIBE)),
    )
    return secured_kafka


def _options(secured) -> dict:
    return {
        "tls": TLSConfig(cafile=str(secured.local.ca_cert)),
        "sasl": SASLConfig.oauthbearer(secured.oidc_provider(LIMITED_CLIENT_ID, LIMITED_CLIENT_SECRET)),
    }


def _topic(secured, prefix: str) -> str:
    return secured.local.create_topic(f"{prefix}{uuid.uuid4().hex[:10]}", partitions=1)


def _requests(client: Client) -> int:
    return sum(p.conn.requests_sent for p in client._pool.connections())


def test_denied_topic_fails_each_record_once_while_the_allowed_topic_flows(limited, uv):
    loop = uv
    allowed, denied = _topic(limited, ALLOWED_PREFIX), _topic(limited, "denied-")
    errors_seen: list[BaseException] = []
    client = Client(limited.local.sasl_ssl_bootstrap, loop=uv, acks=-1, on_error=errors_seen.append,
                    **_options(limited))
    ok, refused = Delivery(RECORDS), Delivery(RECORDS)
    records = [(None, b"r%d" % i) for i in range(RECORDS)]

    async def main() -> None:
        await produce_all(client, denied, records, refused)
        await produce_all(client, allowed, records, ok)
        await wait_for(lambda: ok.complete and refused.complete, TIMEOUT_S, "every callback")
        await asyncio.sleep(1.0)  # room for a retry storm to show in the count, and for second calls

    loop.run_until_complete(main())
    sent = _requests(client)
    close = loop.create_future()
    client.close(close.set_result)
    loop.run_until_complete(close)
    ok.assert_each_once()
    refused.assert_each_once()
    assert not ok.errors and len(ok.metas) == RECORDS
    assert set(refused.errors) == set(range(RECORDS))
    for err in refused.errors.values():
        assert err.code == errors.TOPIC_AUTHORIZATION_FAILED, err
        assert denied in str(err)
    assert sent <= REQUEST_BOUND, f"{sent} requests: the denial was retried"


def test_denied_group_fails_the_subscription(limited, uv):
    loop = uv
    topic = _topic(limited, ALLOWED_PREFIX)
    errors_seen: list[BaseException] = []
    received = Received()
    client = Client(limited.local.sasl_ssl_bootstrap, loop=uv, on_error=errors_seen.append,
                    on_message=received.on_message, **_options(limited))
    client.subscribe([topic], group_id=f"denied-{uuid.uuid4().hex[:8]}")
    loop.run_until_complete(wait_for(lambda: bool(errors_seen), TIMEOUT_S, "the group's denial"))
    loop.run_until_complete(asyncio.sleep(2.0))
    sent = _requests(client)
    close = loop.create_future()
    client.close(close.set_result)
    loop.run_until_complete(close)
    denials = [e for e in errors_seen if getattr(e, "code", None) == errors.GROUP_AUTHORIZATION_FAILED]
    assert len(denials) == 1 and len(errors_seen) == 1, errors_seen
    assert "denied-" in str(denials[0])
    assert sent <= REQUEST_BOUND, f"{sent} requests: the denial was retried"


def test_denied_cluster_operations_are_reported_by_the_admin_calls(limited, uv):
    loop = uv
    admin = Admin(limited.local.sasl_ssl_bootstrap, loop=uv, **_options(limited))
    try:
        future = loop.create_future()
        admin.create_topics([f"{ALLOWED_PREFIX}{uuid.uuid4().hex[:8]}"], lambda r, e: future.set_result((r, e)))
        result, err = loop.run_until_complete(asyncio.wait_for(future, TIMEOUT_S))
        codes = {name: (e.code if e is not None else None) for name, e in (result or {}).items()}
        assert err is not None or set(codes.values()) == {errors.TOPIC_AUTHORIZATION_FAILED}, (result, err)
        if err is not None:
            assert err.code in (errors.TOPIC_AUTHORIZATION_FAILED, errors.CLUSTER_AUTHORIZATION_FAILED), err
    finally:
        admin.close()

    async def describe_broker_configs():
        conn = Connection(loop, **_options(limited))
        done = loop.create_future()
        host, port = limited.local.sasl_ssl_bootstrap.split(":")
        conn.connect(host, int(port), cb=lambda c, e: done.set_result(e))
        assert await done is None
        answer = loop.create_future()
        broker = codec.DescribeConfigsResource(resource_type=BROKER_RESOURCE, resource_name="1",
                                               configuration_keys=None)
        conn.describe_configs([broker], lambda r, e: answer.set_result((r, e)))
        response, err = await answer
        conn.disconnect()
        return response, err

    # A broker's configuration needs DESCRIBE_CONFIGS on the cluster, which the client lacks.
    response, err = loop.run_until_complete(describe_broker_configs())
    assert err is None and [r.error_code for r in response.results] == [errors.CLUSTER_AUTHORIZATION_FAILED]


def test_a_denied_transactional_id_fails_init_transactions_once_and_fatally(limited, uv):
    """``kafkaev-limited`` may use the ``allowed-`` transactional ids only: with any other,
    init_transactions is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED once, fatal, naming the
    id, not retried; every later transactional call is refused with that cause. The allowed id
    initializes and commits on the same cluster, as the same user."""
    loop = uv
    topic = _topic(limited, ALLOWED_PREFIX)
    denied_id = f"denied-txn-{uuid.uuid4().hex[:8]}"
    errors_seen: list[BaseException] = []
    client = Client(limited.local.sasl_ssl_bootstrap, loop=uv, transactional_id=denied_id,
                    on_error=errors_seen.append, **_options(limited))
    (err,) = call(loop, client.init_transactions, TIMEOUT_S)
    loop.run_until_complete(asyncio.sleep(1.0))  # room for a retry storm to show in the count
    sent = _requests(client)
    assert isinstance(err, errors.KafkaError), err
    assert err.code == errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED and err.fatal, err
    assert denied_id in str(err), err
    assert sent <= REQUEST_BOUND, f"{sent} requests: the denial was retried"
    for start in (client.init_transactions, client.commit_transaction):
        with pytest.raises(errors.KafkaError, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED") as refused:
            start(lambda e: None)
        assert refused.value.fatal and denied_id in str(refused.value)
    with pytest.raises(errors.KafkaError, match="TRANSACTIONAL_ID_AUTHORIZATION_FAILED"):
        client.begin_transaction()
    close = loop.create_future()
    client.close(close.set_result)
    loop.run_until_complete(close)
    assert not errors_seen, errors_seen  # the denial reached init_transactions' callback only

    allowed = Client(limited.local.sasl_ssl_bootstrap, loop=uv, transactional_id=f"{ALLOWED_PREFIX}txn-{uuid.uuid4().hex[:8]}",
                     **_options(limited))
    (err,) = call(loop, allowed.init_transactions, TIMEOUT_S)
    assert err is None, err
    allowed.begin_transaction()
    delivery = Delivery(1)
    allowed.produce(topic, None, b"committed", delivery.cb(0))
    (err,) = call(loop, allowed.commit_transaction, TIMEOUT_S)
    assert err is None, err
    delivery.assert_each_once()
    assert not delivery.errors
    close = loop.create_future()
    allowed.close(close.set_result)
    loop.run_until_complete(close)
