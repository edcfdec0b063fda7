"""The report as Markdown: the same sections, the lanes as a text picture.

A Markdown renderer passes raw HTML through and turns brackets into links, so every
string from the case is escaped for it (`md`): control and bidi characters made visible,
then each character Markdown or HTML could act on behind a backslash. The picture sits in
a fenced block longer than any run of backticks in it.
"""

from __future__ import annotations

import re

from codeai_tui import __version__
from codeai_tui.read.report.facts import ReportFacts
from codeai_tui.services.lanes import SEQ, Axis, as_of_column, axis_line, lane_cells
from codeai_tui.textsafe import visible

PICTURE_LABEL, PICTURE_PLOT = 22, 76
_ACTIVE = re.compile(r"([\\`*_{}\[\]<>|&~!$#])")


def md(value: object, limit: int | None = 4000) -> str:
    """Untrusted text as inert Markdown text on one line."""
    return _ACTIVE.sub(r"\\\1", visible(value, one_line=True, limit=limit))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    return [_row(headers), _row(["---"] * len(headers)), *(_row(r) for r in rows)]


def render_markdown(facts: ReportFacts) -> str:
    out = ["# Incident report", "", f"**Case:** {md(facts.case)}  ",
           f"**What it is:** {md(facts.description or '(case.json gives no description)')}  ",
           f"**Events:** {facts.event_count:,} (as of seq {facts.as_of_seq:,})  ",
           f"**Recorded:** {md(facts.first_at or '?')} to {md(facts.last_at or '?')} UTC  ",
           f"**Provider receipts:** {facts.receipts:,} (log {md(facts.receipt_log)})"]
    if facts.termination:
        out[-1] += "  "
        out.append(f"**How the producer stopped:** {md(facts.termination)}")
    for note in facts.notes:
        out[-1] += "  "
        out.append(f"**Note:** {md(note)}")
    out += ["", f"> **{md(facts.headline)}**" + (" (alarming)" if facts.alarming else ""), ""]
    out.append(" \u00b7 ".join(f"{md(name)}: {n:,}" for name, n in facts.counts))
    if facts.tasks:
        out += ["", *_table(["task", "title", "next operation"],
                            [[md(t), md(title), md(n)] for t, title, n in facts.tasks[:50]])]
    out += ["", "## Verdicts, worst first", ""]
    out += _table(["what", "id", "stage", "next operation", "effect", "reason and evidence"],
                  [[md(v.kind), md(v.subject), md(v.stage) + (" \u26a0" if v.alarming else ""),
                    md(v.next_operation), md(v.effect),
                    "; ".join(md(x) for x in (v.reason, *v.evidence))]
                   for v in facts.verdicts])
    if facts.verdicts_left_out:
        out += ["", f"_{facts.verdicts_left_out:,} more not listed: codeai-tui inspect lists "
                "every one._"]
    out += ["", "## Timeline", "", *_picture(facts)]
    out += ["", "## Operator actions", ""]
    if facts.actions:
        out += _table(["when", "seq", "who", "call / task", "what"],
                      [[md(a.at), str(a.seq), md(a.who), md(a.subject), md(a.what)]
                       for a in facts.actions])
    else:
        out.append("None: no event in this ledger names an operator (decided\\_by, by, "
                   "recorded\\_by).")
    if facts.effects:
        out += ["", "## Effects", ""]
        out += _table(["counted from", "publications", "provider calls", "tool operations",
                       "task"],
                      [[md(r.source), md(r.publications), md(r.provider_calls),
                        md(r.operations), md(r.complete)] for r in facts.effects])
    out += ["", "## Still unknown", ""]
    if facts.unknowns:
        out += [f"- {md(u)}" for u in facts.unknowns]
    else:
        out.append("Nothing: every started attempt has an answer or a finding, and every "
                   "receipt is accounted for.")
    out += ["", f"_Written by codeai-tui {md(__version__)} from the case's own records, read "
            "only; times are as the ledger records them (UTC)._", ""]
    return "\n".join(out)


def _picture(facts: ReportFacts) -> list[str]:
    if not facts.lanes:
        return ["No calls to draw."]
    axis = Axis(SEQ, 1.0, float(max(facts.max_seq, 1) + 1))
    as_of = (as_of_column(axis, facts.as_of_seq, PICTURE_PLOT, facts.clock)
             if facts.as_of_seq < facts.max_seq else None)
    lines = [f"{'seq':<{PICTURE_LABEL}} {axis_line(axis, PICTURE_PLOT)}"]
    for row in facts.lanes:
        label = visible(row.text, one_line=True)
        if row.lane is None:
            lines.append(f"\u25be {label}"[: PICTURE_LABEL + 1 + PICTURE_PLOT])
            continue
        if len(label) > PICTURE_LABEL:
            label = label[: PICTURE_LABEL - 1] + "\u2026"
        cells = lane_cells(row.lane, axis, PICTURE_PLOT, facts.clock)
        plot = "".join(g or ("\u2502" if i == as_of else " ") for i, (g, _k) in enumerate(cells))
        lines.append(f"{label:<{PICTURE_LABEL}} {plot}".rstrip())
    if facts.lanes_left_out:
        lines.append(f"({facts.lanes_left_out:,} calls with nothing left to do not drawn)")
    longest = max((len(m) for line in lines for m in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    legend = ("\u2588 attempt \u00b7 \u2592 effect unknown (open: runs to the end) \u00b7 "
              "\u2500 the call's events \u00b7 \u25cf receipt \u00b7 \u25c9 receipt of a "
              "duplicate \u00b7 \u25c6 tool operation \u00b7 \u25c7 tool effect unknown"
              + (f" \u00b7 \u2502 as of seq {facts.as_of_seq}" if as_of is not None else ""))
    return [fence + "text", *lines, fence, "", legend]
