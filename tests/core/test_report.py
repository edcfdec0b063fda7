"""`codeai-tui report`: the incident report of one case, HTML (rendered by a real headless
Chromium) and Markdown; markup that comes with the case stays text; bad input is one line
and exit 2; nothing is written inside the case."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import write_ledger

from codeai_tui.read.report import gather, render
from tests.support import CONFORMANCE, TESTS, cli

sys.path.insert(0, str(TESTS / "app"))
from tool_cases import tool_case  # noqa: E402

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
STYLE_BREAK = "</style><script>alert(3)</script>"
SVG_ONLOAD = "<svg onload=alert(4)>"
CELL_BREAK = "</td></tr></table><script>alert(5)</script>"
SHA = "ab" * 32


def hostile_case(root: Path) -> Path:
    """A case whose ids, titles, description, receipt ids and operator records carry
    markup: a call in flight with a script for an id, a resumed call whose operator's
    name and reason are markup, a receipt no attempt covers with markup for an id."""
    def ev(seq: int, kind: str, call: str | None = None, payload: dict[str, Any] | None = None,
           attempt: str | None = None) -> dict[str, Any]:
        return {"seq": seq, "kind": kind, "task_id": "task-<b>1</b>", "call_id": call,
                "attempt_id": attempt, "payload": payload or {},
                "recorded_at": f"2026-09-13T12:00:{seq:02d}Z"}

    events = [
        ev(1, "task.created", payload={"title": IMG}),
        ev(2, "call.requested", SCRIPT, {"idempotency_key": "k1", "purpose": IMG}),
        ev(3, "call.manifest", SCRIPT, {"idempotency_key": "k1", "request_sha256": SHA,
                                        "request_artifact": SHA, "intent": {}}),
        ev(4, "attempt.started", SCRIPT, {"attempt_no": 1, "request_sha256": SHA},
           attempt=SVG_ONLOAD),
        ev(5, "call.requested", "call-2", {"idempotency_key": "k2"}),
        ev(6, "call.resumed", "call-2", {
            "resumed_as": CELL_BREAK, "idempotency_key": "k2", "request_sha256": None,
            "by": {"user": "<i>mallory</i>", "host": IMG, "pid": 7}, "reason": CELL_BREAK}),
    ]
    case = write_ledger(root / "case", events, receipts=[
        {"receipt_id": SVG_ONLOAD, "received_at": "2026-09-13T12:00:04Z",
         "idempotency_key": "k1", "body_sha256": SHA, "bytes": 10},
        {"receipt_id": '"><script>alert(6)</script>', "received_at": "2026-09-13T12:00:05Z",
         "idempotency_key": "<k>", "body_sha256": SHA, "bytes": 10},
    ]).parent
    (case / "case.json").write_text(json.dumps({"description": STYLE_BREAK}))
    return case


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.skip("no chromium on this machine (Debian's `chromium` package; .ci/run "
                    "installs it): the report is not rendered by a browser here")
    return exe


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_html_report_renders_in_a_browser_and_injected_markup_stays_text(
        tmp_path: Path) -> None:
    exe = chromium()
    case = hostile_case(tmp_path)
    out = tmp_path / "report.html"
    done = cli("report", str(case), "-o", str(out))
    assert done.returncode == 0, done.stderr
    page = out.read_text(encoding="utf-8")
    # nothing to fetch: no address but the SVG namespace's, no element that loads one
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    assert re.search(r"<[a-z][^>]*\s(src|href)\s*=", page, re.I) is None
    assert re.search(r"<(link|iframe|object|embed|image|use)\b", page, re.I) is None
    shot = tmp_path / "report.png"
    proc = subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--screenshot={shot}", "--window-size=1200,1600", "--dump-dom", out.as_uri()],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    # the page as the browser built it: no element came from the case
    assert re.search(r"<script", dom, re.I) is None
    assert re.search(r"<img", dom, re.I) is None
    assert re.search(r"<[a-z][^>]*\son(error|load)\s*=", dom, re.I) is None
    assert len(re.findall(r"<svg", dom, re.I)) == 1  # the lanes, ours
    assert re.search(r"<(b|i)>", dom) is None
    # ... and every piece of it is there as text
    for text in (SCRIPT, IMG, STYLE_BREAK, SVG_ONLOAD, "<i>mallory</i>", "task-<b>1</b>"):
        escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        assert escaped in dom, text
    data = shot.read_bytes()
    assert png_size(data) == (1200, 1600)
    assert len(data) > 20_000  # a drawn page, not a blank one
    # the report's sections, worst first: the uncovered receipt, then the call in flight
    verdicts = dom[dom.index('id="verdicts"'):dom.index('id="timeline"')]
    assert verdicts.index("uncovered effect") < verdicts.index("effect_unknown")
    operator = dom[dom.index('id="operator"'):]
    assert "&lt;i&gt;mallory&lt;/i&gt;@" in operator and "2026-09-13T12:00:06Z" in operator


def test_the_markdown_report_escapes_what_the_case_says(tmp_path: Path) -> None:
    case = hostile_case(tmp_path)
    done = cli("report", str(case), "--format", "md")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    for heading in ("# Incident report", "## Verdicts, worst first", "## Timeline",
                    "## Operator actions", "## Still unknown"):
        assert f"\n{heading}\n" in f"\n{text}"
    outside_picture = re.sub(r"```+text\n.*?\n```+", "", text, flags=re.S)
    assert "<" not in outside_picture.replace("\\<", "")  # every < escaped
    assert r"\<script\>alert(1)\</script\>" in text
    assert r"\<i\>mallory\</i\>@" in text
    assert "```text\n" in text and "\u2592" in text  # the picture, the open span


def _vector_case(root: Path, name: str, ext: bool = False) -> Path:
    folder = TESTS / "conformance_ext" if ext else CONFORMANCE
    data = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    return write_ledger(root / name, data["events"], receipts=data.get("receipts")).parent


def test_the_report_names_verdicts_operator_actions_and_unknowns(tmp_path: Path) -> None:
    facts = gather(_vector_case(tmp_path, "reconciled_received_finalized_failed", ext=True))
    (action,) = facts.actions
    assert (action.seq, action.who, action.kind) == (5, "op@h (pid 1)", "attempt.reconciled")
    assert "finding received" in action.what and "rcpt-1" in action.what
    naive = gather(_vector_case(tmp_path, "naive_restart_copy"))
    assert naive.verdicts[0].kind == "receipts" and naive.verdicts[0].stage == "duplicate effect"
    assert naive.verdicts[1].subject == "call-16" and naive.verdicts[1].alarming
    assert any("r-1" in e and "r-2" in e for e in naive.verdicts[1].evidence)
    assert [u.split(":")[0] for u in naive.unknowns] == ["call call-16"]
    assert "the last event reported" in naive.unknowns[0]
    assert not naive.actions and naive.alarming


def test_the_effect_table_of_a_tool_case(tmp_path: Path) -> None:
    case = tool_case(tmp_path, "tool_mixed_operations")
    (tmp_path / "effects.json").write_text(json.dumps([
        {"mode": "generate", "case": "case", "publications": 1, "provider_calls": 2,
         "complete": True},
        {"mode": "other", "case": "another-case", "publications": 9, "provider_calls": 9,
         "complete": False}]))
    facts = gather(case)
    sources = [r.source for r in facts.effects]
    assert sources == ["this case: the tool's store, the provider's log, the ledger",
                       "effects.json (generate, counted by the demo harness)"]
    assert facts.effects[0].operations == "2 admitted, 1 completed, 1 effect unknown"
    assert "absent" in facts.effects[0].publications  # no store in this case
    assert any(u.startswith("tool operation") for u in facts.unknowns)
    html = render(facts, "html")
    assert '<section id="effects">' in html and "another-case" not in html
    plain = gather(_vector_case(tmp_path, "completed_task"))
    assert plain.effects == () and '<section id="effects">' not in render(plain)


def test_as_of_an_earlier_seq(tmp_path: Path) -> None:
    case = _vector_case(tmp_path, "resumed_then_completed")
    facts = gather(case, as_of=7)
    assert facts.as_of_seq == 7 and facts.max_seq == 15
    assert [r.text for r in facts.lanes if r.lane is not None] == ["call-16"]
    assert facts.actions == ()  # call.resumed is seq 8
    assert any("as of seq 7" in n for n in facts.notes)
    md = render(facts, "md")
    assert "\u2502 as of seq 7" in md  # the as-of line in the picture's legend
    assert "as of seq 7" in render(facts, "html")


def test_bad_input_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    case = _vector_case(tmp_path, "killed_in_flight")
    before = sorted(p.name for p in case.iterdir())
    inside = case / "report.html"
    cases = [
        (("report", str(tmp_path)), "not a case directory"),  # a bundle
        (("report", str(tmp_path / "nope")), "no such file"),
        (("report", str(case), "-o", str(inside)), "inside the case directory"),
        (("report", str(case), "-o", str(tmp_path)), "a directory; name a file"),
        (("report", str(case), "-o", str(tmp_path / "no" / "r.html")), "no directory"),
        (("report", str(case), "--format", "pdf"), "invalid choice"),
        (("report", str(case), "--as-of", "-1"), "must be an integer"),
        (("report", ""), "empty"),
    ]
    for args, words in cases:
        done = cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, args
        assert words in done.stderr, (args, done.stderr)
    assert not inside.exists() and sorted(p.name for p in case.iterdir()) == before
    out = tmp_path / "out.md"
    done = cli("report", str(case), "--format", "md", "-o", str(out))
    assert done.returncode == 0 and "wrote the report" in done.stdout
    assert out.read_text(encoding="utf-8").startswith("# Incident report")
