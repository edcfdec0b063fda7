"""The console's one way to plan and run a resume, typed end to end.

The screen holds a `ResumeService`; tests give it a stub instead of patching modules.
Plans and results are `codeai_tui.actions.resume`'s own dataclasses: nothing on the write path
is `Any`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import ActionOptions
from codeai_tui.actions.resume import (
    ResumePlan,
    ResumeResult,
    plan_resume,
    resume_call,
)

ResumeOptions = ActionOptions  # what the operator gave on the command line, for every action


class ResumeService(Protocol):
    def plan(self, case: Path, call_id: str) -> ResumePlan: ...

    def run(self, case: Path, plan: ResumePlan, *, reason: str | None,
            send_credential: bool, progress: Callable[[str], None]) -> ResumeResult: ...


@dataclass(frozen=True, slots=True)
class LedgerResumeService:
    """The real one: `codeai_tui.actions.resume` under the operator's options."""

    options: ResumeOptions = ResumeOptions()

    def plan(self, case: Path, call_id: str) -> ResumePlan:
        return plan_resume(case, call_id, model=self.options.model,
                           base_url=self.options.base_url,
                           api_key_env=self.options.api_key_env)

    def run(self, case: Path, plan: ResumePlan, *, reason: str | None,
            send_credential: bool, progress: Callable[[str], None]) -> ResumeResult:
        # the caller decides: plan.destination.trusted, or the operator confirmed this URL
        # and variable in the dialog (never a default)
        return resume_call(case, plan.call_id, model=self.options.model,
                           base_url=self.options.base_url,
                           api_key_env=self.options.api_key_env,
                           send_credential=send_credential, reason=reason, expected=plan,
                           progress=progress)


__all__ = ["ActionRefused", "LedgerResumeService", "ResumeOptions", "ResumeService"]
