"""Terminal safety on the bytes a real terminal receives .

Hostile text sits in every field `inspect` and the console print: ids, kinds, keys,
payloads, receipt fields, the case directory's own name, the ledger format. Under a pty,
no ESC, C1, bidi or other control character from that text may reach the terminal; the
text must still be there, shown literally (markup as brackets, controls as placeholders).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

from ledgerfactory import write_ledger
from ptyrun import run_on_pty

OSC_TITLE = "\x1b]0;pwned\x07"
OSC_CLIPBOARD = "\x1b]52;c;aGFjaw==\x07"
OSC_LINK = "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\"
CSI = "\x1b[2J\x1b[31m"
C1 = "\x9b31m\x9d0;c1title\x9c"
BIDI = "\u202eevil\u202c\u2066iso\u2069"
C0 = "\x07bell\x08\x00nul\x0e"
MARKUP = "[@click=app.quit]click me[/]"
HOSTILE = [MARKUP, "[/oops]", OSC_TITLE, OSC_CLIPBOARD, OSC_LINK, CSI, C1, BIDI, C0,
           "split\x1b"]  # an ESC at the very end, as the next write would continue it

PAYLOAD_SEQUENCES = [OSC_TITLE, OSC_CLIPBOARD, "\x1b]8;;https://evil", "\x1b[2J", "\u202e",
                     "\u2066", "\x9b", "\x9d", "\x9c", "\x0e"]


def hostile_case(root: Path) -> Path:
    case = root / f"case{OSC_TITLE}{BIDI}"
    events = [{"seq": 1, "kind": "task.created", "task_id": f"task{MARKUP}",
               "payload": {"title": "".join(HOSTILE)}}]
    for i, text in enumerate(HOSTILE, start=2):
        events.append({"seq": i, "kind": "call.requested", "task_id": f"t{text}",
                       "call_id": f"call{text}",
                       "payload": {"idempotency_key": f"key{text}", "purpose": text}})
    n = len(events)
    events += [
        {"seq": n + 1, "kind": f"mystery{OSC_LINK}", "task_id": "t", "payload": {"x": C1}},
        {"seq": n + 2, "kind": f"call.manifest{CSI}", "task_id": f"t{BIDI}",
         "call_id": f"c{C0}", "payload": f"not json {OSC_CLIPBOARD}"},
    ]
    receipts = [{"receipt_id": f"r{OSC_CLIPBOARD}", "received_at": C1,
                 "idempotency_key": f"k{BIDI}", "body_sha256": f"{CSI}", "bytes": 1}]
    write_ledger(case, events, receipts=receipts)
    with open(case / "provider" / "receipts.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"receipt_id": 5, "received_at": OSC_TITLE}) + "\n")
        fh.write(f"garbage {OSC_LINK}\n")
    (case / "case.json").write_text(json.dumps({"provider": {"model": [OSC_TITLE]}}))
    return case


def assert_no_control_from_payloads(text: str) -> None:
    """inspect writes plain text: any ESC, C0 (but CR/LF), C1, bidi or zero-width
    character on its terminal came from the case."""
    for ch in text:
        cat = unicodedata.category(ch)
        assert ch in "\r\n" or cat not in ("Cc", "Cf"), f"{ch!r} reached the terminal"


def test_inspect_on_a_pty_shows_hostile_text_inert(tmp_path: Path) -> None:
    case = hostile_case(tmp_path)
    rc, raw = run_on_pty(["inspect", str(case)], timeout=10)
    text = raw.decode("utf-8")  # strict: a lone C1 byte would fail here
    assert rc == 0, text
    assert_no_control_from_payloads(text)
    # the hostile text is there, shown literally, in every kind of line
    assert MARKUP in text and "[/oops]" in text
    assert "\u27e8ESC\u27e9]0;pwned\u27e8U+0007\u27e9" in text  # the directory's name, too
    assert "\u27e8U+202E\u27e9evil" in text and "\u27e8U+009B\u27e931m" in text
    assert "anomaly at seq" in text and "unknown kind mystery" in text
    assert "receipt log line" in text and "case.json:" in text


def test_an_error_line_on_a_pty_is_inert(tmp_path: Path) -> None:
    case = tmp_path / "c"
    write_ledger(case, [], fmt=f"v9{OSC_CLIPBOARD}{BIDI}{C1}")
    rc, raw = run_on_pty(["inspect", str(case)], timeout=10)
    text = raw.decode("utf-8")
    assert rc == 2, text
    assert_no_control_from_payloads(text)
    assert "ledger format is 'v9\\x1b]52;c;" in text  # the value's repr: inert, and visible
    assert len([ln for ln in text.splitlines() if ln.strip()]) == 1


def test_the_console_on_a_pty_draws_no_payload_control(tmp_path: Path) -> None:
    case = hostile_case(tmp_path)
    shown = "\u27e8ESC\u27e9".encode()
    # the timeline has drawn its last hostile rows -> quit
    rc, raw = run_on_pty([str(case)], timeout=30, keys=[(b"mystery", b"q")],
                         env={"TEXTUAL_ANIMATIONS": "none"})
    assert rc == 0, raw[-2000:]
    assert shown in raw and b"[@click=" in raw  # the text is on screen, inert
    for seq in PAYLOAD_SEQUENCES:
        assert seq.encode() not in raw, f"{seq!r} reached the terminal"


def test_the_resume_prompt_on_a_pty_shows_hostile_values_inert(tmp_path: Path) -> None:
    """The confirmation rows carry the call id, key and case.json's model: all inert."""
    case = tmp_path / "c"
    call = f"call{OSC_TITLE}{BIDI}"
    write_ledger(case, [
        {"seq": 1, "kind": "task.created", "task_id": "t", "payload": {"title": "x"}},
        {"seq": 2, "kind": "call.requested", "task_id": "t", "call_id": call,
         "payload": {"idempotency_key": f"key{OSC_CLIPBOARD}{C1}", "purpose": MARKUP,
                     "model": "m"}}])
    (case / "case.json").write_text(json.dumps({"provider": {
        "base_url": "http://127.0.0.1:9/v1", "model": f"m{CSI}{C0}", "api_key_env": "NOPE"}}))
    rc, raw = run_on_pty(["resume", str(case), call], timeout=20,
                         keys=[(b"to resume: ", b"no\n")])
    text = raw.decode("utf-8")
    assert rc == 3, text  # the typed id did not match: not resumed
    assert "not resumed" in text and "\u27e8ESC\u27e9]0;pwned" in text
    assert "\u27e8ESC\u27e9]52;c;" in text and "\u27e8ESC\u27e9[2J" in text
    assert_no_control_from_payloads(text)
