"""Secrets: a credential goes only to a destination the operator
trusts or confirmed; an unrelated variable goes nowhere.

Recognisable values sit in the credential variable and in an unrelated one. Resume runs
through the CLI (a subprocess, `--yes` and on a pty) and through the console (select the
call, `r`, confirm), against a capture server on 127.0.0.1 that records every header and
body and writes the provider's receipt line. Then everything is searched: what the server
received, the ledger, artifacts and receipts (every file under the test's directory, which
also holds HOME), the CLI's output and the terminal's bytes, the console's screenshots.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import consoleprobe as probe
import pytest
from apphelpers import SIZE, frozen_clock, ready
from ptyrun import run_on_pty

from codeai_tui.app import create_app
from codeai_tui.ledger import LedgerReader, read_receipts
from tests.core.cases import STOPPED_AT, make_case
from tests.support import Capture, capture_server

CREDENTIAL = "sk-cred-5f1e9a7b3c2d"  # in CODEAI_API_KEY, the credential variable
UNRELATED = "unrelated-db-pass-8c4e2a"  # in MY_DB_PASSWORD: must never leave the process
SECRET_VALUES = (CREDENTIAL.encode(), UNRELATED.encode())


@pytest.fixture
def capture() -> Iterator[Capture]:
    with capture_server() as cap:
        yield cap


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The secrets in the environment; HOME and the operator config under tmp_path."""
    home = tmp_path / "home"
    home.mkdir()
    values = {"CODEAI_API_KEY": CREDENTIAL, "MY_DB_PASSWORD": UNRELATED, "HOME": str(home),
              "XDG_CONFIG_HOME": str(home / ".config"), "TEXTUAL_ANIMATIONS": "none"}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("CODEAI_TUI_CONFIG", raising=False)
    return values


def build(tmp_path: Path, capture: Capture, *, url: str, api_key_env: str) -> Path:
    """call-1 at manifest_recorded; case.json names `url` and `api_key_env`."""
    case = make_case(tmp_path / "case", capture.url, recorded_at=STOPPED_AT)
    (case / "case.json").write_text(json.dumps({"provider": {
        "base_url": url, "model": "synthetic-small", "api_key_env": api_key_env}}))
    capture.receipts = case / "provider" / "receipts.jsonl"
    return case


def trust(env: dict[str, str], url: str, api_key_env: str) -> None:
    cfg = Path(env["XDG_CONFIG_HOME"]) / "codeai-tui" / "config.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(json.dumps({"trusted_destinations": [
        {"base_url": url, "api_key_env": api_key_env}]}))


def on_disk(root: Path) -> bytes:
    """Every regular file under `root`: ledger, -wal, artifacts, receipts, HOME, logs."""
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*"))
                    if p.is_file() and not p.is_symlink())


def assert_one_request_as_recorded(case: Path, capture: Capture) -> None:
    """The server got one request: the bytes attempt.started names, logged as a receipt."""
    assert len(capture.received) == 1, capture.received
    sent = hashlib.sha256(capture.received[0].body).hexdigest()
    with LedgerReader(case) as reader:
        started = [e.payload["request_sha256"] for e in reader.events()
                   if e.kind == "attempt.started" and e.payload]
    assert started == [sent]
    assert [r.body_sha256 for r in read_receipts(case).receipts] == [sent]


def assert_secrets(tmp_path: Path, capture: Capture, shown: bytes, *, credential_sent: bool
                   ) -> None:
    """UNRELATED nowhere; CREDENTIAL only in the Authorization header, and only if sent."""
    assert capture.auth() == [f"Bearer {CREDENTIAL}" if credential_sent else None]
    bodies = b"".join(r.body for r in capture.received)
    assert UNRELATED.encode() not in capture.raw()
    assert CREDENTIAL.encode() not in bodies
    everything = on_disk(tmp_path) + shown
    for value in SECRET_VALUES:
        assert value not in everything, f"{value!r} was written or shown"


# ------------------------------------------------------------------------------ CLI


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "codeai_tui", *args], capture_output=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(("name", "case_env", "flags", "trusted_pair", "sent"), [
    # case.json names the URL: --yes alone never sends the credential there
    ("case_url_yes", "CODEAI_API_KEY", ["--yes"], None, False),
    # case.json names an unrelated variable: its value goes nowhere
    ("case_names_unrelated_var", "MY_DB_PASSWORD", ["--yes"], None, False),
    # the operator names both halves on the command line
    ("command_line", "MY_DB_PASSWORD", ["--yes", "--base-url", "{url}", "--api-key-env",
                                        "CODEAI_API_KEY"], None, True),
    # the operator's own config outside the case vouches for case.json's pair
    ("operator_config", "CODEAI_API_KEY", ["--yes"], "CODEAI_API_KEY", True),
])
def test_cli_resume(tmp_path: Path, capture: Capture, env: dict[str, str], name: str,
                    case_env: str, flags: list[str], trusted_pair: str | None,
                    sent: bool) -> None:
    case = build(tmp_path, capture, url=capture.url, api_key_env=case_env)
    if trusted_pair:
        trust(env, capture.url, trusted_pair)
    proc = cli("resume", str(case), "call-1", *[f.format(url=capture.url) for f in flags])
    assert proc.returncode == 0, proc.stderr
    assert_one_request_as_recorded(case, capture)
    assert_secrets(tmp_path, capture, proc.stdout + proc.stderr, credential_sent=sent)


@pytest.mark.parametrize(("answer", "sent"), [(b"y\n", True), (b"n\n", False)])
def test_cli_confirmation_on_a_pty_decides_the_credential(
    tmp_path: Path, capture: Capture, env: dict[str, str], answer: bytes, sent: bool
) -> None:
    """case.json names the URL: the prompt shows URL and variable, the operator decides."""
    case = build(tmp_path, capture, url=capture.url, api_key_env="CODEAI_API_KEY")
    rc, screen = run_on_pty(["resume", str(case), "call-1"], timeout=60, keys=[
        (b"Resume this call? [y/N]", b"y\n"), (b"Send the value of", answer)])
    assert rc == 0, screen
    assert capture.url.encode() in screen and b"CODEAI_API_KEY" in screen
    assert_one_request_as_recorded(case, capture)
    assert_secrets(tmp_path, capture, screen, credential_sent=sent)


# ------------------------------------------------------------------------------ console


@pytest.mark.parametrize(("name", "case_env", "operator", "sent"), [
    ("case_names_unrelated_var", "MY_DB_PASSWORD", {}, False),
    ("case_url_credential_var", "CODEAI_API_KEY", {}, False),
    ("operator_flags", "MY_DB_PASSWORD", {"api_key_env": "CODEAI_API_KEY", "base_url": "{url}"},
     True),
])
async def test_console_resume(tmp_path: Path, capture: Capture, env: dict[str, str], name: str,
                              case_env: str, operator: dict[str, str], sent: bool) -> None:
    case = build(tmp_path, capture, url=capture.url, api_key_env=case_env)
    kwargs = {k: v.format(url=capture.url) for k, v in operator.items()}
    app = create_app(case, clock=frozen_clock, **kwargs)
    shots: list[str] = []
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await probe.select_call(pilot, "call-1")
        shown = await probe.open_resume_dialog(pilot)
        shots.append(app.export_screenshot())
        assert capture.url in shown  # the dialog shows where the request goes, and
        assert ("the value of CODEAI_API_KEY is sent as Authorization: Bearer" if sent
                else "no credential will be sent") in shown  # what happens to the credential
        await pilot.press("y")
        await probe.resumed(pilot, calls=2)
        shots.append(app.export_screenshot())
        notes = "\n".join(probe.notes(app))
    assert_one_request_as_recorded(case, capture)
    assert_secrets(tmp_path, capture, "\n".join(shots + [notes]).encode(), credential_sent=sent)
