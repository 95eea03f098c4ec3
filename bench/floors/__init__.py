"""The raw-socket floors: what the broker and loopback cost when the client costs next to nothing.

``roundtrip`` (one record, wait for the ack), ``e2e`` (records at a rate, fetched back) and
``produce`` (full pre-encoded batches, pipelined) are the worker's ``raw-socket`` client; ``wire`` holds the bytes they send.
``await_step`` is the ``asyncio-floor`` client: asyncio's own cost of awaiting each record, alone or in
windows.
"""

from bench.floors.end_to_end_latency import e2e
from bench.floors.pipelined_produce import produce
from bench.floors.roundtrip_latency import roundtrip

__all__ = ["e2e", "produce", "roundtrip"]
