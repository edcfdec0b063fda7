"""Fixtures for the reliability harness tests: a provider that holds requests (so a
kill can land while it does) and the command line run in-process for the read-side
checks (inspect/verify/export run after the actor processes are gone)."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest


def inprocess_cli(args: Sequence[str]) -> tuple[int, str, str]:
    """`codeai-tui ARGS` in this process: the same code, without the interpreter start."""
    from codeai_tui.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def cli() -> Any:
    return inprocess_cli


@pytest.fixture
def slow_provider(tmp_path: Path) -> Iterator[Any]:
    """Bundle-mode provider rooted at tmp_path that holds each request 0.3 s."""
    from codeai_tui.lab.provider import ProviderProcess

    with ProviderProcess(receipts_root=tmp_path, latency=0.3) as proc:
        yield proc
