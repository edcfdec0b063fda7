"""Themes live as JSON files in the repository's top-level `themes/` directory.

We install with `pip install -e .`, so the directory is found relative to the package
(`codeai_tui/app/../../themes`). A built-in incident-dark keeps the console usable if
the directory is missing or a file is malformed (a theme file never stops an incident).
"""

from __future__ import annotations

import json
import sys
from dataclasses import fields
from pathlib import Path

from textual.theme import Theme

_REPO_THEMES = Path(__file__).resolve().parents[2] / "themes"  # editable install / checkout
_INSTALLED_THEMES = Path(sys.prefix) / "share" / "codeai-tui" / "themes"  # wheel install
THEMES_DIR = _REPO_THEMES if _REPO_THEMES.is_dir() else _INSTALLED_THEMES
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


def load_theme_file(path: Path) -> Theme:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "primary" not in data:
        raise ValueError(f"{path.name}: not a theme object with a 'primary' colour")
    data.setdefault("name", path.stem)
    return Theme(**{k: v for k, v in data.items() if k in _FIELDS})


def load_themes(directory: Path = THEMES_DIR) -> tuple[list[Theme], list[str]]:
    """(themes, problems). Always includes incident-dark."""
    themes: dict[str, Theme] = {DEFAULT_THEME: _FALLBACK}
    problems: list[str] = []
    if directory.is_dir():
        for path in sorted(directory.glob("*.json")):
            try:
                theme = load_theme_file(path)
            except (OSError, ValueError, TypeError) as exc:
                problems.append(f"theme {path.name} ignored: {exc}")
                continue
            themes[theme.name] = theme
    return list(themes.values()), problems
