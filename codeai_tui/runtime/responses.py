"""A provider's answer as one `chat.completion`, and the tool plan it carries.

Shared by the runner (which journals a response only once it is complete) and by
whatever later replays a saved response: both must read the same plan out of the same
bytes. A streamed answer (server-sent events of `chat.completion.chunk`) counts as
complete only when a choice reported its `finish_reason` AND the `data: [DONE]` sentinel
arrived; anything less is a cut-off stream, whose plan nobody may act on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Parsed from the wire (a read path): shapes are checked where they are used.
ParsedJson = dict[str, Any]
TextCallback = Callable[[str], None]


def arguments_sha256(arguments: str) -> str:
    """SHA-256 of the arguments string's UTF-8 bytes, as the model returned it (a lone
    surrogate from a `\\ud800` escape is hashed, not an error)."""
    return hashlib.sha256(arguments.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class PlannedToolCall:
    """One tool call chosen by a saved response. `arguments` is the model's string as
    returned (possibly not even JSON); its hash is over exactly its UTF-8 bytes."""

    tool_call_id: str
    name: str
    arguments: str

    @property
    def arguments_sha256(self) -> str:
        return arguments_sha256(self.arguments)

    def as_ledger(self) -> dict[str, str]:
        """The plan entry recorded in `attempt.observed` (no arguments: they stay in the
        response artifact; the hash binds the two)."""
        return {
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "arguments_sha256": self.arguments_sha256,
        }


def tool_plan(completion: ParsedJson) -> list[PlannedToolCall]:
    """The tool calls of choice 0, in order; [] when the answer chose none."""
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return []
    message = choices[0].get("message")
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(calls, list):
        return []
    plan: list[PlannedToolCall] = []
    for call in calls:
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict):
            continue
        call_id, name, args = call.get("id"), fn.get("name"), fn.get("arguments")
        if isinstance(call_id, str) and isinstance(name, str):
            plan.append(PlannedToolCall(call_id, name, args if isinstance(args, str) else ""))
    return plan


def parse_json_completion(body: bytes) -> ParsedJson | None:
    """A non-streamed answer: the JSON object, or None when it is not one with choices."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if isinstance(data, dict) and isinstance(data.get("choices"), list) and data["choices"]:
        return data
    return None


@dataclass
class _ToolCallParts:
    id: str = ""
    type: str = "function"
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _ChoiceParts:
    role: str = "assistant"
    content: list[str] = field(default_factory=list)
    saw_content: bool = False
    tool_calls: dict[int, _ToolCallParts] = field(default_factory=dict)
    finish_reason: str | None = None


class StreamAssembler:
    """Feeds on the bytes of an event stream, in whatever pieces they arrive; assembles
    the `chat.completion` they add up to. `on_text` sees content deltas as they come
    (provisional: the response counts only once `complete`)."""

    def __init__(self, on_text: TextCallback | None = None) -> None:
        self.on_text = on_text
        self.display_error: str | None = None
        self.done = False
        self.problem: str | None = None
        self._buffer = b""
        self._data: list[str] = []
        self._meta: ParsedJson = {}
        self._usage: object = None
        self._choices: dict[int, _ChoiceParts] = {}

    @property
    def complete(self) -> bool:
        first = self._choices.get(0)
        return (self.done and self.problem is None and first is not None
                and first.finish_reason is not None)

    def feed(self, data: bytes) -> None:
        self._buffer += data
        *lines, self._buffer = self._buffer.split(b"\n")
        for raw in lines:
            self._line(raw.rstrip(b"\r").decode("utf-8", "replace"))

    def _line(self, line: str) -> None:
        if line == "":
            if self._data:
                self._event("\n".join(self._data))
                self._data = []
            return
        if line.startswith(":"):
            return  # a comment (keep-alive)
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)

    def _event(self, data: str) -> None:
        if self.done:
            self.problem = self.problem or "data after [DONE]"
            return
        if data == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            self.problem = self.problem or "an event is not JSON"
            return
        if not isinstance(chunk, dict):
            self.problem = self.problem or "an event is not a JSON object"
            return
        if "error" in chunk:
            self.problem = self.problem or "the stream carried an error event"
            return
        for key in ("id", "created", "model", "system_fingerprint"):
            if key in chunk and key not in self._meta:
                self._meta[key] = chunk[key]
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if isinstance(choice, dict):
                self._choice(choice)

    def _choice(self, choice: ParsedJson) -> None:
        index = choice.get("index", 0)
        parts = self._choices.setdefault(index if isinstance(index, int) else 0, _ChoiceParts())
        delta = choice.get("delta")
        if isinstance(delta, dict):
            if isinstance(delta.get("role"), str):
                parts.role = delta["role"]
            if isinstance(delta.get("content"), str):
                parts.saw_content = True
                parts.content.append(delta["content"])
                if self.on_text is not None and delta["content"] and index == 0:
                    self._show(delta["content"])
            calls = delta.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict):
                    self._tool_call(parts, call)
        if isinstance(choice.get("finish_reason"), str):
            parts.finish_reason = choice["finish_reason"]

    def _show(self, text: str) -> None:
        """A display that fails stops being fed; it never changes what is journaled (a
        display bug must not turn a whole answer into an unknown effect)."""
        assert self.on_text is not None
        try:
            self.on_text(text)
        except Exception as exc:  # whatever the display raised, the same handling
            self.on_text = None
            self.display_error = f"{type(exc).__name__}: {exc}"

    @staticmethod
    def _tool_call(parts: _ChoiceParts, call: ParsedJson) -> None:
        index = call.get("index", len(parts.tool_calls))
        tc = parts.tool_calls.setdefault(index if isinstance(index, int) else 0, _ToolCallParts())
        if isinstance(call.get("id"), str) and call["id"]:
            tc.id = call["id"]
        if isinstance(call.get("type"), str):
            tc.type = call["type"]
        fn = call.get("function")
        if isinstance(fn, dict):
            if isinstance(fn.get("name"), str):
                tc.name += fn["name"]
            if isinstance(fn.get("arguments"), str):
                tc.arguments.append(fn["arguments"])

    def finish(self) -> None:
        """The stream ended: a last event without its blank line still counts."""
        if self._buffer:
            self._line(self._buffer.rstrip(b"\r").decode("utf-8", "replace"))
            self._buffer = b""
        self._line("")

    def completion(self) -> ParsedJson:
        """The assembled `chat.completion` (meaningful only when `complete`)."""
        choices = []
        for index in sorted(self._choices):
            parts = self._choices[index]
            message: ParsedJson = {
                "role": parts.role,
                "content": "".join(parts.content) if parts.saw_content else None,
            }
            if parts.tool_calls:
                message["tool_calls"] = [
                    {"id": tc.id, "type": tc.type,
                     "function": {"name": tc.name, "arguments": "".join(tc.arguments)}}
                    for _, tc in sorted(parts.tool_calls.items())
                ]
            choices.append({"index": index, "message": message,
                            "finish_reason": parts.finish_reason})
        out: ParsedJson = {"object": "chat.completion", **self._meta, "choices": choices}
        if self._usage is not None:
            out["usage"] = self._usage
        return out


def assemble_stream(body: bytes) -> tuple[ParsedJson, bool]:
    """(assembled completion, complete?) for the whole bytes of a saved event stream."""
    assembler = StreamAssembler()
    assembler.feed(body)
    assembler.finish()
    return assembler.completion(), assembler.complete


def parse_response(body: bytes, stream: bool) -> ParsedJson | None:
    """The complete `chat.completion` held by saved response bytes, or None."""
    if not stream:
        return parse_json_completion(body)
    completion, complete = assemble_stream(body)
    return completion if complete else None
