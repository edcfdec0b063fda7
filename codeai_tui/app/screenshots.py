"""Make the README's SVG screenshots from a case or a bundle.

    python -m codeai_tui.app.screenshots OUT_DIR CASE_OR_BUNDLE

main.svg (the worst case, its effect_unknown call selected), time-travel.svg (the same
case as of an earlier event), resume-match.svg and resume-drift.svg (the first case
with a resumable call that has a manifest; drift is shown by asking for another model). "Now" is frozen at
five minutes after the case's last event so the humanized times are stable. Nothing is
written to any ledger: the modals are opened and cancelled.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from codeai_tui.app import create_app
from codeai_tui.app.pilot import wait_until
from codeai_tui.console.model import CaseFollower, discover_cases, parse_time
from codeai_tui.ledger import LedgerError

SIZE = (160, 48)


async def _until(pilot: Any, predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    await wait_until(pilot, predicate, timeout=timeout, what="the console to settle")


async def _ready(pilot: Any) -> None:
    app = pilot.app
    await _until(pilot, lambda: app.live is not None and app.progress is None)
    await _until(pilot, lambda: app.table("timeline").row_count == 0
                 or app.timeline_source.is_loaded(app.table("timeline").cursor))


def _survey(path: Path) -> tuple[Path, Path | None, datetime | None]:
    """(case with the worst state, first case with a resumable call, its last time)."""
    worst: tuple[int, Path] | None = None
    resumable: Path | None = None
    last: datetime | None = None
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
        # the match/drift shots need a manifest: rung 4 has nothing to compare
        if resumable is None and any(c.resumable and c.has_manifest for c in snap.state.calls):
            resumable = case
        when = parse_time(snap.last_recorded_at or "")
        if when is not None and (last is None or when > last):
            last = when
    if worst is None:
        raise SystemExit(f"{path}: no readable case")
    return worst[1], resumable, last


async def _shoot(out: Path, name: str, case: Path, clock: Callable[[], datetime],
                 steps: Callable[[Any], Any], **kwargs: Any) -> None:
    rel = os.path.relpath(case)
    app = create_app(rel if not rel.startswith("../..") else case, clock=clock, **kwargs)
    async with app.run_test(size=SIZE) as pilot:
        await _ready(pilot)
        await steps(pilot)
        await pilot.pause()
        svg = app.export_screenshot(title=f"codeai-tui \u2014 {name}")
    (out / f"{name}.svg").write_text(svg, encoding="utf-8")
    print(f"wrote {out / (name + '.svg')}")


async def _main_view(pilot: Any) -> None:
    app = pilot.app
    await pilot.press("3")
    if app.live.state.effect_unknown_count:
        await pilot.press("e")


async def _time_travel(pilot: Any) -> None:
    app = pilot.app
    await pilot.press("5")
    timeline = app.table("timeline")
    timeline.move_to(max(0, timeline.row_count // 2))
    await pilot.press("t")
    await _until(pilot, lambda: app.shown is not None and app.shown.as_of is not None)
    await _until(pilot, lambda: app.timeline_source.is_loaded(timeline.cursor))


def _open_resume() -> Any:
    async def steps(p: Any) -> None:
        from codeai_tui.app.screens.resume import ResumeModal

        app = p.app
        await p.press("3")
        calls = app.table("calls")
        source = calls.source
        index = next(i for i in range(len(source))
                     if source.call_at(i).resumable and source.call_at(i).has_manifest)
        calls.move_to(index)
        await p.press("r")
        await _until(p, lambda: isinstance(app.screen, ResumeModal))

    return steps


async def make_all(out: Path, path: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    worst, resumable, last = _survey(path)
    now = (last or datetime(2026, 1, 1).astimezone()) + timedelta(minutes=5)

    def clock() -> datetime:
        return now

    await _shoot(out, "main", worst, clock, _main_view)
    await _shoot(out, "time-travel", worst, clock, _time_travel)
    if resumable is None:
        print("no case with a resumable call: resume-match.svg and resume-drift.svg skipped")
        return
    await _shoot(out, "resume-match", resumable, clock, _open_resume())
    await _shoot(out, "resume-drift", resumable, clock, _open_resume(),
                 model="a-different-model")


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
