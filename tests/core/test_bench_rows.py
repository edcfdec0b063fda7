"""The bench judges a short live run's memory per call begun, against the ten-minute
target's share for each call."""

from codeai_tui.lab.bench import kept_row


def test_what_each_new_call_keeps_is_judged_against_its_share_of_20_mb() -> None:
    label, value, _ratio, target = kept_row(4_542_000, 4286, 30_000, rate=1000)
    assert label.endswith("(model layer, tracemalloc; 4,286 calls)")
    assert value == "1,060 bytes (4.5 MB)"
    # ten minutes at 1,000 events/s with a call every 7 events: 85,720 calls in 20 MB
    assert target == "<= 233 bytes (20 MB in 10 min at this rate)"


def test_no_calls_begun_gives_no_per_call_figure() -> None:
    _label, value, _ratio, target = kept_row(12_000, 0, 0, rate=1000)
    assert value == "0.0 MB"
    assert target == "<= 20 MB (10 min)"
