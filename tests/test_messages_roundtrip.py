"""Every API at every version: requests and responses filled with random non-default
values survive encode -> decode, re-encode to the same bytes, and read the same in
kafka-python's independent implementation of the schemas."""

import importlib
import pkgutil
import random
import uuid

import pytest

from kafkaev.errors import ProtocolError
from kafkaev.protocol import codec as P

INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1),
    "uint32": (0, (1 << 32) - 1),
}

CASES = [
    (key, version)
    for key, (lo, hi) in sorted(P.SUPPORTED_VERSIONS.items())
    for version in range(lo, hi + 1)
]


def _ids(case):
    key, version = case
    return f"{P.API_NAMES[key]}-v{version}"


def _in(rng, v):
    return rng[0] <= v <= rng[1]


def _scalar(rnd, type_name, version, nullable, depth):
    if type_name in INT_RANGES:
        lo, hi = INT_RANGES[type_name]
        return rnd.choice([lo, hi, rnd.randint(lo, hi), 1])
    if type_name == "float64":
        return rnd.uniform(-1e9, 1e9)
    if type_name == "bool":
        return rnd.random() < 0.5
    if nullable and rnd.random() < 0.25:
        return None
    if type_name == "string":
        return rnd.choice(["", "tópico-", "组-", "x" * 200]) + str(rnd.randint(0, 10**6))
    if type_name in ("bytes", "records"):
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 40)))
    if type_name == "uuid":
        return uuid.UUID(int=rnd.getrandbits(128))
    return build(getattr(P, type_name), version, rnd, depth + 1)


def build(cls, version, rnd, depth=0):
    """An instance with random values in every field the version carries."""
    values = {}
    for name, type_name, versions, nullable, _tag, _tagged in P.message_spec(cls):
        if not _in(versions, version):
            continue
        is_null = _in(nullable, version)
        if type_name.startswith("[]"):
            if is_null and rnd.random() < 0.2:
                values[name] = None
                continue
            count = rnd.randint(0, 2) if depth < 4 else 0
            values[name] = [_scalar(rnd, type_name[2:], version, False, depth) for _ in range(count)]
        else:
            values[name] = _scalar(rnd, type_name, version, is_null, depth)
    return cls(**values)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_request_roundtrip(case):
    key, version = case
    rnd = random.Random(f"req-{key}-{version}")
    for _ in range(5):
        body = build(P.REQUEST_CLASSES[key], version, rnd)
        frame = P.encode_request_frame(key, version, 12345, "client-ü", body)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        api_key, got_version, corr, client_id, decoded = P.decode_request_frame(frame[4:])
        assert (api_key, got_version, corr, client_id) == (key, version, 12345, "client-ü")
        assert decoded == body
        assert P.encode_request_frame(key, version, 12345, "client-ü", decoded) == frame


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_response_roundtrip(case):
    key, version = case
    rnd = random.Random(f"resp-{key}-{version}")
    for _ in range(5):
        body = build(P.RESPONSE_CLASSES[key], version, rnd)
        if key == P.ApiKey.API_VERSIONS and version > 0 and body.error_code == 35:
            body.error_code = 0  # 35 switches the decoder to the v0 fallback body
        frame = P.encode_response_frame(key, version, 777, body)
        corr, decoded = P.decode_response_frame(key, version, frame[4:])
        assert corr == 777
        assert decoded == body
        assert P.encode_response_frame(key, version, 777, decoded) == frame


# ---- an independent implementation: kafka-python's schema-driven protocol classes


def _kafka_python_classes():
    try:
        import kafka.protocol as kp
        from kafka.protocol.api_message import ApiMessage
    except ImportError:
        return {}
    for mod in pkgutil.walk_packages(kp.__path__, kp.__name__ + "."):
        if ".schemas" in mod.name:
            continue
        try:
            importlib.import_module(mod.name)
        except Exception:
            continue
    found = {}
    todo = [ApiMessage]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            if getattr(sub, "_class_version", None) is None and getattr(sub, "_json", None):
                found[sub.__name__] = sub
    return found


KP = _kafka_python_classes()


def _header_length(key, version, client_id):
    # api_key, api_version, correlation_id, client_id (classic), tagged fields in v2
    return 8 + 2 + len(client_id.encode()) + (1 if P.request_header_version(key, version) == 2 else 0)


def _kp_versions(cls):
    lo, hi = cls._valid_versions
    return lo, hi


@pytest.mark.skipif(not KP, reason="kafka-python not installed")
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_request_bytes_read_identically_by_kafka_python(case):
    key, version = case
    name = P.API_NAMES[key]
    kp_req = KP.get(name + "Request")
    if kp_req is None or not (_kp_versions(kp_req)[0] <= version <= _kp_versions(kp_req)[1]):
        pytest.skip(f"kafka-python has no {name} v{version}")
    rnd = random.Random(f"kp-req-{key}-{version}")
    for _ in range(3):
        body = build(P.REQUEST_CLASSES[key], version, rnd)
        frame = P.encode_request_frame(key, version, 1, "c", body)
        ours = frame[4 + _header_length(key, version, "c"):]
        theirs = kp_req.decode(ours, version=version, header=False)
        theirs._header = None  # decode(header=False) leaves the slot unset
        assert theirs.encode(version=version, header=False) == ours


@pytest.mark.skipif(not KP, reason="kafka-python not installed")
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_response_bytes_read_identically_by_kafka_python(case):
    key, version = case
    name = P.API_NAMES[key]
    kp_resp = KP.get(name + "Response")
    if kp_resp is None or not (_kp_versions(kp_resp)[0] <= version <= _kp_versions(kp_resp)[1]):
        pytest.skip(f"kafka-python has no {name} v{version}")
    rnd = random.Random(f"kp-resp-{key}-{version}")
    for _ in range(3):
        body = build(P.RESPONSE_CLASSES[key], version, rnd)
        if key == P.ApiKey.API_VERSIONS:
            body.error_code = 0
        frame = P.encode_response_frame(key, version, 1, body)
        ours = frame[4 + 4 + P.response_header_version(key, version):]
        theirs = kp_resp.decode(ours, version=version, header=False)
        theirs._header = None
        assert theirs.encode(version=version, header=False) == ours


# ---- header rules and version handling


def test_request_header_versions_follow_each_apis_first_flexible_version():
    assert P.request_header_version(P.ApiKey.PRODUCE, 8) == 1
    assert P.request_header_version(P.ApiKey.PRODUCE, 9) == 2
    assert P.request_header_version(P.ApiKey.FETCH, 11) == 1
    assert P.request_header_version(P.ApiKey.FETCH, 12) == 2
    assert P.request_header_version(P.ApiKey.SASL_HANDSHAKE, 1) == 1  # never flexible
    assert P.response_header_version(P.ApiKey.METADATA, 9) == 1
    # ApiVersions answers with header v0 even at flexible versions.
    assert P.response_header_version(P.ApiKey.API_VERSIONS, 3) == 0


def test_client_id_is_a_classic_string_in_header_v2():
    frame = P.encode_request_frame(P.ApiKey.METADATA, 12, 9, "abc", P.MetadataRequest())
    assert frame[4:] [:10] == b"\x00\x03\x00\x0c\x00\x00\x00\x09\x00\x03"
    assert frame[14:17] == b"abc"
    assert frame[17] == 0  # empty header tagged fields
    null_client = P.encode_request_frame(P.ApiKey.METADATA, 12, 9, None, P.MetadataRequest())
    assert null_client[12:14] == b"\xff\xff"


def test_api_versions_v0_fallback_body_on_unsupported_version():
    v0 = P.ApiVersionsResponse(error_code=35, api_keys=[P.ApiVersion(api_key=18, min_version=0, max_version=3)])
    frame = P.encode_response_frame(P.ApiKey.API_VERSIONS, 0, 5, v0)
    corr, decoded = P.decode_response_frame(P.ApiKey.API_VERSIONS, 4, frame[4:])
    assert corr == 5
    assert decoded.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys] == [(18, 0, 3)]


def test_tagged_fields_decode_into_attributes():
    leader = P.ProduceResponseLeaderIdAndEpoch(leader_id=3, leader_epoch=17)
    body = P.ProduceResponse(
        responses=[P.TopicProduceResponse(name="t", partition_responses=[
            P.PartitionProduceResponse(index=0, error_code=6, current_leader=leader)])],
        node_endpoints=[P.ProduceResponseNodeEndpoint(node_id=3, host="h", port=9092, rack=None)],
    )
    frame = P.encode_response_frame(P.ApiKey.PRODUCE, 11, 1, body)
    _, decoded = P.decode_response_frame(P.ApiKey.PRODUCE, 11, frame[4:])
    part = decoded.responses[0].partition_responses[0]
    assert part.current_leader == leader
    assert decoded.node_endpoints[0].port == 9092
    # Before v10 the tags do not exist: nothing is written, decoding yields the defaults.
    frame9 = P.encode_response_frame(P.ApiKey.PRODUCE, 9, 1, body)
    _, decoded9 = P.decode_response_frame(P.ApiKey.PRODUCE, 9, frame9[4:])
    assert decoded9.responses[0].partition_responses[0].current_leader is None
    assert decoded9.node_endpoints == []


def test_unknown_tags_are_kept_and_written_back():
    body = P.HeartbeatResponse(error_code=0, unknown_tagged_fields={42: b"future", 7: b"x"})
    frame = P.encode_response_frame(P.ApiKey.HEARTBEAT, 4, 1, body)
    _, decoded = P.decode_response_frame(P.ApiKey.HEARTBEAT, 4, frame[4:])
    assert decoded.unknown_tagged_fields == {7: b"x", 42: b"future"}
    assert P.encode_response_frame(P.ApiKey.HEARTBEAT, 4, 1, decoded) == frame


def test_fetch_records_are_a_zero_copy_view_of_the_frame():
    payload = bytes(range(256)) * 4
    body = P.FetchResponse(responses=[P.FetchableTopicResponse(topic="t", partitions=[
        P.PartitionData(partition_index=0, high_watermark=10, records=payload)])])
    for version in (4, 12, 17):
        frame = P.encode_response_frame(P.ApiKey.FETCH, version, 1, body)
        _, decoded = P.decode_response_frame(P.ApiKey.FETCH, version, frame[4:])
        records = decoded.responses[0].partitions[0].records
        assert isinstance(records, memoryview)
        assert records.obj is not None and bytes(records) == payload


def test_trailing_bytes_after_a_body_are_ignored():
    frame = P.encode_response_frame(P.ApiKey.HEARTBEAT, 3, 1, P.HeartbeatResponse(error_code=27))
    _, decoded = P.decode_response_frame(P.ApiKey.HEARTBEAT, 3, frame[4:] + b"\x00\x01newer")
    assert decoded.error_code == 27


def test_truncated_body_names_api_version_and_field():
    frame = P.encode_response_frame(P.ApiKey.HEARTBEAT, 3, 1, P.HeartbeatResponse(error_code=27))
    with pytest.raises(ProtocolError, match=r"Heartbeat v3 response: field 'error_code' runs past the end"):
        P.decode_response_frame(P.ApiKey.HEARTBEAT, 3, frame[4:-1])


def test_consumer_protocol_payloads_all_versions():
    for version in range(0, 4):
        sub = P.ConsumerProtocolSubscription(
            topics=["a", "b"], user_data=b"ud",
            owned_partitions=[P.ConsumerProtocolSubscriptionTopicPartition(topic="a", partitions=[0, 2])] if version >= 1 else [],
            generation_id=7 if version >= 2 else -1, rack_id="r1" if version >= 3 else None)
        data = P.encode_consumer_protocol_subscription(sub, version)
        assert data[:2] == version.to_bytes(2, "big")
        assert P.decode_consumer_protocol_subscription(data) == sub
        asg = P.ConsumerProtocolAssignment(
            assigned_partitions=[P.ConsumerProtocolAssignmentTopicPartition(topic="a", partitions=[1])], user_data=None)
        data = P.encode_consumer_protocol_assignment(asg, version)
        assert P.decode_consumer_protocol_assignment(data) == asg


def test_consumer_protocol_newer_version_decodes_known_prefix():
    sub = P.ConsumerProtocolSubscription(topics=["a"], user_data=None, generation_id=3, rack_id="x")
    data = P.encode_consumer_protocol_subscription(sub, 3)
    future = b"\x00\x09" + data[2:] + b"\x00\x00future-fields"
    assert P.decode_consumer_protocol_subscription(future) == sub


def test_bad_arguments_fail_at_once_naming_them():
    with pytest.raises(TypeError, match="PartitionProduceData.index must be an int"):
        P.PartitionProduceData(index="0")
    with pytest.raises(ValueError, match="ProduceRequest.acks = 70000 is out of range for int16"):
        P.ProduceRequest(acks=70000)
    with pytest.raises(TypeError, match="unexpected keyword argument.*partiton"):
        P.PartitionProduceData(partiton=1)
    with pytest.raises(TypeError, match="TopicProduceData.partition_data must be a list"):
        P.TopicProduceData(name="t", partition_data=P.PartitionProduceData())
    with pytest.raises(ValueError, match="api_version 99 is not supported for Produce"):
        P.encode_request_frame(0, 99, 1, None, P.ProduceRequest())
    with pytest.raises(TypeError, match="body must be a FetchRequest"):
        P.encode_request_frame(1, 12, 1, None, P.ProduceRequest())
    # Not nullable in this version: named at encode time.
    req = P.MetadataRequest(topics=None)
    with pytest.raises(ValueError, match="MetadataRequest.topics must not be None in version 0"):
        P.encode_request_frame(3, 0, 1, None, req)
    assert P.encode_request_frame(3, 1, 1, None, req)  # null means "all topics" from v1


def test_a_message_built_unchecked_equals_the_keyword_built_one_and_encodes_alike():
    topic_id = uuid.UUID(int=7)
    by_keywords = P.ProduceRequest(transactional_id="tx", acks=-1, timeout_ms=30000, topic_data=[
        P.TopicProduceData(name="t", topic_id=topic_id,
                           partition_data=[P.PartitionProduceData(index=2, records=b"batch")])])
    unchecked = P.built_unchecked(P.ProduceRequest, "tx", -1, 30000, [
        P.built_unchecked(P.TopicProduceData, "t", topic_id,
                          [P.built_unchecked(P.PartitionProduceData, 2, b"batch")])])
    assert unchecked == by_keywords and unchecked.unknown_tagged_fields is None
    for version in (3, 9, 12, 13):
        assert (P.encode_request_frame(0, version, 1, "c", unchecked)
                == P.encode_request_frame(0, version, 1, "c", by_keywords))
    with pytest.raises(TypeError, match="PartitionProduceData has 2 fields, got 1 values"):
        P.built_unchecked(P.PartitionProduceData, 2)


def test_failed_encode_is_named_by_field_path():
    req = P.ProduceRequest(topic_data=[P.TopicProduceData(name="t", partition_data=[P.PartitionProduceData()])])
    req.topic_data[0].partition_data[0].index = "x"
    with pytest.raises(TypeError, match="ProduceRequest.topic_data: TopicProduceData.partition_data: "
                                        "PartitionProduceData.index"):
        P.encode_request_frame(0, 9, 1, None, req)
