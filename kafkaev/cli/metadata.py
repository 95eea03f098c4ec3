"""``kafkaev metadata`` (``kafkaev -L``): brokers, topics and partitions, as kcat -L prints them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kafkaev.cli.common import CliError, add_brokers, open_admin
from kafkaev.errors import NONE, KafkaError, error_name


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("metadata", help="brokers, topics, partitions with leader/replicas/isr (kcat -L)")
    parser.add_argument("-t", "--topic", action="append", help="only this topic, repeatable (default: every topic)")
    parser.add_argument("--internal", action="store_true", help="include internal topics")
    parser.add_argument("-J", "--json", action="store_true", help="one JSON document instead of text")
    add_brokers(parser)


def _error(code: int) -> str | None:
    return None if code == NONE else error_name(code)


def _document(cluster: Any, topics: dict[str, Any]) -> dict[str, Any]:
    return {
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "brokers": [{"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                    for _, b in sorted(cluster.brokers.items())],
        "topics": [{"topic": name, "topic_id": str(info.topic_id) if info.topic_id else None,
                    "internal": info.is_internal, "error": _error(info.error_code),
                    "partitions": [{"partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
                                    "replicas": list(p.replicas), "isr": list(p.isr), "error": _error(p.error_code)}
                                   for p in info.partitions]}
                   for name, info in sorted(topics.items())],
    }


def _print_text(doc: dict[str, Any]) -> None:
    print(f"cluster {doc['cluster_id']} controller {doc['controller_id']}")
    print(f" {len(doc['brokers'])} brokers:")
    for b in doc["brokers"]:
        role = " (controller)" if b["id"] == doc["controller_id"] else ""
        print(f"  broker {b['id']} at {b['host']}:{b['port']}{role}")
    print(f" {len(doc['topics'])} topics:")
    for t in doc["topics"]:
        error = f", error {t['error']}" if t["error"] else ""
        print(f'  topic "{t["topic"]}" with {len(t["partitions"])} partitions{error}:')
        for p in t["partitions"]:
            replicas = ",".join(map(str, p["replicas"]))
            isr = ",".join(map(str, p["isr"]))
            perror = f", error {p['error']}" if p["error"] else ""
            print(f"    partition {p['partition']}, leader {p['leader']}, replicas: {replicas}, isrs: {isr}{perror}")


def run(args: argparse.Namespace) -> int:
    admin = open_admin(args)
    try:
        # The bootstrap metadata names the brokers and the controller; Admin has no public call
        # for them yet, and the topics come from its public ones.
        cluster = admin.run(admin._cluster)
        if args.topic:
            topics = admin.run(admin.describe_topics, args.topic)
        else:
            topics = admin.run(admin.list_topics, internal=args.internal)
    except KafkaError as exc:
        raise CliError(str(exc)) from None
    finally:
        admin.close()
    doc = _document(cluster, topics)
    if args.json:
        print(json.dumps(doc))
    else:
        _print_text(doc)
    missing = [t["topic"] for t in doc["topics"] if t["error"]]
    if args.topic and missing:
        raise CliError("; ".join(f"{t['topic']}: {t['error']}" for t in doc["topics"] if t["error"]))
    return 0
