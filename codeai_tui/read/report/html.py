"""The report as one self-contained HTML page: inline CSS, an inline SVG of the lanes.

No script, no network, no external asset; a Content-Security-Policy says so to the
browser as well. Every string that comes from the case goes through `esc` (visible
control characters, then `html.escape`), in the page and in the SVG alike: markup is
built only from this module's own constant text and escaped values.
"""

from __future__ import annotations

import html
import math

from codeai_tui import __version__
from codeai_tui.read.report.facts import LaneRow, ReportFacts
from codeai_tui.services.lanes import (
    ATTEMPT,
    DUPLICATE,
    EXTENT,
    RECEIPT,
    SEQ,
    TOOL,
    TOOL_UNKNOWN,
    UNCOVERED,
    UNKNOWN,
    Axis,
    SeqClock,
    clock_text,
)
from codeai_tui.textsafe import visible

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'"

STYLE = """
:root { --error: #b3261e; --warn: #a15c00; --ok: #1e7a34; --primary: #1f5fae;
        --muted: #5b6573; --panel: #f3f5f7; --line: #d5dbe1; }
* { box-sizing: border-box; }
body { margin: 0; color: #1c2127; background: #fff;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 2px; }
h2 { font-size: 17px; margin: 30px 0 10px; padding-bottom: 4px;
     border-bottom: 1px solid var(--line); }
.mono, td.id { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace;
               overflow-wrap: anywhere; }
.case { font-size: 15px; color: var(--muted); }
.headline { margin: 14px 0; padding: 10px 14px; border-radius: 6px; font-weight: 600;
            background: #e9f5ec; border-left: 6px solid var(--ok); }
.headline.alarming { background: #fbeaea; border-left-color: var(--error); color: var(--error); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.counts { display: flex; flex-wrap: wrap; gap: 6px; margin: 8px 0; }
.count { background: var(--panel); padding: 3px 10px; border-radius: 12px; }
.count.bad { background: #fbeaea; color: var(--error); font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; vertical-align: top; padding: 5px 8px; border-bottom: 1px solid var(--line); }
th { background: var(--panel); font-weight: 600; }
tr.alarming td:first-child { box-shadow: inset 4px 0 0 var(--error); }
tr.alarming .stage { color: var(--error); font-weight: 600; }
ul.evidence { margin: 4px 0 0; padding-left: 18px; color: var(--muted); }
ul.unknown li { margin: 4px 0; }
.legend { color: var(--muted); font-size: 12px; margin: 6px 0 0; }
.legend span { margin-right: 16px; white-space: nowrap; }
.note { color: var(--muted); font-style: italic; }
figure { margin: 0; overflow-x: auto; border: 1px solid var(--line); border-radius: 6px; }
svg text { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 11px;
           fill: #1c2127; }
svg .muted { fill: var(--muted); }
svg .task { font-weight: 700; fill: var(--muted); }
footer { color: var(--muted); font-size: 12px; margin-top: 36px; }
"""

# the picture's geometry (pixels)
WIDTH, LABEL_W, ROW_H, TOP, RIGHT = 1120, 220, 20, 40, 16
TICK_GAP = 175  # the least room between two ticks' labels
COLOUR = {ATTEMPT: "#1f5fae", UNKNOWN: "#b3261e", EXTENT: "#9aa4ae", RECEIPT: "#1e7a34",
          DUPLICATE: "#b3261e", UNCOVERED: "#b3261e", TOOL: "#a15c00",
          TOOL_UNKNOWN: "#b3261e"}


def esc(value: object, limit: int | None = 4000) -> str:
    """Untrusted text as HTML (or SVG) text: control and bidi characters made visible,
    then every markup character escaped."""
    return html.escape(visible(value, one_line=True, limit=limit), quote=True)


def _num(x: float) -> str:
    return f"{x:.1f}"


# --------------------------------------------------------------------------- the picture


class Picture:
    """The lanes as SVG, on a seq axis whose ticks also name their times."""

    def __init__(self, facts: ReportFacts) -> None:
        self.facts = facts
        self.clock: SeqClock = facts.clock
        self.axis = Axis(SEQ, 1.0, float(max(facts.max_seq, 1) + 1))
        self.plot_w = WIDTH - LABEL_W - RIGHT

    def x(self, value: float) -> float:
        return LABEL_W + max(0.0, min(1.0, self.axis.frac(value))) * self.plot_w

    def svg(self) -> str:
        rows = self.facts.lanes
        height = TOP + ROW_H * max(1, len(rows)) + 24
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" '
               f'height="{height}" viewBox="0 0 {WIDTH} {height}">',
               "<title>The case's calls as lanes, by seq</title>",
               '<defs><pattern id="unknown-hatch" width="6" height="6" '
               'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
               f'<rect width="6" height="6" fill="{COLOUR[UNKNOWN]}"/>'
               '<rect width="2" height="6" fill="#f3c7c4"/></pattern></defs>']
        out += self._ticks(height)
        for i, row in enumerate(rows):
            out += self._row(i, row)
        out += self._as_of(height)
        out.append("</svg>")
        return "\n".join(out)

    def _ticks(self, height: int) -> list[str]:
        out = []
        last = self.axis.hi - 1
        first, end = self.clock.time_of(self.axis.lo), self.clock.time_of(last)
        fraction = first is not None and end is not None and end - first < 10e6
        ticks = _nice_ticks(self.axis.lo, last)
        kept = [ticks[-1]]  # the last seq always shows, its label drawn leftwards of it
        for seq in reversed(ticks[:-1]):
            room = TICK_GAP * (2 if len(kept) == 1 else 1)
            if self.x(kept[-1]) - self.x(seq) >= room:
                kept.append(seq)
        if ticks[0] not in kept and len(kept) > 1 and \
                self.x(kept[-2]) - self.x(ticks[0]) >= TICK_GAP * (2 if len(kept) == 2 else 1):
            kept[-1] = ticks[0]  # the first seq rather than the one nearest it
        for seq in kept:
            x = self.x(seq)
            when = self.clock.time_of(seq)
            label = f"seq {seq:,}" + (f" \u00b7 {clock_text(when, fraction=fraction)}"
                                      if when is not None else "")
            anchor = "end" if seq == kept[0] and len(kept) > 1 or x > WIDTH - 200 else "start"
            out.append(f'<line x1="{_num(x)}" y1="{TOP - 6}" x2="{_num(x)}" '
                       f'y2="{height - 20}" stroke="#e3e7eb"/>')
            out.append(f'<text x="{_num(x + (2 if anchor == "start" else -2))}" '
                       f'y="{TOP - 10}" text-anchor="{anchor}" class="muted">'
                       f"{esc(label)}</text>")
        return out

    def _row(self, i: int, row: LaneRow) -> list[str]:
        y = TOP + i * ROW_H
        mid = y + ROW_H / 2
        out = []
        if i % 2:
            out.append(f'<rect x="0" y="{y}" width="{WIDTH}" height="{ROW_H}" fill="#f7f8fa"/>')
        lane = row.lane
        if lane is None:
            out.append(f'<text x="6" y="{_num(mid + 4)}" class="task">{esc(_cut(row.text, 150))}</text>')
            return out
        cls = ' fill="#b3261e"' if lane.effect_unknown else ""
        out.append(f'<text x="6" y="{_num(mid + 4)}"{cls}>{esc(_cut(row.text, 30))}'
                   f"<title>{esc(row.text)}</title></text>")
        for span in lane.spans:
            out += self._span(span.kind, span.start, span.end, span.open, span.label, mid)
        for mark in lane.marks:
            out += self._mark(mark.kind, self.axis.mark_value(mark, self.clock), mark.label,
                              mark.at, mid)
        return out

    def _span(self, kind: str, start: int, end: int, open_: bool, label: str,
              mid: float) -> list[str]:
        x0, x1 = self.x(start), self.x(end + 1)  # seq s is the interval [s, s+1)
        if kind == EXTENT:
            return [f'<line x1="{_num(x0)}" y1="{_num(mid)}" x2="{_num(x1)}" y2="{_num(mid)}" '
                    f'stroke="{COLOUR[EXTENT]}" stroke-width="1.5"/>']
        width = max(3.0, x1 - x0)
        fill = "url(#unknown-hatch)" if kind == UNKNOWN else COLOUR[ATTEMPT]
        what = "effect unknown" + (": open, nothing ended it" if open_ else "") \
            if kind == UNKNOWN else "attempt"
        title = f"{label}: {what}, seq {start} to {end}"
        out = [f'<rect x="{_num(x0)}" y="{_num(mid - 6)}" width="{_num(width)}" height="12" '
               f'rx="2" fill="{fill}"><title>{esc(title)}</title></rect>']
        if open_:
            tip = x0 + width
            out.append(f'<polygon points="{_num(tip)},{_num(mid - 7)} {_num(tip + 7)},'
                       f'{_num(mid)} {_num(tip)},{_num(mid + 7)}" fill="{COLOUR[UNKNOWN]}"/>')
        return out

    def _mark(self, kind: str, value: float | None, label: str, at: str | None,
              mid: float) -> list[str]:
        if value is None:
            return []
        x = self.x(value)
        what = {RECEIPT: "receipt", DUPLICATE: "receipt of a duplicate effect",
                UNCOVERED: "receipt no attempt covers", TOOL: "tool operation",
                TOOL_UNKNOWN: "tool operation admitted without an outcome"}[kind]
        title = f"{what}: {label}" + (f", received at {at}" if at else "")
        colour = COLOUR[kind]
        if kind in (TOOL, TOOL_UNKNOWN):
            fill = "#ffffff" if kind == TOOL_UNKNOWN else colour
            shape = (f'<polygon points="{_num(x)},{_num(mid - 6)} {_num(x + 6)},{_num(mid)} '
                     f'{_num(x)},{_num(mid + 6)} {_num(x - 6)},{_num(mid)}" fill="{fill}" '
                     f'stroke="{colour}" stroke-width="2">')
            return [f"{shape}<title>{esc(title)}</title></polygon>"]
        ring = 'stroke="#1c2127" stroke-width="1.5"' if kind != RECEIPT else \
            'stroke="#ffffff" stroke-width="1.5"'
        return [f'<circle cx="{_num(x)}" cy="{_num(mid)}" r="5" fill="{colour}" {ring}>'
                f"<title>{esc(title)}</title></circle>"]

    def _as_of(self, height: int) -> list[str]:
        facts = self.facts
        if facts.as_of_seq >= facts.max_seq:
            return []
        x = self.x(facts.as_of_seq + 1)
        return [f'<line x1="{_num(x)}" y1="{TOP - 4}" x2="{_num(x)}" y2="{height - 20}" '
                'stroke="#7b3fa0" stroke-width="2" stroke-dasharray="5,3"/>',
                f'<text x="{_num(x + 3)}" y="{height - 8}" fill="#7b3fa0">'
                f"{esc(f'as of seq {facts.as_of_seq}')}</text>"]


def _nice_ticks(lo: float, hi: float, most: int = 7) -> list[int]:
    """Round seqs between lo and hi (both ends included) for the axis."""
    first, last = math.ceil(lo), math.floor(hi)
    if last <= first:
        return [first]
    raw = (last - first) / max(1, most - 1)
    power = 10 ** math.floor(math.log10(raw)) if raw >= 1 else 1
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= raw)
    ticks = [first]
    value = (first // step + 1) * step
    while value < last:
        if value - ticks[-1] >= step / 2:
            ticks.append(int(value))
        value += step
    if last - ticks[-1] < step / 2 and len(ticks) > 1:
        ticks.pop()
    ticks.append(last)
    return ticks


def _cut(text: str, limit: int) -> str:
    shown = visible(text, one_line=True)
    if len(shown) <= limit:
        return shown
    tail = (limit - 1) // 2
    return shown[: limit - 1 - tail] + "\u2026" + shown[len(shown) - tail:]


LEGEND = (
    f'<p class="legend"><span style="color:{COLOUR[ATTEMPT]}">\u25ac attempt</span>'
    f'<span style="color:{COLOUR[UNKNOWN]}">\u25a7 effect unknown (\u25b6 still open)</span>'
    f'<span style="color:{COLOUR[EXTENT]}">\u2500 the call\'s events</span>'
    f'<span style="color:{COLOUR[RECEIPT]}">\u25cf receipt</span>'
    f'<span style="color:{COLOUR[DUPLICATE]}">\u25c9 receipt of a duplicate</span>'
    f'<span style="color:{COLOUR[TOOL]}">\u25c6 tool operation</span>'
    f'<span style="color:{COLOUR[TOOL_UNKNOWN]}">\u25c7 tool effect unknown</span></p>'
)


# --------------------------------------------------------------------------- the page


def render_html(facts: ReportFacts) -> str:
    title = f"Incident report: {facts.case}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{esc(title, 300)}</title>",
        f"<style>{STYLE}</style></head><body><main>",
        "<header><h1>Incident report</h1>",
        f'<div class="case mono">{esc(facts.case)}</div>',
        f'<div class="headline{" alarming" if facts.alarming else ""}">'
        f"{esc(facts.headline)}</div>",
        _case_facts(facts),
        "</header>",
        _verdicts(facts),
        _timeline(facts),
        _actions(facts),
        _effects(facts),
        _unknowns(facts),
        f"<footer>Written by codeai-tui {esc(__version__)} from the case's own records "
        "(ledger, provider receipt log, tool store), read only; nothing was written to the "
        "case. Times are as the ledger records them (UTC).</footer>",
        "</main></body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _case_facts(facts: ReportFacts) -> str:
    rows = [("what it is", facts.description or "(case.json gives no description)"),
            ("events", f"{facts.event_count:,} (as of seq {facts.as_of_seq:,})"),
            ("recorded", f"{facts.first_at or '?'} to {facts.last_at or '?'} UTC"),
            ("provider receipts", f"{facts.receipts:,} (log {facts.receipt_log})")]
    if facts.termination:
        rows.append(("how the producer stopped", facts.termination))
    for task_id, title_text, nxt in facts.tasks[:20]:
        rows.append((f"task {task_id}", f"{title_text or '(no title)'} \u00b7 next: {nxt}"))
    if len(facts.tasks) > 20:
        rows.append(("tasks", f"{len(facts.tasks) - 20:,} more"))
    for note in facts.notes:
        rows.append(("note", note))
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows)
    counts = "".join(
        f'<span class="count{" bad" if n and name not in ("calls", "tasks") else ""}">'
        f"{esc(name)}: {n:,}</span>" for name, n in facts.counts)
    return f'<dl class="facts">{dl}</dl><div class="counts">{counts}</div>'


def _verdicts(facts: ReportFacts) -> str:
    rows = []
    for v in facts.verdicts:
        evidence = "".join(f"<li>{esc(e)}</li>" for e in v.evidence)
        rows.append(
            f'<tr{" class=alarming" if v.alarming else ""}><td>{esc(v.kind)}</td>'
            f'<td class="id">{esc(v.subject)}</td><td class="stage">{esc(v.stage)}</td>'
            f"<td>{esc(v.next_operation)}</td><td>{esc(v.effect)}</td>"
            f"<td>{esc(v.reason)}"
            + (f'<ul class="evidence">{evidence}</ul>' if evidence else "") + "</td></tr>")
    left = (f'<p class="note">{facts.verdicts_left_out:,} more not listed (settled calls of '
            "a big case, or past the list's end): codeai-tui inspect lists every one.</p>"
            if facts.verdicts_left_out else "")
    return ('<section id="verdicts"><h2>Verdicts, worst first</h2>'
            "<table><thead><tr><th>what</th><th>id</th><th>stage</th><th>next operation</th>"
            "<th>effect</th><th>reason and evidence</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>" + left + "</section>")


def _timeline(facts: ReportFacts) -> str:
    if not facts.lanes:
        return ('<section id="timeline"><h2>Timeline</h2><p class="note">no calls to draw'
                "</p></section>")
    left = (f'<p class="note">{facts.lanes_left_out:,} calls with nothing left to do are not '
            "drawn.</p>" if facts.lanes_left_out else "")
    return ('<section id="timeline"><h2>Timeline</h2>'
            "<p>One lane per call, grouped by task, along the ledger's seqs (the times above "
            "are when those events were recorded).</p>"
            f"<figure>{Picture(facts).svg()}</figure>{LEGEND}{left}</section>")


def _actions(facts: ReportFacts) -> str:
    if not facts.actions:
        body = ('<p class="note">none: no event in this ledger names an operator '
                "(decided_by, by, recorded_by).</p>")
    else:
        rows = "".join(
            f'<tr><td class="mono">{esc(a.at)}</td><td>{esc(a.seq)}</td>'
            f"<td>{esc(a.who)}</td><td class=\"id\">{esc(a.subject)}</td>"
            f"<td>{esc(a.what)}</td></tr>" for a in facts.actions)
        body = ("<table><thead><tr><th>when</th><th>seq</th><th>who</th><th>call / task</th>"
                f"<th>what</th></tr></thead><tbody>{rows}</tbody></table>")
        if facts.actions_cut:
            body += '<p class="note">the first of them only: more are in the ledger.</p>'
    return f'<section id="operator"><h2>Operator actions</h2>{body}</section>'


def _effects(facts: ReportFacts) -> str:
    if not facts.effects:
        return ""
    rows = "".join(
        f"<tr><td>{esc(r.source)}</td><td>{esc(r.publications)}</td>"
        f"<td>{esc(r.provider_calls)}</td><td>{esc(r.operations)}</td>"
        f"<td>{esc(r.complete)}</td></tr>" for r in facts.effects)
    return ('<section id="effects"><h2>Effects</h2>'
            "<p>Counted where each effect leaves its own trace: publications in the tool's "
            "store, requests in the provider's log, tool operations in the ledger.</p>"
            "<table><thead><tr><th>counted from</th><th>publications</th>"
            "<th>provider calls</th><th>tool operations</th><th>task</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></section>")


def _unknowns(facts: ReportFacts) -> str:
    if not facts.unknowns:
        body = ('<p>Nothing: every started attempt has an answer or a finding, and every '
                "receipt is accounted for.</p>")
    else:
        body = '<ul class="unknown">' + "".join(
            f"<li>{esc(u)}</li>" for u in facts.unknowns) + "</ul>"
    return f'<section id="unknown"><h2>Still unknown</h2>{body}</section>'

