"""The timeline's pages while the ledger grows: a page read before the newest events
keeps its rows, asks again for what it could not see, and never draws a seq it could
not see as missing."""

from __future__ import annotations

from codeai_tui.app.widgets.timeline_pane import MAX_PAGES, TimelineSource
from codeai_tui.console.model import TIMELINE_PAGE
from codeai_tui.ledger import Event


def _ev(seq: int) -> Event:
    return Event(seq=seq, event_id=f"e{seq}", recorded_at="2026-12-01T20:00:00Z",
                 kind="task.created", task_id="t1")


def _kinds(source: TimelineSource, indexes: range) -> list[str]:
    """What each row draws: the event's seq, a gap, or loading (no row yet)."""
    out = []
    for i in indexes:
        row = source.row(i)
        if row is None:
            out.append("loading")
        elif "missing" in row.cells[2]:
            out.append("gap")
        else:
            out.append(row.cells[0].strip())
    return out


def test_a_growing_ledger_keeps_the_rows_read_and_asks_again_for_the_rest() -> None:
    asked: list[int] = []
    source = TimelineSource(asked.append)
    source.set_total(10)
    assert _kinds(source, range(10)) == ["loading"] * 10 and asked == [0]
    # the writer commits seqs 11-12 while page 0 is read; the read sees 1-11
    source.set_total(12)
    source.put_page(0, [_ev(s) for s in range(1, 12)])
    assert _kinds(source, range(12)) == [str(s) for s in range(1, 12)] + ["loading"]
    assert asked == [0, 0]  # seq 12 existed after the first ask: read again
    source.put_page(0, [_ev(s) for s in range(1, 13)])
    assert _kinds(source, range(12)) == [str(s) for s in range(1, 13)]
    assert asked == [0, 0]


def test_a_seq_absent_from_what_the_read_saw_whole_is_a_gap() -> None:
    asked: list[int] = []
    source = TimelineSource(asked.append)
    source.set_total(6)
    source.row(0)
    source.set_total(9)  # 7-9 committed after the ask: the read cannot vouch for them
    source.put_page(0, [_ev(s) for s in (1, 2, 4, 5, 6)])
    assert _kinds(source, range(9)) == ["1", "2", "gap", "4", "5", "6",
                                        "loading", "loading", "loading"]


def test_each_page_is_asked_for_once_until_it_arrives_or_fails() -> None:
    asked: list[int] = []
    source = TimelineSource(asked.append)
    source.set_total(TIMELINE_PAGE + 5)
    for _ in range(3):
        _kinds(source, range(TIMELINE_PAGE + 5))
    assert asked == [0, 1]
    source.forget_request(1)  # the read failed
    _kinds(source, range(TIMELINE_PAGE, TIMELINE_PAGE + 5))
    assert asked == [0, 1, 1]


def test_the_newest_events_fill_the_end_without_a_read() -> None:
    asked: list[int] = []
    source = TimelineSource(asked.append)
    page = TIMELINE_PAGE
    end = 2 * page + 88
    newest = [_ev(s) for s in range(page + 89, end + 1) if s not in (page + 200, 2 * page + 40)]
    source.put_recent(newest)
    source.set_total(end)
    tail = range(2 * page, end)  # the last page: every seq from its first was read
    assert _kinds(source, tail) == [
        "gap" if s == 2 * page + 40 else str(s) for s in range(2 * page + 1, end + 1)]
    assert asked == []
    # the page before: read from seq page + 89 on; its start was never read
    assert _kinds(source, range(page + 87, page + 90)) == ["loading", str(page + 89),
                                                           str(page + 90)]
    assert _kinds(source, range(page + 199, page + 200)) == ["loading"]  # not vouched for
    assert asked == [1]
    source.put_page(1, [_ev(s) for s in range(page + 1, 2 * page + 1) if s != page + 200])
    assert _kinds(source, range(page + 87, page + 90)) == [str(page + 88), str(page + 89),
                                                           str(page + 90)]
    assert _kinds(source, range(page + 199, page + 200)) == ["gap"]
    # a later batch continues the whole last page: still drawn without a read
    source.put_recent([_ev(s) for s in range(end + 1, end + 6)])
    source.set_total(end + 5)
    assert _kinds(source, range(end, end + 5)) == [str(s) for s in range(end + 1, end + 6)]
    assert asked == [1]


def test_a_page_read_asked_for_earlier_takes_nothing_back() -> None:
    asked: list[int] = []
    source = TimelineSource(asked.append)
    source.set_total(10)
    source.row(0)  # page 0 asked for at 10 events
    source.put_recent([_ev(s) for s in range(1, 21) if s != 15])
    source.set_total(20)
    source.put_page(0, [_ev(s) for s in range(1, 13)])  # read before 13-20 were committed
    assert _kinds(source, range(20)) == ["gap" if s == 15 else str(s) for s in range(1, 21)]
    assert asked == [0]


def test_the_pages_on_screen_outlast_the_newest_pages_a_follower_brings() -> None:
    """A console following a fast writer while the operator reads an older page: the
    cache keeps MAX_PAGES pages, and the newest pages push out those not drawn since,
    never the one on screen (it would draw "loading" and be read again each time)."""
    asked: list[int] = []
    source = TimelineSource(asked.append)
    page = TIMELINE_PAGE
    source.set_total(page)
    source.put_page(0, [_ev(s) for s in range(1, page + 1)])
    on_screen = range(10, 20)
    for n in range(1, 3 * MAX_PAGES):  # the writer adds a page between two redraws
        source.put_recent([_ev(s) for s in range(n * page + 1, (n + 1) * page + 1)])
        source.set_total((n + 1) * page)
        assert _kinds(source, on_screen) == [str(i + 1) for i in on_screen]
    assert asked == []
    assert len(source.pages) == MAX_PAGES
    # the newest pages are still held (the end draws without a read), the older not
    newest = range((3 * MAX_PAGES - 1) * page, 3 * MAX_PAGES * page)
    assert _kinds(source, newest) == [str(i + 1) for i in newest]
    assert _kinds(source, range(page, page + 1)) == ["loading"]
    assert asked == [1]
