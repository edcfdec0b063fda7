"""The demo bundle is built ONCE per session by the real command (`codeai-tui demo`)
in its own process; tests that change anything work on a copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import cli


@pytest.fixture(scope="session")
def demo_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "bundle"
    # the kernel's key kept beside (never inside) the bundle, so its tool plans can replay
    done = cli("demo", str(out), "--kernel-key", str(out.parent / "keys" / "kernel.key"),
               timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str(out.resolve())
    (out.parent / "demo.stderr").write_text(done.stderr)  # what the command printed
    return out


@pytest.fixture
def bundle_with_inventory(demo_bundle: Path, tmp_path: Path) -> Path:
    """A private copy (this process holds no SQLite connection to the original)."""
    dst = tmp_path / "bundle"
    shutil.copytree(demo_bundle, dst)
    return dst


@pytest.fixture
def bundle_copy(bundle_with_inventory: Path) -> Path:
    """A private copy with the byte inventory removed, so only meaning can catch a
    corruption (as in the seed's experiment: byte checks bypassed)."""
    (bundle_with_inventory / "hashes.json").unlink()
    return bundle_with_inventory
