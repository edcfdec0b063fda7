"""Security tests: hostile case directories, made by code into tmp_path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
for p in (TESTS, HERE, TESTS / "app"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

os.environ["TEXTUAL_ANIMATIONS"] = "none"
