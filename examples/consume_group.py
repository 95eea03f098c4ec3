"""Read a topic in a consumer group, commit what was processed, and leave the group.

    python examples/consume_group.py [TOPIC] [GROUP] [COUNT]

Stops after COUNT records (default 10), committing the offset after the last record it
processed, then leaves the group so its partitions move to the other members at once.
"""

import sys

import kafkaev

topic = sys.argv[1] if len(sys.argv) > 1 else "events"
group = sys.argv[2] if len(sys.argv) > 2 else "example-group"
count = int(sys.argv[3]) if len(sys.argv) > 3 else 10
seen = 0


def handle(msg):
    global seen
    if seen >= count:
        return
    seen += 1
    print(f"{msg.topic}[{msg.partition}] @ {msg.offset}: {msg.key!r} {msg.value!r}")
    if seen == count:
        # The offset committed is the next one to read: one past the record processed.
        client.commit(committed, {(msg.topic, msg.partition): msg.offset + 1})


def committed(err):
    if err:
        print("commit failed:", err, file=sys.stderr)
    client.close(lambda err: kafkaev.stop())  # close() leaves the group


client = kafkaev.Client(on_message=handle, auto_offset_reset="earliest")
client.subscribe([topic], group_id=group,
                 on_assign=lambda parts: print("assigned", sorted(parts)))
kafkaev.run()
