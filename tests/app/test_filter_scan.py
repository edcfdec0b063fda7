"""A filter over many rows is scanned in a thread: the screen answers keys meanwhile,
says "filtering…", and shows the rows once the scan ends; while a case is followed the
last finished scan's rows stay shown until the next one ends (app/widgets/filter_scan.py).
On the screen's thread a filtered Receipts pane of a 1M-event ledger took ~2.8 s per
snapshot and froze the console while it followed."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import pytest
from apphelpers import frozen_clock, ready, wait_for

from codeai_tui.app import create_app
from codeai_tui.app.widgets import filter_scan
from codeai_tui.app.widgets.filter_scan import FilterScans, ScanRequest
from codeai_tui.console.filters import Needle

SIZE = (160, 48)


async def test_a_filter_scanned_in_a_thread_leaves_the_screen_answering(
        case_factory, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Every pane's filter goes to the thread (the threshold set to 0); the scan's
    matching waits for a gate, so the screen must answer while it waits."""
    monkeypatch.setattr(filter_scan, "IN_THREAD_FROM", 0)
    gate = threading.Event()
    plain = Needle.matches

    def gated(self: Needle, fields: Iterable[str]) -> bool:
        if threading.current_thread() is not threading.main_thread():
            gate.wait(10)
        return plain(self, fields)

    monkeypatch.setattr(Needle, "matches", gated)
    app = create_app(case_factory("resumed_then_completed"), clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        calls = main.pane("calls")
        assert calls.row_count == 2
        await pilot.press("3", "slash", *"completed", "enter")
        await wait_for(pilot, lambda: "filtering" in str(calls.border_subtitle),
                       what="the pane says it is filtering")
        assert calls.row_count == 0  # (no scan of this filter has ended yet)
        await pilot.press("2")  # the screen answers a key while the scan waits
        await wait_for(pilot, lambda: app.focused is main.pane("tasks"), what="2 answered")
        gate.set()
        await wait_for(pilot, lambda: calls.row_count == 1
                       and "filtering" not in str(calls.border_subtitle), what="scanned")
        row = calls.source.row(0)
        assert row is not None and row.key == "call-17"


def _scan(scans: FilterScans, request: ScanRequest) -> list[int] | None:
    """One scan as the pane runs it: begun, run, ended."""
    scans.running = True
    generation = scans.generation
    found = scans.scan(request, generation)
    scans.ended(request, generation, found, 0.0)
    return found


def _request(text: str, items: list[str], scope: object = "case") -> ScanRequest:
    needle = Needle(text)
    return ScanRequest(needle, scope, items, lambda i: needle.matches((items[i],)),
                       len(items))


def test_a_followed_case_shows_the_last_scan_until_the_next_ends() -> None:
    scans = FilterScans()
    first = ["call-1 done", "call-2 open", "call-3 done"]
    shown, start = scans.indices(_request("done", first))
    assert (shown, start) == ([], True)  # nothing scanned yet: a scan must begin
    assert scans.waiting()  # ("filtering…")
    assert _scan(scans, scans.wanted) == [0, 2]  # type: ignore[arg-type]
    assert not scans.waiting()
    assert scans.indices(_request("done", first)) == ([0, 2], False)  # these very items
    grown = [*first, "call-4 done"]
    shown, start = scans.indices(_request("done", grown))
    assert (shown, start) == ([0, 2], True)  # the last scan's rows while the next runs
    assert not scans.waiting()  # (a newer snapshot's scan is not announced)
    assert _scan(scans, scans.wanted) == [0, 2, 3]  # type: ignore[arg-type]
    assert scans.wanted is None
    # a shorter list of the same case (a log read anew): no place past its end is shown
    assert scans.indices(_request("done", first[:2]))[0] == [0]
    # the scanned list itself grown in place: scanned again
    latest = scans.wanted
    assert latest is not None
    _scan(scans, latest)
    latest.items.append("call-5 done")  # type: ignore[attr-defined]
    assert scans.indices(_request("done", latest.items))[1]  # type: ignore[arg-type]


def test_another_filter_or_case_shows_nothing_of_the_last_and_stops_its_scan() -> None:
    scans = FilterScans()
    items = [f"call-{i} done" for i in range(5000)]
    request = _request("done", items)
    scans.indices(request)
    _scan(scans, request)
    assert scans.indices(_request("open", items)) == ([], True)
    assert scans.indices(_request("done", items, scope="another case")) == ([], True)
    # a scan running while the filter changes is given up at its next look
    scans.running = True
    generation = scans.generation
    scans.indices(_request("other", items))
    assert scans.scan(request, generation) is None


def test_the_next_scan_waits_twice_as_long_as_the_last_took() -> None:
    """While following, scanning takes at most about a third of the time."""
    scans = FilterScans()
    assert scans.delay() == 0.0  # (the first scan begins at once)
    request = _request("done", ["call-1 done"])
    scans.indices(request)
    scans.running = True
    scans.ended(request, scans.generation, [0], 5.0)
    assert 5.0 < scans.delay() <= 10.0


async def test_a_filter_that_matches_nothing_says_so_not_that_the_case_has_none(
        case_factory) -> None:  # noqa: ANN001
    app = create_app(case_factory("resumed_then_completed"), clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        calls = app.main.pane("calls")
        assert calls.row_count == 2
        await pilot.press("3", "slash", *"zzz", "enter")
        await wait_for(pilot, lambda: calls.row_count == 0, what="filtered")
        assert calls.empty_message() == "no row matches the filter"  # (not "no calls")
