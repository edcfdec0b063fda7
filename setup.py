"""Ship the repository's top-level themes/ inside the package (issue 9, E).

`themes/` stays the one source at the top level; building the package copies its JSON
files into `codeai_tui/app/theme_files/`, which `codeai_tui/app/themes.py` reads with
importlib.resources, however the wheel is installed (--user, a venv, --target).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

THEMES = Path(__file__).parent / "themes"
TARGET = ("codeai_tui", "app", "theme_files")


class BuildPyWithThemes(build_py):
    def run(self) -> None:
        super().run()
        out = Path(self.build_lib, *TARGET)
        out.mkdir(parents=True, exist_ok=True)
        for theme in sorted(THEMES.glob("*.json")):
            shutil.copyfile(theme, out / theme.name)


setup(cmdclass={"build_py": BuildPyWithThemes})
