"""Every hostile case directory, through `inspect` and the console.

For each case: `inspect` (a subprocess, 5 s) exits 2 with exactly one line, or exits 0 and
reports the problem; the console shows its error screen or flags the problem within 5 s;
no traceback anywhere; no file in or beside the case changes (SQLite may add an empty -wal
and a -shm beside a cleanly closed WAL ledger); nothing reaches the capture
listener every case.json points at. The cases marked `writes` also go through every
write action (resume, reconcile, ..., replay), each of which must refuse the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import consoleprobe as probe
import hostile
import pytest
from actionrun import WRITE_ACTIONS
from apphelpers import frozen_clock, wait_for
from hostile import CORPUS, Expect, Hostile
from inspectrun import Run, run_inspect
from schemacheck import problems as schema_problems

from codeai_tui.app import create_app

CONSOLE_SIZE = (100, 30)  # every pane still shows; fewer cells to draw 72 times
EMPTY_SHA = hashlib.sha256(b"").hexdigest()
ANOMALIES_WORD = "anomal"


def _params() -> list[object]:
    return [pytest.param(h, id=h.name, marks=[pytest.mark.xfail(strict=True, reason=h.pending)]
                         if h.pending else []) for h in CORPUS]


def test_the_corpus_is_at_least_forty_distinct_cases() -> None:
    names = [h.name for h in CORPUS]
    assert len(names) >= 40 and len(set(names)) == len(names)
    assert {h.expect for h in CORPUS} == set(Expect)


@pytest.fixture(scope="module")
def capture() -> Iterator[socket.socket]:
    """A listener every case.json in the corpus names as its provider."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    old = dict(hostile.CAPTURE)
    hostile.CAPTURE["base_url"] = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    yield sock
    hostile.CAPTURE.update(old)
    sock.close()


def assert_nothing_sent(sock: socket.socket) -> None:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return
    conn.close()
    raise AssertionError("a connection reached the provider named by the case")


def tree_state(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry below `root` by lstat: files by content hash, links by target, special
    files by type (never opened: a FIFO would block)."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            mode = os.lstat(p).st_mode
            rel = p.relative_to(root).as_posix()
            if stat.S_ISREG(mode):
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            elif stat.S_ISLNK(mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(mode):
                out[rel] = ("dir", "")
            else:
                out[rel] = ("special", oct(stat.S_IFMT(mode)))
    return out


def assert_no_write(before: dict[str, tuple[str, str]], after: dict[str, tuple[str, str]]
                    ) -> None:
    """Byte-identical except what SQLite adds beside a cleanly closed WAL ledger: a new
    empty -wal and a -shm (its shared-memory index, which readers update)."""
    assert set(before) <= set(after), f"removed: {sorted(set(before) - set(after))}"
    for rel, now in after.items():
        name = rel.rsplit("/", 1)[-1]
        if rel not in before:
            assert name == "ledger.sqlite3-shm" or (
                name == "ledger.sqlite3-wal" and now == ("file", EMPTY_SHA)), f"created {rel}"
        elif name == "ledger.sqlite3-shm" and now[0] == before[rel][0] == "file":
            continue
        else:
            assert before[rel] == now, f"changed {rel}"


def build(h: Hostile, tmp_path: Path) -> tuple[Path, Path]:
    """(the directory to watch for writes, the case): the case and any twin beside it."""
    root = tmp_path / "corpus"
    root.mkdir()
    case = root / "case"
    h.build(case)
    return root, case


def _mentions_receipts_or_case_json(h: Hostile) -> str:
    return "case.json" if h.name.startswith("case_json") else "receipts"


# ------------------------------------------------------------------------------ inspect


@dataclass
class Inspected:
    case: Path
    run: Run | AssertionError  # AssertionError: still running after 5 s
    json_run: Run | AssertionError | None  # `inspect --json` (None for an ERROR case)
    before: dict[str, tuple[str, str]]
    after: dict[str, tuple[str, str]]


def _run_or_hang(job: tuple[Path, tuple[str, ...]]) -> Run | AssertionError:
    try:
        return run_inspect(job[0], *job[1])
    except AssertionError as exc:
        return exc


@pytest.fixture(scope="module")
def inspected(tmp_path_factory: pytest.TempPathFactory, capture: socket.socket
              ) -> dict[str, Inspected]:
    """Every case built once and inspected by its own process, a few at a time (each
    still under its own 5 s deadline): the corpus stays fast on two cores."""
    root = tmp_path_factory.mktemp("corpus")
    cases = {}
    for h in CORPUS:
        (root / h.name).mkdir()
        h.build(root / h.name / "case")
        cases[h.name] = root / h.name / "case"
    before = {name: tree_state(case.parent) for name, case in cases.items()}
    # --json only where a document is expected: an error ends before any output is made
    jobs = [(cases[h.name], ()) for h in CORPUS] + [
        (cases[h.name], ("--json",)) for h in CORPUS if h.expect is not Expect.ERROR]
    with ThreadPoolExecutor(max_workers=3) as pool:
        runs = dict(zip(((str(c), e) for c, e in jobs), pool.map(_run_or_hang, jobs),
                        strict=True))
    return {name: Inspected(case, runs[(str(case), ())], runs.get((str(case), ("--json",))),
                            before[name], tree_state(case.parent))
            for name, case in cases.items()}


@pytest.mark.parametrize("h", _params())
def test_inspect(h: Hostile, inspected: dict[str, Inspected], capture: socket.socket) -> None:
    result = inspected[h.name]
    if isinstance(result.run, AssertionError):
        raise result.run
    run = result.run
    assert "Traceback" not in run.out + run.err
    if h.expect is Expect.ERROR:
        assert run.rc == 2, (run.rc, run.out, run.err)
        assert len(run.err_lines) == 1 and run.out == "", run.err
        assert run.err.startswith("codeai-tui: ") and h.words in run.err, run.err
        assert "internal error" not in run.err
    else:
        assert run.rc == 0 and run.err == "", (run.rc, run.err)
        assert h.words in run.out, run.out
        anomaly_lines = [ln for ln in run.out.splitlines() if "anomaly at seq" in ln]
        if h.expect is Expect.ANOMALY:
            assert any(h.words in ln for ln in anomaly_lines), run.out
        else:
            assert anomaly_lines == [], run.out
    assert_no_write(result.before, result.after)
    assert_nothing_sent(capture)


@pytest.mark.parametrize("h", [p for p in _params()
                               if p.values[0].expect is not Expect.ERROR])  # type: ignore[union-attr]
def test_inspect_json(h: Hostile, inspected: dict[str, Inspected]) -> None:
    """The machine-readable document (docs/ledger.md section 7) under the same input,
    following the schema it names."""
    run = inspected[h.name].json_run
    if isinstance(run, AssertionError):
        raise run
    assert run is not None
    assert run.rc == 0 and run.err == "", run.err
    doc = json.loads(run.out)
    assert doc["format"] == "codeai.work_state.v1"
    assert schema_problems(doc) == []
    problems = [a["problem"] for a in doc["anomalies"]]
    if h.expect is Expect.ANOMALY:
        assert any(h.words in p for p in problems), problems
    else:
        assert problems == []


# ------------------------------------------------------------------------------ writes

ACTIONS_TIMEOUT_S = 20.0  # all eight actions of one case, in one process
ACTION_RUNNER = str(Path(__file__).with_name("actionrun.py"))


@dataclass
class Written:
    runs: dict[str, Run]  # action -> what it did; an action still running is missing
    hung: str | None  # why the runner did not finish
    before: dict[str, tuple[str, str]]
    after: dict[str, tuple[str, str]]


def _run_actions(job: tuple[Path, str, Path]) -> tuple[dict[str, Run], str | None]:
    case, url, key = job
    env = {**os.environ, "CODEAI_TUI_DEBUG": ""}
    hung = None
    try:
        proc = subprocess.run([sys.executable, ACTION_RUNNER, str(case), url, str(key)],
                              capture_output=True, timeout=ACTIONS_TIMEOUT_S, env=env,
                              stdin=subprocess.DEVNULL, cwd=case.parent)
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or b""
        hung = f"still running after {ACTIONS_TIMEOUT_S} s"
    runs = {}
    for line in out.decode("utf-8", "replace").splitlines():
        done = json.loads(line)
        runs[done["action"]] = Run(done["rc"], done["out"], done["err"])
    return runs, hung


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, capture: socket.socket
            ) -> dict[str, Written]:
    """Every `writes` case built once and given every write action, one process per case
    (a few at a time), each under its own deadline."""
    root = tmp_path_factory.mktemp("writes")
    key = root / "kernel.key"
    key.write_bytes(b"not a key: the ledger must be refused before it is read\n")
    cases = {}
    for h in CORPUS:
        if h.writes:
            (root / h.name).mkdir()
            h.build(root / h.name / "case")
            cases[h.name] = root / h.name / "case"
    before = {name: tree_state(case.parent) for name, case in cases.items()}
    url = hostile.CAPTURE["base_url"]
    with ThreadPoolExecutor(max_workers=3) as pool:
        done = dict(zip(cases, pool.map(_run_actions, [(c, url, key) for c in cases.values()]),
                        strict=True))
    return {name: Written(*done[name], before[name], tree_state(case.parent))
            for name, case in cases.items()}


@pytest.mark.parametrize("action", list(WRITE_ACTIONS))
@pytest.mark.parametrize("h", [p for p in _params() if p.values[0].writes])  # type: ignore[union-attr]
def test_write_action(h: Hostile, action: str, written: dict[str, Written],
                      capture: socket.socket) -> None:
    """A write action on a case that must not be read: exit 2, one line naming what was
    found, nothing sent, nothing written (SQLite's -wal/-shm aside, as for inspect)."""
    assert h.expect is Expect.ERROR
    result = written[h.name]
    run = result.runs.get(action)
    assert run is not None, f"{action} on {h.name}: {result.hung or 'never ran'}"
    assert "Traceback" not in run.out + run.err
    assert run.rc == 2, (action, run.rc, run.out, run.err)
    assert len(run.err_lines) == 1 and run.out == "", run.err
    assert run.err.startswith("codeai-tui: ") and h.words in run.err, run.err
    assert_no_write(result.before, result.after)
    assert_nothing_sent(capture)


# ------------------------------------------------------------------------------ console


@pytest.mark.parametrize("h", _params())
async def test_console(h: Hostile, tmp_path: Path, capture: socket.socket) -> None:
    root, case = build(h, tmp_path)
    before = tree_state(root)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=CONSOLE_SIZE, notifications=True) as pilot:
        if h.expect is Expect.ERROR:
            sentence = await probe.error_shown(pilot, h.name)
            assert h.words in sentence and "Traceback" not in sentence
        else:
            await probe.projected(pilot, h.name)
            anomalies = probe.anomalies(app)
            if h.expect is Expect.ANOMALY:
                assert any(h.words in p for p in anomalies), anomalies
                assert f"{len(anomalies)} anomalies" in probe.status_text(app)
            else:
                assert anomalies == []
            if h.expect is Expect.NOTE and _mentions_receipts_or_case_json(h) == "receipts":
                lines = probe.receipt_lines(app)
                assert any(h.words in line for line in lines), lines
            elif h.expect is Expect.NOTE:
                # the console reads case.json when asked to resume: `r` must say why not
                await probe.select_call(pilot, "call-1")
                await pilot.press("r")
                await wait_for(pilot, lambda: any(h.words in n for n in probe.notes(app)),
                               timeout=probe.DEADLINE_S, what="case.json problem shown")
                assert not probe.dialog_open(app)
        assert probe.internal_errors(app) == []
        await pilot.press("q")
    assert_no_write(before, tree_state(root))
    assert_nothing_sent(capture)
