"""`--deadline` bounds each attempt's whole exchange by the wall clock.

Each test runs the real command (`resume`, once `next-attempt`) in its own process
against a server on 127.0.0.1 written here with plain sockets, which misbehaves in time:
a status line followed by one header byte a second, silence, a whole answer that only a
slow client reads late, an event stream that never ends, a connect that never completes.
The command must be back within the deadline plus a small margin whether or not bytes
keep arriving; an answer whole before the deadline is journaled, any other leaves the
attempt effect-unknown with nothing recorded after `attempt.started`.

A server paces itself (one byte a second, a chunk a second) and the test stops and
continues the client at chosen instants: those waits stage faults at given times, they do
not wait for a state. States (the connection accepted, the client gone) are polled with
a deadline.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codeai_tui.lab.reliability.cases import make_advance_case
from codeai_tui.ledger import ArtifactStore, LedgerReader
from codeai_tui.read.inspection import project_case
from codeai_tui.workstate import CallStage
from tests.core.cases import STOPPED_AT, make_case

# How long after its deadline the command may take to be back, counted from the moment
# the server accepted the connection. The deadline starts ~0.13 s before that (the
# client is set up inside it); after it the command reads the ledger back, prints and
# exits. Measured on two shared cores: back at most 0.10 s after deadline-from-accept
# (0.2-0.65 s after deadline-from-start, the interpreter's start-up included). The bound
# leaves room for a busier machine.
MARGIN_S = 1.5
# When the server sees the client hang up, around its deadline: measured 0.03-0.14 s
# before it, counted from the accept. Not much later (a trickle or a stream must not
# extend it: the stream test's next chunk is 0.5 s after the deadline) nor much earlier
# (nothing but the deadline may end the wait).
HANG_UP_LATE_S = 0.45
HANG_UP_EARLY_S = 1.0
# Longer than any run of the fixed code; the code before it waited for ever (a trickle
# of header bytes) or for its read timeout: the test fails on that rather than hangs.
COMMAND_CAP_S = 20.0

ANSWER = json.dumps({
    "id": "chatcmpl-on-time", "object": "chat.completion", "model": "synthetic-small",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "whole before the deadline"}}],
}).encode()


class SlowServer:
    """One connection on 127.0.0.1: reads the request, then runs `script` in a thread.

    Records when it accepted the connection and when it saw the client hang up."""

    def __init__(self, script: Callable[[SlowServer, socket.socket], None]) -> None:
        self.script = script
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted = threading.Event()
        self.accepted_at = 0.0
        self.hung_up_at: float | None = None
        self.request = b""
        self.sent_at: list[float] = []  # when each paced piece left
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> SlowServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.listener.close()
        self.thread.join(timeout=10)

    def _serve(self) -> None:
        self.listener.settimeout(0.1)
        while True:
            try:
                conn, _ = self.listener.accept()
                break
            except TimeoutError:
                if self.stop.is_set():
                    return
            except OSError:
                return
        with conn:
            self.accepted_at = time.monotonic()
            self.accepted.set()
            self.request = _read_request(conn)
            self.script(self, conn)

    def wait(self, conn: socket.socket, seconds: float) -> bool:
        """Pace for `seconds`; True as soon as the client hangs up (or the test ends)."""
        ends = time.monotonic() + max(0.0, seconds)
        while not self.stop.is_set():
            left = ends - time.monotonic()
            if left <= 0:
                return False
            readable, _, _ = select.select([conn], [], [], min(left, 0.05))
            if readable:
                try:
                    data = conn.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    self.hung_up_at = time.monotonic()
                    return True
        return True

    def wait_until(self, conn: socket.socket, since_accept: float) -> bool:
        return self.wait(conn, self.accepted_at + since_accept - time.monotonic())

    def send(self, conn: socket.socket, data: bytes) -> bool:
        """False when the client is gone."""
        try:
            conn.sendall(data)
        except OSError:
            self.hung_up_at = self.hung_up_at or time.monotonic()
            return False
        self.sent_at.append(time.monotonic())
        return True


def _read_request(conn: socket.socket) -> bytes:
    """Headers and a Content-Length body (the runner always sends one)."""
    conn.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return data
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            break
        body += piece
    conn.settimeout(None)
    return head + b"\r\n\r\n" + body


# ---- the servers' scripts


def status_then_a_header_byte_a_second(srv: SlowServer, conn: socket.socket) -> None:
    srv.send(conn, b"HTTP/1.1 200 OK\r\nX-Trickle: ")
    while not srv.wait(conn, 1.0) and srv.send(conn, b"a"):
        pass


def silent(srv: SlowServer, conn: socket.socket) -> None:
    while not srv.wait(conn, 1.0):
        pass


def whole_answer_at(seconds: float) -> Callable[[SlowServer, socket.socket], None]:
    def whole_answer(srv: SlowServer, conn: socket.socket) -> None:
        if srv.wait_until(conn, seconds):
            return
        srv.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       b"Content-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER))
        silent(srv, conn)  # the connection stays open, as a keep-alive server leaves it
    return whole_answer


def sse_chunk_a_second(srv: SlowServer, conn: socket.socket) -> None:
    """An event stream (chunked) whose chunk k leaves k seconds after the accept."""
    if not srv.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n"):
        return
    tick = 0
    while True:
        event = json.dumps({"id": "chatcmpl-forever", "object": "chat.completion.chunk",
                            "choices": [{"index": 0, "delta": {"content": f"tick {tick} "}}]})
        data = f"data: {event}\n\n".encode()
        if not srv.send(conn, b"%x\r\n%s\r\n" % (len(data), data)):
            return
        tick += 1
        if srv.wait_until(conn, tick):
            return


# ---- running the real command


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    since_accept: float  # from the server's accept to the command's exit
    since_start: float  # from starting the process to its exit (startup included)


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[SlowServer]:
    with SlowServer(request.param) as srv:
        yield srv


def _case(tmp_path: Path, srv: SlowServer, request: dict[str, object] | None = None) -> Path:
    return make_case(tmp_path / "case", srv.base_url, recorded_at=STOPPED_AT, request=request)


def _resume(case: Path, srv: SlowServer, *limits: str,
            meanwhile: Callable[[subprocess.Popen[str]], None] | None = None) -> Run:
    return _send(srv, "resume", str(case), "call-1", *limits, meanwhile=meanwhile)


def _send(srv: SlowServer, *args: str,
          meanwhile: Callable[[subprocess.Popen[str]], None] | None = None) -> Run:
    """`codeai-tui ARGS --yes --base-url SERVER` in its own process, timed."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeai_tui", *args, "--yes", "--base-url", srv.base_url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        ends = started + COMMAND_CAP_S
        while not srv.accepted.wait(0.05) and proc.poll() is None and time.monotonic() < ends:
            pass
        if not srv.accepted.is_set():
            _, err = proc.communicate(timeout=COMMAND_CAP_S)
            pytest.fail(f"{' '.join(args)} never connected (exit {proc.returncode}): {err}")
        if meanwhile is not None:
            meanwhile(proc)
        out, err = proc.communicate(timeout=COMMAND_CAP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"{' '.join(args)} still waiting after {COMMAND_CAP_S:g} s")
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.communicate()
    ended = time.monotonic()
    return Run(proc.returncode, out, err, ended - srv.accepted_at, ended - started)


def _new_call(case: Path) -> tuple[str, list[Any]]:
    with LedgerReader(case) as reader:
        events = reader.events()
    (resumed,) = [e for e in events if e.kind == "call.resumed"]
    new_id = resumed.payload["resumed_as"]
    return new_id, [e for e in events if e.call_id == new_id]


def _assert_effect_unknown(case: Path, run: Run, deadline: float) -> None:
    assert run.returncode == 5, (run.returncode, run.stderr)
    assert f"no whole answer within {deadline:g} s (the deadline)" in run.stderr
    new_id, events = _new_call(case)
    assert [e.kind for e in events] == ["call.requested", "call.manifest", "attempt.started"]
    state = project_case(case).call(new_id)
    assert state is not None and state.stage is CallStage.EFFECT_UNKNOWN


def _assert_hung_up_at_the_deadline(srv: SlowServer, deadline: float) -> None:
    """The server saw the client go at the deadline, counted from the accept (polled)."""
    ends = time.monotonic() + 5
    while srv.hung_up_at is None and time.monotonic() < ends:
        srv.stop.wait(0.02)
    assert srv.hung_up_at is not None, "the client never hung up"
    hung_up = srv.hung_up_at - srv.accepted_at
    assert deadline - HANG_UP_EARLY_S < hung_up < deadline + HANG_UP_LATE_S, hung_up


# ---- the servers


@pytest.mark.parametrize("server", [status_then_a_header_byte_a_second], indirect=True)
def test_a_header_byte_a_second_does_not_extend_the_deadline(
        tmp_path: Path, server: SlowServer) -> None:
    """Every read gets a byte well within --timeout 3: only the deadline can end it."""
    case = _case(tmp_path, server)
    run = _resume(case, server, "--timeout", "3", "--deadline", "3")
    assert run.since_accept < 3 + MARGIN_S, run
    _assert_effect_unknown(case, run, 3)
    _assert_hung_up_at_the_deadline(server, 3)
    assert len(server.sent_at) >= 3  # bytes kept coming until the client went


@pytest.mark.parametrize("server", [silent], indirect=True)
def test_a_silent_server_is_left_at_the_deadline_not_the_read_timeout(
        tmp_path: Path, server: SlowServer) -> None:
    case = _case(tmp_path, server)
    run = _resume(case, server, "--timeout", "10", "--deadline", "2")
    assert run.since_accept < 2 + MARGIN_S, run
    _assert_effect_unknown(case, run, 2)
    _assert_hung_up_at_the_deadline(server, 2)


@pytest.mark.parametrize("server", [whole_answer_at(2.0)], indirect=True)
def test_an_answer_whole_before_the_deadline_is_journaled_when_read_late(
        tmp_path: Path, server: SlowServer) -> None:
    """The whole answer arrives 1 s before the deadline while the client is stopped; it
    is continued 1 s after the deadline and finds the answer waiting: journaled."""
    deadline = 3.0
    case = _case(tmp_path, server)

    def slow_client(proc: subprocess.Popen[str]) -> None:
        _pace_until(server.accepted_at + deadline - 1.5)
        os.kill(proc.pid, signal.SIGSTOP)
        _pace_until(server.accepted_at + deadline + 1.0)
        os.kill(proc.pid, signal.SIGCONT)

    run = _resume(case, server, "--timeout", "10", "--deadline", f"{deadline:g}",
                  meanwhile=slow_client)
    (answered,) = server.sent_at
    assert answered - server.accepted_at < deadline - 0.5  # whole before the deadline
    assert run.returncode == 0, (run.returncode, run.stderr)
    # it read the answer only after the deadline: it was stopped until then
    assert deadline + 1.0 < run.since_accept < deadline + 1.0 + MARGIN_S, run
    new_id, events = _new_call(case)
    assert [e.kind for e in events][2:] == [
        "attempt.started", "attempt.observed", "attempt.interpreted", "attempt.completed",
        "call.completed"]
    (observed,) = [e for e in events if e.kind == "attempt.observed"]
    assert observed.payload["transport"]["status"] == 200
    assert ArtifactStore(case).get(observed.payload["response_artifact"]) == ANSWER
    state = project_case(case).call(new_id)
    assert state is not None and state.stage is CallStage.COMPLETED


@pytest.mark.parametrize("server", [sse_chunk_a_second], indirect=True)
def test_a_stream_that_never_ends_is_cut_at_the_deadline(
        tmp_path: Path, server: SlowServer) -> None:
    """Chunks leave at 0, 1, 2, 3... s; the deadline (2.5 s) falls between two of them.
    The client must go at the deadline, before the chunk of 3 s, not when it comes."""
    case = _case(tmp_path, server, request={"stream": True})
    run = _resume(case, server, "--timeout", "10", "--deadline", "2.5")
    assert b'"stream":true' in server.request.replace(b" ", b"")
    assert run.since_accept < 2.5 + MARGIN_S, run
    _assert_effect_unknown(case, run, 2.5)
    _assert_hung_up_at_the_deadline(server, 2.5)
    # the head, then the chunks of 0, 1 and 2 s; not the one of 3 s
    assert len(server.sent_at) == 1 + 3


@pytest.mark.parametrize("server", [status_then_a_header_byte_a_second], indirect=True)
def test_next_attempt_takes_the_same_limits(tmp_path: Path, server: SlowServer) -> None:
    """next-attempt sends through the same runner: its --deadline holds as resume's."""
    case = tmp_path / "case"
    make_advance_case(case, server.base_url, "retry_decided")
    run = _send(server, "next-attempt", str(case), "call-1", "--timeout", "3",
                "--deadline", "2")
    assert run.since_accept < 2 + MARGIN_S, run
    assert run.returncode == 5, (run.returncode, run.stderr)
    assert "no whole answer within 2 s (the deadline)" in run.stderr
    with LedgerReader(case) as reader:
        last = reader.events()[-1]
    assert (last.kind, last.attempt_id) == ("attempt.started", "call-1-a2")
    state = project_case(case).call("call-1")
    assert state is not None and state.stage is CallStage.EFFECT_UNKNOWN
    _assert_hung_up_at_the_deadline(server, 2)


@contextmanager
def unanswered_connects() -> Iterator[int]:
    """A port on 127.0.0.1 whose accept queue is full: a connect to it never completes
    (its SYNs are dropped), as towards a host that does not answer."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            with suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            fillers.append(filler)
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def test_a_connect_that_never_completes_ends_at_the_deadline(tmp_path: Path) -> None:
    """Not connected by the deadline: nothing was sent (effect none), and each of the
    call's two attempts ends at its deadline, not at the 10 s connect timeout."""
    with unanswered_connects() as port:
        base_url = f"http://127.0.0.1:{port}/v1"
        case = make_case(tmp_path / "case", base_url, recorded_at=STOPPED_AT)
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "codeai_tui", "resume", str(case), "call-1", "--yes",
                 "--base-url", base_url, "--timeout", "10", "--deadline", "1.5"],
                capture_output=True, text=True, timeout=COMMAND_CAP_S,
                env={**os.environ, "PYTHONWARNINGS": "ignore"})
        except subprocess.TimeoutExpired:
            pytest.fail(f"resume still waiting for a connection after {COMMAND_CAP_S:g} s")
        took = time.monotonic() - started
    assert took < 2 * 1.5 + MARGIN_S, took  # start-up included
    assert done.returncode == 4, (done.returncode, done.stderr)  # the call failed
    new_id, events = _new_call(case)
    observed = [e.payload["transport"] for e in events if e.kind == "attempt.observed"]
    assert observed == [{"status": None, "bytes": 0, "sent": False,
                         "error": "no connection within 1.5 s (the deadline): nothing sent"}] * 2
    state = project_case(case).call(new_id)
    assert state is not None and state.stage is CallStage.COMPLETED
    assert state.provider_effect.value == "none"


def _pace_until(instant: float) -> None:
    """Stage a fault at a chosen instant (time.monotonic)."""
    time.sleep(max(0.0, instant - time.monotonic()))
