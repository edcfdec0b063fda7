"""Themes live as JSON files in the repository's top-level `themes/` directory.

A built wheel carries a copy inside the package (`codeai_tui/app/theme_files/`, made by
setup.py's build step) read through importlib.resources, so the themes are found however
the wheel is installed; a checkout or an editable install reads `themes/` itself. Only
this package's own copy is read, never another package's `themes/`. A built-in
incident-dark keeps the console usable if the files are missing or malformed (a theme
file never stops an incident).
"""

from __future__ import annotations

import json
from dataclasses import fields
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from textual.theme import Theme

_REPO_THEMES = Path(__file__).resolve().parents[2] / "themes"  # checkout / editable install


def themes_dir() -> Traversable:
    """The packaged copy if this is an installed wheel, else the repository's themes/."""
    packaged = resources.files("codeai_tui.app") / "theme_files"
    if packaged.is_dir():
        return packaged
    return _REPO_THEMES


THEMES_DIR = themes_dir()
DEFAULT_THEME = "incident-dark"

_FALLBACK = Theme(
    name=DEFAULT_THEME,
    primary="#4FA3E0",
    secondary="#7C8DB5",
    accent="#E0A84F",
    warning="#E5C07B",
    error="#FF5F5F",
    success="#6CC644",
    foreground="#D8DEE9",
    background="#101418",
    surface="#171C22",
    panel="#1F2630",
    dark=True,
)

_FIELDS = {f.name for f in fields(Theme)}


def load_theme_file(path: Traversable) -> Theme:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "primary" not in data:
        raise ValueError(f"{path.name}: not a theme object with a 'primary' colour")
    data.setdefault("name", path.name.removesuffix(".json"))
    return Theme(**{k: v for k, v in data.items() if k in _FIELDS})


def load_themes(directory: Traversable = THEMES_DIR) -> tuple[list[Theme], list[str]]:
    """(themes, problems). Always includes incident-dark."""
    themes: dict[str, Theme] = {DEFAULT_THEME: _FALLBACK}
    problems: list[str] = []
    if directory.is_dir():
        for path in sorted((p for p in directory.iterdir() if p.name.endswith(".json")),
                           key=lambda p: p.name):
            try:
                theme = load_theme_file(path)
            except (OSError, ValueError, TypeError) as exc:
                problems.append(f"theme {path.name} ignored: {exc}")
                continue
            themes[theme.name] = theme
    return list(themes.values()), problems
