"""Every read has a budget: `inspect` gives up with one line instead of reading for ever.

No ledger can make a read endless once the schema check refuses views, so the reads are
made endless by tests/endless_open.py (the first query of every open first runs a
recursive CTE without end on that connection), with the budget set short by the
operator's setting, CODEAI_TUI_READ_BUDGET."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import clean
from inspectrun import run_inspect

ENDLESS_OPEN = Path(__file__).resolve().parents[1] / "endless_open.py"
BUDGET_S = 1.0
GIVE_UP_S = 10.0  # the budget, then the process's own start and end, on a loaded machine


def test_inspect_gives_up_on_a_read_that_never_ends(tmp_path: Path) -> None:
    case = tmp_path / "case"
    clean(case)
    env = {**os.environ, "CODEAI_TUI_READ_BUDGET": str(BUDGET_S), "CODEAI_TUI_DEBUG": ""}
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, str(ENDLESS_OPEN), "inspect", str(case)],
                              capture_output=True, text=True, timeout=30, env=env,
                              stdin=subprocess.DEVNULL, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        raise AssertionError("inspect still reading after 30 s") from None
    took = time.monotonic() - started
    assert proc.returncode == 2 and proc.stdout == "", (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"codeai-tui: {case / 'ledger.sqlite3'}: a read of the "
                                  "ledger ran past its budget of 1 s and was stopped")
    assert "CODEAI_TUI_READ_BUDGET=SECONDS" in proc.stderr
    assert took < GIVE_UP_S, f"gave up after {took:.1f} s"


@pytest.mark.parametrize("value", ["soon", "0", "-5", "nan", "inf"])
def test_a_budget_that_is_not_a_number_of_seconds_is_one_line(tmp_path: Path, value: str
                                                              ) -> None:
    case = tmp_path / "case"
    clean(case)
    run = run_inspect(case, env={"CODEAI_TUI_READ_BUDGET": value})
    assert run.rc == 2 and run.out == "", (run.rc, run.err)
    assert run.err == (f"codeai-tui: CODEAI_TUI_READ_BUDGET={value!r}: not a number of "
                       "seconds above 0\n")
