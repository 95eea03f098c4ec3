"""The error table: codes, names and retriability match the Java client's
``Errors`` enum, and KafkaError/ProtocolError carry them."""

import pickle

import pytest

from kafkaev import errors
from kafkaev.errors import KafkaError, ProtocolError, error_name, is_retriable


@pytest.mark.parametrize(
    "code, name, retriable",
    [
        (-1, "UNKNOWN_SERVER_ERROR", False),
        (0, "NONE", False),
        (1, "OFFSET_OUT_OF_RANGE", False),
        (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
        (6, "NOT_LEADER_OR_FOLLOWER", True),
        (7, "REQUEST_TIMED_OUT", True),
        (10, "MESSAGE_TOO_LARGE", False),
        (15, "COORDINATOR_NOT_AVAILABLE", True),
        (16, "NOT_COORDINATOR", True),
        (22, "ILLEGAL_GENERATION", False),
        (25, "UNKNOWN_MEMBER_ID", False),
        (27, "REBALANCE_IN_PROGRESS", False),
        (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False),
        (46, "DUPLICATE_SEQUENCE_NUMBER", False),
        (47, "INVALID_PRODUCER_EPOCH", False),
        (59, "UNKNOWN_PRODUCER_ID", False),
        (74, "FENCED_LEADER_EPOCH", True),
        (110, "FENCED_MEMBER_EPOCH", False),
    ],
)
def test_table_matches_java_client(code, name, retriable):
    assert error_name(code) == name
    assert getattr(errors, name) == code
    assert is_retriable(code) is retriable


def test_table_is_complete_and_consistent():
    codes = sorted(code for code in errors.ERRORS if code >= -1)
    assert codes[0] == -1 and len(codes) > 130
    # Kafka assigns broker codes densely from -1 upward.
    assert codes == list(range(-1, codes[-1] + 1))
    for code, spec in errors.ERRORS.items():
        assert spec.code == code
        assert getattr(errors, spec.name) == code
        assert spec.description


def test_client_side_codes_are_distinct_and_below_minus_100():
    names = [
        "TRANSPORT",
        "TIMED_OUT",
        "MSG_TIMED_OUT",
        "QUEUE_FULL",
        "UNKNOWN_TOPIC_WAIT_TIMEOUT",
        "AUTHENTICATION",
        "SSL",
        "PROTOCOL",
        "STATE",
        "DESTROY",
    ]
    codes = [getattr(errors, name) for name in names]
    assert len(set(codes)) == len(codes)
    assert all(code < -100 for code in codes)
    assert [error_name(code) for code in codes] == names
    assert is_retriable(errors.TRANSPORT) and is_retriable(errors.TIMED_OUT)
    assert not is_retriable(errors.MSG_TIMED_OUT) and not is_retriable(errors.DESTROY)


def test_kafka_error_attributes_and_text():
    err = KafkaError(errors.NOT_LEADER_OR_FOLLOWER, "leader moved to broker 2")
    assert (err.code, err.name, err.retriable) == (6, "NOT_LEADER_OR_FOLLOWER", True)
    assert err.message == "leader moved to broker 2"
    assert str(err) == "NOT_LEADER_OR_FOLLOWER (6): leader moved to broker 2"
    plain = KafkaError(errors.MESSAGE_TOO_LARGE)
    assert plain.message is None
    assert str(plain).startswith("MESSAGE_TOO_LARGE (10): The request included a message larger")


def test_unknown_code_does_not_crash():
    err = KafkaError(31337)
    assert err.name == "UNKNOWN_CODE_31337" and not err.retriable
    assert error_name(31337) == "UNKNOWN_CODE_31337"


def test_bad_code_type_is_rejected():
    with pytest.raises(TypeError, match="'code' must be an int"):
        KafkaError("6")


def test_protocol_error():
    err = ProtocolError("Fetch v12 response: field 'records' runs past the end")
    assert isinstance(err, KafkaError)
    assert err.code == errors.PROTOCOL and err.name == "PROTOCOL" and not err.retriable


def test_errors_pickle():
    for err in (KafkaError(6, "x"), ProtocolError("y")):
        copy = pickle.loads(pickle.dumps(err))
        assert type(copy) is type(err) and copy.code == err.code and copy.message == err.message
