"""Busy polling (``busy_poll_us``): the loop spins instead of sleeping for a window after each
socket read or write, on asyncio's own loop and on uvloop, and only while asked to."""

from __future__ import annotations

import asyncio

import pytest
from producer_helpers import Delivery, close, flush, produce_all, read_back

from kafkaev.client import Client
from kafkaev.protocol.connection import MAX_BUSY_POLL_US, BusyPoll

# Far longer than any window below.
QUIET_S = 0.1
# Long enough to spin many turns even where other processes get the core at each yield.
WINDOW_US = 20_000
RECORDS = 2000


def _idle_for(loop: asyncio.AbstractEventLoop, seconds: float) -> None:
    loop.run_until_complete(asyncio.sleep(seconds))


def test_an_armed_poll_keeps_the_loop_turning_then_lets_it_sleep(loop):
    poll = BusyPoll(loop, WINDOW_US)
    assert not poll.spinning and poll.turns == 0
    _idle_for(loop, QUIET_S)
    assert poll.turns == 0, "nothing armed it: the loop slept"
    poll.arm()
    assert poll.spinning
    _idle_for(loop, QUIET_S)
    # Unarmed, the spin would have run once and not come back; armed, it re-queued itself.
    spun = poll.turns
    assert spun > 10, f"the loop turned {spun} times in a {WINDOW_US} us window"
    assert not poll.spinning, "the window is over: the loop may sleep again"
    _idle_for(loop, QUIET_S)
    assert poll.turns == spun, "it spun on past its window"


def test_arming_again_extends_the_window_without_a_second_spin(loop):
    poll = BusyPoll(loop, MAX_BUSY_POLL_US)
    poll.arm()
    poll.arm()
    queued = [h for h in loop._ready if not h.cancelled()] if hasattr(loop, "_ready") else None
    if queued is not None:  # asyncio's own loop shows its ready queue: one spin, not two
        assert len(queued) == 1
    _idle_for(loop, 0.01)
    assert poll.spinning
    poll.close()
    assert not poll.spinning
    turns = poll.turns
    _idle_for(loop, 0.01)
    assert poll.turns == turns
    poll.arm()  # closed: arming does nothing
    assert not poll.spinning


@pytest.mark.parametrize("window_us", [0, -5, MAX_BUSY_POLL_US + 1])
def test_a_window_out_of_range_names_busy_poll_us(loop, window_us):
    with pytest.raises(ValueError, match="busy_poll_us"):
        BusyPoll(loop, window_us)


def test_a_window_that_is_not_an_int_names_busy_poll_us(loop):
    with pytest.raises(TypeError, match="busy_poll_us"):
        BusyPoll(loop, 1.5)


def test_a_client_without_busy_poll_never_spins(kafka, topic, uv):
    client = Client(kafka.bootstrap, loop=uv, linger_ms=0)
    delivery = Delivery(10)
    uv.run_until_complete(produce_all(client, topic, [(None, b"%d" % i) for i in range(10)], delivery))
    flush(client, uv)
    assert client._pool.busy_poll is None
    assert all(pooled.conn.busy_poll is None for pooled in client._pool.connections())
    close(client, uv)


def test_a_busy_polling_client_round_trips_every_record_once(kafka, topic, loop):
    """Records produced one at a time from the previous one's callback, as a latency harness
    does: each is acknowledged once, lands once in order, and every connection spun the
    client's one loop."""
    client = Client(kafka.bootstrap, loop=loop, linger_ms=0, busy_poll_us=500)
    poll = client._pool.busy_poll
    assert isinstance(poll, BusyPoll) and poll.window_us == 500
    delivery = Delivery(RECORDS)
    done = loop.create_future()

    def send(i: int) -> None:
        client.produce(topic, None, b"%d" % i, acked(i))

    def acked(i: int):
        record = delivery.cb(i)

        def cb(meta, err):
            record(meta, err)
            if i + 1 < RECORDS:
                send(i + 1)
            elif not done.done():
                done.set_result(None)
        return cb

    send(0)
    loop.run_until_complete(asyncio.wait_for(done, 60))
    delivery.assert_each_once()
    assert not delivery.errors
    connections = client._pool.connections()
    assert connections and all(pooled.conn.busy_poll is poll for pooled in connections)
    assert poll.turns > 0
    close(client, loop)
    assert not poll.spinning, "a closed client left its loop spinning"
    turns = poll.turns
    _idle_for(loop, QUIET_S)
    assert poll.turns == turns
    got = read_back(kafka.bootstrap, topic, RECORDS)
    assert [int(m.value()) for m in got] == list(range(RECORDS))
