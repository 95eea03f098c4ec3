# kafkaev.protocol.codec: Kafka wire codecs, assembled from one include per concern
# (asyncpg pgproto's layout). Declarations shared with connection.pyx: codec.pxd.

from uuid import UUID as _UUID

from kafkaev.errors import KafkaError, ProtocolError

include "codec_buffers.pxi"
include "codec_hashing.pxi"
include "codec_compression.pxi"
include "codec_record_reader.pxi"
include "codec_record_builder.pxi"
include "codec_message_walker.pxi"
include "codec_produce_response.pxi"
include "codec_messages.pxi"
