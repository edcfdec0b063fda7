"""The ledger layer: schema, read, write, artifacts, receipts, case directories.

Imports no Textual and nothing above it (enforced by import-linter, see pyproject).
"""

from codeai_tui.ledger.artifacts import ArtifactStore, is_sha256_hex, sha256_hex
from codeai_tui.ledger.case import (
    CaseConfig,
    ProviderConfig,
    find_cases,
    load_case_config,
)
from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.ledger.reader import LedgerReader, resolve_ledger_path
from codeai_tui.ledger.receipts import Receipt, ReceiptLog, read_more_receipts, read_receipts
from codeai_tui.ledger.schema import LEDGER_FILENAME, LEDGER_FORMAT, Event, canonical_json
from codeai_tui.ledger.writer import LedgerWriter, NewEvent, utc_now

__all__ = [
    "ArtifactStore",
    "CaseConfig",
    "Event",
    "LEDGER_FILENAME",
    "LEDGER_FORMAT",
    "LedgerError",
    "LedgerProblem",
    "LedgerReader",
    "LedgerWriter",
    "NewEvent",
    "ProviderConfig",
    "Receipt",
    "ReceiptLog",
    "canonical_json",
    "find_cases",
    "is_sha256_hex",
    "load_case_config",
    "read_more_receipts",
    "read_receipts",
    "resolve_ledger_path",
    "sha256_hex",
    "utc_now",
]
