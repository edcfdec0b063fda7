"""Tool operations: the kernel that admits and completes them with signed receipts, the
receipt format and its verification, and the demo tool "publish report".

A services-layer package (see pyproject's import-linter layers): above the runner and the
ledger, below resume/inspect. Imports no Textual.
"""

from codeai_tui.tools.kernel import (
    TOOL_ADMITTED,
    TOOL_COMPLETED,
    Admission,
    Completed,
    OperationExists,
    Outcome,
    Tool,
    ToolContext,
    ToolInputError,
    ToolKernel,
    operation_key,
)
from codeai_tui.tools.publish import (
    PUBLISH_REPORT,
    PUBLISH_REPORT_TOOL,
    PublishReport,
    count_publications,
)
from codeai_tui.tools.receipts import (
    KeyProblem,
    canonical_bytes,
    check_receipt,
    load_or_create_signing_key,
    sign_receipt,
)
from codeai_tui.tools.verify import ReceiptsInputError, Verdict, verify_case_receipts

__all__ = [
    "PUBLISH_REPORT",
    "PUBLISH_REPORT_TOOL",
    "TOOL_ADMITTED",
    "TOOL_COMPLETED",
    "Admission",
    "Completed",
    "KeyProblem",
    "OperationExists",
    "Outcome",
    "PublishReport",
    "ReceiptsInputError",
    "Tool",
    "ToolContext",
    "ToolInputError",
    "ToolKernel",
    "Verdict",
    "canonical_bytes",
    "check_receipt",
    "count_publications",
    "load_or_create_signing_key",
    "operation_key",
    "sign_receipt",
    "verify_case_receipts",
]
