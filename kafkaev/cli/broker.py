"""``kafkaev broker start|status|stop``: the embedded single-node Apache Kafka cluster, for development.

The broker listens on 127.0.0.1:9092 (PLAINTEXT only), or on the next free port when 9092 is taken,
and records itself in ``~/.cache/kafkaev/broker.json``; ``kafkaev`` and ``kafkaev.Client()`` use
that address by default while it runs (``kafkaev/local_broker.py``).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from kafkaev.cli.common import CliError, UsageError
from kafkaev.local_broker import DEFAULT_PORT, LocalBroker, read_record, running_broker, state_file

DETACH_START_TIMEOUT_S = 180.0
# The first run of a Kafka version writes its class-data archive while it exits (up to
# RECORDING_STOP_GRACE_S in kafkaev/testing/cluster.py): wait longer than that.
STOP_TIMEOUT_S = 180.0
POLL_S = 0.2
# 9092, or the first free port above it: a fixed address a user can type, never a random one.
PORT_SEARCH_SPAN = 100
HOST = "127.0.0.1"
STATE_FILE_HELP = "~/.cache/kafkaev/broker.json"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("broker", help="start, inspect or stop the embedded local Kafka broker")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser(
        "start", help=f"start it on {HOST}:{DEFAULT_PORT} (or the next free port): in the foreground until "
                      "Ctrl-C, or --detach; KAFKAEV_KAFKA_VERSION picks the Apache Kafka release")
    start.add_argument("--detach", action="store_true", help="run in the background; stop with 'broker stop'")
    start.add_argument("--nodes", type=int, default=1, help="KRaft nodes (default 1)")
    status = actions.add_parser("status", help="print the running broker's address, pid and Kafka version "
                                               "(exit status 1 when none runs)")
    stop = actions.add_parser("stop", help="stop the broker 'broker start' runs")
    for sub in (start, status, stop):
        sub.add_argument("--state-file", type=Path, default=None,
                         help=f"where the running broker is recorded (default {STATE_FILE_HELP}, "
                              "the record the default brokers are read from)")


def _kafka_version() -> str:
    """The Apache Kafka version to start (``$KAFKAEV_KAFKA_VERSION`` or the harness's default)."""
    from kafkaev.testing import jars
    from kafkaev.testing.versions import KafkaVersionError

    try:
        return jars.kafka_version()
    except KafkaVersionError as exc:
        raise CliError(str(exc)) from None


def _port_free(port: int) -> bool:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        # As the broker binds: a port left in TIME_WAIT by the last broker counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def _pick_port() -> int:
    for port in range(DEFAULT_PORT, DEFAULT_PORT + PORT_SEARCH_SPAN):
        if _port_free(port):
            return port
    raise CliError(f"ports {DEFAULT_PORT}-{DEFAULT_PORT + PORT_SEARCH_SPAN - 1} on {HOST} are all taken")


def _first_port(bootstrap: str) -> int:
    return int(bootstrap.split(",")[0].rsplit(":", 1)[1])


def _say_port(bootstrap: str) -> None:
    """Said plainly when the broker is not on the documented port."""
    port = _first_port(bootstrap)
    if port != DEFAULT_PORT:
        print(f"port {DEFAULT_PORT} is taken: the broker listens on {port} instead", flush=True)


def _refuse_if_running(path: Path) -> None:
    running = running_broker(path)
    if running is not None and running.pid != os.getpid():
        raise CliError(f"a broker is already running: {running.bootstrap} (pid {running.pid}); "
                       "'kafkaev broker stop' stops it")


def _foreground(args: argparse.Namespace, path: Path) -> int:
    from kafkaev.testing.cluster import BrokerStartError, LocalCluster
    from kafkaev.testing.jars import JarResolutionError

    if args.nodes < 1:
        raise UsageError(f"--nodes must be >= 1, got {args.nodes}")
    version = _kafka_version()
    _refuse_if_running(path)
    stopping = False

    def on_signal(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    # A development broker needs no TLS or SASL listeners (nor the cryptography package they need).
    cluster = LocalCluster(nodes=args.nodes, version=version, plaintext_port=_pick_port(), security=False)
    try:
        cluster.start()
    except (BrokerStartError, JarResolutionError) as exc:
        cluster.stop()
        raise CliError(f"the broker did not start: {exc}") from None
    try:
        LocalBroker(os.getpid(), cluster.bootstrap, version, str(cluster.directory)).write(path)
        _say_port(cluster.bootstrap)
        print(f"broker ready: {cluster.bootstrap} (Apache Kafka {version})", flush=True)
        while not stopping and all(cluster.node(n).is_alive() for n in cluster.nodes):
            time.sleep(POLL_S)
    finally:
        cluster.stop()
        recorded = read_record(path)
        if recorded is not None and recorded.pid == os.getpid():
            path.unlink(missing_ok=True)
    print("broker stopped", flush=True)
    return 0


def _detach(args: argparse.Namespace, path: Path) -> int:
    if args.nodes < 1:
        raise UsageError(f"--nodes must be >= 1, got {args.nodes}")
    _kafka_version()  # a bad KAFKAEV_KAFKA_VERSION is reported here, not in the background's log
    _refuse_if_running(path)
    path.unlink(missing_ok=True)
    log = path.with_suffix(".log")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafkaev", "broker", "start", "--nodes", str(args.nodes), "--state-file", str(path)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + DETACH_START_TIMEOUT_S
    while time.monotonic() < deadline:
        record = read_record(path)
        if record is not None and record.pid == proc.pid:
            _say_port(record.bootstrap)
            print(f"broker ready: {record.bootstrap} (Apache Kafka {record.version}, pid {record.pid}); "
                  "'kafkaev broker stop' stops it")
            return 0
        if proc.poll() is not None:
            raise CliError(f"the broker exited with status {proc.returncode}; see {log}")
        time.sleep(POLL_S)
    proc.terminate()
    raise CliError(f"the broker did not start within {DETACH_START_TIMEOUT_S:.0f}s; see {log}")


def _no_broker(path: Path) -> CliError:
    recorded = read_record(path)
    if recorded is not None:
        return CliError(f"no broker is running (the one recorded in {path}, pid {recorded.pid}, has exited)")
    return CliError(f"no broker is running (none recorded in {path})")


def _status(path: Path) -> int:
    running = running_broker(path)
    if running is None:
        raise _no_broker(path)
    print(f"broker running: {running.bootstrap} (pid {running.pid}, Apache Kafka {running.version or 'unknown'})")
    return 0


def _stop(path: Path) -> int:
    running = running_broker(path)
    if running is None:
        error = _no_broker(path)
        path.unlink(missing_ok=True)  # a record whose process is gone is stale
        raise error
    os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while running.alive() and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if running.alive():
        raise CliError(f"broker process {running.pid} did not stop within {STOP_TIMEOUT_S:.0f}s")
    print(f"stopped broker {running.bootstrap}")
    return 0


def run(args: argparse.Namespace) -> int:
    path: Path = args.state_file if args.state_file is not None else state_file()
    if args.action == "status":
        return _status(path)
    if args.action == "stop":
        return _stop(path)
    return _detach(args, path) if args.detach else _foreground(args, path)
