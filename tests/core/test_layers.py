"""Architecture rules that a refactor could silently break."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_data_layer_imports_no_textual() -> None:
    code = (
        "import sys; import codeai_tui.ledger, codeai_tui.workstate, codeai_tui.actions.resume, "
        "codeai_tui.read.inspection, codeai_tui.lab.provider, codeai_tui.runtime.runner, codeai_tui.runtime.responses, "
        "codeai_tui.tools, codeai_tui.tools.turn; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')]; "
        "print(bad); raise SystemExit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter not installed")
    proc = subprocess.run([exe], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_the_product_loads_no_lab_or_demo_module() -> None:
    """The lab (provider, bench, reliability) and the demo harness stand beside the
    product: the command line, the console and every product package load none of them
    until a lab or demo command runs."""
    root = ROOT / "codeai_tui"
    names = sorted(
        ".".join(("codeai_tui", *p.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
        for p in root.rglob("*.py")
        if p.relative_to(root).parts[0] not in ("lab", "demo", "cli", "__main__.py"))
    assert len(names) > 100  # (the walk found the product)
    code = (
        "import sys, importlib; import codeai_tui.cli.main, codeai_tui.app; "
        f"[importlib.import_module(n) for n in {names!r}]; "
        "bad = sorted(m for m in sys.modules if m.startswith(('codeai_tui.lab', 'codeai_tui.demo'))); "
        "print(bad); raise SystemExit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
