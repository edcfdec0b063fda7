"""WORK_STATE_V1: the pure projection of a ledger (docs/ledger.md section 4).

No I/O, no clock, appends nothing (an import-linter contract keeps sqlite3 and os out).
The package is cut by what each part is: `vocab` (stages, operations, effects),
`evidence` (per-entity records and the folds that build them), `ladder` (evidence ->
verdict), `reasons`, `receipts` (section 5's cross-check and the as-of cut-off),
`verdicts` (immutable snapshots) and `projector` (the event-by-event oracle). The SQL
gatherer in `codeai_tui.services` feeds the same folds and the same ladder.
"""

from codeai_tui.workstate.evidence import (
    ARTIFACT_FIELDS,
    Anomaly,
    AttemptEvidence,
    CallEvidence,
    CompilationEvidence,
    TaskEvidence,
    check_artifact_refs,
    fold_call_event,
    fold_compilation_event,
    fold_task_event,
)
from codeai_tui.workstate.ladder import (
    TaskRollup,
    classify_call,
    classify_compilation,
    classify_task,
)
from codeai_tui.workstate.projector import Projector, project, project_call
from codeai_tui.workstate.reasons import call_reason
from codeai_tui.workstate.receipts import (
    check_coverage,
    check_receipts,
    parse_time,
    receipts_before,
)
from codeai_tui.workstate.verdicts import (
    CallState,
    CompilationState,
    ReceiptCheck,
    TaskState,
    WorkState,
)
from codeai_tui.workstate.vocab import (
    WORK_STATE_FORMAT,
    CallStage,
    CompilationStage,
    NextOperation,
    ProviderEffect,
)

__all__ = [
    "ARTIFACT_FIELDS",
    "WORK_STATE_FORMAT",
    "Anomaly",
    "AttemptEvidence",
    "CallEvidence",
    "CallStage",
    "CallState",
    "CompilationEvidence",
    "CompilationStage",
    "CompilationState",
    "NextOperation",
    "Projector",
    "ProviderEffect",
    "ReceiptCheck",
    "TaskEvidence",
    "TaskRollup",
    "TaskState",
    "WorkState",
    "call_reason",
    "check_artifact_refs",
    "check_coverage",
    "check_receipts",
    "classify_call",
    "classify_compilation",
    "classify_task",
    "fold_call_event",
    "fold_compilation_event",
    "fold_task_event",
    "parse_time",
    "project",
    "project_call",
    "receipts_before",
]
