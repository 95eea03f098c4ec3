"""Create a topic, list the topics, grow and configure the new one, describe it and delete it again.

    python examples/admin.py [TOPIC]

kafkaev.Admin's methods take a callback like the client's; Admin.run() turns its loop until
one call is done and returns its result (or raises its KafkaError), which suits scripts.
"""

import sys

import kafkaev
import kafkaev.admin

name = sys.argv[1] if len(sys.argv) > 1 else "example-admin-topic"
admin = kafkaev.Admin()
try:
    created = admin.run(admin.create_topics, [kafkaev.NewTopic(name, num_partitions=3)])
    if created[name] is not None:
        sys.exit(f"create {name}: {created[name]}")
    print("topics:", sorted(admin.run(admin.list_topics)))
    grown = admin.run(admin.create_partitions, [kafkaev.admin.NewPartitions(name, 6)])
    print("grown to 6 partitions:", grown[name] is None)
    resource = kafkaev.admin.ConfigResource(kafkaev.admin.ConfigResourceType.TOPIC, name)
    altered = admin.run(admin.incremental_alter_configs,
                        {resource: [kafkaev.admin.AlterConfigOp("retention.ms", "3600000")]})
    print("retention.ms set:", altered[resource] is None)
    policy = admin.run(admin.describe_configs, [resource])[resource].entries["cleanup.policy"]
    print("cleanup.policy:", policy.value, policy.source.name)
    print(name, "->", admin.run(admin.describe_topics, [name])[name])
    deleted = admin.run(admin.delete_topics, [name])
    print("deleted:", deleted[name] is None)
finally:
    admin.close()
