"""A bundle's cases, each summarised by its verdict (for the Cases pane and header).

A summary is the projection's verdict, never a guess: the same events fold through the
same projector. What a follower needs for following and time travel is skipped: a
second connection (the fast path's `EvidenceSQL`), the count and last-commit queries,
shared strings, the snapshot's call index: one connection, one page read, one fold.
A case too big for one page goes through the follower, whose fast path wins there.

Where the time goes (1,000 cases of 60 events, 2 cores, one process, load average
1.4-1.9): of ~1.0 s, the read is ~0.6 s (SQLite's open and first read of a WAL ledger,
~0.2 ms a case, and making the Events), the fold ~0.22 s, the snapshot ~0.09 s, the
receipt log ~0.08 s. A lighter connect (fewer queries on the one connection) saved
0.03 s. Threads do not help: two summarising threads took 1.06 s against 1.01 s (and
1.07 s when each case's events came back in one SQLite step), because most of a summary
holds the GIL. So `summarize_all` shares a big bundle with helper processes (one per
further core): each runs this same `summarize` on chunks of cases it is handed and
sends the verdicts back; the caller summarises from the other end until they meet.
Measured on that bundle (`summarize_all`, five rounds in one process after its 0.1 s
of imports): on a quiet machine (nothing else running; load average 0.9-1.2, our own
runs) 0.57-0.59 s median with one helper against 1.00-1.02 s without; the bench's row,
a whole process with its imports, 0.71-0.74 s. With another session's process busy on
one core (load 2.3-2.8), 0.75-0.85 s against 1.0-1.3 s; with both cores taken by
others, 1.18 s against 1.28 s.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from codeai_tui.console.model import (
    PROJECT_PAGE,
    CaseFollower,
    FileStamp,
    file_stamp,
    receipts_stamp,
)
from codeai_tui.console.severity import CaseVerdict, case_verdict
from codeai_tui.ledger import LedgerError, LedgerReader, read_receipts
from codeai_tui.ledger.errors import LedgerProblem
from codeai_tui.ledger.schema import LEDGER_FILENAME
from codeai_tui.services.forked import usable_cores
from codeai_tui.services.projection import flag_index
from codeai_tui.services.stage_reads import CALL_EVENT_KINDS
from codeai_tui.workstate import Projector
from codeai_tui.workstate.evidence import ledger_anomalies

HELPER_MIN_CASES = 200  # fewer: a helper's start (~0.1 s) costs more than it saves
HELPER_CHUNK = 25  # cases per message to a helper (~25 ms of work)
MAX_HELPERS = 3


CaseStamp = tuple[FileStamp | None, ...]


def case_stamp(case_dir: Path) -> CaseStamp:
    """What a process writing the case changes: (inode, size, mtime) of its ledger, the
    ledger's -wal and the receipt log (None where a file is missing, and for an empty
    -wal: SQLite makes one when a reader opens a ledger whose writer has gone, and a
    commit leaves it longer). Taken before a summary, so a write while summarising is
    seen at the next look."""
    ledger = case_dir / LEDGER_FILENAME
    wal = file_stamp(ledger.with_name(LEDGER_FILENAME + "-wal"))
    return (file_stamp(ledger), wal if wal is not None and wal[1] else None,
            receipts_stamp(case_dir))


def summarize(case_dir: Path, stop: Callable[[], bool] | None = None) -> CaseVerdict:
    """Project one case once and name its worst next operation; raises LedgerError (one
    saying "interrupted" soon after `stop()` turns true, even inside a read)."""
    with LedgerReader(case_dir, stop=stop) as reader:
        events = reader.read_after(0, PROJECT_PAGE)
        if len(events) >= PROJECT_PAGE:
            return _summarize_big(case_dir, stop)
        projector = Projector()
        projector.anomalies.extend(ledger_anomalies(reader.schema.notes))
        projector.feed(events)
        # read from the table alone: the indexes are compared with it, as the console does
        if reader.index_disagrees(projector.last_seq, CALL_EVENT_KINDS):
            flag_index(projector.anomalies)
    state = projector.snapshot(read_receipts(case_dir))
    return case_verdict(state, projector.event_count)


def _summarize_big(case_dir: Path, stop: Callable[[], bool] | None) -> CaseVerdict:
    # read once and dropped: never frozen
    follower = CaseFollower(case_dir, stop, keep=False)
    try:
        follower.catch_up()
        snap = follower.snapshot()
    finally:
        follower.close()
    return case_verdict(snap.state, snap.event_count)


Summary = tuple[Path, CaseVerdict | LedgerError]


def summarize_all(cases: list[Path], stopped: Callable[[], bool] = lambda: False,
                  helpers: int | None = None) -> Iterator[Summary]:
    """Every case's summary (or its LedgerError), in the order they are done. A big
    bundle is shared with helper processes; without them (a small bundle, one core, a
    helper that cannot start or dies) the cases are summarised here, the same way. An
    exception other than LedgerError is raised here, from this process's `summarize`
    of that case, as it would be without helpers. Stops soon after `stopped()`."""
    if helpers is None:
        helpers = min(MAX_HELPERS, usable_cores() - 1) if len(cases) >= HELPER_MIN_CASES else 0
    work = _Work(cases)
    pool = [_Helper(work) for _ in range(max(helpers, 0))]
    try:
        for helper in pool:
            helper.start()
        while True:
            if stopped():
                return
            yield from work.answered()
            case = work.take_front() or work.take_leftover()
            if case is not None:
                summary = _summary(case, stopped)
                if stopped():
                    return  # (an interrupted summary is no verdict)
                yield summary
            elif not any(h.running for h in pool) and work.settled() and work.empty():
                break  # (a helper gives its cases back before it stops running)
            elif (summary := work.wait()) is not None:
                yield summary
        yield from work.answered()
    finally:
        for helper in pool:
            helper.stop()


def _summary(case: Path, stop: Callable[[], bool] | None = None) -> Summary:
    try:
        return case, summarize(case, stop)
    except LedgerError as exc:
        return case, exc


class _Work:
    """The cases not yet taken: this process takes from the front, helpers from the
    back, one chunk at a time; their answers wait in a queue."""

    def __init__(self, cases: list[Path]) -> None:
        self._todo = deque(cases)
        self._lock = threading.Lock()
        self._answers: queue.SimpleQueue[Summary | None] = queue.SimpleQueue()
        self._left: list[Path] = []
        self._out = 0  # cases handed to helpers and not yet answered or given back

    def take_front(self) -> Path | None:
        with self._lock:
            return self._todo.popleft() if self._todo else None

    def take_back(self, n: int) -> list[Path]:
        """Up to `n` cases from the back; fewer near the end, so that no side is left
        waiting long for the other's last chunk."""
        with self._lock:
            n = min(n, max(1, len(self._todo) // 8))
            chunk = [self._todo.pop() for _ in range(min(n, len(self._todo)))]
            chunk.reverse()
            self._out += len(chunk)
            return chunk

    def answer(self, summary: Summary) -> None:
        with self._lock:
            self._out -= 1
        self._answers.put(summary)

    def give_back(self, cases: list[Path]) -> None:
        with self._lock:
            self._out -= len(cases)
            self._left += cases
        self._answers.put(None)  # wake a waiting caller

    def empty(self) -> bool:
        with self._lock:
            return not self._todo and not self._left

    def settled(self) -> bool:
        with self._lock:
            return self._out == 0

    def answered(self) -> Iterator[Summary]:
        while True:
            try:
                summary = self._answers.get_nowait()
            except queue.Empty:
                return
            if summary is not None:
                yield summary

    def wait(self) -> Summary | None:
        try:
            return self._answers.get(timeout=0.05)
        except queue.Empty:
            return None

    def take_leftover(self) -> Path | None:
        """A case a helper gave back (it died, or the case raised something else)."""
        with self._lock:
            return self._left.pop(0) if self._left else None


class _Helper:
    """One helper process (`python -P -c ...serve()`), fed by one thread: two chunks in
    flight, so the helper never waits for this process's GIL between chunks."""

    def __init__(self, work: _Work) -> None:
        self.work = work
        self.proc: subprocess.Popen[str] | None = None
        self.thread = threading.Thread(target=self._feed, name="fleet-helper", daemon=True)
        self.running = False

    def start(self) -> None:
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-c",
                 "from codeai_tui.console.fleet import serve; serve()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True, encoding="utf-8", start_new_session=True)
        except OSError:
            return  # no helper: the caller does every case
        self.running = True
        self.thread.start()

    def _feed(self) -> None:
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        sent: deque[list[Path]] = deque()
        try:
            for _ in range(2):
                self._send(proc.stdin, sent)
            while sent:
                line = proc.stdout.readline()
                if not line:
                    raise EOFError
                chunk = sent[0]
                answers = [_decode(answer) for answer in json.loads(line)]
                if len(answers) != len(chunk):
                    raise ValueError("a helper answered another number of cases")
                sent.popleft()
                for case, result in zip(chunk, answers, strict=True):
                    if result is None:  # not a LedgerError: raise it here, not there
                        self.work.give_back([case])
                    else:
                        self.work.answer((case, result))
                self._send(proc.stdin, sent)
        except (OSError, EOFError, ValueError, TypeError, KeyError):
            for chunk in sent:
                self.work.give_back(chunk)
        finally:
            self.running = False
            self.work.give_back([])  # wake the caller
            self._close()

    def _send(self, stdin: IO[str], sent: deque[list[Path]]) -> None:
        chunk = self.work.take_back(HELPER_CHUNK)
        if chunk:
            sent.append(chunk)
            stdin.write(json.dumps([os.fspath(c) for c in chunk]) + "\n")
            stdin.flush()
        elif stdin and not stdin.closed and not sent:
            stdin.close()  # nothing more: the helper ends at end of input

    def _close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def stop(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()  # its feeder sees the end of its output and gives its cases back
        if self.thread.is_alive():
            self.thread.join()


def _decode(answer: dict[str, Any]) -> CaseVerdict | LedgerError | None:
    """One helper answer: a verdict, a LedgerError, or None (anything else went wrong)."""
    if "verdict" in answer:
        return CaseVerdict(**answer["verdict"])
    if "error" in answer:
        return LedgerError(LedgerProblem(answer["error"]), answer["message"])
    return None


def _answer(case: Path) -> dict[str, Any]:
    try:
        return {"verdict": dataclasses.asdict(summarize(case))}
    except LedgerError as exc:
        return {"error": exc.problem.value, "message": exc.message}
    except Exception:  # noqa: BLE001 - the caller runs this case itself, and raises
        return {"other": True}


def serve(stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> None:
    """A helper process: for each line of case paths (a JSON array), one line with each
    case's verdict, LedgerError, or that something else went wrong (a JSON array)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    for line in stdin:
        stdout.write(json.dumps([_answer(Path(name)) for name in json.loads(line)]) + "\n")
        stdout.flush()


class CaseOrder(StrEnum):
    """How the Cases pane is sorted (`o` cycles)."""

    PATH = "by path"
    WORST = "worst first"

    def next(self) -> CaseOrder:
        return CaseOrder.WORST if self is CaseOrder.PATH else CaseOrder.PATH


def ordered(cases: list[Path], verdicts: dict[Path, CaseVerdict], order: CaseOrder
            ) -> list[Path]:
    if order is CaseOrder.PATH:
        return list(cases)
    position = {case: i for i, case in enumerate(cases)}
    return sorted(cases, key=lambda c: (-(verdicts[c].rank if c in verdicts else -1),
                                        position[c]))
