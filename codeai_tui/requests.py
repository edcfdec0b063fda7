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


def build_request(intent: dict[str, Any], model: str, rendered_context: str | None) -> bytes:
    """Canonical request body (UTF-8, sorted keys, `,` and `:`) for the chat endpoint."""
    messages: list[dict[str, str]] = []
    if rendered_context is not None:
        messages.append({"role": "system", "content": rendered_context})
    messages.append({"role": "user", "content": canonical_json(intent).decode("utf-8")})
    return canonical_json({"model": model, "messages": messages, "temperature": 0})
