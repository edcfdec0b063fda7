"""E: a built wheel carries the themes and finds them however it is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(300)


def test_wheel_ships_the_themes_and_reads_only_its_own(tmp_path: Path) -> None:
    # build from a clean copy: an in-tree build/ of an earlier run could leak stale files
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "tests"))
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source),
                            "-w", str(wheels)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("codeai_tui-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for theme in ("incident-dark", "light", "high-contrast"):
        assert f"codeai_tui/app/theme_files/{theme}.json" in names
    assert not any(n.startswith(("themes/", "share/")) or ".data/" in n for n in names)
    # developer tools are not shipped: screenshots/make.py and the test helpers
    assert not any(n.endswith(("app/screenshots.py", "app/pilot.py")) or "make.py" in n
                   for n in names)
    # a --target install (like --user: nothing under sys.prefix/share) ...
    target = tmp_path / "site"
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                                "--target", str(target), str(wheel)],
                               capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr[-2000:]
    # ... next to another package's top-level themes/, which must not be picked up
    (target / "themes").mkdir()
    (target / "themes" / "intruder.json").write_text(json.dumps({"primary": "#ff0000"}))
    code = ("import codeai_tui.app.themes as t; "
            "print(t.__file__); print(sorted(x.name for x in t.load_themes()[0]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), *sys.path[1:]])}
    ran = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr[-2000:]
    where, found = ran.stdout.strip().splitlines()
    assert where.startswith(str(target))
    assert found == "['high-contrast', 'incident-dark', 'light']"


def test_readme_test_command_works_in_a_new_shell_and_ci_runs_it_verbatim() -> None:
    """E: the second command names the virtualenv's programs (no `activate` needed), and
    .ci/run runs exactly that line."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Two commands", 1)[1].split("## Commands", 1)[0]
    commands = [line for line in block.splitlines() if line.startswith("python3 -m venv .venv")]
    assert len(commands) == 2, commands
    second = commands[1]
    assert second == "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/pytest"
    assert second in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    for name in ("bundle.svg", "bundle-80x24.svg", "resume-refused-drift.svg",
                 "receipt-detail.svg"):
        assert f"screenshots/{name}" in readme and (REPO / "screenshots" / name).is_file()
