"""The screenshot script makes the four SVGs the README references, writing no ledger."""

from __future__ import annotations

import html
from pathlib import Path

from apphelpers import ledger_digest, make_case

from codeai_tui.app.screenshots import make_all
from tests.core.cases import make_case as make_real_case


async def test_screenshots_script_makes_the_four_svgs(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    make_case(bundle / "a-incident", "naive_restart_copy")
    real = make_real_case(bundle / "b-resumable", "http://127.0.0.1:9/v1")
    before = ledger_digest(real)
    out = tmp_path / "shots"
    await make_all(out, bundle)
    names = sorted(p.name for p in out.glob("*.svg"))
    assert names == ["main.svg", "resume-drift.svg", "resume-match.svg", "time-travel.svg"]

    def text(name: str) -> str:
        return html.unescape((out / name).read_text()).replace("\u00a0", " ")

    assert "effect unknown: duplicate risk" in text("main.svg")
    assert "DRIFT" in text("resume-drift.svg")
    assert "match" in text("resume-match.svg")
    assert "AS OF seq" in text("time-travel.svg")
    assert ledger_digest(real) == before
