# cython: language_level=3
"""The producer's per-record work, in C: the state a record touches on its way into a batch,
``produce()`` itself, and the delivery callbacks of each batch.

The policy around it stays in Python (``kafkaev/producer/``): opening and closing batches,
linger, when to send, requests, retries, idempotence. ``kafkaev.producer.Producer`` subclasses
``ProducerCore`` and supplies those slow paths; the public API is documented in core.pyi.

Files: ``core_state.pxi`` (batch, partition and topic state, each partition's queue and
the ready set, the memory budget, the producer's lifecycle; the sticky partition),
``core_delivery.pxi`` (a batch's callbacks and their completion), ``core_batches.pxi``
(each batch's bookkeeping from open to completion),
``core_produce.pxi`` (argument checks, partition choice, append).
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_GET_SIZE
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_CheckExact
from libc.stdint cimport INT64_MAX, int32_t, int64_t

# RECORD_OVERHEAD_MAX: what a record adds to a batch beyond key, value and headers, at most: the
# bound of the oversize check and the memory reserved for a batch.
from kafkaev.protocol.codec cimport BATCH_HEADER_SIZE, RECORD_OVERHEAD_MAX, RecordBatchBuilder, murmur2_positive
from kafkaev.protocol.probes cimport PROBES_COMPILED, STAGE_PRODUCE, mark

import asyncio
import random
from collections import deque
from collections.abc import Mapping

from kafkaev.protocol.codec import murmur2
from kafkaev.errors import (MESSAGE_TOO_LARGE, STATE, UNKNOWN_TOPIC_OR_PARTITION, BufferFullError, KafkaError,
                            UnknownPartitionError)
from kafkaev.types import RecordMetadata

cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object s, Py_ssize_t *size) except NULL


include "core_state.pxi"
include "core_delivery.pxi"
include "core_batches.pxi"
include "core_produce.pxi"
