"""Request/response codec micro-benchmark: the two hot messages of a Kafka client,
kafkaev's schema-table codec against aiokafka's and kafka-python's protocol classes,
in the same process run.

    python bench/micro_messages.py [--partitions N] [--repeat R] [--loops L]

Scenarios: decode a Fetch response (N partitions, 1 KiB of records each) and encode
a Produce request (N partitions); at a classic version all three clients speak
(Fetch v4, Produce v7) and at a flexible one (Fetch v12, Produce v9; aiokafka has
none). Best of R runs, in process CPU time; the last columns are kafkaev's speedup.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from aiokafka.protocol.fetch import FetchResponse_v4
from aiokafka.protocol.produce import ProduceRequest_v7
from kafka.protocol.consumer.fetch import FetchResponse as KpFetchResponse
from kafka.protocol.producer.produce import ProduceRequest as KpProduceRequest

from kafkaev.protocol import codec as P

RECORDS = bytes(range(256)) * 4  # 1 KiB stands in for a record batch: codecs do not parse it here
TOPIC = "bench-topic"
CORRELATION_ID = 7


def fetch_body(partitions: int) -> P.FetchResponse:
    return P.FetchResponse(responses=[P.FetchableTopicResponse(topic=TOPIC, partitions=[
        P.PartitionData(partition_index=i, high_watermark=1000 + i, last_stable_offset=1000 + i,
                        log_start_offset=0, aborted_transactions=None, records=RECORDS)
        for i in range(partitions)])])


def produce_body(partitions: int) -> P.ProduceRequest:
    return P.ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[P.TopicProduceData(name=TOPIC, partition_data=[
        P.PartitionProduceData(index=i, records=RECORDS) for i in range(partitions)])])


def scenarios(partitions: int) -> dict[str, dict[str, Callable[[], object]]]:
    fetch = fetch_body(partitions)
    out: dict[str, dict[str, Callable[[], object]]] = {}
    for version in (4, 12):
        payload = P.encode_response_frame(P.ApiKey.FETCH, version, CORRELATION_ID, fetch)[4:]
        header = 4 + P.response_header_version(P.ApiKey.FETCH, version)
        body = payload[header:]
        peers: dict[str, Callable[[], object]] = {
            "kafkaev": lambda p=payload, v=version: P.decode_response_frame(P.ApiKey.FETCH, v, p),
            "kafka-python": lambda b=body, v=version: KpFetchResponse.decode(b, version=v, header=False),
        }
        if version == 4:
            peers["aiokafka"] = lambda b=body: FetchResponse_v4.decode(b)
        out[f"decode Fetch v{version} response"] = peers

    produce = produce_body(partitions)
    aio_topics = [(TOPIC, [(i, RECORDS) for i in range(partitions)])]
    for version in (7, 9):
        kp = KpProduceRequest.decode(
            P.encode_request_frame(P.ApiKey.PRODUCE, version, 1, "c", produce)[4:], version=version, header=True)
        peers = {
            "kafkaev": lambda v=version: P.encode_request_frame(P.ApiKey.PRODUCE, v, CORRELATION_ID, "bench", produce),
            "kafka-python": lambda k=kp, v=version: k.encode(version=v, header=True, framed=True),
        }
        if version == 7:
            peers["aiokafka"] = lambda: ProduceRequest_v7(None, -1, 30000, aio_topics).encode()
        out[f"encode Produce v{version} request"] = peers
    return out


def best_time(fn: Callable[[], object], loops: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(loops):
            fn()
        best = min(best, (time.process_time() - start) / loops)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--loops", type=int, default=300)
    args = parser.parse_args()
    print(f"{'scenario':34} {'client':13} {'us/message':>11} {'ns/partition':>13} {'kafkaev speedup':>16}")
    for name, peers in scenarios(args.partitions).items():
        times = {client: best_time(fn, args.loops, args.repeat) for client, fn in peers.items()}
        for client, seconds in times.items():
            ratio = "" if client == "kafkaev" else f"{seconds / times['kafkaev']:.1f}x"
            print(f"{name:34} {client:13} {seconds * 1e6:11.1f} {seconds * 1e9 / args.partitions:13.0f} {ratio:>16}")


if __name__ == "__main__":
    main()
