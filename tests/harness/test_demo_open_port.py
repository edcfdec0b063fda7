"""`demo --open` and the port its case.json files name.

The bundle's provider binds its port before anything names it (the usual port, else
one the system gives it), so the port cannot be taken between the build and the
provider's start, and the command never ends in "verification failed" (exit 1) for a
busy port. The build and the console are stood in for (a build is ~20 s; the console
needs a terminal); the provider is the real process, and the stand-in console asks it,
through the URL the bundle's case.json names, whether it is this bundle's.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeai_tui import demo
from codeai_tui.cli import demo as demo_command
from codeai_tui.cli import main as cli

CASE = "02_killed_after_manifest"


@pytest.fixture
def usual_port(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """The demo's usual port, for this test: one that was free a moment ago (8768 itself
    may be another run's on this machine)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    monkeypatch.setattr(demo, "DEMO_PROVIDER_PORT", port)
    yield port


class Demo:
    """Stands in for the build (writes a bundle whose case.json names the port it is
    given, as the harness does) and the console (asks the case's destination who it is,
    and records what it was told)."""

    def __init__(self, during_build: Any = None) -> None:
        self.during_build = during_build
        self.built_port: int | None = None
        self.note: str | None = None
        self.answer: dict[str, Any] | None = None
        self.live_port: int | None = None
        self.built_key: Path | None = None
        self.open_key: Path | None = None
        self.key_dir_existed = False

    def build(self, out: Path, port: int, kernel_key: Path | None = None,
              bundle_id: str | None = None) -> Path:
        self.built_port, self.built_key = port, kernel_key
        if self.during_build is not None:
            self.during_build()
        case = out / CASE
        case.mkdir(parents=True)
        (case / "case.json").write_text(json.dumps({"provider": {
            "base_url": f"http://127.0.0.1:{port}/b/{bundle_id}/c/{CASE}/v1",
            "identity": bundle_id}}))
        (out / "bundle.json").write_text(json.dumps({"bundle_id": bundle_id}))
        return out.resolve()

    def open(self, args: Any, provider_note: str | None = None) -> int:
        self.note = provider_note
        self.open_key = args.kernel_key
        self.key_dir_existed = args.kernel_key is not None and args.kernel_key.parent.is_dir()
        base = json.loads((Path(args.path) / CASE / "case.json").read_text())["provider"]
        with urllib.request.urlopen(base["base_url"] + "/health", timeout=10) as resp:
            self.answer = {**json.loads(resp.read()), "expected": base["identity"]}
        return 0

    def live(self, bundle: Path, rate: float, busy_timeout: float = 10.0,
             case_port: int = 0) -> subprocess.Popen[str]:
        self.live_port = case_port
        return subprocess.Popen([sys.executable, "-c", "pass"], text=True)


def _run(monkeypatch: pytest.MonkeyPatch, stand_in: Demo, *argv: str) -> int:
    monkeypatch.setattr(demo, "build_demo", stand_in.build)
    monkeypatch.setattr(demo, "start_live", stand_in.live)
    monkeypatch.setattr(demo_command, "open_console", stand_in.open)
    return cli.main(["demo", *argv])


def test_the_port_taken_during_the_build_still_opens_the_console(
        tmp_path: Path, usual_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone binds the usual port while the bundle is built: it was exit 1 ("no
    provider for resumes ... not opening it"). The provider holds the port by then."""
    squatter = socket.socket()

    def take_the_port() -> None:
        try:
            squatter.bind(("127.0.0.1", usual_port))
            squatter.listen()
        except OSError:
            pass  # the bundle's provider holds it already: what must happen

    stand_in = Demo(during_build=take_the_port)
    try:
        code = _run(monkeypatch, stand_in, "--open", str(tmp_path / "bundle"))
    finally:
        squatter.close()
    assert code == 0
    assert stand_in.built_port == usual_port
    assert stand_in.answer is not None and stand_in.answer["identity"] == \
        stand_in.answer["expected"], stand_in.answer
    assert f"demo provider on 127.0.0.1:{usual_port}: resumes from this console reach it" \
        in str(stand_in.note)


def test_the_port_taken_before_the_build_is_not_named_and_the_console_opens(
        tmp_path: Path, usual_port: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Never build against whatever listens on the usual port: the provider takes one the
    system gives it, the bundle names that one, and so does the live case."""
    stand_in = Demo()
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", usual_port))
        squatter.listen()
        code = _run(monkeypatch, stand_in, "--open", "--live", str(tmp_path / "bundle"))
    assert code == 0
    assert stand_in.built_port not in (None, usual_port)
    assert stand_in.live_port == stand_in.built_port
    assert stand_in.answer is not None and stand_in.answer["identity"] == \
        stand_in.answer["expected"], stand_in.answer
    assert f"127.0.0.1:{stand_in.built_port}" in str(stand_in.note)
    assert f"port {usual_port} is taken" in capsys.readouterr().err
    # the console gets the kernel key the bundle was built with (R can replay), kept in a
    # private directory while it is open and gone after
    key = stand_in.built_key
    assert isinstance(key, Path) and stand_in.open_key == key and stand_in.key_dir_existed
    assert not key.parent.exists()
