"""`codeai-tui inspect`: the projection of one case or a bundle, as JSON or a table.

Reads only (LedgerReader); every untrusted string printed in the table goes through
`textsafe.visible` so a payload cannot drive the operator's terminal.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

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
from codeai_tui.workstate import CallState, WorkState
from codeai_tui.workstate.verdicts import document_head


@dataclass(frozen=True, slots=True)
class CaseInspection:
    case: str
    state: WorkState | None
    error: str | None = None
    config_problem: str | None = None  # why case.json cannot be used (resume would refuse)
    receipts_torn: bool = False  # the log's last line was cut short (tolerated, noted)

    def as_json(self) -> dict[str, Any]:
        if self.state is None:
            return {"format": "codeai.work_state.v1", "case": self.case, "error": self.error}
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


def to_json(is_bundle: bool, inspections: list[CaseInspection]) -> dict[str, Any]:
    if is_bundle:
        return {"cases": [i.as_json() for i in inspections]}
    return inspections[0].as_json()


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True)


def _dump_call(doc: dict[str, Any]) -> str:
    """One call's line, compact and ASCII only (no raw control, bidi or other non-ASCII
    character reaches a terminal): orjson, ten times quicker, wherever its output is
    ASCII (a call's fields are text, integers and booleans: the same JSON either way);
    the standard library, escaping, for the rest."""
    try:
        out = orjson.dumps(doc)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(doc, ensure_ascii=True, separators=(",", ":"))
    if out.isascii():
        return out.decode()
    return json.dumps(doc, ensure_ascii=True, separators=(",", ":"))


def _stream_case(case_dir: Path, label: str, as_of: int | None, out: TextIO,
                 plan: HelperPlan | None = None) -> None:
    """One case's document, written as it is produced: the calls one per line as the
    projection finishes them (memory stays flat), then what depends on all of them.
    Key order differs from `WorkState.as_json` (calls come first); the content is the
    same, which tests/core/test_fast_path.py checks."""
    with building(), EvidenceSQL(case_dir) as sql:
        streamed = stream_case(sql, case_dir, as_of, plan)
        head = document_head(label, streamed.as_of_seq, streamed.event_count)
        out.write(_dump(head)[:-1] + ', "calls": [')
        tool_receipts = read_tool_receipts(case_dir)
        try:
            index = streamed.receipt_index()

            def line(call: CallState) -> str:
                return _dump_call(call.as_json(index, tool_receipts))

            for i, text in enumerate(streamed.call_lines(line, plan)):
                out.write(("\n  " if i == 0 else ",\n  ") + text)
            anomalies, tasks, comps, receipts, _unknown = streamed.rest()
            counts = streamed.tool_counts
        except FastPathUnfit as exc:  # the checks before the first call missed it: one line
            raise LedgerError(LedgerProblem.CORRUPT,
                              f"{case_dir}: the ledger changed shape while read ({exc}); "
                              "run inspect again") from None
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
    out.write('{"cases": [')
    for i, case in enumerate(cases):
        out.write("\n" if i == 0 else ",\n")
        try:
            with EvidenceSQL(case):
                pass
        except LedgerError as exc:
            out.write(_dump(CaseInspection(str(case), None, str(exc)).as_json()))
            continue
        _stream_case(case, str(case), as_of, out, plan)
    out.write("\n]}\n")


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Left-aligned columns; ids are cut at 48 characters, a REASON at 160."""
    limits = [160 if h == "REASON" else 48 for h in headers]
    cells = [[visible(c, one_line=True, limit=lim) for c, lim in zip(row, limits, strict=True)]
             for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers), fmt.format(*("-" * w for w in widths))] + [
        fmt.format(*r) for r in cells
    ]


def _cut(text: str, limit: int = 300) -> str:
    """One untrusted value inside a report line: a 4 MB kind must not flood the terminal
    (`--json` keeps every character). The middle goes, so a problem worded after a long
    id ("<kind>: payload is not valid JSON") still shows its end."""
    shown = visible(text, one_line=True)
    if len(shown) <= limit:
        return shown
    head = limit * 2 // 5
    return shown[:head] + "\u2026" + shown[len(shown) - (limit - head - 1):]


def _tool_rows(st: WorkState) -> list[list[str]]:
    rows = []
    for c in st.calls:
        tools = c.tools if c.evidence.tools is not None else None
        for op in tools.operations if tools is not None else ():
            receipt = op.as_json(st.tool_receipts).get("receipt", {}).get("verdict", "-")
            mark = "!! tool effect unknown: duplicate risk" if op.effect_unknown else ""
            rows.append([op.subject, c.call_id, op.tool or "-", op.stage.value,
                         op.next_operation.value, receipt, mark])
    return rows


def render_table(inspection: CaseInspection) -> str:
    lines = [f"case {visible(inspection.case, one_line=True)}"]
    st = inspection.state
    if st is None:
        return "\n".join(lines + [f"  error: {visible(inspection.error, one_line=True)}"])
    unknown = st.effect_unknown_count
    lines.append(
        f"  events {st.event_count} (as of seq {st.as_of_seq})  effect_unknown {unknown}"
        f"  duplicate effects {len(st.receipts.duplicates)}"
        f"  uncovered receipts {len(st.receipts.uncovered)}  anomalies {len(st.anomalies)}"
        + (f"  tool effect unknown {st.tool_effect_unknown_count}"
           if any(c.evidence.tools is not None for c in st.calls) else "")
    )
    if st.tasks:
        lines += ["", *_table(
            ["TASK", "NEXT", "SUBJECT", "REASON"],
            [[t.task_id, t.next_operation.value, t.subject_id or "-", t.reason] for t in st.tasks],
        )]
    if st.calls:
        rows = []
        for c in st.calls:
            mark = "!! effect unknown: duplicate risk" if c.effect_unknown else ""
            rows.append([
                c.call_id, c.idempotency_key or "-", c.stage.value, c.next_operation.value,
                str(c.attempts), c.provider_effect.value,
                c.superseded_by and f"-> {c.superseded_by}" or (c.resumed_from and f"<- {c.resumed_from}") or "",
                mark,
            ])
        lines += ["", *_table(
            ["CALL", "KEY", "STAGE", "NEXT", "ATT", "EFFECT", "LINK", ""], rows
        )]
    tool_rows = _tool_rows(st)
    if tool_rows:  # ledger/TOOLS.md: only a case with tool operations shows this table
        lines += ["", *_table(["TOOL OPERATION", "CALL", "TOOL", "STATE", "NEXT", "RECEIPT", ""],
                              tool_rows)]
    if st.compilations:
        lines += ["", *_table(
            ["COMPILATION", "STAGE", "NEXT", "OFFERED", "MISSING REQUIRED"],
            [[c.compilation_id, c.stage.value, c.next_operation.value, str(len(c.offered)),
              ",".join(c.missing_required) or "-"] for c in st.compilations],
        )]
    rc = st.receipts
    lines.append("")
    lines.append(
        f"  receipts {rc.count}" + ("" if rc.log_present else " (no provider log)")
        + (f"  uncovered: {', '.join(rc.uncovered)}" if rc.uncovered else "")
        + ("  duplicates: " + "; ".join(" = ".join(d) for d in rc.duplicates) if rc.duplicates else "")
    )
    for a in st.anomalies[:20]:
        lines.append(f"  anomaly at seq {a.seq}: {_cut(a.problem)}")
    if len(st.anomalies) > 20:
        lines.append(f"  ... {len(st.anomalies) - 20} more anomalies")
    if st.gathered != "sql":
        lines.append(f"  read event by event: {st.gathered}")
    for kind, n in sorted(st.unknown_kinds.items()):
        lines.append(f"  unknown kind {_cut(kind, 120)}: {n} event(s), ignored by the projection")
    for i, (line_no, problem) in enumerate(rc.problems):
        if i == 5:
            lines.append(f"  ... {len(rc.problems) - 5} more receipt log problems")
            break
        where = f" line {line_no}" if line_no else ""
        lines.append(f"  receipt log{where}: {_cut(problem)}")
    if inspection.receipts_torn:
        lines.append("  receipt log: its last line is cut short (a crash mid-write?); not counted")
    if inspection.config_problem:
        lines.append(f"  case.json: {inspection.config_problem} (resume refuses this case)")
    return "\n".join(visible(line) for line in lines)
