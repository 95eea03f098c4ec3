"""The wire layer, the only code that knows Kafka's bytes.

``codec`` (Cython): buffers, the generated request and response codecs, RecordBatch v2
building and reading, compression, CRC-32C and murmur2. ``connection`` (Cython): one
pipelined broker connection with its handshake, TLS and SASL (``sasl``: the PLAIN and
SCRAM exchanges).
"""
