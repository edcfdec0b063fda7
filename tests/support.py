"""Helpers shared by the test packages (import as `tests.support`)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
CONFORMANCE = TESTS / "conformance"

# Hypothesis examples of the costly properties (each example projects a drawn ledger at
# every as_of, or forks a helper): the default suite must stay under 10 minutes on two
# cores. A thorough run multiplies them: CODEAI_TEST_EXAMPLES=4 (README, "Two commands").
EXAMPLES_SCALE = float(os.environ.get("CODEAI_TEST_EXAMPLES", "1"))


def examples(n: int) -> int:
    """`n` Hypothesis examples, scaled for a thorough run."""
    return max(1, round(n * EXAMPLES_SCALE))


def load_vectors() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(CONFORMANCE.glob("*.json"))]


def cli(*args: str, input: str | None = None, timeout: float = 60,
        env_extra: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command line in a separate process."""
    return subprocess.run(
        [sys.executable, "-m", "codeai_tui", *args],
        capture_output=True, text=True, timeout=timeout, input=input, cwd=cwd,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env_extra or {})},
    )


def shared_demo_bundle(basetemp: Path) -> Path:
    """The demo bundle, built once for the whole run by the real command (`codeai-tui
    demo`, the kernel key kept beside it in `keys/`, what it printed in `demo.stderr`):
    both test processes share it (a build is ~25 s of CPU; the suite built it three
    times). Read it, or copy it to change it. `basetemp`: the run's
    `tmp_path_factory.getbasetemp()`."""
    root = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    home = root / "shared-demo"
    home.mkdir(exist_ok=True)
    out = home / "bundle"
    with open(home / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other process waits for the one build
        if not (home / "built").exists():
            if out.exists():
                shutil.rmtree(out)  # a build that failed half way
            done = cli("demo", str(out), "--kernel-key", str(home / "keys" / "kernel.key"),
                       timeout=180)
            assert done.returncode == 0, done.stderr[-3000:]
            assert done.stdout.strip() == str(out.resolve())
            (home / "demo.stderr").write_text(done.stderr)
            (home / "built").write_text("")
    return out


# ---- a capture server: an OpenAI-compatible endpoint on 127.0.0.1 that records every
# request (path, headers, body) and answers one chat.completion; with `receipts` set it
# also appends a provider-style receipt line, durable before answering


@dataclass
class Received:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes


@dataclass
class Capture:
    url: str
    received: list[Received] = field(default_factory=list)
    receipts: Path | None = None  # where the receipt line goes (the case's log)

    @property
    def requests(self) -> list[tuple[dict[str, str], bytes]]:
        return [(r.headers, r.body) for r in self.received]

    def bodies_sha(self) -> list[str]:
        return [hashlib.sha256(r.body).hexdigest() for r in self.received]

    def auth(self) -> list[str | None]:
        return [r.headers.get("authorization") for r in self.received]

    def raw(self) -> bytes:
        return b"".join(json.dumps([r.path, r.headers]).encode() + r.body for r in self.received)


class _CaptureHandler(BaseHTTPRequestHandler):
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


@contextmanager
def capture_server(port: int = 0) -> Iterator[Capture]:
    """Serve on 127.0.0.1 (`port`, else a free one) until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _CaptureHandler)
    server.capture = Capture(f"http://127.0.0.1:{server.server_address[1]}/v1")  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.capture  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def held_by(make: Callable[[], Any]) -> tuple[Any, int]:
    """What `make()` returns and the bytes still allocated for it once it returned
    (traced, after a collection). What was there before is frozen meanwhile (it was
    not traced, so freeing it would not count): collecting it for every measure took a
    minute of a test in a process that had run many others."""
    import gc
    import tracemalloc

    gc.freeze()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        gc.collect()
        return made, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.unfreeze()
