"""Admin.describe_user_scram_credentials and alter_user_scram_credentials against the real broker:
a credential kafkaev sets lets a SCRAM login through (the salted password is right), and both
clients see the same credentials."""

from __future__ import annotations

import uuid

import pytest
from admin_helpers import eventually, result
from confluent_kafka.admin import ScramCredentialInfo as CScramCredentialInfo
from confluent_kafka.admin import ScramMechanism as CScramMechanism
from confluent_kafka.admin import UserScramCredentialUpsertion

from kafkaev.admin import ScramDeletion, ScramMechanism, ScramUpsertion
from kafkaev.client import Client
from kafkaev.errors import RESOURCE_NOT_FOUND
from kafkaev.security import SASLConfig

pytestmark = [pytest.mark.compat, pytest.mark.filterwarnings("ignore::kafkaev.security.InsecureCredentialsWarning")]

ITERATIONS = 8192
LOGIN_TIMEOUT_MS = 15000


def _peer_credentials(peer, user: str) -> list[tuple[int, int]]:
    [future] = peer.describe_user_scram_credentials([user]).values()
    return sorted((info.mechanism.value, info.iterations) for info in result(future).scram_credential_infos)


def _logs_in(cluster, mechanism: str, user: str, password: str) -> bool:
    client = Client(cluster.sasl_bootstrap, sasl=SASLConfig(mechanism, user, password),
                    request_timeout_ms=LOGIN_TIMEOUT_MS, connect_timeout_ms=LOGIN_TIMEOUT_MS)
    outcome: list[object] = []
    try:
        client.loop.call_soon(client.connect, lambda md, err: outcome.append(err))
        while not outcome:
            client.loop.run_until_complete(_tick())
    finally:
        client.close()
    return outcome == [None]


async def _tick() -> None:
    import asyncio

    await asyncio.sleep(0.05)


def test_upsert_log_in_describe_delete(secure_kafka, admin, peer):
    user = f"scram-{uuid.uuid4().hex[:8]}"
    password = "s3cret-" + uuid.uuid4().hex[:6]
    for change in (ScramUpsertion(user, ScramMechanism.SCRAM_SHA_256, password, ITERATIONS),
                   ScramUpsertion(user, ScramMechanism.SCRAM_SHA_512, password)):
        assert admin.run(admin.alter_user_scram_credentials, [change]) == {user: None}

    described = eventually(lambda: admin.run(admin.describe_user_scram_credentials, users=[user])[user],
                           lambda d: len(d.credentials) == 2)
    assert described.error is None
    ours = sorted((int(c.mechanism), c.iterations) for c in described.credentials)
    assert ours == [(ScramMechanism.SCRAM_SHA_256, ITERATIONS), (ScramMechanism.SCRAM_SHA_512, 4096)]
    assert ours == _peer_credentials(peer, user)
    assert user in admin.run(admin.describe_user_scram_credentials)  # every user

    # Described means the controller took the credential; the broker that checks logins replays it a
    # moment later, so the first login may still be refused. Once one got in, a wrong password is not.
    assert eventually(lambda: _logs_in(secure_kafka, "SCRAM-SHA-256", user, password), bool)
    assert eventually(lambda: _logs_in(secure_kafka, "SCRAM-SHA-512", user, password), bool)
    assert not _logs_in(secure_kafka, "SCRAM-SHA-512", user, password + "x")

    assert admin.run(admin.alter_user_scram_credentials, [ScramDeletion(user, ScramMechanism.SCRAM_SHA_256)]) == {
        user: None}
    assert eventually(lambda: _peer_credentials(peer, user), lambda c: len(c) == 1) == [
        (ScramMechanism.SCRAM_SHA_512, 4096)]
    assert admin.run(admin.alter_user_scram_credentials, [ScramDeletion(user, ScramMechanism.SCRAM_SHA_512)]) == {
        user: None}
    gone = eventually(lambda: admin.run(admin.describe_user_scram_credentials, users=[user])[user],
                      lambda d: d.error is not None)
    assert gone.error is not None and gone.error.code == RESOURCE_NOT_FOUND


def test_a_credential_the_peer_sets_is_one_kafkaev_reads(admin, peer):
    user = f"scram-peer-{uuid.uuid4().hex[:8]}"
    upsert = UserScramCredentialUpsertion(user, CScramCredentialInfo(CScramMechanism.SCRAM_SHA_512, 5000), b"pw")
    [future] = peer.alter_user_scram_credentials([upsert]).values()
    result(future)
    [info] = eventually(lambda: admin.run(admin.describe_user_scram_credentials, users=[user])[user].credentials,
                        lambda found: len(found) == 1)
    assert (info.mechanism, info.iterations) == (ScramMechanism.SCRAM_SHA_512, 5000)


def test_bad_arguments_name_the_argument(admin):
    with pytest.raises(ValueError, match="'mechanism'"):
        ScramUpsertion("u", 0, "pw")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'iterations'"):
        ScramUpsertion("u", ScramMechanism.SCRAM_SHA_256, "pw", 10)
    with pytest.raises(ValueError, match="'user'"):
        ScramDeletion("", ScramMechanism.SCRAM_SHA_256)
    with pytest.raises(TypeError, match="'alterations'"):
        admin.alter_user_scram_credentials([("u", "pw")], lambda r, e: None)
    with pytest.raises(ValueError, match="changes user 'u' twice"):
        admin.alter_user_scram_credentials([ScramUpsertion("u", ScramMechanism.SCRAM_SHA_256, "pw"),
                                            ScramDeletion("u", ScramMechanism.SCRAM_SHA_512)], lambda r, e: None)
    assert "pw" not in repr(ScramUpsertion("u", ScramMechanism.SCRAM_SHA_256, "pw-secret"))
