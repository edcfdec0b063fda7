"""Case directories the reliability harness acts on, made through the project's writer.

A case lives directly under the provider's receipts root (bundle mode), so each case has
its own receipt log and `case.json` points the action at `/c/<case>/v1` on loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

from codeai_tui.ledger import CaseConfig, LedgerWriter, ProviderConfig
from codeai_tui.request_bytes import intent_for
from codeai_tui.runner import CallRunner

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
