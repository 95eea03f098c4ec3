"""The hand-written ProduceResponse decoder (protocol/codec_produce_response.pxi) against the
generated tables' walker, on every version the client sends: the same objects from the same
bytes, random bodies with every optional part (record errors, the tagged current leader and
node endpoints, unknown tags), and the same error, naming the same field, at every truncation."""

import random

import pytest
from test_messages_roundtrip import build

from kafkaev.errors import ProtocolError
from kafkaev.protocol import codec as P

PRODUCE = P.ApiKey.PRODUCE
VERSIONS = range(P.SUPPORTED_VERSIONS[PRODUCE][0], P.SUPPORTED_VERSIONS[PRODUCE][1] + 1)
BODIES_PER_VERSION = 200
CORRELATION_ID = 4242


def _with_unknown_tags(body, rnd):
    """Tags no schema knows, on each struct of a flexible version: kept as raw bytes."""
    structs = [body]
    for topic in body.responses:
        structs.append(topic)
        structs.extend(topic.partition_responses)
    for struct in structs:
        if rnd.random() < 0.3:
            struct.unknown_tagged_fields = {rnd.randint(7, 40): bytes(rnd.getrandbits(8) for _ in range(3))}
    return body


def _frames(version: int):
    rnd = random.Random(f"produce-response-{version}")
    flexible = P.response_header_version(PRODUCE, version) >= 1
    for _ in range(BODIES_PER_VERSION):
        body = build(P.ProduceResponse, version, rnd)
        if flexible:
            body = _with_unknown_tags(body, rnd)
        yield body, P.encode_response_frame(PRODUCE, version, CORRELATION_ID, body)[4:]


@pytest.mark.parametrize("version", VERSIONS)
def test_hand_written_and_generated_decoders_agree(version):
    for body, payload in _frames(version):
        corr, by_hand = P.decode_response_frame(PRODUCE, version, payload)
        corr_tables, by_tables = P.decode_response_with_tables(PRODUCE, version, payload)
        assert corr == corr_tables == CORRELATION_ID
        assert by_hand == by_tables == body
        assert repr(by_hand) == repr(by_tables)  # same types field by field, not just equal values
        assert P.encode_response_frame(PRODUCE, version, CORRELATION_ID, by_hand)[4:] == payload


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_fails_alike_naming_the_field(version):
    body, payload = max(_frames(version), key=lambda pair: len(pair[1]))  # the fullest body
    assert body.responses, "a body with topics"
    for cut in range(len(payload)):
        with pytest.raises(ProtocolError) as by_hand:
            P.decode_response_frame(PRODUCE, version, payload[:cut])
        with pytest.raises(ProtocolError) as by_tables:
            P.decode_response_with_tables(PRODUCE, version, payload[:cut])
        assert str(by_hand.value) == str(by_tables.value), cut
        assert f"Produce v{version} response" in str(by_hand.value) or cut < 4


def test_a_null_topic_name_is_refused_like_the_walker_does():
    version = 8  # classic: a string of length -1 is null
    body = P.ProduceResponse(responses=[P.TopicProduceResponse(name="t", partition_responses=[])])
    payload = bytearray(P.encode_response_frame(PRODUCE, version, CORRELATION_ID, body)[4:])
    name_at = 4 + 4  # correlation id, then the topics' array length
    payload[name_at:name_at + 3] = b"\xff\xff"  # length -1 instead of 1 + "t"
    for decode in (P.decode_response_frame, P.decode_response_with_tables):
        with pytest.raises(ProtocolError, match="name.*is null but the field is not nullable"):
            decode(PRODUCE, version, bytes(payload))
