"""A filter over many rows is scanned in a thread: the screen answers keys meanwhile,
says "filtering…", and shows the rows once the scan ends; while a case is followed the
last finished scan's rows stay shown until the next one ends (app/widgets/filter_scan.py).
On the screen's thread a filtered Receipts pane of a 1M-event ledger took ~2.8 s per
snapshot and froze the console while it followed. From FORK_FROM rows the thread waits
for forked children that match them, one a core, and matches a part itself if its child
fails."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pytest
from apphelpers import frozen_clock, gate_scans, ready, wait_for
from hypothesis import given
from hypothesis import strategies as st
from ledgerfactory import append_to_case

from codeai_tui.app import create_app
from codeai_tui.app.widgets import filter_scan
from codeai_tui.app.widgets.filter_scan import FilterScans, ScanRequest
from codeai_tui.console.filters import Needle

SIZE = (160, 48)


async def test_a_filter_scanned_in_a_thread_leaves_the_screen_answering(
        case_factory, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """Every pane's filter goes to the thread (the threshold set to 0); the scan's
    matching waits for a gate, so the screen must answer while it waits."""
    gate = gate_scans(monkeypatch)
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


def test_a_newer_snapshots_scan_waits_twice_as_long_as_the_last_took() -> None:
    """While following, scanning takes at most about a third of the time; a filter (or
    case) not scanned yet is scanned at once: the operator waits for it."""
    scans = FilterScans()
    request = _request("done", ["call-1 done"])
    scans.indices(request)
    assert scans.delay() == 0.0  # (the first scan begins at once)
    scans.running = True
    scans.ended(request, scans.generation, [0], 5.0)
    scans.indices(_request("done", ["call-1 done", "call-2 done"]))  # a newer snapshot
    assert 5.0 < scans.delay() <= 10.0
    scans.indices(_request("open", ["call-1 done", "call-2 done"]))  # another filter
    assert scans.delay() == 0.0
    scans.indices(_request("done", ["call-1 done"], scope="another case"))
    assert scans.delay() == 0.0


def _many(n: int) -> list[str]:
    return [f"call-{i} {'done' if i % 3 else 'open'}" for i in range(n)]


def test_a_scan_of_many_rows_runs_in_a_child_and_finds_what_the_thread_finds() -> None:
    """From FORK_FROM rows the rows are matched in a forked child: a match that holds only
    outside this process (its pid) finds every row there, and the child's positions are
    what a scan here finds."""
    items = _many(filter_scan.FORK_FROM)
    here = os.getpid()
    needle = Needle("open")
    scans = FilterScans()
    found = _scan(scans, ScanRequest(needle, "case", items, lambda i: os.getpid() != here,
                                     len(items)))
    assert found == list(range(len(items)))
    plain = _request("open", items)
    expected = [i for i in range(len(items)) if i % 3 == 0]
    assert _scan(FilterScans(), plain) == expected
    short = _request("open", items[:filter_scan.FORK_FROM - 1])  # (in the thread)
    assert _scan(FilterScans(), ScanRequest(short.needle, "case", short.items,
                                            lambda i: os.getpid() != here,
                                            short.length)) == []


def test_a_child_that_fails_leaves_the_scan_to_the_thread(tmp_path: Path) -> None:
    """A child that dies mid-scan is given up: the thread's scan gives the positions."""
    items = _many(filter_scan.FORK_FROM)
    here, died = os.getpid(), tmp_path / "died"
    expected = [i for i in range(len(items)) if i % 3 == 0]

    def dies(i: int) -> bool:
        if os.getpid() != here and i == 5000:
            died.write_text("child")
            os._exit(3)
        return i % 3 == 0

    assert _scan(FilterScans(), ScanRequest(Needle("open"), "case", items, dies,
                                            len(items))) == expected
    assert died.read_text() == "child"


@given(st.integers(0, 12 * filter_scan.FORK_FROM), st.integers(1, 8))
def test_the_rows_are_parted_one_range_a_core_each_of_enough_rows(length: int,
                                                                  cores: int) -> None:
    ranges = filter_scan.parts(length, cores)
    assert [lo for lo, _hi in ranges] == [0] + [hi for _lo, hi in ranges[:-1]]
    assert ranges[-1][1] == length  # (every row once, in order)
    assert len(ranges) == max(1, min(cores, filter_scan.MAX_CHILDREN,
                                     length // filter_scan.FORK_FROM))
    if len(ranges) > 1:
        assert min(hi - lo for lo, hi in ranges) >= filter_scan.FORK_FROM


def _pids_of_parts(tmp_path: Path, items: list[str], at: set[int]
                   ) -> tuple[ScanRequest, Path]:
    """A request whose match holds only outside this process, noting at the rows `at`
    which process matched them (one file a row)."""
    here = os.getpid()

    def match_at(i: int) -> bool:
        if i in at:
            (tmp_path / str(i)).write_text(str(os.getpid()))
        return os.getpid() != here

    return ScanRequest(Needle("open"), "case", items, match_at, len(items)), tmp_path


def test_a_scan_over_two_cores_is_split_between_two_children(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows enough for two parts, two cores: each part is matched in a child of its own,
    and the positions come back whole and in order."""
    monkeypatch.setattr(filter_scan, "usable_cores", lambda: 2)
    n = 2 * filter_scan.FORK_FROM
    items = _many(n)
    request, noted = _pids_of_parts(tmp_path, items, {0, n // 2})
    assert _scan(FilterScans(), request) == list(range(n))
    pids = {(noted / str(i)).read_text() for i in (0, n // 2)}
    assert len(pids) == 2 and str(os.getpid()) not in pids
    monkeypatch.setattr(filter_scan, "usable_cores", lambda: 1)  # one core: one child
    (tmp_path / "one").mkdir()
    request, noted = _pids_of_parts(tmp_path / "one", items, {0, n // 2})
    assert _scan(FilterScans(), request) == list(range(n))
    assert len({(noted / str(i)).read_text() for i in (0, n // 2)}) == 1


def test_a_part_whose_child_fails_is_matched_by_the_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Of two children the second dies mid-scan: its part is matched here, the first's
    rows are the first child's, and the positions are what one scan here finds."""
    monkeypatch.setattr(filter_scan, "usable_cores", lambda: 2)
    n = 2 * filter_scan.FORK_FROM
    items = _many(n)
    here, died = os.getpid(), tmp_path / "died"
    expected = [i for i in range(n) if i % 3 == 0]

    def dies(i: int) -> bool:
        if os.getpid() != here and i == n // 2 + 5000:
            died.write_text("child")
            os._exit(3)
        return i % 3 == 0

    assert _scan(FilterScans(), ScanRequest(Needle("open"), "case", items, dies,
                                            n)) == expected
    assert died.read_text() == "child"


def test_a_childs_scan_no_longer_wanted_ends_at_once() -> None:
    """Another filter typed (or the pane going) while a child scans: it is killed, and the
    scan returns None well before the child's rows would have taken."""
    items = _many(filter_scan.FORK_FROM)
    scans = FilterScans()
    request = _request("open", items)
    scans.indices(request)
    scans.running = True
    generation = scans.generation
    asked = time.monotonic()

    def slow(i: int) -> bool:
        time.sleep(0.001)  # (20 s for the whole list)
        return True

    def stop() -> bool:
        return time.monotonic() - asked > 0.5

    started = time.monotonic()
    found = scans.scan(ScanRequest(request.needle, "case", items, slow, len(items)),
                       generation, stop)
    assert found is None and time.monotonic() - started < 5


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


async def test_a_filter_just_typed_does_not_wait_out_a_newer_snapshots_delay(
        case_factory, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A scan held 3 s: a newer snapshot of the followed case waits twice that before
    its scan; a filter typed meanwhile is scanned at once, not after that wait."""
    gate = gate_scans(monkeypatch)
    case = case_factory("resumed_then_completed")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        calls = app.main.pane("calls")
        await pilot.press("3", "slash", *"completed", "enter")
        await wait_for(pilot, lambda: "filtering" in str(calls.border_subtitle),
                       what="the pane says it is filtering")
        await pilot.pause(3.0)  # (the scan takes 3 s: the next of this filter waits 6)
        gate.set()
        await wait_for(pilot, lambda: calls.row_count == 1
                       and "filtering" not in str(calls.border_subtitle), what="scanned")
        seen = calls.snapshot.event_count  # type: ignore[union-attr]
        append_to_case(case, [{"seq": seen + 1, "kind": "task.created", "task_id": "t-new",
                               "payload": {"title": "later"}}])
        await wait_for(pilot, lambda: calls.snapshot.event_count == seen + 1,  # type: ignore[union-attr]
                       what="the newer snapshot")
        await pilot.press("escape", "slash", *"call-17", "enter")
        await wait_for(pilot, lambda: "call-17" in str(calls.border_subtitle)
                       and "filtering" not in str(calls.border_subtitle)
                       and calls.row_count == 2, timeout=3.0, what="scanned at once")


def test_a_scan_that_raised_is_not_begun_again_for_the_same_rows() -> None:
    """Its error is kept for its filter and scope; the same items start no scan (else a
    scan raising at once was begun at every paint), newer items do, after twice its time
    or a second."""
    scans = FilterScans()
    items = ["call-1 done"]
    request = _request("done", items)
    scans.indices(request)
    scans.running = True
    assert not scans.ended(request, scans.generation, None, 0.1, "OSError: ledger gone")
    assert scans.failure(request.needle, "case") == "OSError: ledger gone"
    assert scans.failure(Needle("open"), "case") is None
    assert scans.failure(request.needle, "another case") is None
    assert scans.indices(_request("done", items)) == ([], False)
    assert not scans.waiting()  # (not "filtering…": it failed)
    assert scans.indices(_request("done", [*items, "call-2 done"])) == ([], True)
    assert 0.9 < scans.delay() <= filter_scan.RETRY_MIN_S  # (twice 0.1 s: the floor)
    newer = scans.wanted
    assert newer is not None
    assert _scan(scans, newer) == [0, 1]
    assert scans.failure(request.needle, "case") is None  # (a scan that ended well)


async def test_a_filter_whose_scan_raises_says_why_and_scans_again_with_newer_rows(
        case_factory, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The matching raises off the screen's thread (a ledger gone, say): Calls and Lanes
    say the filter failed, with the error, and begin no other scan until a newer snapshot
    comes; once the matching works again, that snapshot's rows are shown."""
    monkeypatch.setattr(filter_scan, "IN_THREAD_FROM", 0)
    plain, raised, broken = Needle.matches, [], [True]

    def raising(self: Needle, fields: Iterable[str]) -> bool:
        if threading.current_thread() is not threading.main_thread() and broken[0]:
            raised.append(1)
            raise OSError("ledger gone")
        return plain(self, fields)

    monkeypatch.setattr(Needle, "matches", raising)
    case = case_factory("resumed_then_completed")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        for key, pane in (("3", main.pane("calls")), ("l", main.pane("lanes"))):
            before = len(raised)
            await pilot.press(key, "slash", *"completed", "enter")
            await wait_for(pilot, lambda p=pane: "filter failed" in str(p.border_subtitle),
                           what=f"{key}: the pane says the filter failed")
            assert pane.empty_message() == "the filter failed: OSError: ledger gone"
            await pilot.pause(0.5)
            assert len(raised) == before + 1  # (one scan: none begun again meanwhile)
        calls = main.pane("calls")
        broken[0] = False
        seen = calls.snapshot.event_count  # type: ignore[union-attr]
        append_to_case(case, [{"seq": seen + 1, "kind": "task.created", "task_id": "t-new",
                               "payload": {"title": "later"}}])
        await wait_for(pilot, lambda: calls.row_count == 1
                       and "failed" not in calls.empty_message()
                       and "failed" not in str(calls.border_subtitle),
                       timeout=5.0, what="scanned again with the newer snapshot")
