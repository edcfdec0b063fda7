"""Shared fixtures: deterministic environment and a real provider process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # `ledgerfactory` for every test package

# Deterministic runs: no animations, no user config from $HOME, no real API key.
os.environ["TEXTUAL_ANIMATIONS"] = "none"
os.environ.pop("CODEAI_API_KEY", None)


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[Any]:
    """A synthetic provider in its own process, bundle mode rooted at tmp_path."""
    from codeai_tui.provider import ProviderProcess

    with ProviderProcess(receipts_root=tmp_path) as proc:
        yield proc
