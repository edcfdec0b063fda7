"""Two consoles on one case. When one resumes, the other shows it live, and
its own resume of that call is refused having appended nothing: by its dialog (the
evidence moved) or, with its follower paused so it cannot know, by the projection gate
that re-reads the call inside the write transaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apphelpers import SIZE, frozen_clock, log_texts, ready, wait_for
from textual.widgets import Static

from codeai_tui.app import create_app
from codeai_tui.app.screens.resume import ResumeModal
from codeai_tui.ledger import LedgerReader, read_receipts
from tests.core.cases import STOPPED_AT
from tests.core.cases import make_case as make_real_case


async def open_modal(pilot: Any) -> ResumeModal:
    app = pilot.app
    await ready(pilot)
    await pilot.press("3", "r")
    await wait_for(pilot, lambda: isinstance(app.screen, ResumeModal), timeout=15,
                   what="resume modal")
    await pilot.pause()
    return app.screen


def modal_text(modal: ResumeModal) -> str:
    return "\n".join(str(w.render()) for w in modal.query(Static))


async def resume_in(pilot: Any) -> None:
    """Console A resumes call-1 and waits for the outcome."""
    await open_modal(pilot)
    await pilot.press("y")
    main = pilot.app.main
    await wait_for(pilot, lambda: main.note is not None and main.note.ok, timeout=30,
                   what="A's resume done")


def resumed_events(case: Path) -> list[str]:
    with LedgerReader(case) as reader:
        return [e.call_id or "" for e in reader.events() if e.kind == "call.resumed"]


async def test_the_other_console_sees_it_live_and_its_open_dialog_refuses(
        tmp_path: Path, provider: Any) -> None:
    case = make_real_case(tmp_path / "c1", provider.base_url, recorded_at=STOPPED_AT)
    a, b = create_app(case, clock=frozen_clock), create_app(case, clock=frozen_clock)
    async with a.run_test(size=SIZE) as pa, b.run_test(size=SIZE) as pb:
        modal_b = await open_modal(pb)  # B looks at the same call, dialog open
        await resume_in(pa)
        await wait_for(pb, lambda: b.main.live.call("call-1").stage.value == "superseded",
                       timeout=15, what="B sees A's resume live")
        await wait_for(pb, lambda: b.main.live.call("call-1").superseded_by is not None,
                       what="B sees the new call")
        await wait_for(pb, lambda: "evidence changed" in modal_text(modal_b),
                       what="B's dialog refuses")
        await pb.press("y")  # B insists: nothing to confirm any more
        await pb.pause()
        await pb.press("escape")
        await wait_for(pb, lambda: not isinstance(b.screen, ResumeModal), what="closed")
        assert any(t.startswith("refused:") for t in log_texts(b))
    assert resumed_events(case) == ["call-1"]
    assert len(read_receipts(case).receipts) == 1


async def test_a_console_that_has_not_seen_it_yet_is_refused_by_the_gate(
        tmp_path: Path, provider: Any) -> None:
    case = make_real_case(tmp_path / "c2", provider.base_url, recorded_at=STOPPED_AT)
    a, b = create_app(case, clock=frozen_clock), create_app(case, clock=frozen_clock)
    async with a.run_test(size=SIZE) as pa, b.run_test(size=SIZE) as pb:
        await ready(pb)
        await pb.press("f")  # B stops following: it cannot see what A does
        await wait_for(pb, lambda: b.main.session.state == "paused", what="B paused")
        modal_b = await open_modal(pb)
        await resume_in(pa)
        assert b.main.live.call("call-1").resumable  # B still believes it may resume
        assert "evidence changed" not in modal_text(modal_b)
        await pb.press("y")
        await wait_for(pb, lambda: b.main.note is not None and not b.main.note.ok,
                       timeout=30, what="B's resume refused")
        assert "refused" in b.main.note.text
        assert any(t.startswith("refused:") for t in log_texts(b))
        await pb.press("f")  # following again, B shows what happened
        await wait_for(pb, lambda: b.main.live.call("call-1").stage.value == "superseded",
                       timeout=15, what="B sees it once following")
    assert resumed_events(case) == ["call-1"]
    assert len(read_receipts(case).receipts) == 1
