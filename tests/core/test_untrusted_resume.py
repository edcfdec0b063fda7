"""A case directory is untrusted: resume must never send bytes it did not verify, nor a
credential to a destination only the case vouches for ."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeai_tui.ledger import ArtifactStore, LedgerReader
from tests.core.cases import STOPPED_AT, file_hashes, make_case
from tests.core.test_resume_prompt import _run_on_pty
from tests.support import Capture, capture_server, cli

SECRET = "sk-trusted-7f3a9c1e"
UNRELATED = "db-password-b81d44aa"


@pytest.fixture
def capture() -> Iterator[tuple[str, Capture]]:
    """A server on 127.0.0.1 that records every header and body it is sent."""
    with capture_server() as cap:
        yield cap.url, cap


@pytest.fixture
def secrets_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CODEAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_DB_PASSWORD", UNRELATED)
    # no operator config from the developer's $HOME
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("CODEAI_TUI_CONFIG", raising=False)


def _point_case_at(case: Path, base_url: str, api_key_env: str) -> None:
    cfg = json.loads((case / "case.json").read_text())
    cfg["provider"]["base_url"] = base_url
    cfg["provider"]["api_key_env"] = api_key_env
    (case / "case.json").write_text(json.dumps(cfg))


def _everything_in(case: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(case.rglob("*")) if p.is_file())


def _request_sha(case: Path) -> str:
    with LedgerReader(case) as reader:
        manifest = next(e for e in reader.events() if e.kind == "call.manifest")
    assert manifest.payload is not None
    return str(manifest.payload["request_sha256"])


# ---------------------------------------------------------------- finding 1: artifacts


@pytest.mark.parametrize("tamper", ["symlink", "other-bytes"])
def test_resume_refuses_a_replaced_request_artifact_and_sends_nothing(
    tmp_path: Path, capture: tuple[str, Capture], tamper: str
) -> None:
    url, captured = capture
    case = make_case(tmp_path / "c", url)
    _point_case_at(case, url, "CODEAI_API_KEY")
    sha = _request_sha(case)
    path = ArtifactStore(case).path_for(sha)
    path.unlink()
    outside = tmp_path / "private.txt"
    outside.write_bytes(b"a local file that must never leave this machine")
    if tamper == "symlink":
        path.symlink_to(outside)
    else:
        path.write_bytes(outside.read_bytes())
    before = file_hashes(case)
    proc = cli("resume", str(case), "call-1", "--yes", "--base-url", url)
    assert proc.returncode == 3, proc.stderr
    assert "altered" in proc.stderr and "Traceback" not in proc.stderr
    assert captured.requests == []
    assert file_hashes(case) == before
    assert path.is_symlink() is (tamper == "symlink")  # the tampered file is left for review


def test_every_request_sent_hashes_to_what_attempt_started_records(
    tmp_path: Path, capture: tuple[str, Capture]
) -> None:
    url, captured = capture
    case = make_case(tmp_path / "c", url)
    proc = cli("resume", str(case), "call-1", "--yes", "--base-url", url)
    assert proc.returncode == 0, proc.stderr
    with LedgerReader(case) as reader:
        started = [e.payload["request_sha256"] for e in reader.events()
                   if e.kind == "attempt.started" and e.payload]
    assert len(captured.requests) == 1
    assert captured.bodies_sha() == started == [_request_sha(case)]


def test_a_replaced_rendered_context_is_drift_not_content(
    tmp_path: Path, capture: tuple[str, Capture]
) -> None:
    url, captured = capture
    case = make_case(tmp_path / "c", url)
    store = ArtifactStore(case)
    with LedgerReader(case) as reader:
        done = next(e for e in reader.events() if e.kind == "context.compilation_completed")
    rendered = store.path_for(done.payload["rendered_sha256"])  # type: ignore[index]
    rendered.unlink()
    rendered.symlink_to("/etc/hostname")
    proc = cli("resume", str(case), "call-1", "--yes", "--base-url", url)
    assert proc.returncode == 3
    assert "drift" in proc.stderr and "not a regular file" in proc.stderr
    assert captured.requests == []


def test_artifact_reads_verify_and_never_block(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    good = store.put(b"payload bytes")
    assert store.get(good) == b"payload bytes"
    outside = tmp_path / "secret"
    outside.write_bytes(b"x")
    linked = hashlib.sha256(b"x").hexdigest()
    store.path_for(linked).parent.mkdir(parents=True)
    store.path_for(linked).symlink_to(outside)  # right bytes, but through a link
    fifo = hashlib.sha256(b"fifo").hexdigest()
    store.path_for(fifo).parent.mkdir(parents=True)
    os.mkfifo(store.path_for(fifo))
    wrong = hashlib.sha256(b"expected").hexdigest()
    store.path_for(wrong).parent.mkdir(parents=True)
    store.path_for(wrong).write_bytes(b"something else")
    assert [store.read(s).status.value for s in (linked, fifo, wrong, "../../etc/passwd")] == [
        "not_regular", "not_regular", "hash_mismatch", "bad_name"]
    assert store.get(linked) is None and store.get(fifo) is None and store.get(wrong) is None
    # put never writes through a link or trusts what is there
    with pytest.raises(Exception, match="refusing"):
        store.put(b"x")
    assert outside.read_bytes() == b"x"


def test_put_refuses_a_symlinked_store_directory(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    case = tmp_path / "case"
    case.mkdir()
    (case / "artifacts").symlink_to(elsewhere)
    store = ArtifactStore(case)
    with pytest.raises(Exception, match="symlink"):
        store.put(b"bytes")
    assert list(elsewhere.rglob("*")) == []


# ---------------------------------------------------------------- finding 2: credentials


@pytest.mark.usefixtures("secrets_env")
def test_yes_never_sends_a_credential_where_only_case_json_points(
    tmp_path: Path, capture: tuple[str, Capture]
) -> None:
    url, captured = capture
    case = make_case(tmp_path / "c", url)
    _point_case_at(case, url, "MY_DB_PASSWORD")
    proc = cli("resume", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert "no credential will be sent" in proc.stderr and url in proc.stderr
    assert len(captured.requests) == 1
    headers, body = captured.requests[0]
    assert "authorization" not in headers
    assert UNRELATED.encode() not in json.dumps(headers).encode() + body
    assert UNRELATED.encode() not in _everything_in(case)
    assert UNRELATED not in proc.stderr + proc.stdout


@pytest.mark.usefixtures("secrets_env")
def test_a_destination_from_the_command_line_gets_its_credential(
    tmp_path: Path, capture: tuple[str, Capture]
) -> None:
    url, captured = capture
    case = make_case(tmp_path / "c", url)
    _point_case_at(case, "http://127.0.0.1:9/v1", "MY_DB_PASSWORD")  # ignored: overridden
    proc = cli("resume", str(case), "call-1", "--yes", "--base-url", url,
               "--api-key-env", "CODEAI_API_KEY")
    assert proc.returncode == 0, proc.stderr
    headers, body = captured.requests[0]
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert UNRELATED.encode() not in json.dumps(headers).encode() + body
    everything = _everything_in(case)
    assert SECRET.encode() not in everything and UNRELATED.encode() not in everything
    assert SECRET not in proc.stderr + proc.stdout


@pytest.mark.usefixtures("secrets_env")
def test_the_operator_config_outside_the_case_can_vouch_for_a_destination(
    tmp_path: Path, capture: tuple[str, Capture]
) -> None:
    url, captured = capture
    case = make_case(tmp_path / "c", url)
    _point_case_at(case, url, "CODEAI_API_KEY")
    cfg = tmp_path / "xdg" / "codeai-tui" / "config.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(json.dumps({"trusted_destinations": [
        {"base_url": url + "/", "api_key_env": "CODEAI_API_KEY"}]}))
    proc = cli("resume", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert captured.requests[0][0]["authorization"] == f"Bearer {SECRET}"


@pytest.mark.usefixtures("secrets_env")
def test_an_operator_config_inside_the_case_is_refused(tmp_path: Path,
                                                       capture: tuple[str, Capture]) -> None:
    url, captured = capture
    case = make_case(tmp_path / "c", url)
    _point_case_at(case, url, "MY_DB_PASSWORD")
    (case / "trust.json").write_text(json.dumps({"trusted_destinations": [
        {"base_url": url, "api_key_env": "MY_DB_PASSWORD"}]}))
    before = file_hashes(case)
    proc = cli("resume", str(case), "call-1", "--yes",
               env_extra={"CODEAI_TUI_CONFIG": str(case / "trust.json")})
    assert proc.returncode == 2 and "inside the case directory" in proc.stderr
    assert captured.requests == [] and file_hashes(case) == before


@pytest.mark.usefixtures("secrets_env")
@pytest.mark.parametrize(("answers", "sent"), [("y\nn\n", False), ("y\ny\n", True)])
def test_the_prompt_shows_url_and_variable_and_asks_before_sending_a_credential(
    tmp_path: Path, capture: tuple[str, Capture], answers: str, sent: bool
) -> None:
    url, captured = capture
    # (stopped long ago: a call that moved seconds ago asks for its id, not y)
    case = make_case(tmp_path / "c", url, recorded_at=STOPPED_AT)
    _point_case_at(case, url, "MY_DB_PASSWORD")
    code, screen = _run_on_pty(["resume", str(case), "call-1"], answers)
    assert code == 0, screen
    assert url in screen and "MY_DB_PASSWORD" in screen and "from case.json" in screen
    assert f"Send the value of MY_DB_PASSWORD to {url}?" in screen
    headers = captured.requests[0][0]
    assert ("authorization" in headers) is sent
    assert UNRELATED not in screen


@pytest.mark.parametrize("bad", ["ftp://127.0.0.1/v1", "127.0.0.1:8768/v1", "http:///v1",
                                 "http://exa mple/v1"])
def test_an_unusable_base_url_is_bad_input_and_writes_nothing(tmp_path: Path, bad: str) -> None:
    case = make_case(tmp_path / "c", "http://127.0.0.1:9/v1")
    before = file_hashes(case)
    proc = cli("resume", str(case), "call-1", "--yes", "--base-url", bad)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "base URL" in proc.stderr
    assert file_hashes(case) == before


def test_a_write_cleans_temp_files_left_by_a_killed_writer(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = ArtifactStore(tmp_path)
    sha = store.put(b"first")
    folder = store.path_for(sha).parent
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = folder / f".{sha}.{dead}.tmp"
    stale.write_bytes(b"half a write by a process that is gone")
    live = folder / f".{'0' * 64}.{os.getpid()}.tmp"
    live.write_bytes(b"a write in progress by a live process")
    store.path_for(sha).unlink()
    store.put(b"first")  # the next write into that directory
    assert not stale.exists() and live.exists()
    assert store.get(sha) == b"first"
