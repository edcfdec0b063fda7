"""App fixtures: real ledgers written with plain sqlite3, no animations, no config from
$HOME (helpers live in apphelpers.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from apphelpers import make_case

os.environ["TEXTUAL_ANIMATIONS"] = "none"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                   ) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


@pytest.fixture
def case_factory(tmp_path: Path) -> Callable[[str], Path]:
    def make(name: str) -> Path:
        return make_case(tmp_path / name, name)

    return make


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A console test that leaves a thread answering into a closed event loop (an
    aiosqlite connection cut off mid-call) fails instead of warning."""
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.filterwarnings(
                "error::pytest.PytestUnhandledThreadExceptionWarning"))
