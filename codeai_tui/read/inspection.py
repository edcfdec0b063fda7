"""`codeai-tui inspect`: the projection of one case or a bundle, as JSON or a table.

Reads only (LedgerReader); every untrusted string printed in the table goes through
`textsafe.visible` so a payload cannot drive the operator's terminal.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

import orjson

from codeai_tui.ledger.case import case_config_problem, find_cases
from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.ledger.evidence_sql import EvidenceSQL, FastPathUnfit
from codeai_tui.ledger.receipts import ReceiptLog, read_receipts
from codeai_tui.services.forked import HelperPlan
from codeai_tui.services.heap import building
from codeai_tui.services.projection import project_case as _project_case
from codeai_tui.services.projection import stream_case
from codeai_tui.services.tool_receipts import read_tool_receipts, with_tool_receipts
from codeai_tui.textsafe import visible
from codeai_tui.workstate import WORK_STATE_FORMAT, CallState, WorkState
from codeai_tui.workstate.verdicts import document_head

if TYPE_CHECKING:  # (the tables' fields)
    from codeai_tui.workstate import Anomaly, CompilationState, ReceiptCheck, TaskState
    from codeai_tui.workstate.tool_ops import ToolsState
    from codeai_tui.workstate.tool_receipts import ToolReceipts


@dataclass(frozen=True, slots=True)
class CaseInspection:
    case: str
    state: WorkState | None
    error: str | None = None
    config_problem: str | None = None  # why case.json cannot be used (resume would refuse)
    receipts_torn: bool = False  # the log's last line was cut short (tolerated, noted)

    def as_json(self) -> dict[str, Any]:
        if self.state is None:
            return {"format": WORK_STATE_FORMAT, "case": self.case, "error": self.error}
        return self.state.as_json(self.case)


def project_case(case_dir: str | os.PathLike[str], as_of: int | None = None) -> WorkState:
    """Project one case directory (raises LedgerError): the fast path when the ledger
    allows it, else event by event (`WorkState.gathered` says which)."""
    return _project(case_dir, as_of, read_receipts(case_dir))


def _project(case_dir: str | os.PathLike[str], as_of: int | None, receipts: ReceiptLog
             ) -> WorkState:
    return with_tool_receipts(_project_case(case_dir, as_of, receipts=receipts), case_dir)


def _is_bundle(path: str) -> bool:
    p = Path(path)
    # lexists: a ledger that is a symlink or special file is this case's error, not a bundle
    return p.is_dir() and not os.path.lexists(p / "ledger.sqlite3")


def _inspect_one(label: str, case_dir: Path, as_of: int | None) -> CaseInspection:
    """One case with the notes the table shows beside its projection (raises LedgerError)."""
    receipts = read_receipts(case_dir)
    state = _project(case_dir, as_of, receipts)
    return CaseInspection(label, state, None, case_config_problem(case_dir),
                          receipts.truncated_tail)


def inspect_path(path: str, as_of: int | None = None) -> tuple[bool, list[CaseInspection]]:
    """(is_bundle, inspections). A single case that fails raises LedgerError; in a bundle
    a failing case is reported in place so the others still show."""
    cases = find_cases(path)
    is_bundle = _is_bundle(path)
    if not is_bundle:
        return False, [_inspect_one(path, cases[0], as_of)]
    out: list[CaseInspection] = []
    for case in cases:
        label = str(case)
        try:
            out.append(_inspect_one(label, case, as_of))
        except LedgerError as exc:
            out.append(CaseInspection(label, None, str(exc)))
    return True, out


# The JSON Schema a bundle's `inspect --json` document follows (its `$schema`; each case in
# it follows WORK_STATE_SCHEMA, or is the one-line error of a case that cannot be read).
BUNDLE_SCHEMA = "codeai_tui/schemas/bundle.v1.schema.json"


def to_json(is_bundle: bool, inspections: list[CaseInspection]) -> dict[str, Any]:
    if is_bundle:
        return {"$schema": BUNDLE_SCHEMA, "cases": [i.as_json() for i in inspections]}
    return inspections[0].as_json()


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True)


def _compact(value: object) -> str:
    """Compact JSON, ASCII only (no raw control, bidi or other non-ASCII character
    reaches a terminal or a helper's UTF-8 lines): orjson, ten times quicker, wherever
    its output is ASCII (a call's fields are text, integers and booleans: the same JSON
    either way); the standard library, escaping, for the rest."""
    try:
        out = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    if out.isascii():
        return out.decode()
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _loads(text: str | bytes) -> Any:
    """What `_compact` wrote (the standard library for what orjson refuses: a lone
    surrogate's escape)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def _stream_case(case_dir: Path, label: str, as_of: int | None, out: TextIO,
                 plan: HelperPlan | None = None, *, in_bundle: bool = False) -> None:
    """One case's document, written as it is produced: the calls one per line as the
    projection finishes them (memory stays flat), then what depends on all of them.
    Key order differs from `WorkState.as_json` (calls come first); the content is the
    same, which tests/core/test_fast_path.py checks. `in_bundle`: a ledger that fails
    its first reads (nothing of it written yet) is reported in place, as its error."""
    with building(), EvidenceSQL(case_dir) as sql:
        try:
            streamed = stream_case(sql, case_dir, as_of, plan)
        except LedgerError as exc:
            if not in_bundle:
                raise
            out.write(_dump(CaseInspection(label, None, str(exc)).as_json()))
            return
        head = document_head(label, streamed.as_of_seq, streamed.event_count)
        out.write(_dump(head)[:-1] + ', "calls": [')
        tool_receipts = read_tool_receipts(case_dir)
        try:
            index = streamed.receipt_index()

            def line(call: CallState) -> str:
                return _compact(call.as_json(index, tool_receipts))

            for i, text in enumerate(streamed.call_lines(line, plan)):
                out.write(("\n  " if i == 0 else ",\n  ") + text)
            anomalies, tasks, comps, receipts, _unknown = streamed.rest()
            counts = streamed.tool_counts
        except FastPathUnfit as exc:  # the checks before the first call missed it: one line
            raise LedgerError(LedgerProblem.CORRUPT,
                              f"{case_dir}: the ledger changed shape while read ({exc}); "
                              "run inspect again") from None
    with building():  # (10^5 compilations' documents: the collector cost a third more)
        out.write("\n ],\n \"anomalies\": " + _dump([a.as_json() for a in anomalies]))
        out.write(",\n \"tasks\": " + _dump([t.as_json() for t in tasks]))
        out.write(",\n \"compilations\": " + _dump([c.as_json() for c in comps]))
        out.write(",\n \"receipts\": " + _dump(receipts.as_json()))
    tail = counts.into({})
    if tail:  # only a case with tool evidence: a v1 document is unchanged
        out.write(",\n \"counts\": " + _dump(tail["counts"]))
    out.write("}")


def write_json(path: str, as_of: int | None, out: TextIO,
               plan: HelperPlan | None = None) -> None:
    """`inspect --json`: a case's document, or a bundle's `{"cases": [...]}`, streamed.
    A single case that fails raises LedgerError before anything is written; in a bundle
    a failing case is reported in place. `plan`: when a helper process may render half
    of a big case's calls (services/forked.py; the document is the same)."""
    cases = find_cases(path)
    if not _is_bundle(path):
        with EvidenceSQL(cases[0]):  # fail before writing anything
            pass
        _stream_case(cases[0], path, as_of, out, plan)
        out.write("\n")
        return
    out.write('{"$schema": ' + _dump(BUNDLE_SCHEMA) + ', "cases": [')
    for i, case in enumerate(cases):
        out.write("\n" if i == 0 else ",\n")
        try:
            with EvidenceSQL(case):
                pass
        except LedgerError as exc:
            out.write(_dump(CaseInspection(str(case), None, str(exc)).as_json()))
            continue
        _stream_case(case, str(case), as_of, out, plan, in_bundle=True)
    out.write("\n]}\n")


CALL_HEADERS = ["CALL", "KEY", "STAGE", "NEXT", "ATT", "EFFECT", "LINK", ""]
TOOL_HEADERS = ["TOOL OPERATION", "CALL", "TOOL", "STATE", "NEXT", "RECEIPT", ""]


def _cells(headers: list[str], row: list[str]) -> list[str]:
    """A row's cells as shown: ids are cut at 48 characters, a REASON at 160."""
    return [visible(c, one_line=True, limit=160 if h == "REASON" else 48)
            for c, h in zip(row, headers, strict=True)]


SPOOL_AFTER = 2000  # rows a sheet keeps in memory before it moves them to a file


class _Sheet:
    """One table: its rows' cells as shown and the widths of its left-aligned columns,
    found as rows come. Kept in a list, or (`spool`) past SPOOL_AFTER rows in an
    unlinked temporary file, so `inspect`'s table of 10^5 calls costs no memory while
    the projection streams (and a bundle's small cases make no file)."""

    def __init__(self, headers: list[str], *, spool: bool = False) -> None:
        self.headers = headers
        self.widths = [len(h) for h in headers]
        self.count = 0
        self._rows: list[list[str]] = []
        self._spool = spool
        self._file: IO[bytes] | None = None

    def add(self, row: list[str]) -> None:
        self.add_cells(_cells(self.headers, row))

    def add_cells(self, cells: list[str]) -> None:
        self.widths = [max(w, len(c)) for w, c in zip(self.widths, cells, strict=True)]
        self.count += 1
        if self._file is not None:
            self._file.write(_compact(cells).encode("ascii") + b"\n")
            return
        self._rows.append(cells)
        if self._spool and len(self._rows) > SPOOL_AFTER:
            import tempfile  # (only past SPOOL_AFTER rows; a small case never pays it)

            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by `close`
            self._file.writelines(_compact(row).encode("ascii") + b"\n" for row in self._rows)
            self._rows = []

    def lines(self) -> Iterator[str]:
        fmt = "  ".join(f"{{:<{w}}}" for w in self.widths)
        yield fmt.format(*self.headers)
        yield fmt.format(*("-" * w for w in self.widths))
        if self._file is not None:
            self._file.seek(0)
            for line in self._file:
                yield fmt.format(*_loads(line))
        for cells in self._rows:  # (none once spooled)
            yield fmt.format(*cells)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    sheet = _Sheet(headers)
    for row in rows:
        sheet.add(row)
    return list(sheet.lines())


def _cut(text: str, limit: int = 300) -> str:
    """One untrusted value inside a report line: a 4 MB kind must not flood the terminal
    (`--json` keeps every character). The middle goes, so a problem worded after a long
    id ("<kind>: payload is not valid JSON") still shows its end."""
    shown = visible(text, one_line=True)
    if len(shown) <= limit:
        return shown
    head = limit * 2 // 5
    return shown[:head] + "\u2026" + shown[len(shown) - (limit - head - 1):]


def _call_row(c: CallState) -> list[str]:
    mark = "!! effect unknown: duplicate risk" if c.effect_unknown else ""
    return [
        c.call_id, c.idempotency_key or "-", c.stage.value, c.next_operation.value,
        str(c.attempts), c.provider_effect.value,
        c.superseded_by and f"-> {c.superseded_by}" or (c.resumed_from and f"<- {c.resumed_from}") or "",
        mark,
    ]


def _tools(c: CallState) -> ToolsState | None:
    """The call's tool rungs, judged once (None for a call with no tool evidence)."""
    return c.tools if c.evidence.tools is not None else None


def _tool_rows(c: CallState, tools: ToolsState | None, tool_receipts: ToolReceipts | None
               ) -> list[list[str]]:
    rows = []
    for op in tools.operations if tools is not None else ():
        receipt = op.as_json(tool_receipts).get("receipt", {}).get("verdict", "-")
        mark = "!! tool effect unknown: duplicate risk" if op.effect_unknown else ""
        rows.append([op.subject, c.call_id, op.tool or "-", op.stage.value,
                     op.next_operation.value, receipt, mark])
    return rows


@dataclass(slots=True)
class _Tables:
    """What a case's table shows besides its label: the calls and their tool operations
    as sheets, the rest as the projection gives it."""

    event_count: int
    as_of_seq: int
    effect_unknown: int
    tool_effect_unknown: int
    any_tools: bool  # a call with tool evidence (only then the tool columns show)
    tasks: Sequence[TaskState]
    calls: _Sheet
    tools: _Sheet
    compilations: Sequence[CompilationState]
    receipts: ReceiptCheck
    anomalies: Sequence[Anomaly]
    gathered: str
    unknown_kinds: dict[str, int]
    receipts_torn: bool
    config_problem: str | None


def _table_lines(label: str, t: _Tables) -> Iterator[str]:
    yield f"case {visible(label, one_line=True)}"
    yield (
        f"  events {t.event_count} (as of seq {t.as_of_seq})  effect_unknown {t.effect_unknown}"
        f"  duplicate effects {len(t.receipts.duplicates)}"
        f"  uncovered receipts {len(t.receipts.uncovered)}  anomalies {len(t.anomalies)}"
        + (f"  tool effect unknown {t.tool_effect_unknown}" if t.any_tools else "")
    )
    if t.tasks:
        yield ""
        yield from _table(
            ["TASK", "NEXT", "SUBJECT", "REASON"],
            [[x.task_id, x.next_operation.value, x.subject_id or "-", x.reason] for x in t.tasks],
        )
    if t.calls.count:
        yield ""
        yield from t.calls.lines()
    if t.tools.count:  # docs/tools.md: only a case with tool operations shows this table
        yield ""
        yield from t.tools.lines()
    if t.compilations:
        yield ""
        yield from _table(
            ["COMPILATION", "STAGE", "NEXT", "OFFERED", "MISSING REQUIRED"],
            [[c.compilation_id, c.stage.value, c.next_operation.value, str(len(c.offered)),
              ",".join(c.missing_required) or "-"] for c in t.compilations],
        )
    rc = t.receipts
    yield ""
    yield (
        f"  receipts {rc.count}" + ("" if rc.log_present else " (no provider log)")
        + (f"  uncovered: {', '.join(rc.uncovered)}" if rc.uncovered else "")
        + ("  duplicates: " + "; ".join(" = ".join(d) for d in rc.duplicates) if rc.duplicates else "")
    )
    for a in t.anomalies[:20]:
        yield f"  anomaly at seq {a.seq}: {_cut(a.problem)}"
    if len(t.anomalies) > 20:
        yield f"  ... {len(t.anomalies) - 20} more anomalies"
    if t.gathered != "sql":
        yield f"  read event by event: {t.gathered}"
    for kind, n in sorted(t.unknown_kinds.items()):
        yield f"  unknown kind {_cut(kind, 120)}: {n} event(s), ignored by the projection"
    for i, (line_no, problem) in enumerate(rc.problems):
        if i == 5:
            yield f"  ... {len(rc.problems) - 5} more receipt log problems"
            break
        where = f" line {line_no}" if line_no else ""
        yield f"  receipt log{where}: {_cut(problem)}"
    if t.receipts_torn:
        yield "  receipt log: its last line is cut short (a crash mid-write?); not counted"
    if t.config_problem:
        yield f"  case.json: {t.config_problem} (resume refuses this case)"


def render_table(inspection: CaseInspection) -> str:
    """One case's table from its whole projection (`write_table` streams the same)."""
    st = inspection.state
    if st is None:
        return "\n".join([f"case {visible(inspection.case, one_line=True)}",
                          f"  error: {visible(inspection.error, one_line=True)}"])
    calls, tools = _Sheet(CALL_HEADERS), _Sheet(TOOL_HEADERS)
    for c in st.calls:
        calls.add(_call_row(c))
        for row in _tool_rows(c, _tools(c), st.tool_receipts):
            tools.add(row)
    tables = _Tables(
        st.event_count, st.as_of_seq, st.effect_unknown_count, st.tool_effect_unknown_count,
        any(c.evidence.tools is not None for c in st.calls), st.tasks, calls, tools,
        st.compilations, st.receipts, st.anomalies, st.gathered, st.unknown_kinds,
        inspection.receipts_torn, inspection.config_problem)
    return "\n".join(visible(line) for line in _table_lines(inspection.case, tables))


def _call_record(call: CallState, tool_receipts: ToolReceipts | None) -> str:
    """One call's part of the table as one ASCII line (a helper process may render it):
    its cells, its tool operations' cells, and what the counts above the table need."""
    tools = _tools(call)
    return _compact([
        _cells(CALL_HEADERS, _call_row(call)),
        [_cells(TOOL_HEADERS, row) for row in _tool_rows(call, tools, tool_receipts)],
        call.effect_unknown, tools.effect_unknown_count if tools is not None else 0,
        call.evidence.tools is not None])


def _streamed_tables(case_dir: Path, as_of: int | None, plan: HelperPlan | None
                     ) -> _Tables:
    """A case's tables with the calls spooled as the projection streams them (raises
    LedgerError; FastPathUnfit when the ledger changed shape while read)."""
    calls, tools = _Sheet(CALL_HEADERS, spool=True), _Sheet(TOOL_HEADERS, spool=True)
    try:
        with building(), EvidenceSQL(case_dir) as sql:
            streamed = stream_case(sql, case_dir, as_of, plan)
            tool_receipts = read_tool_receipts(case_dir)
            unknown = tool_unknown = 0
            any_tools = False
            for text in streamed.call_lines(lambda c: _call_record(c, tool_receipts), plan):
                cells, tool_cells, effect_unknown, tool_count, has_tools = _loads(text)
                calls.add_cells(cells)
                for row in tool_cells:
                    tools.add_cells(row)
                unknown += bool(effect_unknown)
                tool_unknown += tool_count
                any_tools = any_tools or bool(has_tools)
            anomalies, tasks, comps, receipts, unknown_kinds = streamed.rest()
    except BaseException:
        calls.close()
        tools.close()
        raise
    log = streamed.receipt_log
    return _Tables(streamed.event_count, streamed.as_of_seq, unknown, tool_unknown, any_tools,
                   tasks, calls, tools, comps, receipts, anomalies, streamed.gathered,
                   unknown_kinds, bool(log and log.truncated_tail),
                   case_config_problem(case_dir))


def _case_table(case_dir: Path, label: str, as_of: int | None, plan: HelperPlan | None,
                out: TextIO) -> None:
    """One case's table, written once its projection is done (raises LedgerError first)."""
    try:
        tables = _streamed_tables(case_dir, as_of, plan)
    except FastPathUnfit:  # it changed under the fast path: read as render_table would
        out.write(render_table(_inspect_one(label, case_dir, as_of)) + "\n")
        return
    try:
        with building():  # (the tables of 10^5 compilations: the collector cost a third more)
            for line in _table_lines(label, tables):
                out.write(visible(line) + "\n")
    finally:
        tables.calls.close()
        tables.tools.close()


def write_table(path: str, as_of: int | None, out: TextIO,
                plan: HelperPlan | None = None) -> None:
    """`inspect` without --json: what `render_table` gives for each case (a bundle's
    separated by a blank line), the calls streamed through a temporary file so memory
    stays flat, and with `plan` half of them rendered by a helper process (as
    `write_json`). A single case that fails raises LedgerError before anything is
    written; in a bundle a failing case is reported in place."""
    cases = find_cases(path)
    if not _is_bundle(path):
        _case_table(cases[0], path, as_of, plan, out)
        return
    for i, case in enumerate(cases):
        if i:
            out.write("\n")
        try:
            _case_table(case, str(case), as_of, plan, out)
        except LedgerError as exc:
            out.write(render_table(CaseInspection(str(case), None, str(exc))) + "\n")
