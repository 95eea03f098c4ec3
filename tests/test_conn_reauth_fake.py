"""KIP-368 re-authentication against a scripted fake broker, for what the real one will not show
on demand: the wire order (requests made while re-authenticating reach the broker after the new
SASL exchange, though their correlation ids are older), and a re-authentication the broker
refuses (in-flight and held requests each fail once, in the order they were made)."""

from __future__ import annotations

import asyncio
import uuid
import warnings

import pytest
from conn_support import connect
from fake_broker import Delay, FakeBroker, FakeRequest, RawBytes, Reply, normal_reply, reply_frame
from secret_guard import no_secret_in_output  # noqa: F401  (autouse: no secret in any output)

from kafkaev import errors
from kafkaev.protocol import codec
from kafkaev.protocol.connection import Connection
from kafkaev.security import InsecureCredentialsWarning, SASLConfig

SESSION_MS = 300
ANSWER_DELAY_S = 0.03
DEPTH = 4
RUN_S = 0.6
SETTLE_S = 10.0  # for the answers still pending when the run stops
# Past the connection's shared receive buffer (256 KiB): such an answer is framed in its own buffer.
BIG_ANSWER_TOPICS = 1500
BIG_TOPIC_NAME_LENGTH = 200
PASSWORD = "fake-broker-password"
SECRETS = (PASSWORD,)


class Script:
    """PLAIN accepted with a SESSION_MS session the first time; the second SaslAuthenticate is
    accepted with no further lifetime, or refused."""

    def __init__(self, refuse_reauth: bool) -> None:
        self.refuse_reauth = refuse_reauth
        self.authentications = 0

    def respond(self, req: FakeRequest) -> Reply:
        if req.api_key == codec.ApiKey.SASL_HANDSHAKE:
            return Reply(reply_frame(req, codec.SaslHandshakeResponse(error_code=0, mechanisms=["PLAIN"])))
        if req.api_key == codec.ApiKey.SASL_AUTHENTICATE:
            self.authentications += 1
            if self.authentications == 1:
                answer = codec.SaslAuthenticateResponse(error_code=0, auth_bytes=b"", session_lifetime_ms=SESSION_MS)
            elif self.refuse_reauth:
                answer = codec.SaslAuthenticateResponse(error_code=errors.SASL_AUTHENTICATION_FAILED,
                                                        error_message="session refused", auth_bytes=b"")
            else:
                answer = codec.SaslAuthenticateResponse(error_code=0, auth_bytes=b"", session_lifetime_ms=0)
            return Reply(reply_frame(req, answer))
        return normal_reply(req)


def _big_metadata(req: FakeRequest) -> bytes:
    topics = [codec.MetadataResponseTopic(error_code=0, name=f"{i:05d}".ljust(BIG_TOPIC_NAME_LENGTH, "t"),
                                          topic_id=uuid.uuid4(), is_internal=False, partitions=[],
                                          topic_authorized_operations=0)
              for i in range(BIG_ANSWER_TOPICS)]
    body = codec.MetadataResponse(throttle_time_ms=0, brokers=[], cluster_id="fake", controller_id=-1, topics=topics)
    return reply_frame(req, body)


async def _run(loop, refuse_reauth: bool, big_answers: bool = False):
    script = Script(refuse_reauth)
    broker = await FakeBroker(script.respond).start()
    answer = _big_metadata if big_answers else (lambda req: normal_reply(req).data)
    broker.cluster.script(codec.ApiKey.METADATA, lambda req: Delay(ANSWER_DELAY_S, RawBytes(answer(req))))
    conn = Connection(loop, sasl=SASLConfig("PLAIN", "alice", PASSWORD))
    reported: list[BaseException] = []
    conn.on_error = reported.append
    answers: list[tuple[int, object]] = []
    sent = 0
    running = True

    def send() -> None:
        nonlocal sent
        index = sent
        sent += 1
        conn.metadata([], lambda resp, err: answered(index, err))

    def answered(index: int, err) -> None:
        answers.append((index, err))
        if running and err is None:
            send()

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InsecureCredentialsWarning)
            assert await connect(conn, f"127.0.0.1:{broker.port}") is None
        for _ in range(DEPTH):
            send()
        await asyncio.sleep(RUN_S)
        running = False
        deadline = loop.time() + SETTLE_S
        while conn.pending and loop.time() < deadline:
            await asyncio.sleep(ANSWER_DELAY_S)
        return conn.state, conn.reauthentications, broker.requests, answers, sent, reported
    finally:
        conn.disconnect()
        await broker.stop()


@pytest.mark.parametrize("big_answers", [False, True], ids=["small-answers", "answers-framed-apart"])
def test_requests_made_while_reauthenticating_go_out_after_it_in_order(loop, big_answers):
    state, reauths, requests, answers, sent, reported = loop.run_until_complete(
        _run(loop, refuse_reauth=False, big_answers=big_answers))
    assert not reported and reauths == 1 and state == "ready"
    assert answers == [(i, None) for i in range(sent)]
    keys = [r.api_key for r in requests]
    second = [i for i, key in enumerate(keys) if key == codec.ApiKey.SASL_HANDSHAKE][1]
    assert keys[second + 1] == codec.ApiKey.SASL_AUTHENTICATE
    after = [r for r in requests[second + 2:] if r.api_key == codec.ApiKey.METADATA]
    # Held: made (and numbered) before the exchange was sent, on the wire after it.
    assert after and after[0].correlation_id < requests[second].correlation_id
    ids = [r.correlation_id for r in requests if r.api_key == codec.ApiKey.METADATA]
    assert ids == sorted(ids)  # the metadata requests themselves in the order made


def test_a_refused_reauthentication_fails_every_request_once_in_order(loop):
    state, reauths, _requests, answers, sent, reported = loop.run_until_complete(_run(loop, refuse_reauth=True))
    assert [index for index, _err in answers] == list(range(sent))  # each once, in order
    failed = [err for _index, err in answers if err is not None]
    assert failed and all(err.code == errors.AUTHENTICATION for err in failed)
    assert len(reported) == 1 and reported[0].code == errors.AUTHENTICATION
    assert "re-authentication" in str(reported[0]) and "session refused" in str(reported[0])
    assert reauths == 0 and state == "disconnected"
