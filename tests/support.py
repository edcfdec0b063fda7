"""Helpers shared by the test packages (import as `tests.support`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
CONFORMANCE = TESTS / "conformance"


def load_vectors() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(CONFORMANCE.glob("*.json"))]


def cli(*args: str, input: str | None = None, timeout: float = 60,
        env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command line in a separate process."""
    return subprocess.run(
        [sys.executable, "-m", "codeai_tui", *args],
        capture_output=True, text=True, timeout=timeout, input=input,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env_extra or {})},
    )
