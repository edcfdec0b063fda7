"""Messages the workers post to the app (thread-safe `post_message`, never widget calls)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.message import Message

from codeai_tui.console.model import CaseSnapshot, Worst
from codeai_tui.ledger import Event, LedgerError


class CasesFound(Message):
    def __init__(self, cases: list[Path]) -> None:
        super().__init__()
        self.cases = cases


class OpenFailed(Message):
    def __init__(self, error: LedgerError) -> None:
        super().__init__()
        self.error = error


class CaseOpened(Message):
    """First facts about a ledger, before the projection: enough for a first paint."""

    def __init__(self, case: Path, event_count: int, max_seq: int, last: str | None) -> None:
        super().__init__()
        self.case = case
        self.event_count = event_count
        self.max_seq = max_seq
        self.last = last


class ProjectionProgress(Message):
    def __init__(self, case: Path, done: int, total: int, label: str = "projecting") -> None:
        super().__init__()
        self.case = case
        self.done = done
        self.total = total
        self.label = label

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProjectionProgress)


class SnapshotReady(Message):
    def __init__(self, case: Path, snapshot: CaseSnapshot) -> None:
        super().__init__()
        self.case = case
        self.snapshot = snapshot


class AsOfReady(Message):
    def __init__(self, case: Path, snapshot: CaseSnapshot) -> None:
        super().__init__()
        self.case = case
        self.snapshot = snapshot


class LedgerTrouble(Message):
    def __init__(self, case: Path, error: LedgerError, *, ever_opened: bool) -> None:
        super().__init__()
        self.case = case
        self.error = error
        self.ever_opened = ever_opened


class PageLoaded(Message):
    def __init__(self, case: Path, page_no: int, events: list[Event]) -> None:
        super().__init__()
        self.case = case
        self.page_no = page_no
        self.events = events


class CaseSummarized(Message):
    def __init__(self, case: Path, summary: tuple[Worst, int] | str) -> None:
        super().__init__()
        self.case = case
        self.summary = summary


class TimelineFiltered(Message):
    def __init__(self, case: Path, needle: str, events: list[Event], truncated: bool) -> None:
        super().__init__()
        self.case = case
        self.needle = needle
        self.events = events
        self.truncated = truncated


class CallSeqs(Message):
    def __init__(self, case: Path, call_id: str, seqs: list[int], direction: int) -> None:
        super().__init__()
        self.case = case
        self.call_id = call_id
        self.seqs = seqs
        self.direction = direction


class PlanReady(Message):
    def __init__(self, plan: Any, case: Path) -> None:
        super().__init__()
        self.plan = plan
        self.case = case


class ResumeNote(Message):
    """A one-line refusal, failure or progress note from the resume path."""

    def __init__(self, text: str, *, kind: str) -> None:
        super().__init__()
        self.text = text
        self.kind = kind  # "refused" | "failed" | "progress"


class ResumeDone(Message):
    def __init__(self, result: Any) -> None:
        super().__init__()
        self.result = result
