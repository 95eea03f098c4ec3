"""The idempotent producer's identity: producer id, epoch, and per-partition sequences.

* ``InitProducerId`` gives the producer id and epoch before the first batch is sent.
* Each partition numbers its batches: a batch takes ``next_seq`` when it is first sent and
  keeps it for every retry, so the broker can drop a duplicate (DUPLICATE_SEQUENCE_NUMBER,
  or an ack with the original offset) and refuse a gap (OUT_OF_ORDER_SEQUENCE_NUMBER).
* Sequences are 31-bit and wrap from 2**31-1 to 0, as in the Java client.
* KIP-360: when the broker has lost or rejects our sequence state (UNKNOWN_PRODUCER_ID, or
  an OUT_OF_ORDER_SEQUENCE_NUMBER not explained by an earlier batch being retried), the
  producer bumps its epoch with ``InitProducerId(producer_id, producer_epoch)`` and every
  partition starts again at sequence 0 under the new epoch.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import NONE, KafkaError
from ..protocol.codec import InitProducerIdResponse
from ..protocol.connection import Connection

SEQUENCE_MODULUS = 1 << 31
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


def next_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` in the broker's 31-bit sequence space (wraps to 0)."""
    return (sequence + increment) % SEQUENCE_MODULUS


class ProducerIdentity:
    """Producer id and epoch, obtained (and bumped) with InitProducerId on a produce connection."""

    __slots__ = ("producer_id", "producer_epoch", "requesting", "_waiters")

    def __init__(self) -> None:
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = NO_PRODUCER_EPOCH
        self.requesting = False
        self._waiters: list[Callable[[KafkaError | None], object]] = []

    def assign(self, producer_id: int, producer_epoch: int) -> None:
        """The id and epoch a transaction coordinator gave (InitProducerId, or EndTxn v5+)."""
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch

    @property
    def ready(self) -> bool:
        return self.producer_id >= 0 and not self.requesting

    def request(self, conn: Connection, cb: Callable[[KafkaError | None], object], *, bump: bool = False) -> None:
        """InitProducerId on ``conn``: a fresh id, or with ``bump=True`` the next epoch of the
        current id (KIP-360). ``cb(err)`` once; concurrent asks share one request."""
        self._waiters.append(cb)
        if self.requesting:
            return
        self.requesting = True
        # A bump names the current id and epoch (KIP-360); -1 asks for a new id.
        bumping = bump and self.producer_id >= 0
        try:
            conn.init_producer_id(self._on_response, producer_id=self.producer_id if bumping else NO_PRODUCER_ID,
                                  producer_epoch=self.producer_epoch if bumping else NO_PRODUCER_EPOCH)
        except KafkaError as exc:
            self._on_response(None, exc)

    def _on_response(self, resp: InitProducerIdResponse | None, err: KafkaError | None) -> None:
        self.requesting = False
        if resp is not None and err is None and resp.error_code != NONE:
            err = KafkaError(resp.error_code, "InitProducerId")
        if resp is not None and err is None:
            self.producer_id = resp.producer_id
            self.producer_epoch = resp.producer_epoch
        waiters, self._waiters = self._waiters, []
        for cb in waiters:
            cb(err)
