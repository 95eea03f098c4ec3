"""The comparative benchmark harness: kafkaev against confluent-kafka, aiokafka and kafka-python.

``python -m bench`` runs every scenario for every client against one broker and writes a table,
a JSON file and a chart to ``bench/results/``. See ``bench/run.py``.
"""
