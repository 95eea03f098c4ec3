"""Produce a few records and wait until the broker has acknowledged every one.

    python examples/produce.py [TOPIC] [COUNT]

The brokers come from $KAFKAEV_BROKERS, else the running `kafkaev broker start`, else
127.0.0.1:9092. Exits 1 if a record failed.
"""

import sys

import kafkaev

topic = sys.argv[1] if len(sys.argv) > 1 else "events"
count = int(sys.argv[2]) if len(sys.argv) > 2 else 10
failed = []


def delivered(meta, err):
    if err:
        failed.append(err)
    else:
        print(f"{meta.topic}[{meta.partition}] @ {meta.offset}")


def connected(md, err):
    if err:  # no broker answered: say so at once rather than wait for the records to time out
        raise SystemExit(f"cannot connect: {err}")
    for i in range(count):
        client.produce(topic, f"key-{i}", f"value {i}", delivered)
    client.flush(lambda err: client.close(lambda err: kafkaev.stop()))


client = kafkaev.Client(acks=-1, linger_ms=5, idempotent=True)
client.connect(connected)
kafkaev.run()
if failed:
    sys.exit(f"{len(failed)} records failed, the first: {failed[0]}")
