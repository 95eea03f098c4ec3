# kafkaev._proto: Kafka wire codecs, assembled from one include per concern
# (asyncpg pgproto's layout). Declarations shared with _conn.pyx: _proto.pxd.

from uuid import UUID as _UUID

from kafkaev.errors import KafkaError, ProtocolError

include "_codecs/buffers.pxi"
include "_codecs/hashing.pxi"
include "_codecs/compression.pxi"
include "_codecs/record_reader.pxi"
include "_codecs/record_builder.pxi"
include "_codecs/message_codec.pxi"
include "_codecs/messages.pxi"
