"""The default brokers (kafkaev/local_broker.py): $KAFKAEV_BROKERS, else a live `kafkaev broker start`'s
record, else 127.0.0.1:9092; used by ClientConfig (Client, Admin) and the command line alike."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkaev.config import ClientConfig
from kafkaev.local_broker import (
    BROKERS_ENV,
    FALLBACK_BROKERS,
    LocalBroker,
    default_address,
    default_brokers,
    read_record,
    running_broker,
    state_file,
)

RECORDED = "127.0.0.1:9093"


@pytest.fixture
def home(monkeypatch, tmp_path) -> Path:
    """A temporary HOME and no $KAFKAEV_BROKERS: a developer's own broker never counts here."""
    monkeypatch.delenv(BROKERS_ENV, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _record(pid: int) -> LocalBroker:
    broker = LocalBroker(pid, RECORDED, "4.4.0", "/tmp/somewhere")
    broker.write(state_file())
    return broker


def test_state_file_follows_home(home):
    assert state_file() == home / ".cache" / "kafkaev" / "broker.json"


def test_nothing_recorded_means_127_0_0_1_9092(home):
    assert default_brokers() == FALLBACK_BROKERS == "127.0.0.1:9092"
    assert default_address() == ("127.0.0.1", 9092)
    assert ClientConfig().bootstrap == (("127.0.0.1", 9092),)


def test_a_live_record_is_the_default(home):
    written = _record(os.getpid())  # this process: alive
    assert read_record() == written and running_broker() == written
    assert default_brokers() == RECORDED
    assert default_address() == ("127.0.0.1", 9093)
    assert ClientConfig().bootstrap == (("127.0.0.1", 9093),)
    assert ClientConfig(brokers=None).brokers == RECORDED


def test_a_dead_pids_record_is_ignored(home):
    _record(_dead_pid())
    assert read_record() is not None and running_broker() is None
    assert default_brokers() == FALLBACK_BROKERS


def test_the_environment_wins_over_a_live_record(home, monkeypatch):
    _record(os.getpid())
    monkeypatch.setenv(BROKERS_ENV, " kafka-1:9092,kafka-2:9092 ")
    assert default_brokers() == "kafka-1:9092,kafka-2:9092"
    assert ClientConfig().bootstrap == (("kafka-1", 9092), ("kafka-2", 9092))
    monkeypatch.setenv(BROKERS_ENV, "  ")  # set but empty counts as unset, as in the test harness
    assert default_brokers() == RECORDED


def test_explicit_brokers_win_over_everything(home, monkeypatch):
    monkeypatch.setenv(BROKERS_ENV, "kafka-1:9092")
    assert ClientConfig(brokers="other:1234").bootstrap == (("other", 1234),)


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"pid": "1", "bootstrap": "a:1"}',
                                  '{"pid": 1}', '{"pid": true, "bootstrap": "a:1"}'])
def test_an_unreadable_record_is_no_record(home, text):
    state_file().parent.mkdir(parents=True)
    state_file().write_text(text)
    assert read_record() is None
    assert default_brokers() == FALLBACK_BROKERS


def test_the_harness_and_the_client_read_the_same_variable():
    from kafkaev.cli.common import BROKERS_ENV as CLI_ENV
    from kafkaev.testing.external import BROKERS_ENV as HARNESS_ENV

    assert BROKERS_ENV == CLI_ENV == HARNESS_ENV == "KAFKAEV_BROKERS"
