"""A synthetic OpenAI-compatible provider that keeps its own receipt log.

It appends and fsyncs one receipt line per request it receives *before* it starts work,
does not deduplicate by `Idempotency-Key` (a key is a handle, not a guarantee), and can
hold a request (`latency`) so a test can kill the caller while the request is in flight.
It binds to loopback only. The Authorization header is never logged or stored.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MAX_BODY = 8 * 1024 * 1024


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ReceiptWriter:
    """Append-and-fsync, one line per received request, serialised by a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, key: str, body: bytes) -> dict[str, object]:
        receipt = {
            "receipt_id": f"rcpt-{uuid.uuid4().hex[:16]}",
            "received_at": _now(),
            "idempotency_key": key,
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "bytes": len(body),
        }
        line = (json.dumps(receipt, sort_keys=True) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        return receipt


_CASE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class ProviderServer(ThreadingHTTPServer):
    """One receipt log (`receipts`), or bundle mode (`receipts_root`): a request to
    `/c/<case>/v1/chat/completions` is logged in `<root>/<case>/provider/receipts.jsonl`,
    so one provider serves every case of a demo bundle with each case's own log."""

    daemon_threads = True

    def __init__(
        self,
        host: str,
        port: int,
        receipts: Path | None,
        latency: float = 0.0,
        fail_first: int = 0,
        receipts_root: Path | None = None,
    ) -> None:
        if host not in LOOPBACK_HOSTS:
            raise ValueError(f"the synthetic provider binds to loopback only, not {host!r}")
        if (receipts is None) == (receipts_root is None):
            raise ValueError("give exactly one of --receipts and --receipts-root")
        self.receipts = ReceiptWriter(receipts) if receipts is not None else None
        self.receipts_root = receipts_root
        self._case_writers: dict[str, ReceiptWriter] = {}
        self._writers_lock = threading.Lock()
        self.latency = latency
        self.fail_first = fail_first
        self._served = 0
        self._count_lock = threading.Lock()
        super().__init__((host, port), _Handler)

    def writer_for(self, path: str) -> tuple[ReceiptWriter | None, str]:
        """(receipt writer, endpoint path without the case prefix) for a request path."""
        if self.receipts is not None:
            return self.receipts, path
        parts = path.split("/", 3)  # "", "c", name, rest
        if len(parts) < 4 or parts[1] != "c" or not _CASE_NAME_RE.fullmatch(parts[2]):
            return None, path
        assert self.receipts_root is not None
        case_dir = self.receipts_root / parts[2]
        if not case_dir.is_dir() or parts[2] in (".", ".."):
            return None, path
        with self._writers_lock:
            writer = self._case_writers.get(parts[2])
            if writer is None:
                writer = self._case_writers[parts[2]] = ReceiptWriter(
                    case_dir / "provider" / "receipts.jsonl"
                )
        return writer, "/" + parts[3]

    def next_index(self) -> int:
        with self._count_lock:
            self._served += 1
            return self._served


class _Handler(BaseHTTPRequestHandler):
    server: ProviderServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # request lines only ever carry paths; headers (keys) are never logged

    def _send(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body, sort_keys=True).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/").endswith("/health"):
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:  # noqa: N802
        writer, endpoint = self.server.writer_for(self.path)
        if writer is None or not endpoint.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": "not found"}})
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self._send(400, {"error": {"message": "bad Content-Length"}})
            return
        body = self.rfile.read(length)
        key = self.headers.get("Idempotency-Key", "")
        # The receipt is durable before any work starts: it is the provider's own record
        # that the request reached it, whatever happens to the caller afterwards.
        receipt = writer.append(key, body)
        index = self.server.next_index()
        if self.server.latency > 0:
            time.sleep(self.server.latency)
        if index <= self.server.fail_first:
            self._send(503, {"error": {"message": "synthetic overload", "type": "overloaded"}})
            return
        try:
            request = json.loads(body)
            model = str(request.get("model", "synthetic-small"))
        except (ValueError, AttributeError):
            self._send(400, {"error": {"message": "body is not a JSON object"}})
            return
        digest = receipt["body_sha256"]
        self._send(
            200,
            {
                "id": f"chatcmpl-{str(digest)[:24]}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": f"synthetic review of request {str(digest)[:12]}: no unclear sentences",
                        },
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": len(body) // 4, "completion_tokens": 9},
            },
        )


def serve(
    host: str,
    port: int,
    receipts: Path | None,
    latency: float = 0.0,
    fail_first: int = 0,
    ready: threading.Event | None = None,
    announce: bool = True,
    receipts_root: Path | None = None,
) -> None:
    """Run until interrupted. Prints `listening on http://HOST:PORT/v1` once bound."""
    server = ProviderServer(host, port, receipts, latency, fail_first, receipts_root)
    if announce:
        print(f"listening on http://{host}:{server.server_address[1]}/v1", flush=True)
        if receipts_root is not None:
            print(f"bundle mode: POST /c/<case>/v1/chat/completions logs to "
                  f"{receipts_root}/<case>/provider/receipts.jsonl", flush=True)
    if ready is not None:
        ready.set()
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()


class ProviderProcess:
    """The provider in its own OS process (for the demo harness and tests).

    `with ProviderProcess(receipts) as p: p.base_url` — waits for the bound port with a
    timeout and kills the process on exit.
    """

    def __init__(
        self,
        receipts: Path | None = None,
        *,
        latency: float = 0.0,
        fail_first: int = 0,
        port: int = 0,
        receipts_root: Path | None = None,
    ) -> None:
        self.receipts = Path(receipts) if receipts is not None else None
        self.receipts_root = Path(receipts_root) if receipts_root is not None else None
        self.latency = latency
        self.fail_first = fail_first
        self.port = port
        self.proc: object | None = None
        self.base_url = ""

    def start(self, timeout: float = 15.0) -> ProviderProcess:
        import subprocess
        import sys

        cmd = [
            sys.executable, "-m", "codeai_tui", "provider", "--port", str(self.port),
            "--latency", str(self.latency), "--fail-first", str(self.fail_first),
        ]
        if self.receipts is not None:
            cmd += ["--receipts", str(self.receipts)]
        if self.receipts_root is not None:
            cmd += ["--receipts-root", str(self.receipts_root)]
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True,
        )
        self.proc = proc
        line = _readline_with_timeout(proc, timeout)
        if not line.startswith("listening on "):
            err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
            self.stop()
            raise RuntimeError(f"provider did not start: {line.strip() or err.strip()}")
        self.base_url = line.split("listening on ", 1)[1].strip()  # http://127.0.0.1:PORT/v1
        self.port = int(self.base_url.rsplit(":", 1)[1].split("/", 1)[0])
        return self

    def stop(self) -> None:
        import subprocess

        proc = self.proc
        if isinstance(proc, subprocess.Popen) and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if isinstance(proc, subprocess.Popen):
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> ProviderProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _readline_with_timeout(proc: object, timeout: float) -> str:
    import selectors
    import subprocess

    assert isinstance(proc, subprocess.Popen) and proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            return ""
        return proc.stdout.readline()
    finally:
        sel.close()
