"""The screenshot script makes the SVGs (and the report's PNG) the README references,
writing no ledger."""

from __future__ import annotations

import html
import importlib.util
import shutil
import sys
from pathlib import Path

from apphelpers import ledger_digest, make_case
from tool_cases import tool_case

from tests.core.cases import make_case as make_real_case

_MAKE = Path(__file__).resolve().parents[2] / "screenshots" / "make.py"


def load_make():  # noqa: ANN201 - the module (a developer tool outside the package)
    spec = importlib.util.spec_from_file_location("screenshots_make", _MAKE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


def test_the_shipped_package_has_no_developer_tools() -> None:
    import codeai_tui.app as app_package

    shipped = {p.name for p in Path(app_package.__file__).parent.rglob("*.py")}
    assert not {"screenshots.py", "pilot.py"} & shipped


async def test_screenshots_script_makes_the_readme_svgs(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    make_case(bundle / "a-incident", "naive_restart_copy")
    real = make_real_case(bundle / "b-resumable", "http://127.0.0.1:9/v1")
    drifted = make_real_case(bundle / "c-drifted", "http://127.0.0.1:9/v1",
                             case_model="synthetic-large")
    tool = tool_case(bundle, "tool_admitted_no_outcome", "d-tool")
    before = ledger_digest(real), ledger_digest(drifted), ledger_digest(tool)
    out = tmp_path / "shots"
    await load_make().make_all(out, bundle)
    names = sorted(p.name for p in out.glob("*.svg"))
    assert names == ["bundle-100x30.svg", "bundle-80x24.svg", "bundle.svg", "lanes.svg",
                     "main.svg", "receipt-detail.svg", "resume-match.svg",
                     "resume-refused-drift.svg", "time-travel.svg", "tool-reconcile.svg"]

    def text(name: str) -> str:
        return html.unescape((out / name).read_text()).replace("\u00a0", " ")

    assert "effect unknown: duplicate risk" in text("main.svg")
    assert "DRIFT" in text("resume-refused-drift.svg")
    assert "set provider.model in case.json" in text("resume-refused-drift.svg")
    assert "match" in text("resume-match.svg")
    assert "AS OF seq" in text("time-travel.svg")
    assert "duplicate" in text("receipt-detail.svg")
    assert "2 of 4 cases have effect-unknown calls" in text("bundle.svg")
    assert "did it run?" in text("tool-reconcile.svg")
    assert "l Lanes" in text("lanes.svg") and "seq \u25b8" in text("lanes.svg")
    if shutil.which("chromium"):  # (.ci/run installs it; the report tests say so if not)
        assert (out / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (ledger_digest(real), ledger_digest(drifted), ledger_digest(tool)) == before
