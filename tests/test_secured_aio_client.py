"""kafkaev.aio whole-client runs on the secured cluster (ACLs on, sessions of 10 s that must be
re-authenticated), as test_secured_client.py does for the callback API: a kafkaev.aio.Client
produces 100,000 records (awaited in windows), consumes them in a group (getmany) and runs
kafkaev.aio.Admin calls over mutual TLS, SASL_SSL SCRAM-SHA-512 and SASL_SSL OAUTHBEARER (tokens
from the built-in OIDC provider); on SASL every connection past its re-authentication has
re-authenticated (LoginAges)."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)
from test_secured_client import PARTITIONS, RECORDS, RUN_TIMEOUT_S, LoginAges, _setup

import kafkaev.aio
from kafkaev.types import RecordMetadata

PRODUCE_WINDOW = 5000
GETMANY_TIMEOUT_MS = 2000
GETMANY_MAX_RECORDS = 10000


async def _produce(client: kafkaev.aio.Client, topic: str) -> dict[int, RecordMetadata]:
    """Every record produced, awaited a window at a time: its metadata by index."""
    delivered: dict[int, RecordMetadata] = {}
    for start in range(0, RECORDS, PRODUCE_WINDOW):
        indexes = range(start, min(start + PRODUCE_WINDOW, RECORDS))
        window = [client.produce(topic, b"%d" % i, b"value-%d" % i) for i in indexes]
        for index, meta in zip(indexes, await asyncio.gather(*window), strict=True):
            delivered[index] = meta
    return delivered


async def _consume(client: kafkaev.aio.Client, deadline: float) -> dict[tuple[str, int], list[int]]:
    """Offsets read by partition, until RECORDS arrived (or the deadline)."""
    offsets: dict[tuple[str, int], list[int]] = {}
    count = 0
    while count < RECORDS and time.monotonic() < deadline:
        batch = await client.getmany(timeout_ms=GETMANY_TIMEOUT_MS, max_records=GETMANY_MAX_RECORDS)
        for tp, messages in batch.items():
            offsets.setdefault((tp.topic, tp.partition), []).extend(m.offset for m in messages)
            count += len(messages)
    return offsets


@pytest.mark.parametrize("kind", ["mutual-tls", "SCRAM-SHA-512", "OAUTHBEARER"])
def test_whole_aio_client_on_a_secured_cluster(secured_kafka, uv, kind):
    bootstrap, options, topic = _setup(secured_kafka, kind, "aio-whole")
    group = f"aio-whole-{kind}-{uuid.uuid4().hex[:8]}"
    client_errors: list[BaseException] = []

    ages: list[LoginAges] = []

    async def body() -> dict[str, Any]:
        async with kafkaev.aio.Client(bootstrap, acks=-1, idempotent=True, linger_ms=5, on_error=client_errors.append,
                                      **options) as client:
            ages.append(LoginAges(client.loop, client._client._pool, secured_kafka.reauth_ms / 1000))
            delivered = await _produce(client, topic)
            await client.subscribe([topic], group_id=group)
            consumed = await _consume(client, time.monotonic() + RUN_TIMEOUT_S)
            async with kafkaev.aio.Admin(client) as admin:
                listed = await admin.list_topics()
                described = await admin.describe_topics([topic])
                groups = await admin.describe_groups([group])
                created = await admin.create_topics([f"{topic}-made"])
            if kind != "mutual-tls":
                await ages[0].wait_until_one_is_due()
                ages[0].assert_each_due_reauthenticated()
            ages[0].stop()
            return {"delivered": delivered, "consumed": consumed, "listed": listed, "described": described,
                    "groups": groups, "created": created}

    out = uv.run_until_complete(asyncio.wait_for(body(), 3 * RUN_TIMEOUT_S))
    assert not client_errors, client_errors
    delivered, consumed = out["delivered"], out["consumed"]
    assert len(delivered) == RECORDS
    expected: dict[tuple[str, int], list[int]] = {}
    for meta in delivered.values():
        expected.setdefault((meta.topic, meta.partition), []).append(meta.offset)
    assert {key: sorted(offsets) for key, offsets in expected.items()} == consumed, \
        "consumed offsets differ from the delivered ones"
    assert len(out["listed"][topic].partitions) == PARTITIONS
    assert len(out["described"][topic].partitions) == PARTITIONS
    description = out["groups"][group]
    assert description.error is None and len(description.members) == 1
    assert out["created"] == {f"{topic}-made": None}
