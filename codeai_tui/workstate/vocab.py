"""The projection's vocabulary (docs/ledger.md section 4): stages, next operations, effects."""

from __future__ import annotations

from enum import StrEnum

WORK_STATE_FORMAT = "codeai.work_state.v1"
# The JSON Schema the `inspect --json` document of one case follows (its `$schema`): a
# file shipped in the package, named by its path from the package's parent directory.
WORK_STATE_SCHEMA = "codeai_tui/schemas/work_state.v1.schema.json"


class NextOperation(StrEnum):
    NONE = "none"
    START_CALL = "start_call"
    START_TOOL = "start_tool"  # docs/tools.md: a planned tool call never admitted
    FIX_INPUTS = "fix_inputs"
    RECONCILE_EFFECT = "reconcile_effect"
    REINTERPRET = "reinterpret"
    REDECIDE = "redecide"
    START_NEXT_ATTEMPT = "start_next_attempt"
    FINALIZE = "finalize"
    DECIDE_DUPLICATE = "decide_duplicate"  # docs/reconcile.md: finalize, or accept a duplicate
    RECOMPILE = "recompile"
    REPEAT_ACCEPTANCE = "repeat_acceptance"
    CHECK_AND_ACCEPT = "check_and_accept"


class CallStage(StrEnum):
    SUPERSEDED = "superseded"
    COMPLETED = "completed"
    PREPARATION_FAILED = "preparation_failed"
    REQUESTED = "requested"
    MANIFEST_RECORDED = "manifest_recorded"
    EFFECT_UNKNOWN = "effect_unknown"
    OBSERVED = "observed"
    INTERPRETED = "interpreted"
    RETRY_DECIDED = "retry_decided"
    ATTEMPT_COMPLETED = "attempt_completed"
    # docs/reconcile.md: an operator's recorded finding for an effect-unknown attempt
    RECONCILED_NOT_RECEIVED = "reconciled_not_received"
    RECONCILED_RECEIVED = "reconciled_received"


class CompilationStage(StrEnum):
    REQUESTED = "requested"
    COMPLETED = "completed"
    FAILED = "failed"


class ProviderEffect(StrEnum):
    NONE = "none"
    UNKNOWN = "unknown"
    HAPPENED = "happened"
