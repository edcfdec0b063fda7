"""The official `openai` client against the synthetic provider on 127.0.0.1.

Only the real client catches a provider that ignores `stream: true` (it then yields zero
chunks and raises nothing). Every answer is checked against the provider's own
receipt of the request bytes, so a hard-coded answer could not pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from codeai_tui.lab.provider import ProviderProcess, tool_call_id  # noqa: E402

PUBLISH = {
    "type": "function",
    "function": {
        "name": "publish_report",
        "description": "Publish the report",
        "parameters": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
            "required": ["title", "body"],
        },
    },
}
NOTIFY = {
    "type": "function",
    "function": {"name": "notify", "parameters": {
        "type": "object", "properties": {"channel": {"type": "string", "enum": ["ops"]}}}},
}
USER = [{"role": "user", "content": "write the weekly report"}]


@pytest.fixture(scope="module")
def prov(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderProcess]:
    with ProviderProcess(tmp_path_factory.mktemp("oa") / "receipts.jsonl") as p:
        yield p


def _client(prov: ProviderProcess) -> Any:
    return openai.OpenAI(base_url=prov.base_url, api_key="sk-test-key-not-secret",
                         max_retries=0, timeout=10)


def _last_receipt_sha(receipts: Path | None) -> str:
    assert receipts is not None
    return str(json.loads(receipts.read_text().splitlines()[-1])["body_sha256"])


def _count(receipts: Path | None) -> int:
    assert receipts is not None
    return len(receipts.read_text().splitlines()) if receipts.exists() else 0


def test_plain_completion(prov: ProviderProcess) -> None:
    before = _count(prov.receipts)
    r = _client(prov).chat.completions.create(model="m", messages=USER)
    assert _count(prov.receipts) == before + 1
    digest = _last_receipt_sha(prov.receipts)
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].message.content == f"synthetic review of request {digest[:12]}: no unclear sentences"


def test_streamed_text_arrives_in_pieces_and_adds_up(prov: ProviderProcess) -> None:
    stream = _client(prov).chat.completions.create(model="m", messages=USER, stream=True)
    chunks = list(stream)
    digest = _last_receipt_sha(prov.receipts)
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) >= 5, "the text must be streamed, not sent whole"
    assert "".join(pieces) == f"synthetic review of request {digest[:12]}: no unclear sentences"
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert all(c.object == "chat.completion.chunk" for c in chunks)


def test_stream_usage_chunk_when_asked(prov: ProviderProcess) -> None:
    chunks = list(_client(prov).chat.completions.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 9


def _check_publish_call(call: Any, digest: str, index: int = 0) -> None:
    assert call.id == tool_call_id(digest, index)
    assert call.function.name == "publish_report"
    assert json.loads(call.function.arguments) == {
        "title": f"synthetic title {digest[:8]}", "body": f"synthetic body {digest[:8]}"}


def test_tool_call_answer(prov: ProviderProcess) -> None:
    r = _client(prov).chat.completions.create(model="m", messages=USER, tools=[PUBLISH])
    digest = _last_receipt_sha(prov.receipts)
    assert r.choices[0].finish_reason == "tool_calls"
    (call,) = r.choices[0].message.tool_calls
    _check_publish_call(call, digest)


def test_streamed_tool_calls_assemble_with_the_sdk_helper(prov: ProviderProcess) -> None:
    with _client(prov).chat.completions.stream(
        model="m", messages=USER, tools=[PUBLISH, NOTIFY]
    ) as stream:
        argument_deltas = sum(1 for e in stream if e.type == "tool_calls.function.arguments.delta")
        final = stream.get_final_completion()
    digest = _last_receipt_sha(prov.receipts)
    assert argument_deltas > 2, "arguments must arrive in several deltas"
    assert final.choices[0].finish_reason == "tool_calls"
    first, second = final.choices[0].message.tool_calls
    _check_publish_call(first, digest, 0)
    assert second.id == tool_call_id(digest, 1) and second.function.name == "notify"
    assert json.loads(second.function.arguments) == {"channel": "ops"}


def test_same_request_same_ids_follow_up_answers_in_words(prov: ProviderProcess) -> None:
    client = _client(prov)
    a = client.chat.completions.create(model="m", messages=USER, tools=[PUBLISH])
    b = client.chat.completions.create(model="m", messages=USER, tools=[PUBLISH])
    assert a.choices[0].message.tool_calls[0].id == b.choices[0].message.tool_calls[0].id
    call = a.choices[0].message.tool_calls[0]
    follow = client.chat.completions.create(model="m", tools=[PUBLISH], messages=[
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": '{"published": 1}'},
    ])
    digest = _last_receipt_sha(prov.receipts)
    assert follow.choices[0].finish_reason == "stop"
    assert follow.choices[0].message.content == (
        f"synthetic answer after 1 tool result(s) for request {digest[:12]}: done")


def test_missing_model_is_a_400_for_the_client(prov: ProviderProcess) -> None:
    with pytest.raises(openai.BadRequestError, match="model"):
        _client(prov).chat.completions.create(model="", messages=USER)


def test_truncated_stream_fails_after_exactly_n_chunks(tmp_path: Path) -> None:
    with ProviderProcess(tmp_path / "r.jsonl", truncate_after=3) as prov:
        got: list[Any] = []
        with pytest.raises(openai.APIConnectionError):
            for chunk in _client(prov).chat.completions.create(
                model="m", messages=USER, tools=[PUBLISH], stream=True
            ):
                got.append(chunk)
        assert _count(prov.receipts) == 1  # the request reached the provider once
    assert len(got) == 3
    assert all(c.choices[0].finish_reason is None for c in got)
    assert re.fullmatch(r"call_[0-9a-f]{24}", got[0].choices[0].delta.tool_calls[0].id)


def test_fresh_tool_call_ids_differ_for_the_same_request_bytes(tmp_path: Path) -> None:
    """`codeai-tui provider --fresh-tool-call-ids`: a model asked again answers the same
    request bytes with new tool-call ids (derived from each request's own receipt), in a
    plain answer and in a stream alike; the rest of the decision is the same."""
    receipts = tmp_path / "receipts.jsonl"
    with ProviderProcess(receipts, fresh_tool_call_ids=True) as fresh:
        client = _client(fresh)
        a = client.chat.completions.create(model="m", messages=USER, tools=[PUBLISH])
        b = client.chat.completions.create(model="m", messages=USER, tools=[PUBLISH])
        with client.chat.completions.stream(model="m", messages=USER,
                                            tools=[PUBLISH]) as stream:
            c = stream.get_final_completion()
    log = [json.loads(line) for line in receipts.read_text().splitlines()]
    assert log[0]["body_sha256"] == log[1]["body_sha256"]  # the same bytes asked twice
    calls = [r.choices[0].message.tool_calls[0] for r in (a, b, c)]
    assert [call.id for call in calls] == [tool_call_id(r["receipt_id"], 0) for r in log]
    assert len({call.id for call in calls}) == 3
    assert calls[0].function.arguments == calls[1].function.arguments
    assert calls[0].id != tool_call_id(log[0]["body_sha256"], 0)  # not the request-derived id
