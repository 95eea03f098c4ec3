# Constants about the APIs the connection speaks; the API_* keys themselves come from codec.pxd.

cdef enum:
    API_KEY_LIMIT = 128

# Fetch v13+ and Produce v13+ name topics by id only; a request for a topic whose id the
# metadata did not give stays at the last version that names it.
cdef int FETCH_LAST_VERSION_WITH_NAMES = 12
cdef int PRODUCE_LAST_VERSION_WITH_NAMES = 12

# Versions the codecs have but the cluster client does not speak: negotiation stops below
# them (Connection.request(version=...) can still send one explicitly).
CLIENT_VERSION_CAPS = {
    # v4+ is the broker-to-broker batched form; clients speak v3 and below.
    API_ADD_PARTITIONS_TO_TXN: 3,
    # v10 names topics by id only and drops names (KIP-848); the group and its commits work
    # by topic name. v9 carries the member epoch the consumer group protocol needs, and every
    # broker from 3.9 (v9) to 4.4 (v2-v10) accepts it.
    API_OFFSET_COMMIT: 9,
    API_OFFSET_FETCH: 9,
    # v6 names topics by id only (KIP-1319); transactional offsets are by name, and 3.9 to
    # 4.3 brokers end at v4 or v5.
    API_TXN_OFFSET_COMMIT: 5,
}
# OffsetForLeaderEpoch replica_id for a consumer (not a follower, not debugging).
cdef int CONSUMER_REPLICA_ID = -2
# ListOffsets/Fetch replica_id for a client.
cdef int CLIENT_REPLICA_ID = -1
cdef int UNKNOWN_NODE_ID = -1   # a Connection's node_id until its owner says which broker it is
cdef int NOT_NEGOTIATED = -1    # an API's version before (or without) the broker's ApiVersions
BROKER_DEFAULT = -1             # CreateTopics: the broker's num.partitions / default.replication.factor


# Topic id meaning "none": requests that name topics leave it all zero.
ZERO_UUID = codec.ZERO_UUID

cdef dict _API_NAMES = dict(codec.API_NAMES)
cdef dict _RESPONSE_LABELS = {}


cdef str api_name(int key):
    """The schema name of an API ("Metadata")."""
    name = _API_NAMES.get(key)
    return name if name is not None else f"ApiKey{key}"


cdef bytes response_label(int16_t key, int16_t version):
    """b"Fetch v12 response", for ProtocolError messages; cached, built once per (key, version)."""
    cdef int slot = (<int>key << 16) | <int>version
    label = _RESPONSE_LABELS.get(slot)
    if label is None:
        label = f"{api_name(key)} v{version} response".encode()
        _RESPONSE_LABELS[slot] = label
    return label
