"""Hostile frames against every request/response decoder: random bytes, truncations at
every length, mutated bytes, huge and negative counts, bad varints. Only ProtocolError
may come out; nothing crashes, hangs or allocates more than the frame justifies.

KAFKAEV_FUZZ_EXAMPLES sets the hypothesis example count (small by default for CI;
e.g. KAFKAEV_FUZZ_EXAMPLES=20000 for a long run)."""

import gc
import os
import random
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_messages_roundtrip import build

from kafkaev.errors import ProtocolError
from kafkaev.protocol import codec as P

EXAMPLES = int(os.environ.get("KAFKAEV_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="KAFKAEV_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=list(HealthCheck))
K = P.ApiKey

# Oldest, first flexible and newest version of every API: all header and encoding rules.
VERSIONS = sorted({
    (key, v)
    for key, (lo, hi) in P.SUPPORTED_VERSIONS.items()
    for v in (lo, hi, P.FIRST_FLEXIBLE_VERSIONS[key] or lo)
    if lo <= v <= hi
})


def _ids(case):
    return f"{P.API_NAMES[case[0]]}-v{case[1]}"


def response_payload(key, version, seed=0):
    body = build(P.RESPONSE_CLASSES[key], version, random.Random(f"fuzz-{key}-{version}-{seed}"))
    if key == K.API_VERSIONS:
        body.error_code = 0
    return P.encode_response_frame(key, version, 99, body)[4:]


def request_payload(key, version, seed=0):
    body = build(P.REQUEST_CLASSES[key], version, random.Random(f"fuzz-req-{key}-{version}-{seed}"))
    return P.encode_request_frame(key, version, 99, "fuzz", body)[4:]


MEASUREMENTS = 3


def decode_response(key, version, payload, bound):
    """Decodes under tracemalloc: returns None or the ProtocolError, and the peak allocation.

    tracemalloc counts every thread, so another thread's allocations can land in one run's
    peak. The decoder itself is deterministic: a peak over the bound is measured again, and
    the least of a few runs is the decoder's."""
    error, peak = _traced_decode(key, version, payload)
    for _ in range(MEASUREMENTS - 1):
        if peak < bound:
            break
        again, again_peak = _traced_decode(key, version, payload)
        assert repr(again) == repr(error), f"the same frame decoded differently: {error!r}, {again!r}"
        peak = min(peak, again_peak)
    return error, peak


def _traced_decode(key, version, payload):
    gc.disable()  # a collection would run earlier tests' finalizers inside the window
    tracemalloc.start()
    try:
        P.decode_response_frame(key, version, payload)
        error = None
    except ProtocolError as exc:
        error = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        gc.enable()
    return error, peak


SMALL_FRAME_BOUND = 64 * 1024


def memory_bound(payload):
    # Decoded objects cost more than their wire bytes; a lie costs nothing extra.
    return SMALL_FRAME_BOUND + 200 * len(payload)


@pytest.mark.parametrize("case", VERSIONS, ids=_ids)
def test_every_truncation_of_a_response_is_a_protocol_error(case):
    key, version = case
    payload = response_payload(key, version)
    bound = memory_bound(payload)
    for n in range(len(payload)):
        error, peak = decode_response(key, version, payload[:n], bound)
        assert isinstance(error, ProtocolError), f"truncated to {n} of {len(payload)} bytes decoded"
        assert f"{P.API_NAMES[key]} v{version} response" in str(error)
        assert peak < bound


@pytest.mark.parametrize("case", VERSIONS, ids=_ids)
def test_every_truncation_of_a_request_is_a_protocol_error(case):
    key, version = case
    payload = request_payload(key, version)
    for n in range(len(payload)):
        with pytest.raises(ProtocolError):
            P.decode_request_frame(payload[:n])


@pytest.mark.parametrize("case", VERSIONS, ids=_ids)
def test_random_byte_mutations_of_real_frames(case):
    key, version = case
    rnd = random.Random(f"mutate-{key}-{version}")
    payload = response_payload(key, version)
    bound = memory_bound(payload)
    request = request_payload(key, version)
    for _ in range(200):
        mutated = bytearray(payload)
        for _ in range(rnd.randint(1, 4)):
            pos = rnd.randrange(len(mutated))
            mutated[pos] = rnd.choice([0x00, 0xFF, 0x7F, 0x80, rnd.getrandbits(8)])
        error, peak = decode_response(key, version, bytes(mutated), bound)
        assert error is None or isinstance(error, ProtocolError)
        assert peak < bound
        mutated = bytearray(request)
        pos = rnd.randrange(len(mutated))
        mutated[pos] = rnd.getrandbits(8)
        try:
            P.decode_request_frame(bytes(mutated))
        except ProtocolError:
            pass


@FUZZ
@given(case=st.sampled_from(VERSIONS), data=st.binary(max_size=512))
def test_random_bytes_to_every_response_decoder(case, data):
    key, version = case
    bound = memory_bound(data)
    error, peak = decode_response(key, version, data, bound)
    assert error is None or isinstance(error, ProtocolError)
    assert peak < bound


@FUZZ
@given(data=st.binary(max_size=512), key_version=st.sampled_from(VERSIONS))
def test_random_bytes_to_the_request_decoder(data, key_version):
    key, version = key_version
    # Half the inputs carry a valid header so the body decoders are reached.
    for payload in (data, key.to_bytes(2, "big") + version.to_bytes(2, "big") + data):
        try:
            P.decode_request_frame(payload)
        except ProtocolError:
            pass


@FUZZ
@given(case=st.sampled_from(VERSIONS), seed=st.integers(0, 1000), cut=st.integers(0, 10**6),
       splice=st.binary(min_size=1, max_size=12))
def test_spliced_garbage_inside_real_frames(case, seed, cut, splice):
    key, version = case
    payload = response_payload(key, version, seed % 3)
    pos = cut % (len(payload) + 1)
    for candidate in (payload[:pos] + splice + payload[pos:], payload[:pos] + splice + payload[pos + len(splice):]):
        bound = memory_bound(candidate)
        error, peak = decode_response(key, version, candidate, bound)
        assert error is None or isinstance(error, ProtocolError)
        assert peak < bound


CORRELATION = b"\x00\x00\x00\x01"


@pytest.mark.parametrize("count", [b"\x7f\xff\xff\xff", b"\x10\x00\x00\x00", b"\xff\xff\xff\xfe", b"\x80\x00\x00\x00"])
def test_huge_and_negative_classic_array_counts_fail_before_allocating(count):
    # Metadata v0 response: brokers array first.
    payload = CORRELATION + count + b"\x00" * 16
    error, peak = decode_response(K.METADATA, 0, payload, SMALL_FRAME_BOUND)
    assert isinstance(error, ProtocolError)
    assert "brokers" in str(error)
    assert peak < SMALL_FRAME_BOUND


@pytest.mark.parametrize("count", [b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08", b"\xfe\xff\xff\xff\x07"])
def test_huge_compact_array_counts_fail_before_allocating(count):
    # Metadata v12 response: header tagged fields, throttle_time_ms, then the brokers array.
    payload = CORRELATION + b"\x00" + b"\x00\x00\x00\x00" + count + b"\x00" * 16
    error, peak = decode_response(K.METADATA, 12, payload, SMALL_FRAME_BOUND)
    assert isinstance(error, ProtocolError)
    assert peak < SMALL_FRAME_BOUND


def test_overlong_varint_is_a_protocol_error():
    payload = CORRELATION + b"\x00" + b"\x00\x00\x00\x00" + b"\xff" * 12
    error, _ = decode_response(K.METADATA, 12, payload, SMALL_FRAME_BOUND)
    assert isinstance(error, ProtocolError) and "varint" in str(error)


def test_tagged_field_longer_than_the_frame():
    # Heartbeat v4 response: throttle_time_ms, error_code, then tagged fields: 1 field, tag 0, size 2^32.
    payload = CORRELATION + b"\x00" + b"\x00" * 6 + b"\x01\x00" + b"\x80\x80\x80\x80\x10" + b"x"
    error, peak = decode_response(K.HEARTBEAT, 4, payload, SMALL_FRAME_BOUND)
    assert isinstance(error, ProtocolError) and "tagged fields" in str(error)
    assert peak < SMALL_FRAME_BOUND


def test_huge_string_length_fails_before_allocating():
    # FindCoordinator v0 response: error_code, node_id, host (Int16 length 32767 with 3 bytes).
    payload = CORRELATION + b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x7f\xffabc"
    error, peak = decode_response(K.FIND_COORDINATOR, 0, payload, SMALL_FRAME_BOUND)
    assert isinstance(error, ProtocolError) and "host" in str(error)
    assert peak < SMALL_FRAME_BOUND


def test_invalid_utf8_is_a_protocol_error():
    payload = CORRELATION + b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x02\xc3\x28" + b"\x00\x00\x23\x84"
    error, _ = decode_response(K.FIND_COORDINATOR, 0, payload, SMALL_FRAME_BOUND)
    assert isinstance(error, ProtocolError) and "UTF-8" in str(error)


def test_unknown_api_key_or_version_in_a_request_header():
    with pytest.raises(ProtocolError, match="unknown api_key"):
        P.decode_request_frame(b"\x7f\x00\x00\x00" + b"\x00" * 10)
    with pytest.raises(ProtocolError, match="Produce request: unsupported version"):
        P.decode_request_frame(b"\x00\x00\x00\x63" + b"\x00" * 10)
