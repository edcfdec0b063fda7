"""The runner consumes streams and journals a response only when it is complete; the
tool plan in `attempt.observed` is the one the saved response bytes hold."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.lab.provider import ProviderProcess, completion_for, stream_chunks, tool_call_id
from codeai_tui.ledger import (
    ArtifactStore,
    CaseConfig,
    LedgerReader,
    LedgerWriter,
    ProviderConfig,
    read_receipts,
)
from codeai_tui.read.inspection import project_case
from codeai_tui.runtime.request_bytes import intent_for
from codeai_tui.runtime.responses import StreamAssembler, assemble_stream, parse_response, tool_plan
from codeai_tui.runtime.runner import CallRunner
from codeai_tui.workstate import CallStage
from tests.support import examples

PUBLISH = {"type": "function", "function": {"name": "publish_report", "parameters": {
    "type": "object", "properties": {"title": {"type": "string"}, "body": {"type": "string"}}}}}


def _sse(completion: dict[str, Any]) -> bytes:
    events = [f"data: {json.dumps(c)}\n\n" for c in stream_chunks(completion, True)]
    return ("".join(events) + "data: [DONE]\n\n").encode()


@pytest.mark.parametrize("tools", [None, [PUBLISH, {"type": "function", "function": {"name": "x"}}]])
def test_assembler_rebuilds_the_completion_from_pieces_of_any_size(tools: Any) -> None:
    request: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "é ü"}]}
    if tools:
        request["tools"] = tools
    whole = completion_for(request, "ab" * 32, 100)
    data = _sse(whole)
    for size in (1, 7, len(data)):
        texts: list[str] = []
        asm = StreamAssembler(texts.append)
        for i in range(0, len(data), size):
            asm.feed(data[i:i + size])
        asm.finish()
        assert asm.complete
        got = asm.completion()
        assert got["choices"][0]["message"] == whole["choices"][0]["message"]
        assert got["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
        assert got["usage"] == whole["usage"]
        assert "".join(texts) == (whole["choices"][0]["message"]["content"] or "")


def test_stream_without_done_or_finish_reason_is_not_complete() -> None:
    whole = completion_for({"model": "m", "messages": [], "tools": [PUBLISH]}, "cd" * 32, 10)
    data = _sse(whole)
    without_done = data[: data.rindex(b"data: [DONE]")]
    assert assemble_stream(without_done)[1] is False
    assert parse_response(without_done, stream=True) is None
    cut = data[: data.index(b'"finish_reason": "tool_calls"')]
    assert assemble_stream(cut[: cut.rindex(b"\n\n") + 2] + b"data: [DONE]\n\n")[1] is False
    assert parse_response(data, stream=True) is not None


def _run(case: Path, base_url: str, request: dict[str, Any] | None, texts: list[str]) -> str:
    config = CaseConfig(ProviderConfig(base_url=base_url))
    extra = {"request": request} if request else None
    with LedgerWriter.create(case) as writer:
        runner = CallRunner(case, writer, config, timeout=10, on_text=texts.append)
        writer.append("task.created", "t1", {"title": "x"})
        runner.request("t1", "c1", "k1", "report")
        manifest = runner.manifest("t1", "c1", "k1", intent_for("report", None, extra), None)
        return runner.execute("t1", "c1", "k1", manifest.payload["request_sha256"])


def _observed(case: Path) -> dict[str, Any]:
    with LedgerReader(case) as reader:
        (event,) = [e for e in reader.events() if e.kind == "attempt.observed"]
    assert event.payload is not None
    return event.payload


@pytest.mark.parametrize("stream", [False, True])
def test_tool_plan_is_journaled_from_the_saved_response(tmp_path: Path, stream: bool) -> None:
    case = tmp_path / "case"
    texts: list[str] = []
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        assert _run(case, prov.base_url, {"stream": stream, "tools": [PUBLISH]}, texts) == "succeeded"
    (receipt,) = read_receipts(case).receipts
    observed = _observed(case)
    assert observed["transport"].get("stream", False) is stream
    saved = ArtifactStore(case).get(observed["response_artifact"])
    assert saved is not None and saved.startswith(b"data: ") is stream
    completion = parse_response(saved, stream)
    assert completion is not None
    (planned,) = tool_plan(completion)
    assert observed["tool_plan"] == [{
        "tool_call_id": tool_call_id(receipt.body_sha256, 0),
        "name": "publish_report",
        "arguments_sha256": hashlib.sha256(planned.arguments.encode()).hexdigest(),
    }]
    assert texts == []  # a tool decision has no text to show


def test_streamed_text_is_shown_as_it_arrives_and_journaled_whole(tmp_path: Path) -> None:
    case = tmp_path / "case"
    texts: list[str] = []
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        assert _run(case, prov.base_url, {"stream": True}, texts) == "succeeded"
    (receipt,) = read_receipts(case).receipts
    observed = _observed(case)
    assert observed["tool_plan"] == []
    saved = ArtifactStore(case).get(observed["response_artifact"])
    assert saved is not None and saved.endswith(b"data: [DONE]\n\n")
    assert len(texts) > 3
    assert "".join(texts) == f"synthetic review of request {receipt.body_sha256[:12]}: no unclear sentences"


def test_truncated_stream_leaves_the_attempt_unobserved_and_no_plan(tmp_path: Path) -> None:
    case = tmp_path / "case"
    texts: list[str] = []
    with ProviderProcess(case / "provider" / "receipts.jsonl", truncate_after=3) as prov:
        assert _run(case, prov.base_url, {"stream": True}, texts) == "effect_unknown"
    with LedgerReader(case) as reader:
        kinds = [e.kind for e in reader.events() if e.call_id == "c1"]
    assert kinds == ["call.requested", "call.manifest", "attempt.started"]
    assert len(texts) == 2  # provisional text was shown; nothing of it was journaled
    assert len(read_receipts(case).receipts) == 1
    state = project_case(case).call("c1")
    assert state is not None and state.stage is CallStage.EFFECT_UNKNOWN
    assert ArtifactStore(case).names() == [_observed_free_request_sha(case)]


def _observed_free_request_sha(case: Path) -> str:
    with LedgerReader(case) as reader:
        (manifest,) = [e for e in reader.events() if e.kind == "call.manifest"]
    assert manifest.payload is not None
    return str(manifest.payload["request_sha256"])


def test_proxy_from_the_environment_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The provider doubles as the proxy: the request for an unresolvable host reaches it
    only if the runner went through HTTP_PROXY. Nothing leaves 127.0.0.1."""
    from codeai_tui.runtime.runner import send_request

    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    body = b'{"messages":[],"model":"m"}'
    with ProviderProcess(tmp_path / "r.jsonl") as prov:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{prov.port}")
        via = send_request("http://provider.invalid/v1", body, "k", None, 10)
        assert via.status == 200 and via.completion is not None
        assert len(read_receipts_file(tmp_path / "r.jsonl")) == 1
        prov.stop()
        refused = send_request("http://provider.invalid/v1", body, "k", None, 10)
    assert refused.status is None and refused.maybe_sent is False  # the proxy was down


def test_the_credential_reaches_neither_ledger_nor_artifacts(tmp_path: Path) -> None:
    case = tmp_path / "case"
    secret = "sk-live-0123456789abcdef0123456789"
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        config = CaseConfig(ProviderConfig(base_url=prov.base_url))
        with LedgerWriter.create(case) as writer:
            runner = CallRunner(case, writer, config, timeout=10, credential=secret)
            writer.append("task.created", "t1", {"title": "x"})
            runner.request("t1", "c1", "k1", "report")
            intent = intent_for("report", None, {"request": {"stream": True, "tools": [PUBLISH]}})
            manifest = runner.manifest("t1", "c1", "k1", intent, None)
            assert runner.execute("t1", "c1", "k1", manifest.payload["request_sha256"]) == "succeeded"
    for path in case.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def read_receipts_file(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_an_answer_too_large_to_journal_is_not_observed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import codeai_tui.runtime.runner as runner_module

    monkeypatch.setattr(runner_module, "MAX_RESPONSE_BYTES", 100)
    case = tmp_path / "case"
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        assert _run(case, prov.base_url, {"stream": True}, []) == "effect_unknown"
    with LedgerReader(case) as reader:
        assert [e.kind for e in reader.events()][-1] == "attempt.started"


def test_error_event_or_data_after_done_is_not_complete() -> None:
    whole = completion_for({"model": "m", "messages": []}, "ef" * 32, 10)
    data = _sse(whole)
    assert assemble_stream(data)[1] is True
    assert assemble_stream(data + b'data: {"choices":[]}\n\n')[1] is False
    errored = data.replace(b"data: [DONE]", b'data: {"error":{"message":"overloaded"}}\n\ndata: [DONE]')
    assert assemble_stream(errored)[1] is False


@pytest.mark.parametrize("rendered", [None, "[A]\nctx"])
def test_intents_without_the_new_keys_build_the_same_bytes_as_before(rendered: str | None) -> None:
    from codeai_tui.ledger import canonical_json
    from codeai_tui.runtime.request_bytes import build_request

    intent = intent_for("review", "flag unclear sentences", {"paragraph_ref": "A"})
    messages = ([{"role": "system", "content": rendered}] if rendered is not None else []) + [
        {"role": "user", "content": canonical_json(intent).decode()}]
    before = canonical_json({"model": "m", "messages": messages, "temperature": 0})
    assert build_request(intent, "m", rendered) == before
    shaped = build_request({**intent, "request": {"stream": True, "model": "x"},
                            "conversation": [{"role": "tool", "content": "r"}]}, "m", rendered)
    data = json.loads(shaped)
    assert data["stream"] is True and data["model"] == "m"  # options never replace the model
    assert json.loads(data["messages"][-2]["content"]) == intent
    assert data["messages"][-1] == {"role": "tool", "content": "r"}


def test_a_failing_display_does_not_change_what_is_journaled(tmp_path: Path) -> None:
    case = tmp_path / "case"
    shown: list[str] = []

    class BrokenScreen(list[str]):
        def append(self, text: str) -> None:
            shown.append(text)
            raise BrokenPipeError("the terminal went away")

    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        assert _run(case, prov.base_url, {"stream": True}, BrokenScreen()) == "succeeded"
    assert len(shown) == 1  # fed once, then no more
    saved = ArtifactStore(case).get(_observed(case)["response_artifact"])
    completion = parse_response(saved or b"", stream=True)
    assert completion is not None and completion["choices"][0]["message"]["content"].endswith(
        "no unclear sentences")


@settings(max_examples=examples(30), deadline=None)
@given(
    text=st.text(max_size=60),
    tools=st.lists(st.sampled_from(["publish_report", "notify", "x"]), max_size=3, unique=True),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12),
)
def test_assembly_is_independent_of_how_the_bytes_are_cut(
    text: str, tools: list[str], cuts: list[int]
) -> None:
    request: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": text}]}
    if tools:
        request["tools"] = [{"type": "function", "function": {
            "name": n, "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
            for n in tools]
    whole = completion_for(request, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), 5)
    data = _sse(whole)
    asm = StreamAssembler()
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        asm.feed(data[start:cut])
        start = max(start, cut)
    asm.feed(data[start:])
    asm.finish()
    assert asm.complete
    assert asm.completion()["choices"][0]["message"] == whole["choices"][0]["message"]
    assert [p.tool_call_id for p in tool_plan(asm.completion())] == [
        c["id"] for c in whole["choices"][0]["message"].get("tool_calls") or []]


def test_a_stream_kept_open_past_the_deadline_leaves_the_attempt_unobserved(
        tmp_path: Path) -> None:
    """A generation that hung while its stream sends keep-alive comments never lets a
    read time out: the deadline on the whole answer ends the wait, and the attempt stays
    unobserved (the provider logged a receipt: the effect may have happened)."""
    case = tmp_path / "case"
    texts: list[str] = []
    with ProviderProcess(case / "provider" / "receipts.jsonl", stall_after=2) as prov:
        config = CaseConfig(ProviderConfig(base_url=prov.base_url))
        with LedgerWriter.create(case) as writer:
            runner = CallRunner(case, writer, config, timeout=10, deadline=1.0,
                                on_text=texts.append)
            writer.append("task.created", "t1", {"title": "x"})
            runner.request("t1", "c1", "k1", "report")
            intent = intent_for("report", None, {"request": {"stream": True}})
            manifest = runner.manifest("t1", "c1", "k1", intent, None)
            outcome = runner.execute("t1", "c1", "k1", manifest.payload["request_sha256"])
    assert outcome == "effect_unknown"
    with LedgerReader(case) as reader:
        kinds = [e.kind for e in reader.events() if e.call_id == "c1"]
    assert kinds == ["call.requested", "call.manifest", "attempt.started"]
    assert texts == ["synthetic "]  # shown as it came, provisional: nothing journaled
    assert len(read_receipts(case).receipts) == 1
    state = project_case(case).call("c1")
    assert state is not None and state.stage is CallStage.EFFECT_UNKNOWN


def test_resume_takes_its_deadline_from_the_command_line(tmp_path: Path) -> None:
    """`resume --deadline 1` against a provider whose stream never ends: exit 5 (the
    effect is unknown), with nothing journaled beyond attempt.started."""
    from tests.core.cases import STOPPED_AT, make_case
    from tests.support import cli

    with ProviderProcess(tmp_path / "receipts.jsonl", stall_after=2) as prov:
        case = make_case(tmp_path / "c1", prov.base_url, recorded_at=STOPPED_AT,
                         request={"stream": True})
        done = cli("resume", str(case), "call-1", "--yes", "--base-url", prov.base_url,
                   "--deadline", "1", "--timeout", "10")
    assert done.returncode == 5, (done.returncode, done.stderr)
    assert "note: attempt 1: no whole answer within 1 s (the deadline)" in done.stderr
    with LedgerReader(case) as reader:
        new = [e.kind for e in reader.events() if e.call_id not in (None, "call-1")]
    assert new == ["call.requested", "call.manifest", "attempt.started"]
    assert len(read_receipts_file(tmp_path / "receipts.jsonl")) == 1  # it may have happened
