"""The demo bundle is built ONCE per run by the real command (`codeai-tui demo`) in its
own process, shared by both test processes; tests that change anything work on a
copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import shared_demo_bundle


@pytest.fixture(scope="session")
def demo_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # the kernel's key kept beside (never inside) the bundle, so its tool plans can replay
    return shared_demo_bundle(tmp_path_factory.getbasetemp())


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
