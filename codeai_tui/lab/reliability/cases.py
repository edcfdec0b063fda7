"""Case directories the reliability harness acts on, made through the project's writer.

A case lives directly under the provider's receipts root (bundle mode), so each case has
its own receipt log and `case.json` points the action at `/c/<case>/v1` on loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

from codeai_tui.ledger import CaseConfig, LedgerWriter, ProviderConfig
from codeai_tui.runtime.request_bytes import intent_for
from codeai_tui.runtime.runner import CallRunner

PARAGRAPH = "The committee, having met, decided that the decision was decided."
MODEL = "synthetic-small"


def case_base_url(provider_url: str, case: Path) -> str:
    """The bundle-mode URL that logs this case's requests to its own receipt log."""
    return f"{provider_url.rsplit('/v1', 1)[0]}/c/{case.name}/v1"


def make_call_case(case: Path, provider_url: str, *, call_id: str = "call-1",
                   upto: str = "manifest") -> str:
    """A task with compiled context and one call stopped after `upto` ("requested" or
    "manifest"): the state a producer leaves when killed before its first attempt.
    Returns the call id, which resume is then permitted to act on."""
    case.mkdir(parents=True, exist_ok=True)
    (case / "case.json").write_text(json.dumps({
        "provider": {"base_url": case_base_url(provider_url, case), "model": MODEL,
                     "api_key_env": "CODEAI_API_KEY"},
        "description": "reliability harness case",
    }), encoding="utf-8")
    config = CaseConfig(ProviderConfig(base_url=case_base_url(provider_url, case), model=MODEL))
    with LedgerWriter.create(case) as writer:
        runner = CallRunner(case, writer, config)
        writer.append("task.created", "task-1", {"title": "review a paragraph"})
        writer.append("task.objective", "task-1", {"objective": "flag unclear sentences"})
        package = runner.compile_context(
            "task-1", "comp-1",
            [{"id": "A", "required": True, "size": 12, "size_estimated": True,
              "lineage": ["artifact:para"]}],
            ["A"], {"A": PARAGRAPH},
        )
        add_call(case, writer, config, call_id, upto=upto, package=package)
    return call_id


def add_call(case: Path, writer: LedgerWriter, config: CaseConfig, call_id: str, *,
             upto: str = "manifest", package: tuple[str, str] | None = None) -> None:
    """Append one more call of task-1 that stopped before its first attempt."""
    runner = CallRunner(case, writer, config)
    key = f"key-{call_id}"
    runner.request("task-1", call_id, key, "review")
    if upto == "manifest":
        runner.manifest("task-1", call_id, key, intent_for("review", "flag unclear sentences"),
                        package)


# The answer an overloaded provider gives (the synthetic provider's --fail-first body).
OVERLOADED = b'{"error":{"message":"overloaded, try again","type":"overloaded"}}'
# The states an advance action acts on (codeai_tui/actions/advance.py), in ladder order.
ADVANCE_STAGES = ("effect_unknown", "observed", "interpreted", "retry_decided",
                  "decided_stop", "attempt_completed")


def make_advance_case(case: Path, provider_url: str, upto: str,
                      call_id: str = "call-1") -> str:
    """A call whose first attempt was answered 503 and whose runner died after `upto`
    (one of ADVANCE_STAGES): the record a producer leaves when killed at that commit.
    `decided_stop` decided stop (retries exhausted), `attempt_completed` also completed
    the attempt as failed. Written through the project's writer; the 503 body is stored
    as the response artifact, as the runner stores it."""
    if upto not in ADVANCE_STAGES:
        raise ValueError(f"upto must be one of {ADVANCE_STAGES}")
    make_call_case(case, provider_url, call_id=call_id)
    advance_call(case, call_id, upto)
    return call_id


def advance_call(case: Path, call_id: str, upto: str) -> None:
    """Record call_id's first attempt up to `upto` (see make_advance_case); the call
    must have its manifest and no attempt."""
    from codeai_tui.ledger import LedgerReader

    with LedgerReader(case) as reader:
        manifest = next(e for e in reader.events_for_call(call_id) if e.kind == "call.manifest")
    with LedgerWriter.open(case) as writer:
        sha = str((manifest.payload or {})["request_sha256"])
        ids = {"call_id": call_id, "attempt_id": f"{call_id}-a1"}
        steps: list[tuple[str, dict[str, object]]] = [
            ("attempt.started", {"attempt_no": 1, "request_sha256": sha})]
        if upto != "effect_unknown":
            from codeai_tui.ledger.artifacts import ArtifactStore

            body = ArtifactStore(case).put(OVERLOADED)
            steps.append(("attempt.observed", {
                "transport": {"status": 503, "bytes": len(OVERLOADED)},
                "response_sha256": body, "response_artifact": body}))
        if upto in ("interpreted", "retry_decided", "decided_stop", "attempt_completed"):
            steps.append(("attempt.interpreted", {"interpreter": "v1",
                                                  "outcome": "retryable_error"}))
        if upto == "retry_decided":
            steps.append(("attempt.retry_decided", {"decision": "retry", "reason": "status 503"}))
        if upto in ("decided_stop", "attempt_completed"):
            steps.append(("attempt.retry_decided", {"decision": "stop",
                                                    "reason": "status 503, attempts used"}))
        if upto == "attempt_completed":
            steps.append(("attempt.completed", {"status": "failed"}))
        for kind, payload in steps:
            writer.append(kind, "task-1", payload, **ids)

