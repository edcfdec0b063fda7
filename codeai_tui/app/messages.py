"""Messages the workers post up to the screen: small dataclasses, no widget calls.

Every message names the case it is about, so a late answer for a case the operator has
left is dropped instead of drawn on another case.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from textual.message import Message

from codeai_tui.console.drift import DriftCheck
from codeai_tui.console.model import CaseSnapshot, Skeleton
from codeai_tui.console.severity import CaseVerdict
from codeai_tui.ledger import LedgerError


@dataclass
class OpenFailed(Message):
    error: LedgerError


@dataclass
class CaseOpened(Message):
    """First facts about a ledger, before the projection: enough for a first paint."""

    case: Path
    event_count: int
    max_seq: int
    last: str | None


@dataclass
class SkeletonReady(Message):
    """Every call's stage from the covering index, before the projection: the
    effect-unknown count and the Calls pane, painted first (services/skeleton.py)."""

    case: Path
    skeleton: Skeleton


@dataclass
class ProjectionProgress(Message):
    case: Path
    done: int
    total: int
    label: str = "projecting"

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProjectionProgress)


@dataclass
class SnapshotReady(Message):
    case: Path
    snapshot: CaseSnapshot
    verdict: CaseVerdict


@dataclass
class AsOfReady(Message):
    case: Path
    snapshot: CaseSnapshot
    verdict: CaseVerdict


@dataclass
class LedgerTrouble(Message):
    case: Path
    error: LedgerError
    ever_opened: bool


@dataclass
class LedgerReplaced(Message):
    """The case's ledger file is another file than the one read so far."""

    case: Path


@dataclass
class DriftChecked(Message):
    case: Path
    checks: list[DriftCheck]


@dataclass
class WorkerFailed(Message):
    """A widget's worker died of a bug (ledger problems are messages of their own): the
    screen says so plainly; `group` "follow" means the live follow stopped."""

    group: str
    error: BaseException
