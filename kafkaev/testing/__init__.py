"""A real Apache Kafka cluster (KRaft, local JVM processes) for tests, benchmarks and demos."""
