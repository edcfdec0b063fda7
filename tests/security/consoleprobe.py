"""Everything tests/security asks of the running console, in one place.

The security tests drive the real app (`create_app` + `App.run_test`) and read what it
shows. When the app's inner shape changes, this module
is the one file to adapt, and the security tests keep their meaning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apphelpers import wait_for
from textual.widgets import Static

from codeai_tui.app.screens.error import ErrorScreen
from codeai_tui.app.screens.resume import ResumeModal
from codeai_tui.app.widgets.status_bar import StatusBar

DEADLINE_S = 5.0


async def error_shown(pilot: Any, what: str, timeout: float = DEADLINE_S) -> str:
    """Wait for the console's error screen; returns its sentence."""
    app = pilot.app
    await wait_for(pilot, lambda: isinstance(app.screen, ErrorScreen), timeout=timeout,
                   what=f"error screen for {what}")
    return str(app.screen.query_one("#error-sentence", Static).render())


async def projected(pilot: Any, what: str, timeout: float = DEADLINE_S) -> None:
    """Wait until the open case is projected and drawn (not an error screen)."""
    app = pilot.app
    await wait_for(pilot, lambda: app.main.live is not None and app.main.session.progress is None,
                   timeout=timeout, what=f"projection of {what}")
    assert not isinstance(app.screen, ErrorScreen)


def anomalies(app: Any) -> list[str]:
    """The anomalies of the projection the console shows."""
    return [a.problem for a in app.main.live.state.anomalies]


def status_text(app: Any) -> str:
    return str(app.main.query_one(StatusBar).render())


def receipt_lines(app: Any) -> list[str]:
    """What the console holds about the receipt log, worded as `inspect` words it (the
    console does not display receipt-log problems yet)."""
    log = app.main.live.receipts
    lines = [f"receipt log{f' line {n}' if n else ''}: {p}" for n, p in log.problems]
    if log.truncated_tail:
        lines.append("receipt log: its last line is cut short")
    return lines


def notes(app: Any) -> list[str]:
    """What the console told the operator: its action log (refusals, failures, alerts,
    internal errors: kept) and the toasts on screen now (public DOM, no private API)."""
    kept = [e.text for e in app.action_log.entries]
    shown = [str(t.render()) for screen in {app.screen, app.main}
             for t in screen.query("Toast")]
    return kept + shown


def internal_errors(app: Any) -> list[str]:
    """Workers that died behind the screen (the app names them "internal error")."""
    return [n for n in notes(app) if "internal error" in n] + (
        ["follow stopped"] if app.main.session.state == "stopped" else [])


async def select_call(pilot: Any, call_id: str) -> None:
    await pilot.press("3")
    await wait_for(pilot, lambda: pilot.app.main.selected_call_id == call_id,
                   timeout=DEADLINE_S, what=f"{call_id} selected")


async def open_resume_dialog(pilot: Any) -> str:
    """`r` on the selected call; returns the dialog's destination/credential text."""
    app = pilot.app
    await pilot.press("r")
    await wait_for(pilot, lambda: isinstance(app.screen, ResumeModal), what="resume dialog")
    await pilot.pause()
    return str(app.screen.query_one("#resume-destination", Static).render())


def dialog_open(app: Any) -> bool:
    return isinstance(app.screen, ResumeModal)


async def resumed(pilot: Any, calls: int) -> None:
    """Wait for a confirmed resume to finish and its new call to be listed."""
    main = pilot.app.main
    await wait_for(pilot, lambda: main.note is not None and main.note.ok, timeout=20,
                   what="resume done")
    await wait_for(pilot, lambda: main.pane("calls").row_count == calls, what="new call row")


def bundle_state(app: Any) -> tuple[Path | None, str | None, dict[str, Any]]:
    """(the open case, its trouble line, {case name: (verdict, events) or error line})."""
    main = app.main

    def summary(verdict: Any) -> Any:
        return verdict.detail if verdict.label == "unreadable" else (
            verdict, verdict.event_count)

    return main.case, main.session.trouble, {case.name: summary(v)
                                     for case, v in main.pane("cases").verdicts.items()}


def trouble(app: Any) -> str | None:
    """The open case's current problem line (the banner), if any."""
    return app.main.session.trouble
