"""Make the README's SVG screenshots from a case or a bundle.

    python screenshots/make.py OUT_DIR CASE_OR_BUNDLE

A developer tool, not part of the installed package.

main.svg (the worst case, its effect_unknown call selected), time-travel.svg (the same
case as of an earlier event), bundle.svg / bundle-80x24.svg / bundle-100x30.svg (the
bundle, worst first, after `e`), receipt-detail.svg (a duplicated receipt's detail),
resume-match.svg (a resumable call whose request matches), resume-refused-drift.svg
(the refusal: a case whose configuration drifted), tool-reconcile.svg (`x` on a tool
operation admitted without an outcome), lanes.svg (`l` on the case in trouble with the
most calls)
and report.png (the worst case's incident report, drawn by headless Chromium when the
machine has one). "Now" is frozen at five minutes
after the last event so the humanized times are stable. Nothing is written to any
ledger: the dialogs are opened, never confirmed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from codeai_tui.app import create_app
from codeai_tui.console.model import CaseFollower, discover_cases, parse_time
from codeai_tui.ledger import LedgerError


async def wait_until(pilot: Any, predicate: Callable[[], bool], *, timeout: float = 10.0,
                     what: str = "the expected state") -> None:
    """Let the app process messages until `predicate()` holds (never a bare sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause()
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"timed out waiting for {what}")

SIZE = (160, 48)


async def _until(pilot: Any, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    await wait_until(pilot, predicate, timeout=timeout, what="the console to settle")


async def _ready(pilot: Any) -> None:
    main = pilot.app.main
    await _until(pilot, lambda: main.live is not None and main.session.progress is None)
    await _until(pilot, main.pane("timeline").cursor_loaded)
    await _until(pilot, lambda: all(c.call_id in main.session.drift for c in main.live.state.calls
                                    if c.resumable))


@dataclass
class Survey:
    worst: Path
    duplicates: Path | None = None
    resumable: Path | None = None  # a manifest, no drift: the match dialog
    drifted: Path | None = None  # a manifest, drift: the refusal
    tool_unknown: Path | None = None  # a tool operation admitted without an outcome
    busiest: Path | None = None  # in trouble, with the most calls: the fullest lanes
    last: datetime | None = None


def _survey(path: Path) -> Survey:
    """Which case shows what best (read-only: projections and resume plans)."""
    from codeai_tui.actions.gate import ActionRefused
    from codeai_tui.actions.resume import plan_resume

    worst: tuple[int, Path] | None = None
    busiest: tuple[bool, int, int, Path] | None = None
    found = Survey(Path(path))
    for case in discover_cases(path):
        try:
            follower = CaseFollower(case)
        except LedgerError:
            continue
        try:
            follower.catch_up()
            snap = follower.snapshot()
        finally:
            follower.close()
        score = snap.state.effect_unknown_count * 10 + len(snap.state.receipts.duplicates)
        if worst is None or score > worst[0]:
            worst = (score, case)
        trouble = score + snap.state.tool_effect_unknown_count
        calls = len(snap.state.calls)
        if busiest is None or (trouble > 0, calls, trouble) > busiest[:3]:
            busiest = (trouble > 0, calls, trouble, case)
        if found.duplicates is None and snap.state.receipts.duplicates:
            found.duplicates = case
        if found.tool_unknown is None and any(
                c.tools is not None and c.tools.effect_unknown_count for c in snap.state.calls):
            found.tool_unknown = case
        for call in snap.state.calls:
            if not (call.resumable and call.has_manifest):
                continue
            try:
                drift = bool(plan_resume(case, call.call_id).drift)
            except (ActionRefused, LedgerError, OSError):
                continue
            if drift and found.drifted is None:
                found.drifted = case
            elif not drift and found.resumable is None:
                found.resumable = case
        when = parse_time(snap.last_recorded_at or "")
        if when is not None and (found.last is None or when > found.last):
            found.last = when
    if worst is None:
        raise SystemExit(f"{path}: no readable case")
    found.worst = worst[1]
    found.busiest = busiest[3] if busiest is not None else None
    return found


async def _shoot(out: Path, name: str, path: Path, clock: Callable[[], datetime],
                 steps: Callable[[Any], Any], size: tuple[int, int] = SIZE,
                 **kwargs: Any) -> None:
    rel = os.path.relpath(path)
    app = create_app(rel if not rel.startswith("../..") else path, clock=clock, **kwargs)
    async with app.run_test(size=size) as pilot:
        await _ready(pilot)
        await steps(pilot)
        await pilot.pause()
        svg = app.export_screenshot(title=f"codeai-tui \u2014 {name}")
    (out / f"{name}.svg").write_text(svg, encoding="utf-8")
    print(f"wrote {out / (name + '.svg')}")


async def _main_view(pilot: Any) -> None:
    main = pilot.app.main
    await pilot.press("3")
    if main.live.state.effect_unknown_count:
        await pilot.press("e")


async def _bundle_list(pilot: Any) -> None:
    """The bundle, worst first, and `e` on the first case with an effect_unknown call."""
    main = pilot.app.main
    await _until(pilot, lambda: len(main.pane("cases").verdicts) == len(main.session.cases))
    await pilot.press("e")
    await _until(pilot, lambda: main.live is not None and main.selected_call_id is not None)
    await _ready(pilot)
    await pilot.press("1", "o")


async def _receipt_detail(pilot: Any) -> None:
    await pilot.press("6")
    await _until(pilot, lambda: "receipt" in pilot.app.main.query_one("#detail-box").text())


async def _time_travel(pilot: Any) -> None:
    main = pilot.app.main
    await pilot.press("5")
    timeline = main.pane("timeline")
    timeline.move_to(max(0, timeline.row_count // 2))
    await pilot.press("t")
    await _until(pilot, lambda: main.shown is not None and main.shown.as_of is not None
                 and main.session.progress is None)
    await _until(pilot, timeline.cursor_loaded)


async def _lanes(pilot: Any) -> None:
    """`l`: the lanes of every call, the selected one highlighted."""
    main = pilot.app.main
    await pilot.press("l")
    lanes = main.query_one("#lanes")
    await _until(pilot, lambda: pilot.app.focused is lanes and lanes.clock is not None)


def report_png(out: Path, case: Path) -> None:
    """The case's incident report as headless Chromium draws its first page."""
    from codeai_tui.read.report import report_text

    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("no chromium: report.png not made", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(report_text(os.path.relpath(case)), encoding="utf-8")
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu",
                        "--hide-scrollbars", f"--screenshot={out / 'report.png'}",
                        "--window-size=1200,1600", page.as_uri()],
                       check=True, capture_output=True, timeout=120)
    print(f"wrote {out / 'report.png'}")


async def _tool_reconcile(pilot: Any) -> None:
    """`x` on the call holding a tool operation admitted without an outcome."""
    from codeai_tui.app.screens.tool_reconcile import ToolReconcileModal

    app = pilot.app
    await pilot.press("3")
    calls = app.main.calls
    source = calls.source
    calls.move_to(next(i for i in range(len(source)) if source.item_at(i).tools is not None
                       and source.item_at(i).tools.effect_unknown_count))
    await pilot.press("x")
    await _until(pilot, lambda: isinstance(app.screen, ToolReconcileModal))


def _open_resume() -> Any:
    async def steps(p: Any) -> None:
        from codeai_tui.app.screens.resume import ResumeModal

        app = p.app
        await p.press("3")
        calls = app.main.calls
        source = calls.source
        index = next(i for i in range(len(source))
                     if source.item_at(i).resumable and source.item_at(i).has_manifest)
        calls.move_to(index)
        await p.press("r")
        await _until(p, lambda: isinstance(app.screen, ResumeModal))

    return steps


async def make_all(out: Path, path: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    found = _survey(path)
    now = (found.last or datetime(2026, 1, 1).astimezone()) + timedelta(minutes=5)

    def clock() -> datetime:
        return now

    await _shoot(out, "main", found.worst, clock, _main_view)
    await _shoot(out, "time-travel", found.worst, clock, _time_travel)
    if len(discover_cases(path)) > 1:
        await _shoot(out, "bundle", path, clock, _bundle_list)
        await _shoot(out, "bundle-80x24", path, clock, _bundle_list, size=(80, 24))
        await _shoot(out, "bundle-100x30", path, clock, _bundle_list, size=(100, 30))
    if found.duplicates is not None:
        await _shoot(out, "receipt-detail", found.duplicates, clock, _receipt_detail)
    if found.resumable is not None:
        await _shoot(out, "resume-match", found.resumable, clock, _open_resume())
    if found.drifted is not None:
        await _shoot(out, "resume-refused-drift", found.drifted, clock, _open_resume())
    elif found.resumable is not None:  # no drifted case: ask for another model instead
        await _shoot(out, "resume-refused-drift", found.resumable, clock, _open_resume(),
                     model="a-different-model")
    if found.tool_unknown is not None:
        await _shoot(out, "tool-reconcile", found.tool_unknown, clock, _tool_reconcile)
    await _shoot(out, "lanes", found.busiest or found.worst, clock, _lanes)
    report_png(out, found.worst)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    asyncio.run(make_all(Path(args[0]), Path(args[1])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
