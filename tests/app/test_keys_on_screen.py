"""The key for the selected call's next step is on screen: the verdict line names it
("v: finalize", "R: replay", "R: record the follow-up call" after a tool reconcile),
and the footer shows that write's key and no other write's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apphelpers import SIZE, frozen_clock, ready, verdict_text, wait_for
from tool_cases import tool_case

from codeai_tui.app import create_app
from codeai_tui.lab.reliability.cases import make_advance_case

pytestmark = pytest.mark.timeout(90)
WRITES = {"resume", "reconcile", "advance", "replay"}


def footer_writes(app: Any) -> set[str]:
    """The write actions whose keys the footer shows now."""
    return {key.action for key in app.main.query("FooterKey")} & WRITES


@pytest.mark.parametrize(("upto", "words"), [
    ("observed", "v: reinterpret"),
    ("retry_decided", "v: next attempt"),
    ("decided_stop", "v: finalize"),
])
async def test_an_advance_step_names_v(tmp_path: Path, provider: Any, upto: str,
                                       words: str) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, upto)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("3")
        await wait_for(pilot, lambda: words in verdict_text(app), what=words)
        await wait_for(pilot, lambda: footer_writes(app) == {"advance"},
                       what="only v in the footer")


async def test_a_tool_turn_names_R_before_and_after_its_reconcile(tmp_path: Path) -> None:
    """Not admitted: R replays it. Found to have run (tool.reconciled executed): the call
    is completed and its own next operation is none, but the task's is the follow-up
    call that replay records: the line says R for that, not "next none" alone."""
    key = tmp_path / "kernel.key"
    planned = tool_case(tmp_path, "tool_planned_not_admitted", "planned")
    app = create_app(planned, clock=frozen_clock, kernel_key=key)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.press("3")
        await wait_for(pilot, lambda: "R: replay" in verdict_text(app), what="R: replay")
        await wait_for(pilot, lambda: footer_writes(app) == {"replay"}, what="R in the footer")
    found = tool_case(tmp_path, "tool_reconciled_executed", "found")
    app = create_app(found, clock=frozen_clock, kernel_key=key)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("3", "G")  # m1, the planning call (m0 came before it)
        await wait_for(pilot, lambda: app.main.selected_call_id == "m1", what="m1")
        await wait_for(pilot, lambda: "R: record the follow-up call" in verdict_text(app),
                       what="the follow-up's key")
        await wait_for(pilot, lambda: footer_writes(app) == {"replay"}, what="R in the footer")
    app = create_app(found, clock=frozen_clock, kernel_key=key, read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("3", "G")
        await wait_for(pilot, lambda: app.main.selected_call_id == "m1", what="m1")
        await pilot.pause()
        assert "R:" not in verdict_text(app) and footer_writes(app) == set()


async def test_f1_opens_the_help_which_lists_keys_by_what_they_do(tmp_path: Path,
                                                                   provider: Any) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, "observed")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("f1")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="help")
        text = "\n".join(str(s.render()) for s in app.screen.query("Static"))
        for heading in ("Act on the selected call", "Find what matters", "Step through time",
                        "Move and look", "This session"):
            assert heading in text
        assert text.index("Act on the selected call") < text.index("Resume the selected")
        for keys in ("j / k", "shift+tab", "ctrl+p", "? f1"):
            assert keys in text
        await pilot.press("f1")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MainScreen",
                       what="help closed")


async def test_R_on_a_finished_tool_turn_says_nothing_to_replay(tmp_path: Path) -> None:
    """The planning call's operation completed and its follow-up succeeded: R is not
    offered, and pressed it says there is nothing to replay (nothing written)."""
    case = tool_case(tmp_path, "tool_turn_follow_up")
    app = create_app(case, clock=frozen_clock, kernel_key=tmp_path / "kernel.key")
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("3")
        await wait_for(pilot, lambda: app.main.selected_call_id == "m1", what="m1")
        await pilot.pause()
        assert "replay" not in footer_writes(app) and "R:" not in verdict_text(app)
        await pilot.press("R")
        await wait_for(pilot, lambda: any("nothing to replay" in e.text
                                          for e in app.action_log.entries),
                       what="nothing to replay")


async def test_at_80_columns_the_palette_key_ends_the_footer(tmp_path: Path) -> None:
    """Compact, the footer's keys may overflow under the palette's key, docked right:
    the last column is the palette key's, not a margin through which a letter of a key
    beneath it showed."""
    found = tool_case(tmp_path, "tool_reconciled_executed", "found")
    app = create_app(found, clock=frozen_clock, kernel_key=tmp_path / "kernel.key")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("3", "G")
        await wait_for(pilot, lambda: footer_writes(app) == {"replay"}, what="R in the footer")
        await pilot.pause()
        last, _ = app.screen.get_widget_at(79, 23)
        assert last.has_class("-command-palette"), last  # (it was the footer's margin)
