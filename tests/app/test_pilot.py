"""Pilot tests: every binding, the read-only gate, live follow, time travel, bad input."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from apphelpers import (
    SIZE,
    banner_text,
    detail_text,
    frozen_clock,
    ledger_digest,
    log_texts,
    make_case,
    ready,
    status_text,
    stays,
    toast_text,
    wait_for,
)
from ledgerfactory import append_rows, write_ledger
from textual.widgets import Static

from codeai_tui.app import create_app
from codeai_tui.app.screens.error import ErrorScreen
from codeai_tui.app.screens.help import HelpScreen
from codeai_tui.app.widgets.cells import EFFECT_UNKNOWN_TEXT


async def test_main_view_marks_effect_unknown(case_factory) -> None:  # noqa: ANN001
    case = case_factory("naive_restart_copy")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        calls = main.pane("calls")
        row = calls.source.row(0)
        assert row is not None
        assert EFFECT_UNKNOWN_TEXT in row.cells and row.tone == "error"
        status = status_text(app)
        assert "1 effect unknown" in status and "1 duplicate effects" in status
        assert "following" in status and "8 events" in status
        receipts = main.pane("receipts")
        assert receipts.row_count == 2
        assert all("duplicate" in receipts.source.row(i).cells[2] for i in range(2))
        assert "effect unknown: duplicate risk" in detail_text(app)
        timeline = main.pane("timeline")
        started = timeline.source.row(7)
        assert started.cells[2] == "attempt.started" and started.tone == "error"


async def test_r_on_effect_unknown_writes_nothing(case_factory) -> None:  # noqa: ANN001
    case = case_factory("killed_in_flight")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        assert main.selected_call_id == "call-16"
        # the footer shows the next step's key (x), not r; r still explains itself
        assert main.check_action("resume", ()) is False
        assert main.check_action("reconcile", ()) is True
        await pilot.press("r")
        await wait_for(pilot, lambda: any("reconcile_effect" in n for n in log_texts(app)),
                       what="refusal kept in the action log")
        assert len(app.screen_stack) == 1
    assert ledger_digest(case) == before


async def test_read_only_hides_and_blocks_resume(case_factory) -> None:  # noqa: ANN001
    case = case_factory("killed_after_manifest")
    before = ledger_digest(case)
    app = create_app(case, read_only=True, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        main = app.main
        assert main.selected_call().resumable
        assert main.check_action("resume", ()) is False
        # r answers only to say why nothing happens, hidden from the footer
        assert main.check_action("explain_resume", ()) is True
        shown = {b.binding.action for b in main.active_bindings.values() if b.binding.show}
        assert "resume" not in shown and "explain_resume" not in shown
        await pilot.press("r")
        await wait_for(pilot, lambda: "console is read-only" in toast_text(app),
                       what="r says the console is read-only")
        await stays(pilot, lambda: len(app.screen_stack) == 1 and not app.action_log.entries,
                    what="no dialog, no action")
        assert "read-only" in status_text(app)
    assert ledger_digest(case) == before


async def test_resume_enabled_in_footer_for_resumable_call(case_factory) -> None:  # noqa: ANN001
    case = case_factory("killed_after_manifest")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.main.check_action("resume", ()) is True
        active = app.main.active_bindings
        assert active["r"].binding.action == "resume" and active["r"].enabled


async def test_number_keys_focus_panes_and_tab_cycles(case_factory) -> None:  # noqa: ANN001
    case = case_factory("completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for key, pane in zip("123456", ("cases", "tasks", "calls", "compilations",
                                         "timeline", "receipts"), strict=True):
            await pilot.press(key)
            assert app.focused is app.main.pane(pane)
        await pilot.press("1")
        await pilot.press("tab")
        assert app.focused is app.main.pane("tasks")


async def test_e_steps_through_the_effect_unknown_calls_in_order_and_wraps(
        tmp_path: Path) -> None:
    """Of six calls, y1, x3 and x5 are in flight: e goes to y1 (its detail says so), x3,
    x5, then back to y1; under a filter keeping x0, x2, x3 and x5 (rows 0-3), e steps
    through rows 2 and 3 and wraps to row 2."""
    events: list[dict[str, object]] = [
        {"seq": 1, "kind": "task.created", "task_id": "t", "payload": {"title": "x"}}]
    ids = ["xq0", "yq1", "xq2", "xq3", "yq4", "xq5"]
    for c, call in enumerate(ids):
        key = {"idempotency_key": f"k{c}"}
        life = [("call.requested", None, key), ("call.completed", None, {"status": "failed"})]
        if c % 2:  # in flight: started, nothing after
            life = [("call.requested", None, key),
                    ("call.manifest", None, {**key, "request_sha256": "ab"}),
                    ("attempt.started", "a1", {"attempt_no": 1, "request_sha256": "ab"})]
        for kind, att, payload in life:
            events.append({"seq": len(events) + 1, "kind": kind, "task_id": "t",
                           "call_id": call, "attempt_id": att, "payload": payload})
    write_ledger(tmp_path / "c", events)
    app = create_app(tmp_path / "c", clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        main = app.main
        calls = main.pane("calls")
        assert main.selected_call_id == "xq0"
        await pilot.press("e")
        assert calls.cursor == 1 and main.selected_call_id == "yq1"
        assert "effect unknown: duplicate risk" in detail_text(app)
        steps = []
        for _ in range(3):
            await pilot.press("e")
            steps.append((calls.cursor, main.selected_call_id))
        assert steps == [(3, "xq3"), (5, "xq5"), (1, "yq1")]
        await pilot.press("3", "slash", *"xq", "enter")
        assert calls.row_count == 4
        await pilot.press("g")
        steps = []
        for _ in range(3):
            await pilot.press("e")
            steps.append((calls.cursor, main.selected_call_id))
        assert steps == [(2, "xq3"), (3, "xq5"), (2, "xq3")]
        # a filter keeping no call in flight: e says the filter hides them, never that
        # the case has none
        await pilot.press("escape", "slash", *"xq0", "enter")
        await wait_for(pilot, lambda: calls.row_count == 1, what="filtered to xq0")
        await pilot.press("e")
        await wait_for(pilot, lambda: "effect_unknown" in toast_text(app), what="told")
        assert "no call the Calls filter keeps is in effect_unknown" in toast_text(app)
        assert "no call or tool operation" not in toast_text(app)
        assert main.selected_call_id == "xq0"


async def test_e_cycles_every_effect_unknown_case_and_the_cases_cursor_follows(
        tmp_path: Path) -> None:
    """A3: 04, then 05, then back to 04; the Cases cursor is on the open case."""
    make_case(tmp_path / "a_done", "completed_task")
    make_case(tmp_path / "b_in_flight", "killed_in_flight")
    make_case(tmp_path / "c_naive", "naive_restart_copy")
    app = create_app(tmp_path, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        cases = main.pane("cases")
        await wait_for(pilot, lambda: len(cases.verdicts) == 3, what="case summaries")
        for expected in ("b_in_flight", "c_naive", "b_in_flight"):
            await pilot.press("e")
            await wait_for(pilot, lambda expected=expected: main.case is not None
                           and main.case.name == expected and main.live is not None
                           and main.selected_call_id is not None
                           and main.live.call(main.selected_call_id) is not None
                           and main.live.call(main.selected_call_id).effect_unknown,
                           what=f"e to {expected}")
            assert cases.current_row().key == expected
            assert "effect unknown: duplicate risk" in detail_text(app)
        assert main.session.jump_to_effect_unknown is False


async def test_f_toggles_follow(case_factory) -> None:  # noqa: ANN001
    case = case_factory("completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f")
        assert "paused" in status_text(app)
        await pilot.press("f")
        assert "following" in status_text(app)


async def test_step_and_call_events(case_factory) -> None:  # noqa: ANN001
    case = case_factory("completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        timeline = main.pane("timeline")
        last = timeline.row_count - 1
        assert last > 2 and timeline.cursor == last  # follows the tail
        await pilot.press("left_square_bracket")
        assert timeline.cursor == last - 1 and app.focused is timeline
        await pilot.press("right_square_bracket")
        assert timeline.cursor == last
        await pilot.press("g")
        await wait_for(pilot, lambda: "seq 1:" in detail_text(app), what="g: seq 1 detail")
        assert timeline.cursor == 0
        await pilot.press("G")
        assert timeline.cursor == last
        await pilot.press("home")
        main.selected_call_id = "call-1"
        await pilot.press("n")
        await wait_for(pilot, lambda: timeline.cursor > 0, what="next call event")
        first_call_seq = timeline.cursor + 1
        assert timeline.source.event_at(timeline.cursor).call_id == "call-1"
        await pilot.press("n")
        await wait_for(pilot, lambda: timeline.cursor + 1 > first_call_seq, what="n again")
        await pilot.press("N")
        await wait_for(pilot, lambda: timeline.cursor + 1 == first_call_seq, what="N")


async def test_time_travel_shows_older_state_everywhere(case_factory) -> None:  # noqa: ANN001
    case = case_factory("resumed_then_completed")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        assert main.live.call("call-16").stage.value == "superseded"
        timeline = main.pane("timeline")
        timeline.focus()
        timeline.move_to(6)  # seq 7: call-16's manifest, before the resume
        await pilot.press("t")
        await wait_for(pilot, lambda: main.shown is not None and main.shown.as_of == 7,
                       what="as-of projection")
        await pilot.pause()
        assert "AS OF seq 7 of" in banner_text(app)
        status = status_text(app)
        assert "as of seq 7" in status and "following" not in status  # A6: the header too
        assert "seq 7" in main.pane("cases").source.row(0).cells[1]  # and the Cases pane
        from apphelpers import verdict_text

        line = verdict_text(app)  # and the verdict line, which offers no action in the past
        assert line.startswith("\u23f2 as of seq 7") and "r: resume" not in line
        assert main.shown.call("call-16").stage.value == "manifest_recorded"
        assert main.shown.call("call-17") is None
        assert main.pane("calls").row_count == 1
        assert timeline.source.row(7).tone == "dim"  # after the as-of point
        assert timeline.source.row(5).tone != "dim"
        await pilot.press("right_square_bracket")
        await wait_for(pilot, lambda: main.shown.as_of == 8, what="step to 8")
        await pilot.press("escape")
        await pilot.pause()
        assert main.as_of is None and main.shown is main.live
        assert "following" in status_text(app) and "AS OF" not in banner_text(app) \
            or not main.query_one("#banner").display
        await pilot.press("t")
        await wait_for(pilot, lambda: main.as_of is not None, what="t again")
        await pilot.press("t")
        assert main.as_of is None


async def test_time_travel_to_the_last_seq_equals_live_receipts_included(
        case_factory) -> None:  # noqa: ANN001
    """A6: as of the last seq the receipts pane is the live one (docs/ledger.md section 7)."""
    case = case_factory("naive_restart_copy")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        live_receipts = main.pane("receipts").row_count
        assert live_receipts == 2
        timeline = main.pane("timeline")
        timeline.focus()
        timeline.move_to(timeline.row_count - 1)
        await pilot.press("t")
        await wait_for(pilot, lambda: main.shown is not None and main.shown.as_of is not None
                       and main.session.progress is None, what="as of the last seq")
        assert main.pane("receipts").row_count == live_receipts
        assert main.shown.state.receipts.duplicates == main.live.state.receipts.duplicates


async def test_filter_focused_pane_is_visible_and_clearable(case_factory) -> None:  # noqa: ANN001
    case = case_factory("resumed_then_completed")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        await pilot.press("3", "slash")
        assert app.focused.id == "filter"
        await pilot.press(*"completed", "enter")
        calls = main.pane("calls")
        assert calls.row_count == 1 and calls.source.row(0).key == "call-17"
        shown = str(main.query_one("#filter-active", Static).render())
        assert "calls" in shown and "completed" in shown and "esc" in shown  # A8
        assert main.query_one("#filter-active").display
        assert "esc clears" in str(calls.border_subtitle)
        await pilot.press("escape")
        assert calls.row_count == 2
        assert not main.query_one("#filter-active").has_class("-on")
        # the timeline filter scans the ledger in an async worker (aiosqlite)
        timeline = main.pane("timeline")
        total = timeline.row_count
        await pilot.press("5", "slash", *"attempt", "enter")
        await wait_for(pilot, lambda: 0 < timeline.row_count < total, what="tl filter")
        rows = [timeline.source.row(i) for i in range(timeline.row_count)]
        assert rows and all(r is not None and "attempt" in r.cells[2] for r in rows)


async def test_help_lists_the_registry_and_q_quits(case_factory) -> None:  # noqa: ANN001
    case = case_factory("completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        text = str(app.screen.query_one(Static).render())
        for binding_id in ("time_travel", "next_effect_unknown", "resume", "focus.timeline",
                           "action_log"):
            assert f"id: {binding_id}" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="closed")
        await pilot.press("colon")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette",
                       what="palette")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Time travel to the selected event / back to live" in titles
        assert "Theme: high-contrast" in titles
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main, what="palette closed")
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette",
                       what="palette via ctrl+p")
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main, what="palette closed")
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, what="q quits")
    assert app.return_code == 0


async def test_every_binding_has_an_id() -> None:
    from codeai_tui.app import actions
    from codeai_tui.app.screens.main import MainScreen
    from codeai_tui.app.widgets.table import TableView

    bindings = [*MainScreen.BINDINGS, *TableView.BINDINGS]
    assert len(bindings) > 20
    for binding in bindings:
        assert binding.id, binding  # type: ignore[union-attr]
    assert {s.id for s in actions.ACTIONS} <= {b.id for b in MainScreen.BINDINGS}  # type: ignore[union-attr]


async def test_themes_registered_and_selectable(case_factory) -> None:  # noqa: ANN001
    case = case_factory("completed_task")
    app = create_app(case, theme="high-contrast", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.theme == "high-contrast"
        assert {"incident-dark", "light", "high-contrast"} <= set(app.available_themes)
        await app.run_action("set_theme('light')")
        assert app.theme == "light"


async def test_live_append_from_another_process_appears(case_factory) -> None:  # noqa: ANN001
    case = case_factory("killed_after_observed")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        timeline = main.pane("timeline")
        count = timeline.row_count
        assert timeline.cursor == count - 1
        writer = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            append_rows(writer, [
                {"seq": count + 1, "kind": "call.requested", "task_id": "task-1",
                 "call_id": "late-call", "payload": {"idempotency_key": "late"}},
                {"seq": count + 2, "kind": "call.manifest", "task_id": "task-1",
                 "call_id": "late-call",
                 "payload": {"idempotency_key": "late", "request_sha256": "cd"}},
                {"seq": count + 3, "kind": "attempt.started", "task_id": "task-1",
                 "call_id": "late-call", "attempt_id": "late-a1",
                 "payload": {"attempt_no": 1, "request_sha256": "cd"}},
            ])
        finally:
            writer.close()
        await wait_for(pilot, lambda: timeline.row_count == count + 3, timeout=5,
                       what="appended events")
        await wait_for(pilot, lambda: timeline.cursor == count + 2
                       and timeline.source.row(count + 2) is not None, what="tail row")
        assert main.live.call("late-call").effect_unknown
        # it stays in effect_unknown past the debounce: an alert, kept in the log
        await wait_for(pilot, lambda: any("late-call" in n and "effect_unknown" in n
                                          for n in log_texts(app)), what="alert")


async def test_transient_effect_unknown_is_not_alerted(case_factory) -> None:  # noqa: ANN001
    """A5: attempt.started followed by its response within the debounce is a call in
    flight, not news: no toast, no alert."""
    case = case_factory("killed_after_manifest")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        count = main.live.max_seq
        writer = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            append_rows(writer, [{"seq": count + 1, "kind": "attempt.started",
                                  "task_id": "task-1", "call_id": "call-16",
                                  "attempt_id": "a1",
                                  "payload": {"attempt_no": 1, "request_sha256": "x"}}])
            await wait_for(pilot, lambda: main.live.call("call-16").effect_unknown,
                           what="in flight")
            append_rows(writer, [{"seq": count + 2, "kind": "attempt.observed",
                                  "task_id": "task-1", "call_id": "call-16",
                                  "attempt_id": "a1",
                                  "payload": {"transport": {"status": 200}}}])
        finally:
            writer.close()
        await wait_for(pilot, lambda: not main.live.call("call-16").effect_unknown,
                       what="observed")
        await stays(pilot, lambda: not any("effect_unknown" in n for n in log_texts(app)),
                    seconds=2.5, what="no alert")


async def test_ledger_disappearing_shows_banner(case_factory) -> None:  # noqa: ANN001
    case = case_factory("completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for suffix in ("", "-wal", "-shm"):
            (case / f"ledger.sqlite3{suffix}").unlink(missing_ok=True)
        await wait_for(pilot, lambda: app.main.session.state == "file gone", what="gone banner")
        await wait_for(pilot, lambda: "LEDGER FILE GONE" in banner_text(app), what="banner")
        assert app.main.pane("calls").row_count == 1  # the last state read stays visible


async def test_error_screens_for_bad_paths(tmp_path: Path) -> None:
    bad_sqlite = tmp_path / "notsqlite"
    bad_sqlite.mkdir()
    (bad_sqlite / "ledger.sqlite3").write_bytes(b"this is not sqlite at all" * 100)
    wrong = tmp_path / "wrong"
    write_ledger(wrong, [], fmt="something.else.v9")
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    cases = {
        tmp_path / "nope": "no such file",
        empty_dir: "no ledger.sqlite3",
        bad_sqlite: "not an SQLite database",
        wrong: "ledger format",
    }
    for path, words in cases.items():
        app = create_app(path, clock=frozen_clock)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda app=app: isinstance(app.screen, ErrorScreen),
                           what=f"error screen for {path.name}")
            sentence = str(app.screen.query_one("#error-sentence", Static).render())
            assert words in sentence, sentence
            assert "Traceback" not in sentence
            await pilot.press("q")


HOSTILE = [
    "[@click=app.quit]click me[/]",
    "[/oops]",
    "\x1b]52;c;aGFjaw==\x07 clipboard",
    "\x1b[2J\x1b]0;pwned\x07",
    "\u202eevil\u202c reversed",
    "\x9b31m C1",
]


async def test_hostile_text_renders_literally_and_triggers_nothing(tmp_path: Path) -> None:
    events = [{"seq": 1, "kind": "task.created", "task_id": HOSTILE[0],
               "payload": {"title": HOSTILE[1] + HOSTILE[2]}}]
    for i, text in enumerate(HOSTILE, start=2):
        events.append({"seq": i, "kind": f"call.requested{text}" if i % 2 else "call.requested",
                       "task_id": "t", "call_id": f"call{text}",
                       "payload": {"idempotency_key": text, "note": text,
                                   "link": "https://evil.example/\x1b]8;;x\x07"}})
    receipts = [{"receipt_id": HOSTILE[0], "received_at": HOSTILE[3],
                 "idempotency_key": HOSTILE[4], "body_sha256": "00", "bytes": 1}]
    case = tmp_path / "hostile"
    write_ledger(case, events, receipts=receipts)
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        for pane in ("tasks", "calls", "timeline", "receipts"):
            await pilot.press({"tasks": "2", "calls": "3", "timeline": "5",
                               "receipts": "6"}[pane])
            table = main.pane(pane)
            assert table.row_count > 0, pane
            for i in range(table.row_count):
                table.move_to(i)
                await pilot.pause()
                row = table.source.row(i)
                text = " ".join(row.cells) if row else ""
                assert "\x1b" not in text and "\u202e" not in text and "\x9b" not in text
                shown = detail_text(app)
                assert "\x1b" not in shown and "\u202e" not in shown and "\x9b" not in shown
        calls = main.pane("calls")
        cells = " ".join(" ".join(calls.source.row(i).cells) for i in range(calls.row_count))
        assert "[@click=app.quit]" in cells
        assert "\u27e8ESC\u27e9" in cells  # the ESC inside a call id, shown as a glyph
        for widget in (main.query_one("#status"), main.query_one("#verdict")):
            assert "\x1b" not in str(widget.render())
        # no drawn segment carries an action or a link
        for pane in ("tasks", "calls", "timeline", "receipts"):
            table = main.pane(pane)
            for y in range(table.size.height):
                for seg in table.render_line(y):
                    style = seg.style
                    assert style is None or (not style.meta and not style.link), (pane, seg)
        # clicking everywhere on the screen runs no action hidden in a payload
        await pilot.press("3", "home")
        for y in range(3, SIZE[1] - 2, 3):
            for x in (8, 110):
                await pilot.click(offset=(x, y))
        await stays(pilot, lambda: app.is_running and len(app.screen_stack) == 1,
                    what="still running, no dialog")
    assert ledger_digest(case) == before


async def test_bundle_counts_cases_sorts_by_worst_and_opens_a_case(tmp_path: Path) -> None:
    make_case(tmp_path / "bundle" / "a-fine", "completed_task")
    make_case(tmp_path / "bundle" / "b-bad", "killed_in_flight")
    make_case(tmp_path / "bundle" / "c-dup", "naive_restart_copy")
    app = create_app(tmp_path / "bundle", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        cases = main.pane("cases")
        await wait_for(pilot, lambda: len(cases.verdicts) == 3, what="summaries")
        rows = [cases.source.row(i) for i in range(cases.row_count)]
        assert [r.key for r in rows] == ["a-fine", "b-bad", "c-dup"]
        assert rows[1].tone == "error" and "effect unknown" in rows[1].cells[1]
        await wait_for(pilot, lambda: "2 of 3 cases have effect-unknown calls"
                       in status_text(app), what="bundle counts")  # B
        assert "1 with duplicate effects" in status_text(app)
        await pilot.press("1", "o")
        keys = [cases.source.row(i).key for i in range(cases.row_count)]
        assert keys == ["c-dup", "b-bad", "a-fine"]  # worst first
        await pilot.press("o", "1", "home", "down", "enter")
        await wait_for(pilot, lambda: main.case is not None and main.case.name == "b-bad"
                       and main.live is not None, what="switch case")
        await ready(pilot)
        assert main.live.call("call-16").effect_unknown


async def test_worst_state_counts_tasks_and_compilations(tmp_path: Path) -> None:
    """A7: a case that needs repeat_acceptance, recompile or fix_inputs says so."""
    for name in ("accepted_not_completed", "killed_after_compilation_requested",
                 "compilation_failed_missing_required"):
        make_case(tmp_path / name, name)
    app = create_app(tmp_path, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        cases = app.main.pane("cases")
        await wait_for(pilot, lambda: len(cases.verdicts) == 3, what="summaries")
        labels = {cases.source.row(i).key: cases.source.row(i).cells[1]
                  for i in range(cases.row_count)}
        assert "repeat_acceptance" in labels["accepted_not_completed"]
        assert "recompile" in labels["killed_after_compilation_requested"]
        assert "fix_inputs" in labels["compilation_failed_missing_required"]


async def test_live_append_keeps_selection_and_marks_new_rows(case_factory) -> None:  # noqa: ANN001
    case = case_factory("completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("5", "home", "down")
        timeline = app.main.pane("timeline")
        assert timeline.cursor == 1
        count = timeline.row_count
        writer = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            append_rows(writer, [{"seq": count + 1, "kind": "task.claimed", "task_id": "task-1",
                                  "payload": {"worker": "w2", "pid": 1}}])
        finally:
            writer.close()
        await wait_for(pilot, lambda: timeline.row_count == count + 1, what="append")
        assert timeline.cursor == 1 and "seq 2" in detail_text(app)
        assert timeline.new_below == 1
        assert "+1 new below" in str(timeline.border_subtitle)
        await pilot.press("end")
        assert timeline.new_below == 0 and timeline.border_subtitle is None


async def test_detail_redacts_secrets_and_shortens_hashes(tmp_path: Path) -> None:
    sha = "ab" * 32
    events = [
        {"seq": 1, "kind": "task.created", "task_id": "t", "payload": {"title": "x"}},
        {"seq": 2, "kind": "call.requested", "task_id": "t", "call_id": "c1",
         "payload": {"idempotency_key": "k", "api_key": "sk-live-0123456789abcdef",
                     "headers": {"authorization": "Bearer abcdefghijklmnop"},
                     "request_sha256": sha, "bytes": 123456}},
    ]
    write_ledger(tmp_path / "c", events)
    app = create_app(tmp_path / "c", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("5", "end")
        await wait_for(pilot, lambda: "seq 2" in detail_text(app), what="detail of seq 2")
        text = detail_text(app)
        assert "sk-live" not in text and "abcdefghijklmnop" not in text
        assert "\u2039redacted\u203a" in text
        assert sha not in text and sha[:12] + "\u2026" in text
        assert "120.6 KiB" in text
        await pilot.press("h")
        assert sha in detail_text(app)


async def test_remapped_keys_work_and_show_in_help_and_palette(case_factory) -> None:  # noqa: ANN001
    case = case_factory("resumed_then_completed")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        app.set_keymap({"time_travel": "T", "next_effect_unknown": "E"})
        await pilot.press("5", "home", "T")
        await wait_for(pilot, lambda: main.shown is not None and main.shown.as_of == 1,
                       what="time travel via remapped key")
        await pilot.press("T")
        assert main.as_of is None
        rows = {bid: keys for keys, _desc, bid in app.help_rows()}
        assert rows["time_travel"] == "T" and rows["next_effect_unknown"] == "E"
        helps = {c.title: c.help for c in app.get_system_commands(main)}
        assert helps["Time travel to the selected event / back to live"] == "key: T"
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        text = str(app.screen.query_one(Static).render())
        assert any(line.lstrip().startswith("T ") and "id: time_travel" in line
                   for line in text.splitlines())


async def test_duplicate_receipt_appearing_alerts(case_factory) -> None:  # noqa: ANN001
    import json

    case = case_factory("killed_in_flight")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        assert not main.live.state.receipts.duplicates
        log = case / "provider" / "receipts.jsonl"
        first = json.loads(log.read_text().splitlines()[0])
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(dict(first, receipt_id="r-again")) + "\n")
        await wait_for(pilot, lambda: any("duplicate effect" in n for n in log_texts(app)),
                       what="duplicate alert")
        assert main.pane("receipts").row_count == 2
        assert "1 duplicate effects" in status_text(app)


async def test_a_crashing_follower_is_reported_not_hidden(case_factory, monkeypatch) -> None:  # noqa: ANN001
    from codeai_tui.console import model as data

    case = case_factory("completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)

        def boom(self):  # noqa: ANN001, ANN202
            raise RuntimeError("projector bug")

        monkeypatch.setattr(data.CaseFollower, "poll", boom)
        # another process commits: the watcher wakes the follower, whose poll fails
        count = app.main.live.max_seq
        writer = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            append_rows(writer, [{"seq": count + 1, "kind": "task.claimed",
                                  "task_id": "task-1", "payload": {"worker": "w", "pid": 1}}])
        finally:
            writer.close()
        await wait_for(pilot, lambda: app.main.session.state == "stopped", what="stopped status")
        await wait_for(pilot, lambda: "projector bug" in banner_text(app), what="banner")
        assert app.is_running


async def test_empty_ledger_and_seq_gaps(tmp_path: Path) -> None:
    write_ledger(tmp_path / "empty", [])
    app = create_app(tmp_path / "empty", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.main.pane("timeline").row_count == 0
        assert "0 events" in status_text(app)
    events = [
        {"seq": 1, "kind": "task.created", "task_id": "t", "payload": {"title": "x"}},
        {"seq": 2, "kind": "mystery.kind", "task_id": "t", "payload": "not an object"},
        {"seq": 5, "kind": "task.claimed", "task_id": "t", "payload": {"worker": "w"}},
    ]
    write_ledger(tmp_path / "gaps", events)
    app = create_app(tmp_path / "gaps", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        timeline = app.main.pane("timeline")
        assert timeline.row_count == 5
        await wait_for(pilot, lambda: timeline.source.row(2) is not None, what="page")
        rows = [timeline.source.row(i) for i in range(5)]
        assert "seq 3 missing" in rows[2].cells[2] and rows[2].tone == "warn"
        assert rows[1].tone == "warn"  # a payload that is not an object is an anomaly
        assert "2 anomalies" in status_text(app)


async def test_palette_runs_actions_and_switches_theme(case_factory) -> None:  # noqa: ANN001
    case = case_factory("naive_restart_copy")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("colon")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette",
                       what="palette")
        await pilot.press(*"Theme: high-contrast")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.theme == "high-contrast", what="theme switch")
        await pilot.press("colon")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette",
                       what="palette again")
        await pilot.press(*"Focus Timeline")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.focused is app.main.pane("timeline"), what="focus")


async def test_small_then_large_loses_no_columns_and_keeps_the_verdict(case_factory) -> None:  # noqa: ANN001
    """At 80x24 the verdict line and the next step's key stay visible and Calls can be scrolled
    sideways; back at 160x48 the first column shows again."""
    case = case_factory("killed_in_flight")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        main = app.main
        verdict = main.query_one("#verdict")
        assert verdict.region.height == 1 and verdict.region.y < 24
        assert "effect unknown" in str(verdict.render())
        # the next step's key (x: the effect is unknown) shows whole in the footer
        footer_keys = [k for k in main.query("FooterKey") if getattr(k, "key", "") == "x"]
        assert footer_keys and footer_keys[0].region.right <= 80 and footer_keys[0].region.width
        calls = main.pane("calls")
        assert calls.region.width <= 80 and calls.region.height > 3
        await pilot.press("3", "right", "right", "right")
        await wait_for(pilot, lambda: calls.scroll_offset.x > 0, what="scrolled sideways")
        await pilot.resize_terminal(160, 48)
        await wait_for(pilot, lambda: calls.region.width > 100, what="wide layout")
        await wait_for(pilot, lambda: calls.scroll_offset.x == 0, what="first column back")


async def test_follow_polls_pages_and_scans_go_through_aiosqlite(case_factory,  # noqa: ANN001
                                                                 monkeypatch) -> None:  # noqa: ANN001
    """C: ledger/areader.py is used for real: the follow poll (data_version), timeline
    pages and the filter scan are AsyncLedgerReader calls."""
    from codeai_tui.ledger.areader import AsyncLedgerReader

    used: dict[str, int] = {"changed": 0, "read_range": 0, "read_after": 0}
    for name in used:
        original = getattr(AsyncLedgerReader, name)

        def counted(self, *args, _original=original, _name=name):  # noqa: ANN001, ANN202
            used[_name] += 1
            return _original(self, *args)

        monkeypatch.setattr(AsyncLedgerReader, name, counted)
    case = case_factory("completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert used["read_range"] > 0  # the timeline's first page
        timeline = app.main.pane("timeline")
        count = timeline.row_count
        writer = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            append_rows(writer, [{"seq": count + 1, "kind": "task.claimed", "task_id": "task-1",
                                  "payload": {"worker": "w2", "pid": 1}}])
        finally:
            writer.close()
        await wait_for(pilot, lambda: timeline.row_count == count + 1, what="append seen")
        assert used["changed"] > 0
        await pilot.press("5", "slash", *"claimed", "enter")
        await wait_for(pilot, lambda: 0 < timeline.row_count < count, what="scan")
        assert used["read_after"] > 0
