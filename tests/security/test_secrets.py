"""Secrets (issue 7 "Must hold"): a credential goes only to a destination the operator
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
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import consoleprobe as probe
import pytest
from apphelpers import SIZE, frozen_clock, ready
from ptyrun import run_on_pty

from codeai_tui.app import create_app
from codeai_tui.ledger import LedgerReader, read_receipts
from tests.core.cases import make_case

CREDENTIAL = "sk-cred-5f1e9a7b3c2d"  # in CODEAI_API_KEY, the credential variable
UNRELATED = "unrelated-db-pass-8c4e2a"  # in MY_DB_PASSWORD: must never leave the process
SECRET_VALUES = (CREDENTIAL.encode(), UNRELATED.encode())


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Capture:
    url: str
    received: list[Received] = field(default_factory=list)
    receipts: Path | None = None  # where the receipt line goes (the case's log)

    def auth(self) -> list[str | None]:
        return [r.headers.get("authorization") for r in self.received]

    def raw(self) -> bytes:
        return b"".join(json.dumps([r.path, r.headers]).encode() + r.body for r in self.received)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        cap: Capture = self.server.capture
        cap.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                                     body))
        if cap.receipts is not None:  # like the provider: durable before answering
            cap.receipts.parent.mkdir(exist_ok=True)
            with open(cap.receipts, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({
                    "receipt_id": f"cap-{uuid.uuid4().hex[:12]}",
                    "received_at": "2026-09-13T12:10:00Z",
                    "idempotency_key": self.headers.get("Idempotency-Key", ""),
                    "body_sha256": hashlib.sha256(body).hexdigest(), "bytes": len(body)}) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        answer = json.dumps({"id": "cap-1", "object": "chat.completion", "model": "m",
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": "ok"}}]
                             }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def capture() -> Iterator[Capture]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.capture = Capture(f"http://127.0.0.1:{server.server_address[1]}/v1")  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.capture  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


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
    case = make_case(tmp_path / "case", capture.url)
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
