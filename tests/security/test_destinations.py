"""A destination is identified, not assumed.

A demo bundle's case.json names its provider under the bundle's own id
(`http://127.0.0.1:PORT/b/<bundle id>/c/<case>/v1`) and that id as the identity the
provider must answer. Before anything is written or sent, resume and next-attempt ask
`GET .../health` (no body, no credential): a port where nothing listens, or where another
bundle's provider does, refuses (exit 3, one line) with the ledger and every receipt log
untouched. The bundle-mode provider answers only its own bundle's id. The built-in
default destination (127.0.0.1:8768, where anyone on the machine may listen) gets no
credential unless the operator names the URL. A resume whose answer left the case's
receipt log where it was says so, as a warning.

Real processes throughout: the `codeai-tui` command, provider processes on 127.0.0.1 with
their own receipt logs, and the console driven by Textual's pilot.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import consoleprobe as probe
import pytest
from apphelpers import SIZE, frozen_clock, ready, wait_for

from codeai_tui.actions.resume import plan_resume
from codeai_tui.app import create_app
from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.ledger import LedgerReader, read_receipts
from tests.core.cases import STOPPED_AT, file_hashes, make_case
from tests.support import Capture, capture_server

CREDENTIAL = "sk-cred-7d2e4f9a1b3c"
CASE = "02_killed_after_manifest"
THIS_BUNDLE, OTHER_BUNDLE = "a1b2c3d4e5f60718", "f0e1d2c3b4a59687"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([sys.executable, "-m", "codeai_tui", *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})})


def demo_bundle(root: Path, bundle_id: str, port: int) -> Path:
    """A bundle as `codeai-tui demo` lays it out: bundle.json with its id, one case
    (call-1 at manifest_recorded, stopped long ago) whose case.json names the provider
    on `port` under the id, and the id as the identity to expect. Returns the case."""
    root.mkdir(parents=True)
    (root / "bundle.json").write_text(json.dumps({"format": "codeai.demo_bundle.v1",
                                                  "bundle_id": bundle_id}))
    case = make_case(root / CASE, "http://127.0.0.1:9/v1", recorded_at=STOPPED_AT)
    (case / "case.json").write_text(json.dumps({"provider": {
        "base_url": f"http://127.0.0.1:{port}/b/{bundle_id}/c/{CASE}/v1",
        "model": "synthetic-small", "api_key_env": "CODEAI_API_KEY",
        "identity": bundle_id}}))
    return case


def kinds(case: Path) -> list[str]:
    with LedgerReader(case) as reader:
        return [e.kind for e in reader.events()]


def receipt_logs(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("receipts.jsonl")]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port held (bound, never listening) for the test: a connection to it is
    refused, as to a provider that is not running, and nobody else can take it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


# ---- the provider answers only its own bundle


def _get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _post(url: str) -> int:
    body = json.dumps({"model": "m", "messages": []}).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_a_bundle_mode_provider_answers_only_its_own_bundle(tmp_path: Path) -> None:
    """It reads its id from bundle.json: health answers the identity for its own cases,
    and 404 (nothing logged) for another bundle's id or for no id at all."""
    demo_bundle(tmp_path / "bundle", THIS_BUNDLE, 9)
    with ProviderProcess(receipts_root=tmp_path / "bundle") as provider:
        root = f"http://127.0.0.1:{provider.port}"
        assert _get(f"{root}/b/{THIS_BUNDLE}/c/{CASE}/v1/health") == (
            200, {"status": "ok", "identity": THIS_BUNDLE, "case": CASE})
        for other in (f"/b/{OTHER_BUNDLE}/c/{CASE}/v1", f"/c/{CASE}/v1",
                      f"/b/{THIS_BUNDLE}/c/no_such_case/v1"):
            assert _get(f"{root}{other}/health")[0] == 404, other
            assert _post(f"{root}{other}/chat/completions") == 404, other
        assert receipt_logs(tmp_path) == []
        assert _post(f"{root}/b/{THIS_BUNDLE}/c/{CASE}/v1/chat/completions") == 200
        assert len(read_receipts(tmp_path / "bundle" / CASE).receipts) == 1


# ---- resume and next-attempt ask before they write


def test_another_bundles_provider_on_the_port_is_refused_and_nothing_is_sent(
        tmp_path: Path) -> None:
    """The scenario that resumed against whatever listened there: bundle B's provider
    holds the port bundle A's case.json names."""
    demo_bundle(tmp_path / "B", OTHER_BUNDLE, 9)
    with ProviderProcess(receipts_root=tmp_path / "B") as other:
        case = demo_bundle(tmp_path / "A", THIS_BUNDLE, other.port)
        before, events = file_hashes(case), kinds(case)
        proc = cli("resume", str(case), "call-1", "--yes")
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "is not this case's provider (HTTP 404" in proc.stderr, proc.stderr
    assert "nothing was sent" in proc.stderr and proc.stdout == ""
    assert file_hashes(case) == before and kinds(case) == events
    assert receipt_logs(tmp_path) == []  # neither bundle's provider logged anything


@pytest.mark.parametrize("command", [["resume", "{case}", "call-1", "--yes"],
                                     ["next-attempt", "{case}", "call-1", "--yes"]])
def test_a_reopened_bundle_whose_provider_is_not_running_says_so_and_sends_nothing(
        tmp_path: Path, silent_port: int, command: list[str]) -> None:
    case = demo_bundle(tmp_path / "A", THIS_BUNDLE, silent_port)
    if command[0] == "next-attempt":  # a call whose first attempt was never sent
        _reconciled_not_received(case)
    before, events = file_hashes(case), kinds(case)
    proc = cli(*[part.format(case=case) for part in command])
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "no provider answers at" in proc.stderr and "is not running" in proc.stderr
    assert (f"codeai-tui provider --receipts-root {case.parent.resolve()} --port "
            f"{silent_port}") in proc.stderr
    assert file_hashes(case) == before and kinds(case) == events


def _reconciled_not_received(case: Path) -> None:
    """call-1's attempt started, never sent, reconciled not_received: next-attempt is
    the next operation (the demo's case 15)."""
    from ledgerfactory import append_to_case

    with LedgerReader(case) as reader:
        last = max(e.seq for e in reader.events())
        manifest = next(e for e in reader.events() if e.kind == "call.manifest")
    sha = manifest.payload["request_sha256"]
    append_to_case(case, [
        {"seq": last + 1, "kind": "attempt.started", "task_id": "task-1", "call_id": "call-1",
         "attempt_id": "call-1-a1", "recorded_at": STOPPED_AT,
         "payload": {"attempt_no": 1, "request_sha256": sha}},
        {"seq": last + 2, "kind": "attempt.reconciled", "task_id": "task-1",
         "call_id": "call-1", "attempt_id": "call-1-a1", "recorded_at": STOPPED_AT,
         "payload": {"finding": "not_received", "evidence": [], "note": "test"}},
    ])


def test_the_bundles_own_provider_is_reached_under_its_id(tmp_path: Path) -> None:
    """`codeai-tui provider --receipts-root BUNDLE` for a bundle reopened later: the id
    comes from its bundle.json; the resume goes through and is logged in the case."""
    case = demo_bundle(tmp_path / "A", THIS_BUNDLE, 9)
    with ProviderProcess(receipts_root=tmp_path / "A") as own:
        config = json.loads((case / "case.json").read_text())
        config["provider"]["base_url"] = (f"http://127.0.0.1:{own.port}/b/{THIS_BUNDLE}/c/"
                                          f"{CASE}/v1")
        (case / "case.json").write_text(json.dumps(config))
        proc = cli("resume", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert "receipts 0 -> 1" in proc.stdout and "warning" not in proc.stderr
    assert len(read_receipts(case).receipts) == 1


# ---- the console: the same refusal, before any dialog


async def test_the_console_asks_nobody_while_showing_and_refuses_a_resume_whose_provider_is_not_running(
        tmp_path: Path) -> None:
    """Opening the case (its drift check plans every resumable call) connects to nothing;
    `r` asks the destination, finds no provider, and says so without a dialog."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    case = demo_bundle(tmp_path / "A", THIS_BUNDLE, int(listener.getsockname()[1]))
    before = file_hashes(case)
    app = create_app(case, clock=frozen_clock)
    try:
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await ready(pilot)
            await probe.select_call(pilot, "call-1")
            await wait_for(pilot, lambda: "call-1" in app.main.session.drift, what="the drift check")
            with pytest.raises(BlockingIOError):
                listener.accept()  # nobody connected while the console showed the case
            listener.close()  # now nothing listens there: the provider is not running
            await pilot.press("r")
            await wait_for(pilot, lambda: any("is not running" in n for n in probe.notes(app)),
                           what="the refusal")
            assert not probe.dialog_open(app)
            said = next(n for n in probe.notes(app) if "is not running" in n)
    finally:
        listener.close()
    assert "refused" in said and "nothing was sent" in said, said
    assert file_hashes(case) == before


# ---- receipts that did not move


@pytest.fixture
def capture() -> Iterator[Capture]:
    with capture_server() as cap:
        yield cap


def _case_answered_elsewhere(tmp_path: Path, capture: Capture) -> Path:
    """A case whose provider keeps its receipt log (one receipt already), pointed at a
    server that answers without logging to it: another bundle's provider, as an older
    bundle without an identity met it."""
    case = make_case(tmp_path / "case", capture.url, recorded_at=STOPPED_AT)
    (case / "provider").mkdir()
    (case / "provider" / "receipts.jsonl").write_text(json.dumps({
        "receipt_id": "r0", "received_at": "2026-09-13T11:00:00Z", "idempotency_key": "k0",
        "body_sha256": "0" * 64, "bytes": 1}) + "\n")
    (case / "case.json").write_text(json.dumps({"provider": {
        "base_url": capture.url, "model": "synthetic-small"}}))
    return case


def test_a_resume_whose_receipts_did_not_move_warns(tmp_path: Path, capture: Capture) -> None:
    case = _case_answered_elsewhere(tmp_path, capture)
    proc = cli("resume", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert len(capture.received) == 1 and "receipts 1 -> 1" in proc.stdout
    assert ("codeai-tui: warning: provider receipts 1 -> 1: this case's receipt log did not "
            "grow, so the provider that keeps it did not receive this request") in proc.stderr


async def test_the_console_warns_when_receipts_did_not_move(tmp_path: Path,
                                                            capture: Capture) -> None:
    case = _case_answered_elsewhere(tmp_path, capture)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await probe.select_call(pilot, "call-1")
        await probe.open_resume_dialog(pilot)
        await pilot.press("y")
        await probe.resumed(pilot, calls=2)
        note = app.main.note.text
        warned = [str(t.render()) for t in app.screen.query("Toast.-warning")]
    assert "\u26a0 provider receipts 1 -> 1: this case's receipt log did not grow" in note
    assert any("did not grow" in text for text in warned), warned


# ---- the built-in default destination


def test_the_built_in_default_url_is_not_trusted_with_a_credential(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No case.json, no --base-url: the request would go to 127.0.0.1:8768, where any
    local user may listen. CODEAI_API_KEY is set, and not sent there unless confirmed."""
    monkeypatch.setenv("CODEAI_API_KEY", CREDENTIAL)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("CODEAI_TUI_CONFIG", raising=False)
    case = make_case(tmp_path / "case", "http://127.0.0.1:9/v1", recorded_at=STOPPED_AT)
    (case / "case.json").unlink()
    dest = plan_resume(case, "call-1").destination
    assert (dest.base_url, dest.base_url_from) == ("http://127.0.0.1:8768/v1",
                                                   "built-in default")
    assert dest.credential_set and not dest.trusted and dest.needs_credential_confirmation
    assert "no credential will be sent: the URL is not named by you" in \
        dest.credential_line(send=dest.trusted)
    # named by the operator, on the command line or as a trusted destination: sent
    assert plan_resume(case, "call-1", base_url="http://127.0.0.1:8768/v1").destination.trusted
    cfg = tmp_path / "config" / "codeai-tui" / "config.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(json.dumps({"trusted_destinations": [
        {"base_url": "http://127.0.0.1:8768/v1", "api_key_env": "CODEAI_API_KEY"}]}))
    assert plan_resume(case, "call-1").destination.trusted


def test_whatever_listens_on_the_default_port_gets_no_credential(tmp_path: Path) -> None:
    """The attack itself: a listener on 127.0.0.1:8768 and `resume --yes` on a case
    without case.json. (Needs the port: where something else holds it, the check above
    says the same from the plan.)"""
    try:
        server = capture_server(8768)
        cap = server.__enter__()
    except OSError:
        pytest.skip("127.0.0.1:8768 is in use on this machine")
    try:
        case = make_case(tmp_path / "case", "http://127.0.0.1:9/v1", recorded_at=STOPPED_AT)
        (case / "case.json").unlink()
        proc = cli("resume", str(case), "call-1", "--yes",
                   env={"CODEAI_API_KEY": CREDENTIAL, "XDG_CONFIG_HOME": str(tmp_path / "c")})
    finally:
        server.__exit__(None, None, None)
    assert proc.returncode == 0, proc.stderr
    assert len(cap.received) == 1 and cap.auth() == [None]
    assert "no credential will be sent: the URL is not named by you" in proc.stderr
    assert CREDENTIAL not in proc.stderr + proc.stdout
