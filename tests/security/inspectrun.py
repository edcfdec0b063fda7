"""Run `codeai-tui inspect` in a subprocess with a hard deadline (a hang is a failure)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

INSPECT_TIMEOUT_S = 5.0
# the console script installed beside this interpreter (the venv under test)
CLI = str(Path(sys.executable).with_name("codeai-tui"))


@dataclass(frozen=True)
class Run:
    rc: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


def run_inspect(case: Path, *extra: str, env: dict[str, str] | None = None) -> Run:
    """`codeai-tui inspect CASE` as an operator runs it; raises AssertionError on a hang."""
    cmd = [CLI, "inspect", str(case), *extra]
    full_env = {**os.environ, "CODEAI_TUI_DEBUG": "", **(env or {})}
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=INSPECT_TIMEOUT_S,
                              env=full_env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"inspect {case.name} still running after {INSPECT_TIMEOUT_S} s"
                             ) from None
    return Run(proc.returncode, proc.stdout.decode("utf-8", "replace"),
               proc.stderr.decode("utf-8", "replace"))
