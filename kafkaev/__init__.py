"""kafkaev: a fast, callback-driven Apache Kafka client on uvloop."""

__version__ = "0.1.0"
