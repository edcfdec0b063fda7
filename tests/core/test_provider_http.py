"""The provider speaks HTTP/1.1 correctly: raw sockets on 127.0.0.1, no client library
smoothing over what the server does on the wire."""

from __future__ import annotations

import hashlib
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

from codeai_tui.lab.provider import ProviderProcess

VALID = b'{"messages":[{"content":"hi","role":"user"}],"model":"m"}'


@pytest.fixture(scope="module")
def prov(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderProcess]:
    with ProviderProcess(tmp_path_factory.mktemp("http") / "receipts.jsonl") as p:
        yield p


def _receipts(prov: ProviderProcess) -> list[dict[str, object]]:
    assert prov.receipts is not None
    if not prov.receipts.exists():
        return []
    return [json.loads(line) for line in prov.receipts.read_text().splitlines()]


def _read_response(f: BinaryIO) -> tuple[int, dict[str, str], bytes]:
    status_line = f.readline()
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    headers: dict[str, str] = {}
    while (line := f.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = f.read(int(headers.get("content-length", "0")))
    return int(status_line.split()[1]), headers, body


def _post(path: str, body: bytes, extra: str = "") -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def _connect(prov: ProviderProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", prov.port), timeout=10)


def test_unknown_path_body_is_read_so_the_next_keep_alive_request_is_served(
    prov: ProviderProcess,
) -> None:
    before = len(_receipts(prov))
    junk = b'{"this body": "must not be read as the next request line"}'
    with _connect(prov) as sock, sock.makefile("rb") as f:
        sock.sendall(_post("/v1/nowhere", junk))
        status, headers, _ = _read_response(f)
        assert status == 404 and headers.get("connection", "").lower() != "close"
        sock.sendall(_post("/v1/chat/completions", VALID))  # same connection
        status, _, body = _read_response(f)
    assert status == 200, body
    receipts = _receipts(prov)[before:]
    assert [(r["bytes"], r["body_sha256"]) for r in receipts] == [
        (len(VALID), hashlib.sha256(VALID).hexdigest())
    ]


def test_chunked_request_body_gets_a_receipt_of_its_real_bytes(prov: ProviderProcess) -> None:
    before = len(_receipts(prov))
    first, second = VALID[:20], VALID[20:]
    head = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (first, second)) + b"0\r\n\r\n"
    with _connect(prov) as sock, sock.makefile("rb") as f:
        sock.sendall(head + chunks)
        status, _, body = _read_response(f)
    digest = hashlib.sha256(VALID).hexdigest()
    assert status == 200
    (receipt,) = _receipts(prov)[before:]
    assert (receipt["bytes"], receipt["body_sha256"]) == (len(VALID), digest)
    assert digest[:12] in json.loads(body)["choices"][0]["message"]["content"]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"messages":[]}', "model"),
        (b'{"messages":[],"model":""}', "model"),
        (b'{"model":"m"}', "messages"),
        (b"not json", "JSON"),
        (b'{"messages":[],"model":"m","stream":"yes"}', "stream"),
    ],
)
def test_invalid_request_is_400_and_still_has_its_receipt(
    prov: ProviderProcess, body: bytes, problem: str
) -> None:
    before = len(_receipts(prov))
    with _connect(prov) as sock, sock.makefile("rb") as f:
        sock.sendall(_post("/v1/chat/completions", body))
        status, _, answer = _read_response(f)
    assert status == 400
    assert problem in json.loads(answer)["error"]["message"]
    # received, so logged: the receipt is written before the request is looked at
    assert [r["body_sha256"] for r in _receipts(prov)[before:]] == [hashlib.sha256(body).hexdigest()]


def test_authorization_header_is_never_stored(prov: ProviderProcess, tmp_path: Path) -> None:
    before = len(_receipts(prov))
    with _connect(prov) as sock, sock.makefile("rb") as f:
        sock.sendall(_post("/v1/chat/completions", VALID,
                           "Authorization: Bearer sk-never-stored-0123456789\r\n"))
        assert _read_response(f)[0] == 200
    assert len(_receipts(prov)) == before + 1
    assert prov.receipts is not None and b"sk-never" not in prov.receipts.read_bytes()


def test_provider_cli_bad_truncation_is_one_line(tmp_path: Path) -> None:
    from tests.support import cli

    proc = cli("provider", "--port", "0", "--receipts", str(tmp_path / "r"), "--truncate-after", "-1")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "truncate" in proc.stderr


def test_many_malformed_requests_never_stall_the_provider(tmp_path: Path) -> None:
    """Each malformed request is reported on stderr; a test harness that never reads
    that pipe must not make the provider block once the pipe is full."""
    from codeai_tui.runtime.runner import send_request

    bad = b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
    with ProviderProcess(tmp_path / "r.jsonl") as prov:
        for _ in range(300):
            with _connect(prov) as sock:
                sock.sendall(bad)
                sock.shutdown(socket.SHUT_WR)
                sock.recv(100)
        answered = send_request(prov.base_url, VALID, "k", None, 10)
        assert answered.status == 200
        assert prov.stderr_tail and prov.stderr_tail[-1].startswith("provider: ")
        assert "Traceback" not in "\n".join(prov.stderr_tail)


@pytest.mark.parametrize(("status", "retry_after", "kind"), [
    (429, "2", "rate_limit_exceeded"),
    (503, "Wed, 21 Oct 2026 07:28:00 GMT", "overloaded"),
])
def test_scripted_failure_carries_retry_after_and_the_receipt_id(
    tmp_path: Path, status: int, retry_after: str, kind: str
) -> None:
    """`--fail-first 1 --fail-status S --retry-after V`: the first answer is S with
    `Retry-After: V` verbatim, the next one succeeds; every answer names its receipt."""
    with ProviderProcess(tmp_path / "r.jsonl", fail_first=1, fail_status=status,
                         retry_after=retry_after) as prov, _connect(prov) as sock, \
            sock.makefile("rb") as f:
        answers = []
        for _ in range(2):
            sock.sendall(_post("/v1/chat/completions", VALID))
            answers.append(_read_response(f))
        receipts = _receipts(prov)
    (first_status, first, body), (second_status, second, _) = answers
    assert (first_status, second_status) == (status, 200)
    assert first["retry-after"] == retry_after and "retry-after" not in second
    assert json.loads(body)["error"]["type"] == kind
    assert [first["x-request-id"], second["x-request-id"]] == [r["receipt_id"] for r in receipts]
    assert int(second["openai-processing-ms"]) >= 0


@pytest.mark.parametrize(("flag", "value"), [("--fail-status", "500"), ("--retry-after", "")])
def test_provider_cli_bad_failure_script_is_refused(tmp_path: Path, flag: str, value: str) -> None:
    from tests.support import cli

    proc = cli("provider", "--port", "0", "--receipts", str(tmp_path / "r"), flag, value)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()
