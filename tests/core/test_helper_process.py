"""`inspect --json` with a forked helper rendering the second half of the calls
(services/forked.py): the same document byte for byte as one process writes, on random
and hostile ledgers at every as_of, and the same when the helper fails, dies or hangs."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledgerfactory import write_ledger

from codeai_tui.lab.bench import write_ledger as write_bench_ledger
from codeai_tui.ledger import read_receipts
from codeai_tui.ledger.errors import LedgerError
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.read.inspection import inspect_path, render_table, write_json, write_table
from codeai_tui.services.forked import HelperPlan, LineWriter, ParentGone, helper_plan
from codeai_tui.services.gather import SCAN_NICENESS, Gathered
from codeai_tui.workstate import CallState
from tests.core.test_fast_path import drawn_case, ledgers
from tests.support import examples

EVERY_CALL = HelperPlan(min_calls=2, grace=5.0)
SCANS_FORKED = HelperPlan(min_calls=1 << 40, grace=5.0, min_events=0)  # the suspect scan only
EVERYTHING_FORKED = HelperPlan(min_calls=2, grace=5.0, min_events=0)


def _document(case: Path, as_of: int | None, plan: HelperPlan | None) -> str:
    out = io.StringIO()
    write_json(str(case), as_of, out, plan)
    return out.getvalue()


# (examples: each as_of of each forks a helper; the fast path's own properties, in
# test_fast_path.py, draw more of these ledgers without forking, and the default suite
# must stay under 10 minutes on two cores)
@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.booleans())
def test_a_helper_writes_the_same_document_at_every_as_of(ledger: Any, unique_ids: bool) -> None:
    with drawn_case(ledger, unique_ids) as (case, as_ofs):
        for as_of in as_ofs:
            assert _document(case, as_of, EVERY_CALL) == _document(case, as_of, None), as_of


def _table(path: Path, as_of: int | None, plan: HelperPlan | None) -> str:
    out = io.StringIO()
    write_table(str(path), as_of, out, plan)
    return out.getvalue()


def _whole_table(path: Path, as_of: int | None) -> str:
    """The table as `inspect` printed it from the whole projection held in memory."""
    _is_bundle, inspections = inspect_path(str(path), as_of)
    return "\n\n".join(render_table(i) for i in inspections) + "\n"


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.booleans())
def test_the_streamed_table_is_the_whole_projections_table(ledger: Any, unique_ids: bool
                                                          ) -> None:
    """`inspect` without --json spools the calls' rows as the projection streams them
    (a helper rendering half): the same text, at every as_of, on random and hostile
    ledgers (those read event by event too)."""
    with drawn_case(ledger, unique_ids) as (case, as_ofs):
        for as_of in as_ofs:
            whole = _whole_table(case, as_of)
            assert _table(case, as_of, None) == whole, as_of
            assert _table(case, as_of, EVERY_CALL) == whole, as_of


def test_a_bundles_streamed_table_reports_a_failing_case_in_place(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    _case(bundle / "a", calls=12)
    broken = bundle / "b" / "case"
    broken.mkdir(parents=True)
    (broken / "ledger.sqlite3").write_bytes(b"not a database, " * 64)
    _case(bundle / "c", calls=30)
    whole = _whole_table(bundle, None)
    assert whole.count("\ncase ") == 2 and "  error: " in whole
    assert _table(bundle, None, None) == whole
    assert _table(bundle, None, EVERYTHING_FORKED) == whole
    out = io.StringIO()
    with pytest.raises(LedgerError):  # a single case: its error, and nothing written
        write_table(str(broken), None, out, None)
    assert out.getvalue() == ""


@settings(max_examples=examples(3), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.booleans())
def test_forked_scans_find_the_same_document_at_every_as_of(ledger: Any, unique_ids: bool
                                                           ) -> None:
    """The suspect scan in two forked helpers finds what two threads find (fewer
    examples: each document forks twice)."""
    with drawn_case(ledger, unique_ids) as (case, as_ofs):
        for as_of in as_ofs:
            assert _document(case, as_of, SCANS_FORKED) == _document(case, as_of, None), as_of


def test_the_scan_helpers_run_below_their_parents_priority(tmp_path: Path) -> None:
    """The start waits for the parent's own reads: each forked scan half asks the kernel
    for SCAN_NICENESS below its parent (read back in the helper, by the kernel's
    account), and the document is the one process's."""
    case, seen = _case(tmp_path), tmp_path / "niceness"
    real_nice = os.nice

    def nice_noted(increment: int) -> int:
        got = real_nice(increment)
        with seen.open("a") as out:  # (the helper's own niceness, as the kernel has it)
            out.write(f"{os.getpid()} {os.getpriority(os.PRIO_PROCESS, 0)}\n")
        return got

    with patch.object(os, "nice", nice_noted):
        document = _document(case, None, SCANS_FORKED)
    assert document == _document(case, None, None)
    lines = seen.read_text().split() if seen.exists() else []
    pids, levels = set(lines[0::2]), {int(level) for level in lines[1::2]}
    assert len(pids) == 2 and str(os.getpid()) not in pids  # two halves, both helpers
    assert levels == {min(19, os.getpriority(os.PRIO_PROCESS, 0) + SCAN_NICENESS)}


def _events(calls: int) -> list[dict[str, Any]]:
    """Calls of two tasks, five at a time with their events interleaved
    (`calls_of_two_tasks`); one payload of the second half is broken (its anomaly)."""
    per_call = calls_of_two_tasks(calls, lambda i, _call: {
        "idempotency_key": f"k{i}", "status": "succeeded", "request_sha256": "ab" * 32})
    per_call[-6][1]["payload"] = "{"
    return interleaved_in_fives(per_call)


def _case(root: Path, calls: int = 40) -> Path:
    receipts = [{"receipt_id": f"r{i}", "received_at": "2026-09-13T12:00:00Z",
                 "idempotency_key": f"k{i}", "body_sha256": "ab" * 32, "bytes": 1}
                for i in range(0, calls, 3)]
    return write_ledger(root / "case", _events(calls), receipts=receipts).parent


def _run(case: Path, render: Callable[[CallState], str], plan: HelperPlan | None
         ) -> tuple[list[str], dict[str, Any]]:
    """The lines `call_lines` gives, and the rest of the projection as documented."""
    with EvidenceSQL(case) as sql:
        got = Gathered(sql, None, read_receipts(case))
        index = got.receipt_index()
        lines = list(got.call_lines(lambda call: render(call) + "\t"
                                    + json.dumps(call.as_json(index)), plan))
        anomalies, tasks, comps, receipts = got.finish()
        rest = {"anomalies": [a.as_json() for a in anomalies],
                "tasks": [t.as_json() for t in tasks],
                "compilations": [c.as_json() for c in comps],
                "receipts": receipts.as_json(), "counts": got.tool_counts.into({})}
    return lines, rest


def _pid(_call: CallState) -> str:
    return str(os.getpid())


def test_the_helper_renders_the_second_half_in_another_process(tmp_path: Path) -> None:
    case = _case(tmp_path)
    lines, rest = _run(case, _pid, EVERY_CALL)
    alone, alone_rest = _run(case, _pid, None)
    pids = [line.split("\t")[0] for line in lines]
    me = str(os.getpid())
    mid = EVERY_CALL.split(len(lines))  # the helper takes the later calls, a little over half
    assert 0 < mid <= len(lines) // 2
    assert pids[:mid] == [me] * mid
    assert len(set(pids[mid:])) == 1 and pids[mid] != me  # one helper, not this process
    assert [line.split("\t")[1] for line in lines] == [line.split("\t")[1] for line in alone]
    assert rest == alone_rest
    assert rest["anomalies"]
    assert {t["subject_id"] for t in rest["tasks"]} == {"c003", "c036"}  # one from each half


def _in_helper(act: Callable[[], object]) -> Callable[[CallState], str]:
    """A render that does `act` when it runs in another process than this one."""
    parent = os.getpid()

    def render(_call: CallState) -> str:
        if os.getpid() != parent:
            act()
        return str(os.getpid())
    return render


def _fail() -> None:
    raise RuntimeError("the helper fails")


def test_a_helper_that_fails_dies_or_hangs_leaves_its_half_to_the_parent(tmp_path: Path) -> None:
    case = _case(tmp_path)
    _lines, alone_rest = _run(case, _pid, None)
    alone = [line.split("\t")[1] for line in _lines]
    me = str(os.getpid())
    hang = HelperPlan(min_calls=2, grace=0.5)
    for act, plan in ((_fail, EVERY_CALL),
                      (lambda: os.kill(os.getpid(), signal.SIGKILL), EVERY_CALL),
                      (lambda: time.sleep(60), hang)):
        started = time.monotonic()
        lines, rest = _run(case, _in_helper(act), plan)
        assert time.monotonic() - started < 20
        assert [line.split("\t")[0] for line in lines] == [me] * len(alone)
        assert [line.split("\t")[1] for line in lines] == alone
        assert rest == alone_rest


def _inspect_watching_children(*args: str) -> tuple[str, set[int]]:
    """`codeai-tui inspect ARGS` as a process: its output, and the pids of the children
    seen while it ran (Linux lists them under /proc)."""
    proc = subprocess.Popen([sys.executable, "-m", "codeai_tui", "inspect", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    children: set[int] = set()
    listing = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            children |= {int(pid) for pid in listing.read_text().split()}
        time.sleep(0.002)
    reader.join(60)
    assert proc.wait(5) == 0, proc.stderr.read()  # type: ignore[union-attr]
    return out[0].decode(), children


@pytest.mark.skipif(helper_plan() is None, reason="needs fork and two cores")
def test_inspect_json_on_a_big_case_forks_a_helper_and_writes_the_same_document(
        tmp_path: Path) -> None:
    """From 10,000 calls on, where two cores are ours, `inspect --json` renders half the
    calls in a helper process: its document (as_of too) is the one a process alone
    writes."""
    case = tmp_path / "big"
    write_bench_ledger(case, 90_000, writers=20, tasks=40)
    for as_of in (None, 80_000):
        more = [] if as_of is None else ["--as-of", str(as_of)]
        out, children = _inspect_watching_children(str(case), "--json", *more)
        assert len(children) == 1, as_of
        assert out == _document(case, as_of, None)
        assert len(json.loads(out)["calls"]) > 10_000


def test_a_helper_whose_parent_is_gone_stops_within_a_few_hundred_lines(tmp_path: Path) -> None:
    """A parent killed outright reads nothing more: its helper's writer notices that the
    process it was forked from is no longer its parent and stops it."""
    with open(tmp_path / "lines", "w+b") as file:
        orphan = LineWriter(file, parent=os.getpid())  # (this process is not our parent)
        written = 0
        with pytest.raises(ParentGone):
            for _ in range(1000):
                orphan.write("{}")
                written += 1
        assert written < 300
        kept = LineWriter(file, parent=os.getppid())
        for _ in range(1000):
            kept.write("{}")


def _suspect_case(root: Path) -> Path:
    """Calls whose suspect rows the scan must find in both halves: broken payloads of
    kinds the payload scan skips, the first near the start, the second near the end."""
    events = _events(40)
    kinds = [e["kind"] for e in events]
    events[kinds.index("attempt.interpreted")]["payload"] = "{"
    events[len(kinds) - 1 - kinds[::-1].index("attempt.completed")]["payload"] = "[1"
    return write_ledger(root / "case", events).parent


def _scanning_in(monkeypatch: pytest.MonkeyPatch, pids: Path,
                 act: Callable[[], object] | None = None) -> None:
    """Each suspect scan writes its process id to `pids`; in another process than this
    one it does `act` first."""
    parent, scan = os.getpid(), EvidenceSQL.suspect_rows

    def suspect_rows(self: EvidenceSQL, *args: Any, **kwargs: Any) -> Any:
        if act is not None and os.getpid() != parent:
            act()
        with pids.open("a") as file:
            file.write(f"{os.getpid()}\n")
        return scan(self, *args, **kwargs)
    monkeypatch.setattr(EvidenceSQL, "suspect_rows", suspect_rows)


def test_the_suspect_scan_runs_in_two_helpers_and_finds_what_one_process_finds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = _suspect_case(tmp_path)
    alone = _document(case, None, None)
    found = [(a["seq"], a["problem"].split(":")[0])
             for a in json.loads(alone)["anomalies"] if "not valid JSON" in a["problem"]]
    assert [kind for _seq, kind in found] == [
        "attempt.interpreted", "call.manifest", "attempt.completed"]
    assert found[0][0] < 100 < 250 < found[-1][0]  # (of 260 events: one in each half)
    pids = tmp_path / "pids"
    _scanning_in(monkeypatch, pids)
    assert _document(case, None, EVERYTHING_FORKED) == alone
    scanned_by = pids.read_text().split()
    assert len(scanned_by) == 2
    assert str(os.getpid()) not in scanned_by and scanned_by[0] != scanned_by[1]


def test_a_scan_helper_that_fails_dies_or_hangs_leaves_its_half_to_the_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = _suspect_case(tmp_path)
    alone = _document(case, None, None)
    hang = HelperPlan(min_calls=2, grace=0.5, min_events=0)
    for act, plan in ((_fail, EVERYTHING_FORKED),
                      (lambda: os.kill(os.getpid(), signal.SIGKILL), EVERYTHING_FORKED),
                      (lambda: time.sleep(60), hang)):
        pids = tmp_path / "pids"
        pids.unlink(missing_ok=True)
        with monkeypatch.context() as patched:
            _scanning_in(patched, pids, act)
            started = time.monotonic()
            assert _document(case, None, plan) == alone
            assert time.monotonic() - started < 20
        assert pids.read_text().split() == [str(os.getpid())] * 2  # both halves here


def test_the_helper_takes_a_little_over_half_the_calls() -> None:
    """The parent's part also reads the task and compilation events: the helper's part
    is the larger, and neither is empty."""
    plan = HelperPlan()
    for calls in (2, 3, 40, 137_000):
        mid = plan.split(calls)
        assert 1 <= mid <= calls - 1
        assert calls - mid >= mid
    assert 0.5 < (137_000 - plan.split(137_000)) / 137_000 < 0.6


def calls_of_two_tasks(calls: int, payload: Callable[[int, str], dict[str, Any]]
                       ) -> list[list[dict[str, Any]]]:
    """Each call's events (`payload(i, call)` each event's payload), the calls in two
    tasks, each with a started attempt; the fourth and the last four stop there (effect
    unknown), so both halves hold unresolved calls and a task's verdict must name the
    earlier one."""
    per_call: list[list[dict[str, Any]]] = []
    for i in range(calls):
        call = f"c{i:03d}"
        kinds = ["call.requested", "call.manifest", "attempt.started"]
        if i < calls - 4 and i != 3:
            kinds += ["attempt.observed", "attempt.interpreted", "attempt.completed",
                      "call.completed"]
        per_call.append([{"kind": kind, "task_id": f"t{i % 2}", "call_id": call,
                          "attempt_id": f"{call}-a1" if kind.startswith("attempt.") else None,
                          "payload": payload(i, call)} for kind in kinds])
    return per_call


def interleaved_in_fives(per_call: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The calls' events five calls at a time, a step of each in turn (as concurrent
    writers append them), numbered from seq 1."""
    events: list[dict[str, Any]] = []
    for first in range(0, len(per_call), 5):
        group = per_call[first:first + 5]
        for step in range(max(len(c) for c in group)):
            events += [c[step] for c in group if step < len(c)]
    for seq, event in enumerate(events, 1):
        event["seq"] = seq
    return events
