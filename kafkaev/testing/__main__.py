"""Command line for the local test cluster.

    python -m kafkaev.testing start [--nodes 1|3] [--dir D] [--jvm fast-start|throughput] [--heap 512m]
    python -m kafkaev.testing jars [--version 4.4.0]         # only resolve the Kafka jars

Both use Apache Kafka ``jars.kafka_version()``: 4.4.0, or ``$KAFKAEV_KAFKA_VERSION``.

``start`` prints the addresses as KEY=VALUE lines (PLAINTEXT first, as BOOTSTRAP=...), then READY, so a
script can read them from the pipe; everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from . import jars
from .cluster import FAST_START_JVM_OPTIONS, HEAP, THROUGHPUT_JVM_OPTIONS, LocalCluster
from .versions import KafkaVersionError, broker_version

JVM_PROFILES = {"fast-start": FAST_START_JVM_OPTIONS, "throughput": THROUGHPUT_JVM_OPTIONS}


def _print_addresses(cluster: LocalCluster) -> None:
    lines = {
        "BOOTSTRAP": cluster.bootstrap,
        "SSL_BOOTSTRAP": cluster.ssl_bootstrap,
        "SASL_BOOTSTRAP": cluster.sasl_bootstrap,
        "SASL_SSL_BOOTSTRAP": cluster.sasl_ssl_bootstrap,
        "CA_CERT": str(cluster.ca_cert),
        "CLIENT_CERT": str(cluster.client_cert),
        "CLIENT_KEY": str(cluster.client_key),
    }
    for user in (cluster.sasl_plain, *cluster.scram_users):
        key = user.mechanism.replace("-", "_")
        lines[f"SASL_{key}_USER"] = user.username
        lines[f"SASL_{key}_PASSWORD"] = user.password
    lines["DIRECTORY"] = str(cluster.directory)
    for key, value in lines.items():
        print(f"{key}={value}")
    print("READY", flush=True)


def _start(args: argparse.Namespace) -> int:
    if args.nodes < 1:
        print(f"--nodes: must be >= 1, got {args.nodes}", file=sys.stderr)
        return 2
    stop_requested = threading.Event()
    cluster = LocalCluster(
        nodes=args.nodes, directory=args.dir, heap=args.heap, jvm_options=JVM_PROFILES[args.jvm]
    )
    print(
        f"kafkaev.testing: starting {args.nodes} Apache Kafka {cluster.version} node(s) in {cluster.directory}",
        file=sys.stderr,
    )
    try:
        cluster.start()
        # Once running, SIGTERM and Ctrl-C end the wait and the cluster stops in order below.
        # (Set only now: during start the harness's own SIGTERM handler kills the JVMs at once.)
        signal.signal(signal.SIGTERM, lambda *_: stop_requested.set())
        signal.signal(signal.SIGINT, lambda *_: stop_requested.set())
        print(f"kafkaev.testing: ready in {cluster.start_seconds:.1f}s; Ctrl-C stops it", file=sys.stderr)
        _print_addresses(cluster)
        while not stop_requested.wait(1.0):
            dead = [n.node_id for n in cluster.nodes.values() if not n.is_alive()]
            if dead:
                print(f"kafkaev.testing: node(s) {dead} exited:\n{cluster.log_tail()}", file=sys.stderr)
                return 1
        return 0
    finally:
        print("kafkaev.testing: stopping", file=sys.stderr)
        cluster.stop()


def _jars(args: argparse.Namespace) -> int:
    if args.version is not None:
        broker_version(args.version)
    print(jars.ensure_jars(args.version, quiet=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkaev.testing", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="start a local KRaft cluster and keep it running")
    start.add_argument("--nodes", type=int, default=1, help="number of combined broker+controller nodes")
    start.add_argument("--dir", type=Path, default=None, help="data/log directory (default: a temp dir)")
    start.add_argument(
        "--jvm",
        choices=sorted(JVM_PROFILES),
        default="fast-start",
        help="JVM flags: quick start for tests, or C2 and G1 for long benchmark runs",
    )
    start.add_argument("--heap", default=HEAP, help="broker -Xmx (default %(default)s)")
    start.set_defaults(run=_start)
    resolve = commands.add_parser("jars", help="resolve the Apache Kafka jars into the cache")
    resolve.add_argument("--version", default=None, help="default: $KAFKAEV_KAFKA_VERSION or " + jars.KAFKA_VERSION)
    resolve.set_defaults(run=_jars)
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except KafkaVersionError as exc:
        print(f"python -m kafkaev.testing: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
