// The Java client of the broker's own version as the oracle for the newest broker features
// (test_cluster_harness.py): run as `java -cp <kafka libs> NewestFeatures.java BOOTSTRAP TOPIC [FEATURE...]`.
// Writes RECORDS records in one transaction (a 4.x producer uses transactions v2, KIP-890, once the
// broker finalized transaction.version=2), reads them back as a consumer-protocol group member
// (KIP-848), then, when "share.version" is among the features, as a share group member (KIP-932).
// Each step prints one result line with the prefix below; the clients' own logging is left out.
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class NewestFeatures {
    static final String RESULT = "newest-features: ";
    static final int RECORDS = 3;
    static final Duration POLL = Duration.ofMillis(500);
    static final Duration READ_DEADLINE = Duration.ofSeconds(60);
    static final String SHARE_FEATURE = "share.version";

    interface Poll {
        int records(Duration timeout);
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        Set<String> features = Set.copyOf(List.of(args).subList(2, args.length));
        produceInOneTransaction(bootstrap, topic);
        readAsConsumerProtocolMember(bootstrap, topic);
        if (features.contains(SHARE_FEATURE)) {
            readAsShareGroupMember(bootstrap, topic);
        }
    }

    static void produceInOneTransaction(String bootstrap, String topic) {
        Properties config = new Properties();
        config.put("bootstrap.servers", bootstrap);
        config.put("transactional.id", "newest-features-" + topic);
        config.put("key.serializer", StringSerializer.class.getName());
        config.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>(topic, "key-" + i, "value-" + i));
            }
            producer.commitTransaction();
        }
        System.out.println(RESULT + "transaction committed: " + RECORDS);
    }

    static void readAsConsumerProtocolMember(String bootstrap, String topic) {
        Properties config = new Properties();
        config.put("bootstrap.servers", bootstrap);
        config.put("group.id", "newest-features-consumer-" + topic);
        config.put("group.protocol", "consumer");
        config.put("isolation.level", "read_committed");
        config.put("auto.offset.reset", "earliest");
        config.put("key.deserializer", StringDeserializer.class.getName());
        config.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
            consumer.subscribe(List.of(topic));
            int read = readUpTo(timeout -> consumer.poll(timeout).count());
            System.out.println(RESULT + "consumer group protocol read: " + read);
        }
    }

    static void readAsShareGroupMember(String bootstrap, String topic) throws Exception {
        String group = "newest-features-share-" + topic;
        // A share group starts at the log end by default; these records are already there.
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp fromEarliest = new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(fromEarliest))).all().get();
        }
        Properties config = new Properties();
        config.put("bootstrap.servers", bootstrap);
        config.put("group.id", group);
        config.put("key.deserializer", StringDeserializer.class.getName());
        config.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(config)) {
            consumer.subscribe(List.of(topic));
            int read = readUpTo(timeout -> {
                int count = consumer.poll(timeout).count();
                consumer.commitSync();  // acknowledges what this poll delivered
                return count;
            });
            System.out.println(RESULT + "share group read: " + read);
        }
    }

    static int readUpTo(Poll poll) {
        int read = 0;
        long deadline = System.nanoTime() + READ_DEADLINE.toNanos();
        while (read < RECORDS && System.nanoTime() < deadline) {
            read += poll.records(POLL);
        }
        return read;
    }
}
