"""`codeai-tui resume` (a real subprocess) against an OpenAI-compatible server this
project did not write: LLMock (PyPI `llmock`, its `serve` command in its own process on
127.0.0.1). LLMock scripts success, 429 with Retry-After, 500, a held answer (timeout)
and a stream cut mid-body; a connection reset before any answer reaches the client is
not something it can script, so tests/external/faultproxy.py sits in front of it for
those. LLMock's own request journal and verdict are the independent witness: what the
ledger says about an effect is checked against what the server says it served.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from codeai_tui.ledger import CaseConfig, LedgerReader, LedgerWriter, ProviderConfig
from codeai_tui.read.inspection import project_case
from codeai_tui.runtime.request_bytes import intent_for
from codeai_tui.runtime.runner import CallRunner
from codeai_tui.workstate import CallStage, ProviderEffect
from tests.core.cases import make_case
from tests.external.faultproxy import FaultProxy
from tests.support import cli

LISTENING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")


class LLMock:
    """`llmock serve --port 0` in its own process; its admin API over HTTP."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from llmock.cli import app; app()", "serve",
             "--host", "127.0.0.1", "--port", "0", "--response-style", "static",
             "--tool-mode", "off", "--log-level", "info"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )
        self.port = 0
        found = threading.Event()
        self.log: list[str] = []

        def read() -> None:  # keep draining: a full stderr pipe would block the server
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                match = LISTENING.search(line)
                if match:
                    self.port = int(match.group(1))
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(60):
            self.stop()
            raise RuntimeError("llmock did not start: " + "".join(self.log[-5:]))
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.url}/v1"

    def scenario(self, *behaviors: dict[str, Any]) -> None:
        answer = httpx.post(f"{self.url}/_llmock/scenario", json={"behaviors": list(behaviors)})
        assert answer.is_success, answer.text

    def reset(self) -> None:
        assert httpx.post(f"{self.url}/_llmock/reset").status_code == 200

    def requests(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"{self.url}/_llmock/requests").json()["requests"])

    def requests_within(self, count: int, timeout: float = 15.0) -> list[dict[str, Any]]:
        """The journal once it holds `count` requests (a held answer is journaled when
        it ends), polling with a deadline."""
        deadline = time.monotonic() + timeout
        pause = threading.Event()
        while True:
            seen = self.requests()
            if len(seen) >= count or time.monotonic() > deadline:
                return seen
            pause.wait(0.05)

    def verdict(self) -> dict[str, Any]:
        return dict(httpx.get(f"{self.url}/_llmock/verdict").json())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def llmock_server() -> Iterator[LLMock]:
    server = LLMock()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def mock(llmock_server: LLMock) -> LLMock:
    llmock_server.reset()
    return llmock_server


def _resume(case: Path, base_url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli("resume", str(case), "call-1", "--yes", "--base-url", base_url, *extra,
               timeout=120)


def _new_call(case: Path) -> list[Any]:
    with LedgerReader(case) as reader:
        events = reader.events()
    new_id = next(e.payload["resumed_as"] for e in events if e.kind == "call.resumed")
    return [e for e in events if e.call_id == new_id]


def _kinds(events: list[Any]) -> list[str]:
    return [e.kind for e in events]


def _state(case: Path, events: list[Any]) -> Any:
    state = project_case(case).call(events[0].call_id)
    assert state is not None
    return state


def test_success(tmp_path: Path, mock: LLMock) -> None:
    case = make_case(tmp_path / "c1", mock.base_url)
    proc = _resume(case, mock.base_url)
    assert proc.returncode == 0, proc.stderr
    events = _new_call(case)
    assert _kinds(events)[2:] == ["attempt.started", "attempt.observed", "attempt.interpreted",
                                  "attempt.completed", "call.completed"]
    assert events[-1].payload["status"] == "succeeded"
    served = mock.requests()
    assert [(r["path"], r["status"]) for r in served] == [("/v1/chat/completions", 200)]
    assert served[0]["model"] == "synthetic-small"


def test_429_retry_after_is_honoured_within_the_bound(tmp_path: Path, mock: LLMock) -> None:
    case = make_case(tmp_path / "c1", mock.base_url)
    mock.scenario({"type": "fail", "status": 429, "retry_after": 2, "times": 1})
    proc = _resume(case, mock.base_url, "--max-retry-wait", "10")
    assert proc.returncode == 0, proc.stderr
    assert "waited 2 s before attempt 2" in proc.stderr
    first, second = mock.requests()
    assert (first["status"], first["retry_after"], second["status"]) == (429, 2.0, 200)
    waited = second["started_at"] - first["ended_at"]  # the server's own clock
    assert 2.0 <= waited < 10.0
    events = _new_call(case)
    decided = next(e.payload for e in events if e.kind == "attempt.retry_decided")
    assert (decided["decision"], decided["retry_after_s"], decided["wait_s"]) == ("retry", 2, 2)
    observed = next(e.payload for e in events if e.kind == "attempt.observed")
    assert observed["transport"]["headers"] == {"retry-after": "2", "retry-after-ms": "2000"}
    codes = [f["code"] for f in mock.verdict()["findings"]]
    assert "retry_after_ignored" not in codes and "no_backoff" not in codes


def test_500_twice_ends_the_call_failed(tmp_path: Path, mock: LLMock) -> None:
    case = make_case(tmp_path / "c1", mock.base_url)
    mock.scenario({"type": "fail", "status": 500, "times": 2})
    proc = _resume(case, mock.base_url)
    assert proc.returncode == 4, proc.stderr
    events = _new_call(case)
    assert [e.payload["transport"]["status"] for e in events
            if e.kind == "attempt.observed"] == [500, 500]
    assert events[-1].kind == "call.completed" and events[-1].payload["status"] == "failed"
    state = _state(case, events)
    assert state.provider_effect is ProviderEffect.HAPPENED
    assert [r["status"] for r in mock.requests()] == [500, 500]


def test_held_past_the_timeout_is_effect_unknown(tmp_path: Path, mock: LLMock) -> None:
    case = make_case(tmp_path / "c1", mock.base_url)
    mock.scenario({"type": "delay", "seconds": 4, "times": 1})
    proc = _resume(case, mock.base_url, "--timeout", "1")
    assert proc.returncode == 5, proc.stderr
    events = _new_call(case)
    assert _kinds(events)[-1] == "attempt.started"
    state = _state(case, events)
    assert state.stage is CallStage.EFFECT_UNKNOWN
    assert state.provider_effect is ProviderEffect.UNKNOWN
    # and the server did serve it: "unknown" was the honest answer, not "none"
    served = mock.requests_within(1)
    assert [r["status"] for r in served] == [200]


def test_reset_after_the_server_answered_is_effect_unknown(tmp_path: Path,
                                                           mock: LLMock) -> None:
    case = make_case(tmp_path / "c1", mock.base_url)
    with FaultProxy(mock.port, "reset_after_answer") as proxy:
        proc = _resume(case, f"http://127.0.0.1:{proxy.port}/v1")
    assert proc.returncode == 5, proc.stderr
    assert (proxy.forwarded, proxy.answered) == (1, 1)
    events = _new_call(case)
    assert _kinds(events)[-1] == "attempt.started"  # no observation: nothing was answered
    assert _state(case, events).stage is CallStage.EFFECT_UNKNOWN
    assert [r["status"] for r in mock.requests_within(1)] == [200]  # it was served


def test_reset_before_forwarding_is_still_not_claimed_unsent(tmp_path: Path,
                                                             mock: LLMock) -> None:
    """Once connected, a reset cannot tell the runner whether the bytes were read, so it
    records no observation (effect unknown) rather than `sent: false`."""
    case = make_case(tmp_path / "c1", mock.base_url)
    with FaultProxy(mock.port, "reset_before_forward") as proxy:
        proc = _resume(case, f"http://127.0.0.1:{proxy.port}/v1")
    assert proc.returncode == 5, proc.stderr
    assert proxy.forwarded == 0 and mock.requests() == []
    events = _new_call(case)
    assert _kinds(events)[-1] == "attempt.started"
    assert _state(case, events).stage is CallStage.EFFECT_UNKNOWN


def _streaming_case(case: Path, base_url: str) -> Path:
    """One call whose recorded request asks for a stream (intent key `request`)."""
    case.mkdir(parents=True)
    config = CaseConfig(ProviderConfig(base_url=base_url, model="synthetic-small"))
    with LedgerWriter.create(case) as writer:
        runner = CallRunner(case, writer, config)
        writer.append("task.created", "task-1", {"title": "stream"})
        runner.request("task-1", "call-1", "key-1", "review")
        intent = {**intent_for("review", "flag unclear sentences"),
                  "request": {"stream": True}}
        runner.manifest("task-1", "call-1", "key-1", intent, None)
    (case / "case.json").write_text(json.dumps({"provider": {"base_url": base_url,
                                                             "model": "synthetic-small"}}))
    return case


def test_stream_dropped_mid_body_is_effect_unknown(tmp_path: Path, mock: LLMock) -> None:
    case = _streaming_case(tmp_path / "c1", mock.base_url)
    mock.scenario({"type": "stream_fault", "kind": "disconnect", "after_chunks": 2})
    proc = _resume(case, mock.base_url)
    assert proc.returncode == 5, proc.stderr
    events = _new_call(case)
    assert _kinds(events)[-1] == "attempt.started"  # half a stream is no answer
    assert _state(case, events).stage is CallStage.EFFECT_UNKNOWN
    (served,) = mock.requests_within(1)
    assert served["stream"] is True and served["fault"] is not None
