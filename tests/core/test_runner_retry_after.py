"""Retry-After is honoured within a bound, recorded, and never held under a write lock;
the observation keeps the headers that matter and never a credential or a cookie."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.ledger import CaseConfig, LedgerReader, LedgerWriter, ProviderConfig, read_receipts
from codeai_tui.runtime.request_bytes import intent_for
from codeai_tui.runtime.retry_after import kept_headers, parse_retry_after
from codeai_tui.runtime.runner import CallRunner
from tests.core.cases import make_case
from tests.support import cli

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def _run(case: Path, base_url: str, *, sleep: Any = time.sleep, max_retry_wait: float = 30.0,
         credential: str | None = None) -> tuple[str, CallRunner]:
    config = CaseConfig(ProviderConfig(base_url=base_url))
    with LedgerWriter.create(case) as writer:
        runner = CallRunner(case, writer, config, timeout=10.0, sleep=sleep,
                            max_retry_wait=max_retry_wait, credential=credential)
        writer.append("task.created", "t1", {"title": "x"})
        runner.request("t1", "c1", "k1", "review")
        manifest = runner.manifest("t1", "c1", "k1", intent_for("review", None), None)
        return runner.execute("t1", "c1", "k1", manifest.payload["request_sha256"]), runner


def _events(case: Path, kind: str | None = None) -> list[Any]:
    with LedgerReader(case) as reader:
        return [e for e in reader.events() if kind is None or e.kind == kind]


# ---- reading the header


@pytest.mark.parametrize(("headers", "seconds", "source"), [
    ({"Retry-After": "2"}, 2.0, "retry-after"),
    ({"retry-after": " 0 "}, 0.0, "retry-after"),
    ({"Retry-After": "1.5"}, 1.5, "retry-after"),
    ({"Retry-After": "2", "retry-after-ms": "1250"}, 1.25, "retry-after-ms"),
    ({"Retry-After": format_datetime(NOW + timedelta(seconds=90), usegmt=True)}, 90.0, "retry-after"),
    ({"Retry-After": format_datetime(NOW - timedelta(seconds=90), usegmt=True)}, 0.0, "retry-after"),
    # measured against the answer's own Date, not the local clock
    ({"Retry-After": format_datetime(NOW + timedelta(seconds=90), usegmt=True),
      "Date": format_datetime(NOW + timedelta(seconds=80), usegmt=True)}, 10.0, "retry-after"),
])
def test_retry_after_values(headers: dict[str, str], seconds: float, source: str) -> None:
    asked = parse_retry_after(headers, now=lambda: NOW)
    assert asked.seconds == pytest.approx(seconds)
    assert asked.source == source and asked.problem is None


@pytest.mark.parametrize("value", ["-1", "soon", "nan", "inf", "", "1e999"])
def test_unreadable_retry_after_asks_no_wait_and_says_why(value: str) -> None:
    asked = parse_retry_after({"Retry-After": value}, now=lambda: NOW)
    assert asked.seconds is None
    assert asked.problem == "retry-after unreadable"


def test_no_retry_after_is_no_problem() -> None:
    asked = parse_retry_after({"content-type": "application/json"}, now=lambda: NOW)
    assert asked.seconds is None and asked.problem is None


def test_kept_headers_are_an_allow_list_and_values_are_made_safe() -> None:
    kept = kept_headers({
        "Authorization": "Bearer sk-secret", "Cookie": "a=b", "Set-Cookie": "session=s3cret",
        "X-Api-Key": "k", "Retry-After": "2", "X-Request-Id": "req_\x1b]0;pwned\x07" + "x" * 500,
        "openai-processing-ms": "17", "request-id": "r-1",
    })
    assert set(kept) == {"retry-after", "x-request-id", "openai-processing-ms", "request-id"}
    assert kept["x-request-id"].startswith("req_]0;pwned")
    assert "\x1b" not in kept["x-request-id"] and "\x07" not in kept["x-request-id"]
    assert len(kept["x-request-id"]) == 200


# ---- the runner against the synthetic provider


def test_429_retry_after_is_waited_out_then_retried(tmp_path: Path) -> None:
    case = tmp_path / "case"
    receipts = case / "provider" / "receipts.jsonl"
    with ProviderProcess(receipts, fail_first=1, fail_status=429, retry_after="1") as prov:
        status, runner = _run(case, prov.base_url)
    assert status == "succeeded"
    got = read_receipts(case).receipts
    assert len(got) == 2
    # the provider's own clock: the second request came at least 1 s after the first
    gap = (datetime.fromisoformat(got[1].received_at.replace("Z", "+00:00"))
           - datetime.fromisoformat(got[0].received_at.replace("Z", "+00:00")))
    assert gap.total_seconds() >= 1.0
    observed = _events(case, "attempt.observed")
    first = observed[0].payload["transport"]
    assert first["status"] == 429
    assert first["headers"]["retry-after"] == "1"
    assert first["headers"]["x-request-id"] == got[0].receipt_id  # observation -> receipt
    assert observed[1].payload["transport"]["headers"]["x-request-id"] == got[1].receipt_id
    decided = _events(case, "attempt.retry_decided")[0].payload
    assert decided["decision"] == "retry"
    assert decided["retry_after_s"] == 1 and decided["wait_s"] == 1
    assert "waiting 1 s (retry-after)" in decided["reason"]
    assert runner.notes == ["waited 1 s before attempt 2: the provider asked (retry-after)"]


def test_the_wait_holds_no_write_lock_and_follows_the_committed_decision(tmp_path: Path) -> None:
    """During the wait another writer can take the ledger's write lock at once, the
    decision is already durable, and the next attempt has not started."""
    case = tmp_path / "case"
    seen: list[tuple[float, list[str], bool]] = []

    def sleep(seconds: float) -> None:
        kinds = [e.kind for e in _events(case)]
        conn = sqlite3.connect(case / "ledger.sqlite3", timeout=0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")  # raises "database is locked" if one is held
            conn.execute("ROLLBACK")
            free = True
        except sqlite3.OperationalError:
            free = False
        finally:
            conn.close()
        seen.append((seconds, kinds, free))

    with ProviderProcess(case / "provider" / "receipts.jsonl", fail_first=1, fail_status=503,
                         retry_after="7") as prov:
        status, _ = _run(case, prov.base_url, sleep=sleep)
    assert status == "succeeded"
    assert len(seen) == 1
    seconds, kinds, free = seen[0]
    assert seconds == 7.0 and free
    assert kinds[-1] == "attempt.retry_decided" and kinds.count("attempt.started") == 1


def test_http_date_retry_after_is_honoured(tmp_path: Path) -> None:
    case = tmp_path / "case"
    waits: list[float] = []
    at = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    with ProviderProcess(case / "provider" / "receipts.jsonl", fail_first=1, fail_status=429,
                         retry_after=at) as prov:
        status, _ = _run(case, prov.base_url, sleep=waits.append, max_retry_wait=120)
    assert status == "succeeded"
    assert len(waits) == 1 and 30 < waits[0] <= 60


def test_a_wait_beyond_the_bound_stops_the_call_without_sleeping(tmp_path: Path) -> None:
    case = tmp_path / "case"
    waits: list[float] = []
    with ProviderProcess(case / "provider" / "receipts.jsonl", fail_first=1, fail_status=429,
                         retry_after="120") as prov:
        status, runner = _run(case, prov.base_url, sleep=waits.append, max_retry_wait=5)
    assert status == "failed" and waits == []
    assert len(read_receipts(case).receipts) == 1  # no second request
    decided = _events(case, "attempt.retry_decided")
    assert len(decided) == 1
    assert decided[0].payload["decision"] == "stop"
    assert decided[0].payload["retry_after_s"] == 120 and "wait_s" not in decided[0].payload
    assert "asks 120 s, more than the 5 s bound" in decided[0].payload["reason"]
    assert [e.payload["status"] for e in _events(case, "call.completed")] == ["failed"]
    assert len(runner.notes) == 1 and "more than the 5 s bound" in runner.notes[0]


def test_an_unreadable_retry_after_retries_at_once_and_says_so(tmp_path: Path) -> None:
    case = tmp_path / "case"
    waits: list[float] = []
    with ProviderProcess(case / "provider" / "receipts.jsonl", fail_first=1, fail_status=503,
                         retry_after="later please") as prov:
        status, _ = _run(case, prov.base_url, sleep=waits.append)
    assert status == "succeeded" and waits == []
    decided = _events(case, "attempt.retry_decided")[0].payload
    assert decided["decision"] == "retry" and "retry_after_s" not in decided
    assert "retry-after unreadable, retrying at once" in decided["reason"]


# ---- secrets in answers


@pytest.fixture
def leaky_server() -> Iterator[str]:
    """A server that answers 429 once, then 200, with a cookie and an echo of the
    Authorization header in its headers: neither may reach the ledger."""
    ready = threading.Event()
    state: dict[str, Any] = {"count": 0}

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        state["count"] += 1
        headers = {"Set-Cookie": "session=COOKIE-SECRET", "X-Request-Id": f"req-{state['count']}",
                   "X-Echo-Authorization": request.headers.get("Authorization", ""),
                   "Authorization": request.headers.get("Authorization", "")}
        if state["count"] == 1:
            return web.json_response({"error": {"message": "slow down"}}, status=429,
                                     headers={**headers, "Retry-After": "0"})
        body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "ok"}}]}
        return web.json_response(body, headers=headers)

    loop = asyncio.new_event_loop()
    holder: dict[str, Any] = {}

    async def start() -> None:
        runner = web.AppRunner(web.Application(), handle_signals=False)
        runner.app.router.add_route("*", "/{tail:.*}", handle)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        holder["runner"] = runner
        holder["port"] = runner.addresses[0][1]
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()),
                              daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield f"http://127.0.0.1:{holder['port']}/v1"
    finally:
        asyncio.run_coroutine_threadsafe(holder["runner"].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def test_credentials_and_cookies_in_answers_are_never_recorded(tmp_path: Path,
                                                               leaky_server: str) -> None:
    case = tmp_path / "case"
    status, _ = _run(case, leaky_server, credential="sk-CREDENTIAL-SECRET")
    assert status == "succeeded"
    observed = _events(case, "attempt.observed")
    assert [e.payload["transport"]["headers"] for e in observed] == [
        {"retry-after": "0", "x-request-id": "req-1"}, {"x-request-id": "req-2"}]
    raw = b"".join(p.read_bytes() for p in case.rglob("*") if p.is_file())
    assert b"CREDENTIAL-SECRET" not in raw and b"COOKIE-SECRET" not in raw


# ---- the command line


def test_resume_says_when_the_asked_wait_is_beyond_its_bound(tmp_path: Path) -> None:
    with ProviderProcess(receipts_root=tmp_path, fail_first=1, fail_status=429,
                         retry_after="600") as prov:
        case = make_case(tmp_path / "c1", prov.base_url)
        started = time.monotonic()
        proc = cli("resume", str(case), "call-1", "--yes", "--max-retry-wait", "2")
        elapsed = time.monotonic() - started
    assert proc.returncode == 4, proc.stderr
    assert "asks 600 s, more than the 2 s bound" in proc.stderr
    assert elapsed < 60  # never slept the 600 s
    assert len(read_receipts(case).receipts) == 1


@pytest.mark.parametrize(("flag", "value"), [("--max-retry-wait", "-1"),
                                             ("--max-retry-wait", "inf"),
                                             ("--timeout", "soon")])
def test_resume_refuses_unusable_limits_in_one_line(tmp_path: Path, flag: str,
                                                    value: str) -> None:
    case = make_case(tmp_path / "c1", "http://127.0.0.1:9/v1")
    before = (case / "ledger.sqlite3").read_bytes()
    proc = cli("resume", str(case), "call-1", "--yes", flag, value)
    assert proc.returncode == 2
    # one line naming the flag and the value (no usage block)
    assert proc.stderr.startswith(f"codeai-tui resume: argument {flag}: ")
    assert proc.stderr.count("\n") == 1 and proc.stderr.rstrip().endswith(f"{value!r}")
    assert "Traceback" not in proc.stderr
    assert (case / "ledger.sqlite3").read_bytes() == before
