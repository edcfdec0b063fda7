"""A live snapshot redraws only what changed: the footer, the detail and the verdict line
keep their widgets and content when the new events change nothing they show.

Textual's Footer rebuilds every key widget each time bindings are refreshed, and a
Static's update lays the whole screen out again; the console is asked for both on every
cursor move and snapshot (10 a second while a writer appends), so it passes a request on
only when what is shown differs. The footer still follows the cursor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apphelpers import CONFORMANCE, SIZE, frozen_clock, ready, status_text, wait_for
from ledgerfactory import append_to_case, write_ledger
from textual.geometry import Region
from textual.widgets import Static

from codeai_tui.app import create_app


def two_calls(case: Path) -> Path:
    """killed_in_flight's call-16 (effect unknown: resume refused) and a call-3 that was
    only requested (rung 5: resume permitted), in one task."""
    data = json.loads((CONFORMANCE / "killed_in_flight.json").read_text(encoding="utf-8"))
    late = json.loads((CONFORMANCE / "killed_after_requested.json").read_text(encoding="utf-8"))
    requested = next(e for e in late["events"] if e["kind"] == "call.requested")
    events = [*data["events"], {**requested, "seq": len(data["events"]) + 1,
                                "task_id": data["events"][0]["task_id"]}]
    write_ledger(case, events, receipts=data.get("receipts"))
    return case


def footer_write(app: Any) -> str | None:
    """The one write whose key the footer shows: the selected call's next step."""
    writes = [k.action for k in app.main.query("FooterKey")
              if k.action in ("resume", "reconcile", "advance", "replay")]
    assert len(writes) <= 1, writes
    return writes[0] if writes else None


async def select_call_16(pilot: Any) -> None:
    """The console ready, the Calls pane focused on its first row (call-16)."""
    await ready(pilot)
    await pilot.press("3", "home")
    await wait_for(pilot, lambda: pilot.app.main.selected_call_id == "call-16", what="call-16")


# an event no call row and no footer key shows: a second compilation of the task
UNRELATED = {"seq": 10, "kind": "context.compilation_requested", "task_id": "task-1",
             "compilation_id": "comp-2", "payload": {"offered": [], "required_ids": []}}


async def test_the_footer_follows_the_cursor_and_a_snapshot_leaves_what_it_did_not_change(
        tmp_path: Path) -> None:
    case = two_calls(tmp_path / "case")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await select_call_16(pilot)
        main = app.main
        calls = main.pane("calls")
        await wait_for(pilot, lambda: footer_write(app) == "reconcile",
                       what="x on call-16 (effect unknown)")
        await pilot.press("down")
        await wait_for(pilot, lambda: main.selected_call_id == "call-3", what="call-3")
        await wait_for(pilot, lambda: footer_write(app) == "resume", what="r on call-3")
        await pilot.press("up")
        await wait_for(pilot, lambda: footer_write(app) == "reconcile", what="x again")
        assert calls.cursor == 0

        shown = list(main.query("FooterKey"))
        detail, verdict = main.query_one("#detail", Static), main.query_one("#verdict", Static)
        detail_visual, verdict_visual = detail.visual, verdict.visual
        assert "call-16" in str(verdict.render())
        append_to_case(case, [UNRELATED])
        await wait_for(pilot, lambda: "10 events" in status_text(app), what="the new event")
        await pilot.pause()
        await pilot.pause()
        assert list(main.query("FooterKey")) == shown  # the same widgets: not rebuilt
        assert detail.visual is detail_visual and verdict.visual is verdict_visual


def shown_lines(widget: Any) -> list[str]:
    """The widget's lines as the screen has them: Textual's line cache, re-rendered only
    where the widget asked for a redraw."""
    region = Region(0, 0, widget.outer_size.width, widget.outer_size.height)
    return ["".join(seg.text for seg in strip) for strip in widget.render_lines(region)]


def row_line(lines: list[str], call_id: str) -> str:
    found = [line for line in lines if call_id in line]
    assert len(found) == 1, lines
    return found[0]


async def test_a_snapshot_redraws_the_rows_that_changed_and_only_those(
        tmp_path: Path, monkeypatch: Any) -> None:
    case = two_calls(tmp_path / "case")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await select_call_16(pilot)
        calls = app.main.pane("calls")
        await pilot.pause()
        before = shown_lines(calls)
        assert "effect unknown" in row_line(before, "call-16")
        assert "effect unknown" not in row_line(before, "call-3")
        drawn: list[int] = []
        render_line = calls.render_line
        monkeypatch.setattr(calls, "render_line", lambda y: (drawn.append(y), render_line(y))[1])
        append_to_case(case, [UNRELATED])  # the Calls pane draws nothing
        await wait_for(pilot, lambda: "10 events" in status_text(app), what="seq 10")
        await pilot.pause()
        await pilot.pause()
        assert drawn == []
        assert shown_lines(calls) == before
        # call-3's manifest: its row, and no other, is drawn again, with the news
        append_to_case(case, [{"seq": 11, "kind": "call.manifest", "task_id": "task-1",
                       "call_id": "call-3", "payload": {"idempotency_key": "key-3",
                                                        "intent": {"instruction": "review"}}}])
        await wait_for(pilot, lambda: "manifest_recorded" in row_line(shown_lines(calls), "call-3"),
                       what="call-3's row redrawn at its new stage")
        await pilot.pause()
        after = shown_lines(calls)
        assert row_line(after, "call-16") == row_line(before, "call-16")
        assert [a for a, b in zip(after, before, strict=True) if a != b] == [
            row_line(after, "call-3")]
        call3_y = after.index(row_line(after, "call-3"))
        assert set(drawn) == {call3_y - 1}, drawn  # render_line counts from the header
