"""The latency probes (kafkaev/protocol/probes.pyx) and bench/breakdown.py's matching of their
marks to one record's path."""

from __future__ import annotations

import pytest

from bench.breakdown import (
    API_FETCH,
    API_PRODUCE,
    CALLBACK,
    DELIVER,
    E2E,
    ENCODE,
    FRAME,
    PRODUCE,
    READ,
    ROUNDTRIP,
    WRITE,
    Samples,
    _match,
    breakdown,
)
from kafkaev.protocol import probes


def test_the_normal_build_has_no_probes():
    """setup.py without KAFKAEV_PROBES=1 compiles every probe call site out, and says so."""
    if probes.compiled():
        pytest.skip("a KAFKAEV_PROBES=1 build")
    with pytest.raises(RuntimeError, match="KAFKAEV_PROBES=1"):
        probes.enable(10)
    assert probes.marks() == [] and probes.dropped() == 0


def test_stage_numbers_match_the_probe_module():
    assert probes.STAGE_NAMES[PRODUCE] == "produce" and probes.STAGE_NAMES[DELIVER] == "deliver"
    assert len(probes.STAGE_NAMES) == DELIVER + 1


def test_each_point_is_the_latest_mark_of_its_kind_before_the_next():
    # An empty Fetch answer (read, framed, called back) comes before the one carrying the record,
    # and the Produce's own answer lands in between: only the last Fetch marks belong to the path.
    marks = [(PRODUCE, 0, 110), (ENCODE, API_PRODUCE, 120), (WRITE, API_PRODUCE, 125),
             (READ, API_FETCH, 130), (FRAME, API_FETCH, 131), (CALLBACK, API_FETCH, 133),
             (READ, API_PRODUCE, 200), (READ, API_FETCH, 300), (FRAME, API_FETCH, 301),
             (CALLBACK, API_FETCH, 310), (DELIVER, 0, 340)]
    assert _match(E2E, marks, 100, 350) == [100, 110, 120, 125, 300, 301, 310, 340, 350]


def test_a_path_missing_a_point_is_not_matched():
    marks = [(PRODUCE, 0, 110), (ENCODE, API_PRODUCE, 120), (READ, API_PRODUCE, 200)]  # no write
    assert _match(ROUNDTRIP, marks, 100, 300) is None
    assert _match(ROUNDTRIP, marks, 150, 300) is None  # the produce() mark is before the window


def test_breakdown_takes_the_median_of_each_stage():
    one = [(PRODUCE, 0, 1_000), (ENCODE, 0, 3_000), (WRITE, 0, 4_000), (READ, 0, 14_000), (FRAME, 0, 15_000),
           (CALLBACK, 0, 17_000)]
    marks = one + [(stage, tag, ns + 100_000) for stage, tag, ns in one]
    samples = Samples(windows=[(0, 20_000), (100_000, 120_000)], floor_us=[8.0, 10.0])
    result = breakdown(ROUNDTRIP, samples, marks)
    assert result.matched == 2 and result.iterations == 2
    assert [median for _label, median, _p90 in result.stages] == [1.0, 2.0, 1.0, 10.0, 1.0, 2.0, 3.0]
    assert result.total_us == 20.0 and result.floor_us == 9.0
