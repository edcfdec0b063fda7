"""Three findings of the hostile corpus, each reproduced as an operator meets it (`inspect`, 5 s limit)."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest
from inspectrun import run_inspect
from ledgerfactory import write_ledger

from codeai_tui.ledger import LedgerError, LedgerReader, load_case_config, read_receipts


def _loose_ledger(case: Path, rows: list[tuple[object, ...]]) -> None:
    """A ledger whose events table has no INTEGER PRIMARY KEY: seq can hold anything."""
    case.mkdir(parents=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO ledger_meta VALUES ('format', 'codeai.ledger.v1')")
    conn.execute("CREATE TABLE events (seq, event_id, recorded_at, kind, task_id, call_id, "
                 "attempt_id, compilation_id, payload)")
    conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows)
    conn.close()


def _row(seq: object, n: int) -> tuple[object, ...]:
    return (seq, f"ev-{n}", "2026-09-13T12:00:00Z", "task.created", "t", None, None, None,
            '{"title": "x"}')


# ---------------------------------------------------------------- finding 3: seq


@pytest.mark.parametrize("bad", [2.5, "2x", None, b"\x02"], ids=["real", "text", "null", "blob"])
def test_a_non_integer_seq_is_an_anomaly_not_a_hang(tmp_path: Path, bad: object) -> None:
    case = tmp_path / "case"
    _loose_ledger(case, [_row(1, 1), _row(bad, 2)])  # the bad seq ends the first page
    run = run_inspect(case)
    assert run.rc == 0, run.err
    assert "is not an integer" in run.out
    assert "events 2" in run.out  # the bad row is counted, not silently dropped


def test_pages_over_a_loose_table_keep_duplicates_and_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import codeai_tui.ledger.reader as reader_module

    monkeypatch.setattr(reader_module, "CAREFUL_PAGE", 2)  # page boundaries inside the runs
    case = tmp_path / "case"
    rows = [_row(s, n) for n, s in enumerate([1, 2, 2, 3, 5, 4, "x", 6], start=1)]
    _loose_ledger(case, rows)
    with LedgerReader(case) as reader:
        seqs = [e.seq for e in reader.iter_events()]
        pages = []
        last = 0
        while page := reader.read_after(last, 2):  # the caller's cursor, as the console pages
            pages.append([e.seq for e in page])
            last = max(last, max(e.seq for e in page))
        assert pages[0] == [-1, 1, 2, 2]  # the run of 2s is never split across two pages
        assert reader.stats() == (8, 6)
    assert seqs.count(2) == 2 and sorted(s for s in seqs if s > 0) == [1, 2, 2, 3, 4, 5, 6]
    assert seqs.count(-1) == 1  # the text seq, once, marked as not an integer
    assert sorted(s for p in pages for s in p if s > 0) == [1, 2, 2, 3, 4, 5, 6]


# ---------------------------------------------------------------- finding 4: special files


def _fifo_case(tmp_path: Path, rel: str) -> Path:
    case = tmp_path / "case"
    write_ledger(case, [{"seq": 1, "kind": "task.created", "task_id": "t", "payload": {}}],
                 receipts=[])
    target = case / rel
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    return case


@pytest.mark.parametrize("rel", ["ledger.sqlite3", "ledger.sqlite3-wal", "ledger.sqlite3-shm",
                                 "provider/receipts.jsonl"])
def test_a_fifo_in_the_case_is_refused_without_blocking(tmp_path: Path, rel: str) -> None:
    case = _fifo_case(tmp_path, rel)
    run = run_inspect(case)
    if rel.startswith("ledger"):
        assert run.rc == 2 and len(run.err_lines) == 1, run.err
        assert "not a regular file" in run.err
    else:
        assert run.rc == 0, run.err
        assert "receipt log: " in run.out and "not a regular file" in run.out


def test_a_fifo_case_json_is_one_line_not_a_hang(tmp_path: Path) -> None:
    case = _fifo_case(tmp_path, "case.json")
    result: list[object] = []
    t = threading.Thread(target=lambda: result.append(_load(case)), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive(), "load_case_config blocked on a FIFO"
    assert isinstance(result[0], LedgerError) and "not a regular file" in str(result[0])


def _load(case: Path) -> object:
    try:
        return load_case_config(case)
    except LedgerError as exc:
        return exc


@pytest.mark.parametrize("rel", ["ledger.sqlite3", "provider/receipts.jsonl", "case.json"])
def test_symlinks_inside_the_case_are_refused(tmp_path: Path, rel: str) -> None:
    outside = tmp_path / "outside"
    write_ledger(outside, [{"seq": 1, "kind": "task.created", "task_id": "t", "payload": {}}],
                 receipts=[])
    (outside / "case.json").write_text("{}")
    case = tmp_path / "case"
    write_ledger(case, [{"seq": 1, "kind": "task.created", "task_id": "t", "payload": {}}],
                 receipts=[])
    (case / rel).unlink(missing_ok=True)
    (case / rel).symlink_to(outside / rel)
    if rel == "case.json":
        assert "symlink" in str(_load(case))
        return
    run = run_inspect(case)
    if rel == "ledger.sqlite3":
        assert run.rc == 2 and len(run.err_lines) == 1 and "symlink" in run.err, run.err
    else:
        assert run.rc == 0 and "receipt log: " in run.out and "symlink" in run.out, run.out
        assert read_receipts(case).receipts == ()


# ---------------------------------------------------------------- finding 5: bad UTF-8


def _bad_utf8_case(tmp_path: Path, column: str = "payload") -> Path:
    case = tmp_path / "case"
    events = [{"seq": s, "kind": "task.created", "task_id": "t", "payload": {"title": "x"}}
              for s in (1, 2, 3)]
    write_ledger(case, events)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute(f"UPDATE events SET {column} = CAST(X'7B2261223A22FF227D' AS TEXT) "
                 "WHERE seq = 2")  # '{"a":"\xff"}': TEXT, one invalid byte
    conn.close()
    return case


@pytest.mark.parametrize("column", ["payload", "kind", "event_id", "recorded_at", "call_id"])
def test_invalid_utf8_text_is_an_anomaly_at_its_seq(tmp_path: Path, column: str) -> None:
    case = _bad_utf8_case(tmp_path, column)
    run = run_inspect(case)
    assert run.rc == 0, run.err
    assert "anomaly at seq 2:" in run.out and "not valid UTF-8" in run.out, run.out
    assert "events 3" in run.out


def test_as_of_before_a_bad_byte_projects_cleanly(tmp_path: Path) -> None:
    case = _bad_utf8_case(tmp_path)
    run = run_inspect(case, "--as-of", "1")
    assert run.rc == 0, run.err
    assert "anomalies 0" in run.out and "as of seq 1" in run.out


# ---------------------------------------------------------------- the async reader, same hazards


async def test_async_reader_refuses_a_fifo_and_flags_bad_text_and_odd_seqs(tmp_path: Path) -> None:
    from codeai_tui.ledger.areader import AsyncLedgerReader

    fifo = _fifo_case(tmp_path / "f", "ledger.sqlite3")
    with pytest.raises(LedgerError, match="FIFO"):
        await AsyncLedgerReader(fifo).open()
    bad = _bad_utf8_case(tmp_path / "u")
    reader = await AsyncLedgerReader(bad).open()
    try:
        events = await reader.read_after(0)
        assert [e.seq for e in events] == [1, 2, 3]
        assert events[1].payload is None and "not valid UTF-8" in str(events[1].payload_error)
    finally:
        await reader.close()
    loose = tmp_path / "l" / "case"
    _loose_ledger(loose, [_row(1, 1), _row("2x", 2), _row(3, 3)])
    reader = await AsyncLedgerReader(loose).open()
    try:
        first = await reader.read_after(0)
        assert [e.seq for e in first] == [-1, 1, 3]  # the '2x' row once, first, flagged
        assert "seq '2x' is not an integer" in str(first[0].payload_error)
        assert await reader.read_after(3) == []
        assert [e.seq for e in await reader.read_after(1)] == [3]
        assert await reader.stats() == (3, 3)
    finally:
        await reader.close()


# ---------------------------------------------------------------- a bundle of them


def _bundle(tmp_path: Path) -> Path:
    import hostile

    bundle = tmp_path / "bundle"
    for name in ("wal_only_killed_producer", "seq_text", "ledger_fifo", "not_sqlite",
                 "payload_invalid_utf8_text", "receipts_fifo"):
        h = next(h for h in hostile.CORPUS if h.name == name)
        h.build(bundle / name)
    return bundle


def test_a_bundle_with_hostile_cases_reports_each_and_finishes(tmp_path: Path) -> None:
    """Finding 3 said every later case of a bundle stayed "projecting": each case now ends
    in its own verdict or its own one-line error, and the bundle exits 0."""
    run = run_inspect(_bundle(tmp_path))
    assert run.rc == 0, run.err
    blocks: dict[str, str] = {}
    for line in run.out.splitlines():
        if line.startswith("case "):
            name = line.rsplit("/", 1)[-1]
            blocks[name] = ""
        blocks[name] += line + "\n"
    assert "is a FIFO" in blocks["ledger_fifo"] and "error:" in blocks["ledger_fifo"]
    assert "not an SQLite database" in blocks["not_sqlite"]
    assert "seq '2x' is not an integer" in blocks["seq_text"]
    assert "payload is not valid UTF-8" in blocks["payload_invalid_utf8_text"]
    assert "events 2" in blocks["wal_only_killed_producer"]
    assert "receipt log: unreadable" in blocks["receipts_fifo"]


async def test_the_console_summarises_every_case_of_a_hostile_bundle(tmp_path: Path) -> None:
    import consoleprobe as probe
    from apphelpers import SIZE, frozen_clock, wait_for

    from codeai_tui.app import create_app

    bundle = _bundle(tmp_path)
    app = create_app(bundle, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        # the first case (ledger_fifo) is opened: its trouble is the banner; the other five
        # are summarised in the Cases pane, errors included
        await wait_for(pilot, lambda: len(probe.bundle_state(app)[2]) == 5
                       and probe.bundle_state(app)[1] is not None,
                       timeout=5.0, what="the open case's error and 5 summaries")
        opened, trouble, by_name = probe.bundle_state(app)
        assert opened is not None and opened.name == "ledger_fifo"
        assert trouble is not None and "is a FIFO" in trouble
        assert "not an SQLite database" in str(by_name["not_sqlite"])
        assert by_name["seq_text"][0].label == "anomalies"
        assert by_name["payload_invalid_utf8_text"][0].label == "anomalies"
        await pilot.press("q")


def test_pages_past_the_largest_seq_sqlite_holds_are_empty_not_an_error(tmp_path: Path) -> None:
    """A ledger may hold seq 2**63-1; the console pages its timeline past it."""
    case = tmp_path / "case"
    write_ledger(case, [{"seq": 2**63 - 1, "kind": "task.created", "task_id": "t",
                         "payload": {}}])
    with LedgerReader(case) as reader:
        assert [e.seq for e in reader.read_range(2**63 - 256, 2**63 + 255)] == [2**63 - 1]
        assert reader.read_range(2**63, 2**63 + 255) == []
        assert reader.read_after(2**64) == [] and reader.event(2**64) is None


def test_rows_at_or_below_seq_zero_come_once_whatever_the_cursor(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, [{"seq": s, "kind": "task.created", "task_id": "t", "payload": {}}
                        for s in (-5, 0, 1, 2)])
    with LedgerReader(case) as reader:
        assert [e.seq for e in reader.read_after(0)] == [-5, 0, 1, 2]
        assert [e.seq for e in reader.read_after(-5)] == [1, 2]  # not 0 a second time
        assert [e.seq for e in reader.read_after(2)] == []
        assert [e.seq for e in reader.read_after(-1)] == [-5, 0, 1, 2]  # a new pass



async def test_a_ledger_swapped_for_a_fifo_while_followed_is_named_and_q_still_quits(
    tmp_path: Path,
) -> None:
    """The console was following a fine ledger; someone replaces it with a FIFO. The reopen
    must refuse it (not block a worker forever) and `q` must still quit."""
    import consoleprobe as probe
    from apphelpers import SIZE, frozen_clock, wait_for

    from codeai_tui.app import create_app

    case = tmp_path / "case"
    write_ledger(case, [{"seq": 1, "kind": "task.created", "task_id": "t", "payload": {}}])
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await probe.projected(pilot, "the fine ledger")
        for suffix in ("", "-wal", "-shm"):
            (case / f"ledger.sqlite3{suffix}").unlink(missing_ok=True)
        os.mkfifo(case / "ledger.sqlite3")
        await wait_for(pilot, lambda: "is a FIFO" in (probe.trouble(app) or ""), timeout=5.0,
                       what="the FIFO named in the banner")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, timeout=5.0, what="quit")
