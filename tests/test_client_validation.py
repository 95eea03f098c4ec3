"""ClientConfig: every bad option fails at construction, naming the argument."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from kafkaev.config import COMPRESSION_LZ4, ClientConfig, parse_brokers


def test_defaults_are_valid_and_derived_fields_filled(monkeypatch, tmp_path):
    # Neither $KAFKAEV_BROKERS nor a developer's own `kafkaev broker start` may change the default.
    monkeypatch.delenv("KAFKAEV_BROKERS", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    cfg = ClientConfig()
    assert cfg.bootstrap == (("127.0.0.1", 9092),)
    assert cfg.acks == -1 and cfg.linger_ms == 5.0 and cfg.batch_size == 1 << 20
    assert cfg.isolation == 0 and cfg.compression_type == 0
    assert cfg.assignors == ("cooperative-sticky", "range")


def test_config_is_frozen():
    cfg = ClientConfig()
    with pytest.raises(AttributeError):
        cfg.linger_ms = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("a:1,b:2", (("a", 1), ("b", 2))),
        (" a:1 , ", (("a", 1),)),
        ("host", (("host", 9092),)),
        ("[::1]:9093", (("::1", 9093),)),
        (["a:1", ("b", 2)], (("a", 1), ("b", 2))),
    ],
)
def test_parse_brokers(text, expected):
    assert parse_brokers(text) == expected


@pytest.mark.parametrize("bad", ["", "a:x", "a:0", "a:70000", 5, [3]])
def test_bad_brokers_name_the_argument(bad):
    with pytest.raises((TypeError, ValueError), match="'brokers'"):
        ClientConfig(brokers=bad)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"linger_ms": -1}, "linger_ms"),
        ({"linger_ms": float("nan")}, "linger_ms"),
        ({"linger_ms": True}, "linger_ms"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 1.5}, "batch_size"),
        ({"compression": "brotli"}, "compression"),
        ({"compression": 3}, "compression"),
        ({"acks": 2}, "acks"),
        ({"acks": True}, "acks"),
        ({"idempotent": 1}, "idempotent"),
        ({"idempotent": True, "max_in_flight": 6}, "max_in_flight"),
        ({"idempotent": True, "acks": 1}, "acks"),
        ({"max_in_flight": 0}, "max_in_flight"),
        ({"partitioner": "murmur"}, "partitioner"),
        ({"delivery_timeout_ms": 0}, "delivery_timeout_ms"),
        ({"buffer_memory": 100}, "buffer_memory"),
        ({"buffer_records": -1}, "buffer_records"),
        ({"buffer_records": 1.5}, "buffer_records"),
        ({"on_error": 3}, "on_error"),
        ({"on_message": "x"}, "on_message"),
        ({"isolation_level": "committed"}, "isolation_level"),
        ({"auto_offset_reset": "smallest"}, "auto_offset_reset"),
        ({"assignors": ("sticky",)}, "assignors"),
        ({"heartbeat_interval_ms": 50000}, "heartbeat_interval_ms"),
        ({"client_id": 5}, "client_id"),
        ({"tls": "yes"}, "tls"),
        ({"sasl": "PLAIN"}, "sasl"),
        ({"loop": object()}, "loop"),
        ({"group_id": ""}, "group_id"),
        ({"retry_backoff_max_ms": 10}, "retry_backoff_max_ms"),
        ({"busy_poll_us": -1}, "busy_poll_us"),
        ({"busy_poll_us": 1_000_001}, "busy_poll_us"),
        ({"busy_poll_us": 0.5}, "busy_poll_us"),
        ({"busy_poll_us": True}, "busy_poll_us"),
    ],
)
def test_bad_option_names_itself(kwargs, name):
    with pytest.raises((TypeError, ValueError), match=f"'{name}'"):
        ClientConfig(**kwargs)


def test_normalisation():
    cfg = ClientConfig(acks="all", compression="LZ4", isolation_level="read_committed", assignors="range")
    assert cfg.acks == -1
    assert cfg.compression == "lz4" and cfg.compression_type == COMPRESSION_LZ4
    assert cfg.isolation == 1
    assert cfg.assignors == ("range",)
    assert ClientConfig(compression="none").compression is None


def test_unknown_option_suggests_the_close_one():
    with pytest.raises(TypeError, match="'linger'.*'linger_ms'"):
        ClientConfig.from_kwargs(linger=5)


def test_tls_and_sasl_normalised_to_typed_settings():
    from kafkaev.security import SASLConfig, TLSConfig

    cfg = ClientConfig(tls=True, sasl={"mechanism": "scram-sha-256", "username": "u", "password": "p"})
    assert cfg.tls == TLSConfig()
    assert cfg.sasl == SASLConfig("SCRAM-SHA-256", "u", "p")
    with pytest.raises(ValueError, match="'sasl'"):
        ClientConfig(sasl={"mechanism": "GSSAPI", "username": "u", "password": "p"})


def test_buffer_memory_below_batch_size_needs_room_for_a_first_step_only():
    # batches grow only as far as buffer_memory allows: a small buffer makes smaller batches
    assert ClientConfig(buffer_memory=256 * 1024).batch_size == 1 << 20
    with pytest.raises(ValueError, match="'buffer_memory' must be at least 16384"):
        ClientConfig(buffer_memory=16383)
    assert ClientConfig(buffer_memory=4096, batch_size=4096).buffer_memory == 4096


def test_batch_size_bounded_by_max_request_size():
    with pytest.raises(ValueError, match="'batch_size'"):
        ClientConfig(batch_size=2_000_000)


def test_metadata_max_age_ms_is_an_int_of_milliseconds():
    assert ClientConfig().metadata_max_age_ms == 300000
    assert ClientConfig(metadata_max_age_ms=0).metadata_max_age_ms == 0
    for bad in (-1, 1.5, True):
        with pytest.raises((TypeError, ValueError), match="'metadata_max_age_ms'"):
            ClientConfig(metadata_max_age_ms=bad)


@pytest.mark.parametrize("seconds, ms", [(300, 300000), (0.25, 250), (0, 0), (0.0001, 1)])
def test_metadata_refresh_s_is_a_deprecated_alias_in_seconds(seconds, ms):
    with pytest.warns(DeprecationWarning, match="'metadata_refresh_s'.*'metadata_max_age_ms'"):
        cfg = ClientConfig.from_kwargs(metadata_refresh_s=seconds)
    assert cfg.metadata_max_age_ms == ms


def test_the_deprecation_warning_points_at_the_client_call():
    from kafkaev.client import Client

    loop = asyncio.new_event_loop()
    try:
        with pytest.warns(DeprecationWarning) as caught:
            client = Client("127.0.0.1:9092", loop=loop, metadata_refresh_s=60)
        assert client.config.metadata_max_age_ms == 60000
        assert [w.filename for w in caught] == [__file__]
    finally:
        loop.close()


@pytest.mark.parametrize("bad", [-1, "300", float("nan"), float("inf"), True])
def test_bad_metadata_refresh_s_names_itself(bad):
    with pytest.warns(DeprecationWarning), pytest.raises((TypeError, ValueError), match="'metadata_refresh_s'"):
        ClientConfig.from_kwargs(metadata_refresh_s=bad)


def test_metadata_refresh_s_and_its_replacement_together_is_an_error():
    with pytest.raises(TypeError, match="'metadata_refresh_s'.*'metadata_max_age_ms'"):
        ClientConfig.from_kwargs(metadata_refresh_s=1, metadata_max_age_ms=1000)


@pytest.mark.parametrize(
    "name, hint",
    [
        ("bootstrap_servers", "did you mean 'brokers'?"),
        ("bootstrap.servers", "did you mean 'brokers'?"),
        ("metadata.broker.list", "did you mean 'brokers'?"),
        ("group.id", "did you mean 'group_id'?"),
        ("auto.offset.reset", "did you mean 'auto_offset_reset'?"),
        ("enable.idempotence", "did you mean 'idempotent'?"),
        ("enable_auto_commit", "did you mean 'auto_commit'?"),
        ("compression_type", "did you mean 'compression'?"),
        ("max_in_flight_requests_per_connection", "did you mean 'max_in_flight'?"),
        ("queue.buffering.max.messages", "did you mean 'buffer_records'?"),
        ("security_protocol", "use tls=... for SSL, sasl=... for SASL_PLAINTEXT"),
        ("security.protocol", "use tls=... for SSL"),
        ("sasl_plain_username", "use sasl=kafkaev.SASLConfig("),
        ("ssl_cafile", "use tls=kafkaev.TLSConfig("),
        ("value_serializer", "kafkaev has no serializers"),
        ("lingr_ms", "did you mean 'linger_ms'?"),
    ],
)
def test_unknown_option_names_the_kafkaev_option(name, hint):
    # Another client's option name (Java, librdkafka, aiokafka) says what kafkaev calls it.
    with pytest.raises(TypeError) as raised:
        ClientConfig.from_kwargs(**{name: "x"})
    assert f"unknown option '{name}'; {hint}" in str(raised.value)


def test_foreign_option_table_points_at_real_options():
    from kafkaev.config import FOREIGN_OPTIONS

    known = {f.name for f in dataclasses.fields(ClientConfig) if f.init}
    for foreign, target in FOREIGN_OPTIONS.items():
        assert foreign not in known, foreign  # a real option is never rewritten
        assert target in known or " " in target, (foreign, target)  # a name, or a sentence
