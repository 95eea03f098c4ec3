"""``kafkaev broker start|stop``: the embedded single-node Apache Kafka cluster, for development."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafkaev.cli.common import CliError

DEFAULT_STATE_FILE = Path.home() / ".cache" / "kafkaev" / "broker.json"
DETACH_START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 60.0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("broker", help="start or stop the embedded local Kafka broker")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start it (foreground until Ctrl-C, or --detach); "
                               "KAFKAEV_KAFKA_VERSION picks the Apache Kafka release")
    start.add_argument("--detach", action="store_true", help="run in the background; stop with 'broker stop'")
    start.add_argument("--nodes", type=int, default=1, help="KRaft nodes (default 1)")
    stop = actions.add_parser("stop", help="stop a broker started with --detach")
    for sub in (start, stop):
        sub.add_argument("--state-file", type=Path, default=DEFAULT_STATE_FILE,
                         help=f"where the running broker is recorded (default {DEFAULT_STATE_FILE})")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_state(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _kafka_version() -> str:
    """The Apache Kafka version to start (``$KAFKAEV_KAFKA_VERSION`` or the harness's default)."""
    from kafkaev.testing import jars
    from kafkaev.testing.versions import KafkaVersionError

    try:
        return jars.kafka_version()
    except KafkaVersionError as exc:
        raise CliError(str(exc)) from None


def _foreground(args: argparse.Namespace) -> int:
    from kafkaev.testing.cluster import LocalCluster

    if args.nodes < 1:
        raise CliError(f"--nodes must be >= 1, got {args.nodes}")
    version = _kafka_version()
    state = _read_state(args.state_file)
    if state and _alive(state["pid"]) and state["pid"] != os.getpid():
        raise CliError(f"a broker is already running (pid {state['pid']}, {state['bootstrap']})")
    stopping = False

    def on_signal(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    cluster = LocalCluster(nodes=args.nodes, version=version).start()
    try:
        args.state_file.parent.mkdir(parents=True, exist_ok=True)
        args.state_file.write_text(json.dumps({"pid": os.getpid(), "bootstrap": cluster.bootstrap,
                                               "directory": str(cluster.directory)}))
        print(f"broker ready: {cluster.bootstrap} (Apache Kafka {version})", flush=True)
        while not stopping and all(cluster.node(n).is_alive() for n in cluster.nodes):
            time.sleep(0.2)
    finally:
        cluster.stop()
        if (_read_state(args.state_file) or {}).get("pid") == os.getpid():
            args.state_file.unlink(missing_ok=True)
    print("broker stopped", flush=True)
    return 0


def _detach(args: argparse.Namespace) -> int:
    _kafka_version()  # a bad KAFKAEV_KAFKA_VERSION is reported here, not in the background's log
    state = _read_state(args.state_file)
    if state and _alive(state["pid"]):
        raise CliError(f"a broker is already running (pid {state['pid']}, {state['bootstrap']})")
    args.state_file.unlink(missing_ok=True)
    log = args.state_file.with_suffix(".log")
    args.state_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafkaev", "broker", "start", "--nodes", str(args.nodes),
             "--state-file", str(args.state_file)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + DETACH_START_TIMEOUT_S
    while time.monotonic() < deadline:
        state = _read_state(args.state_file)
        if state and state.get("pid") == proc.pid:
            print(state["bootstrap"])
            return 0
        if proc.poll() is not None:
            raise CliError(f"the broker exited with status {proc.returncode}; see {log}")
        time.sleep(0.2)
    proc.terminate()
    raise CliError(f"the broker did not start within {DETACH_START_TIMEOUT_S:.0f}s; see {log}")


def _stop(args: argparse.Namespace) -> int:
    state = _read_state(args.state_file)
    if not state or not _alive(state["pid"]):
        args.state_file.unlink(missing_ok=True)
        raise CliError(f"no running broker recorded in {args.state_file}")
    os.kill(state["pid"], signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _alive(state["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(state["pid"]):
        raise CliError(f"broker process {state['pid']} did not stop within {STOP_TIMEOUT_S:.0f}s")
    print(f"stopped broker {state['bootstrap']}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "stop":
        return _stop(args)
    return _detach(args) if args.detach else _foreground(args)
