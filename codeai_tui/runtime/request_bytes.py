"""How a call's request bytes are built from its recorded intent.

One function shared by the producer, resume and the naive restart, so "rebuild the
request from the manifest's intent under the current configuration" means exactly what
the producer did: the same intent, model and rendered context give the same bytes.
"""

from __future__ import annotations

from typing import Any

from codeai_tui.ledger.schema import canonical_json


def intent_for(purpose: str, objective: str | None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The intent a call is prepared from; a resume with no manifest prepares it anew
    from the task the same way (which is why no drift check is possible there)."""
    intent: dict[str, Any] = {"instruction": purpose}
    if objective is not None:
        intent["objective"] = objective
    if extra:
        intent.update(extra)
    return intent


# Intent keys that shape the request itself instead of being the user's instruction.
REQUEST_OPTIONS = "request"  # e.g. {"stream": true, "tools": [...]}: top-level request fields
CONVERSATION = "conversation"  # messages after the user's (assistant tool calls, tool results)
_RESERVED_FIELDS = frozenset({"model", "messages"})


def build_request(intent: dict[str, Any], model: str, rendered_context: str | None) -> bytes:
    """Canonical request body (UTF-8, sorted keys, `,` and `:`) for the chat endpoint.

    An intent without `request` / `conversation` builds exactly the bytes it always did, so
    the drift check of every manifest recorded before these keys existed still holds."""
    instruction = {k: v for k, v in intent.items() if k not in (REQUEST_OPTIONS, CONVERSATION)}
    messages: list[dict[str, Any]] = []
    if rendered_context is not None:
        messages.append({"role": "system", "content": rendered_context})
    messages.append({"role": "user", "content": canonical_json(instruction).decode("utf-8")})
    conversation = intent.get(CONVERSATION)
    if isinstance(conversation, list):
        messages.extend(m for m in conversation if isinstance(m, dict))
    request: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
    options = intent.get(REQUEST_OPTIONS)
    if isinstance(options, dict):
        request.update({k: v for k, v in options.items() if k not in _RESERVED_FIELDS})
    return canonical_json(request)
