"""The callback counters of exactly_once.py and the helpers built on them catch a second call,
in the test's own check and, for a test that never checks, when the test ends."""

from __future__ import annotations

import pytest
from conn_support import Recorder
from exactly_once import Calls, assert_no_second_calls, tracking
from producer_helpers import Delivery


def test_calls_records_the_first_call_of_each_key():
    with tracking() as tracked:
        calls = Calls("delivery callback")
    assert tracked == [calls]
    calls.cb(0)("meta", None)
    calls.cb(1)(None, "err")
    assert dict(calls) == {0: ("meta", None), 1: (None, "err")}
    calls.assert_each_once(range(2))
    with pytest.raises(AssertionError, match=r"delivery callback never called for 2"):
        calls.assert_each_once(range(3))
    with pytest.raises(AssertionError, match=r"delivery callback called for unexpected 1"):
        calls.assert_each_once([0])


def test_calls_fails_the_check_on_a_second_call():
    with tracking() as tracked:
        calls = Calls("delivery callback")
    first = calls.cb(7)
    first("meta", None)
    calls.assert_each_once([7])
    first(None, "late error")  # the same record reported again
    assert len(calls) == 1 and calls[7] == ("meta", None) and calls.count(7) == 2
    both_calls = r"called more than once for 7:\n  7: \[\('meta', None\), \(None, 'late error'\)\]"
    with pytest.raises(AssertionError, match=both_calls):
        calls.assert_each_once([7])
    with pytest.raises(AssertionError, match="more than once"):
        calls.assert_no_second_call()
    with pytest.raises(AssertionError, match="more than once for 7"):
        assert_no_second_calls(tracked)  # what each_callback_at_most_once runs when a test ends


def test_delivery_fails_the_check_on_a_second_call():
    with tracking() as tracked:
        delivery = Delivery(3)
    assert tracked == [delivery]
    callbacks = [delivery.cb(i) for i in range(3)]
    for i, cb in enumerate(callbacks):
        cb(f"meta{i}", None)
    delivery.assert_each_once()
    callbacks[1](None, "err")  # a success, then a failure for the same record
    assert delivery.complete  # counting alone does not see it
    with pytest.raises(AssertionError, match="delivery callback called more than once for 1"):
        delivery.assert_each_once()
    with pytest.raises(AssertionError, match="more than once for 1"):
        assert_no_second_calls(tracked)


def test_delivery_fails_the_check_on_a_missing_call():
    with tracking():
        delivery = Delivery(2)
    delivery.cb(0)("meta", None)
    with pytest.raises(AssertionError, match="delivery callback never called for 1"):
        delivery.assert_each_once()


def test_recorder_fails_the_check_on_a_second_call(loop):
    with tracking() as tracked:
        rec = Recorder(2, loop)
    assert tracked == [rec]
    first, second = rec.cb(0), rec.cb(1)
    first("response", None)
    first("response", None)  # two calls: all_done resolves though request 1 never answered
    assert rec.all_done.done()
    with pytest.raises(AssertionError, match="request callback called more than once for 0"):
        rec.assert_each_once()
    with pytest.raises(AssertionError, match="more than once for 0"):
        assert_no_second_calls(tracked)
    second("response", None)
    with pytest.raises(AssertionError, match="more than once for 0"):
        rec.assert_each_once()


def test_a_test_whose_callback_fires_twice_fails_when_it_ends(pytester):
    """Through the autouse fixture, in a session of its own: the test that fires a callback twice
    fails although it never checks, also when the second call comes from its loop's shutdown (the
    check is torn down after the loop fixtures)."""
    pytester.makeconftest("""
        import asyncio

        import pytest
        from exactly_once import each_callback_at_most_once  # noqa: F401


        @pytest.fixture
        def loop():
            loop = asyncio.new_event_loop()
            yield loop
            loop.run_until_complete(asyncio.sleep(0))  # a shutdown runs what is still queued
            loop.close()
    """)
    pytester.makepyfile(test_twice="""
        from exactly_once import Calls


        def test_twice_in_the_body():
            calls = Calls("delivery callback")
            cb = calls.cb(0)
            cb("first")
            cb("second")


        def test_twice_during_the_loops_shutdown(loop):
            calls = Calls("close callback")
            cb = calls.cb("close")
            cb(None)
            loop.call_soon(cb, None)


        def test_once(loop):
            calls = Calls()
            loop.call_soon(calls.cb(0), "only")
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_twice_in_the_body*",
        "*delivery callback called more than once for 0*",
        "*ERROR at teardown of test_twice_during_the_loops_shutdown*",
        "*close callback called more than once for 'close'*",
    ])
