"""What a resume plan's drift means to an operator, and what to fix.

The list must not promise what the dialog refuses: a resumable call's row says
"drift not checked yet" until its plan has been read, then match / drift / no check
possible. A drift refusal names what to change.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from codeai_tui.actions.resume import ResumePlan


class DriftStatus(StrEnum):
    NOT_CHECKED = "drift not checked yet"
    MATCH = "request matches"
    DRIFT = "drift: resume refuses"
    NO_CHECK_POSSIBLE = "no manifest: no drift check possible"
    UNAVAILABLE = "cannot plan"


@dataclass(frozen=True, slots=True)
class DriftCheck:
    """One resumable call's plan verdict, pinned to the evidence it was read at."""

    call_id: str
    last_seq: int
    status: DriftStatus
    fixes: tuple[str, ...] = ()


def check_from_plan(plan: ResumePlan) -> DriftCheck:
    if not plan.drift_check_possible:
        status = DriftStatus.NO_CHECK_POSSIBLE
    elif plan.drift:
        status = DriftStatus.DRIFT
    else:
        status = DriftStatus.MATCH
    return DriftCheck(plan.call_id, plan.evidence[1], status, drift_fixes(plan))


def drift_fixes(plan: ResumePlan) -> tuple[str, ...]:
    """For each drifted input, one sentence naming what to change."""
    fixes: list[str] = []
    if not plan.drift_check_possible or not plan.drift:
        return ()
    if plan.model_recorded != plan.model_configured:
        fixes.append(f"model: recorded {plan.model_recorded}, configured "
                     f"{plan.model_configured}; set provider.model in case.json to "
                     f"{plan.model_recorded} or open with --model {plan.model_recorded}")
    if plan.context_package_recorded != plan.context_package_now:
        fixes.append(f"context package: recorded {plan.context_package_recorded}, the task's "
                     f"latest is {plan.context_package_now}; the call was prepared from "
                     "another package: do not resume it, start a new call")
    if plan.rendered_sha256_recorded != plan.rendered_sha256_now:
        if plan.rendered_sha256_now is None:
            fixes.append(f"rendered context artifact sha256 {plan.rendered_sha256_recorded} "
                         "is missing: restore artifacts/sha256/ from the producer's host")
        else:
            fixes.append(f"rendered context artifact changed (recorded "
                         f"{plan.rendered_sha256_recorded}, now {plan.rendered_sha256_now}): "
                         "restore the original artifact")
    if not fixes and plan.request_sha256_recorded != plan.request_sha256_rebuilt:
        fixes.append("the rebuilt request differs from the recorded one although model and "
                     "context match: check the manifest's intent and the request builder "
                     "version")
    return tuple(fixes)
