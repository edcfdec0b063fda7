"""Running a call the way the CodeAI runtime does, with every boundary recorded.

The order is the point: the request artifact and `call.manifest` are durable before any
attempt; `attempt.started` is committed BEFORE the request leaves; the response bytes are
stored and `attempt.observed` committed BEFORE interpretation. Between started and
observed the honest answer is "unknown", which is what the projection says after a kill,
and what the runner leaves behind when it connected but got no answer.
No ledger transaction is ever open while the network is in use.
"""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from codeai_tui.ledger.artifacts import MAX_ARTIFACT_BYTES, ArtifactStore
from codeai_tui.ledger.case import CaseConfig
from codeai_tui.ledger.jsontypes import JsonObject, JsonValue
from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.writer import LedgerWriter
from codeai_tui.runtime.request_bytes import build_request
from codeai_tui.runtime.responses import (
    ParsedJson,
    StreamAssembler,
    TextCallback,
    parse_json_completion,
    tool_plan,
)
from codeai_tui.runtime.retry_after import (
    MAX_RETRY_WAIT_S,
    RetryAfter,
    kept_headers,
    parse_retry_after,
)

# The longest wait for progress: the connect (TLS included), and each read or write.
SEND_TIMEOUT_S = 30.0
# The whole exchange by the wall clock: connect, request, status line, headers, body and
# stream. A provider that keeps sending (one header byte a second, keep-alive comments
# on a hung stream) never lets a read time out, and the caller (a resume, a console's
# worker) would wait for ever. Past it the attempt stays unobserved: the provider may
# have served it (effect unknown), as for a stream cut off.
SEND_DEADLINE_S = 600.0
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

CommitHook = Callable[[Event], None]


@dataclass(frozen=True, slots=True)
class Transport:
    status: int | None
    body: bytes
    error: str | None = None
    # False only when the connection itself failed, so no byte can have reached the
    # provider; any failure after connecting may have come after the provider got it.
    maybe_sent: bool = True
    # An event stream: `complete` only after its finish_reason and `data: [DONE]`.
    stream: bool = False
    complete: bool = True
    # The answer as one chat.completion (parsed, or assembled from the stream).
    completion: ParsedJson | None = None
    # The allow-listed response headers (retry_after.KEPT_HEADERS), never a credential
    # or a cookie, and the wait the answer asks for (read with its Date header).
    headers: Mapping[str, str] = field(default_factory=dict)
    retry_after: RetryAfter = RetryAfter(None)


# An answer larger than an artifact may be cannot be journaled (nor read back verified),
# so reading stops there: the attempt stays unobserved, effect unknown.
MAX_RESPONSE_BYTES = MAX_ARTIFACT_BYTES

_SSL_CONTEXT: ssl.SSLContext | None = None


class _NotJournaled(Exception):
    """Reading stopped: what arrived cannot be journaled (too large)."""


class _ExchangeClock:
    """The deadline of one exchange, kept by a timer thread, not by the reading one.

    A read blocked on a silent or trickling provider is ended from outside: at the
    deadline the connection is shut down both ways (`shutdown(SHUT_RDWR)`), so the
    blocked read returns at once and no byte arriving later is accepted (Linux answers
    it with a reset). Bytes already on this machine stay readable: an answer that was
    whole before the deadline is read whole however late this process gets to it.

    The connection comes from httpcore's `trace` extension (`connect_tcp.complete`, also
    through a proxy); the clock holds a duplicate of its descriptor, so it stays valid
    when TLS wraps the socket, and closes it when the exchange ends."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._connection: socket.socket | None = None
        self.cut = False  # the deadline shut the connection (or found none yet)
        self.request_started = False  # a request byte may have been written
        self._over = False
        self._timer = threading.Timer(seconds, self._at_deadline)
        self._timer.daemon = True
        self._timer.start()

    @property
    def cut_before_request(self) -> bool:
        """The deadline came before any request byte could leave: nothing was sent."""
        return self.cut and not self.request_started

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace callback: keep the connection once it is made; note when the
        request starts to go out (after a cut, its writes fail: nothing leaves)."""
        if event.endswith("send_request_headers.started"):
            with self._lock:
                self.request_started = self.request_started or not self.cut
            return
        if not event.endswith("connect_tcp.complete"):
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        try:
            duplicate = socket.socket(sock.family, sock.type, sock.proto, os.dup(sock.fileno()))
        except OSError:  # no descriptor left: only the timeout bounds this exchange's waits
            return
        with self._lock:
            if self._connection is not None or self._over:
                duplicate.close()
                return
            self._connection = duplicate
            if self.cut:  # connected after the deadline
                self._shut(duplicate)

    def _at_deadline(self) -> None:
        with self._lock:
            if self._over:
                return
            self.cut = True
            if self._connection is not None:
                self._shut(self._connection)

    @staticmethod
    def _shut(connection: socket.socket) -> None:
        with contextlib.suppress(OSError):  # already reset by the peer: nothing to end
            connection.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        """The exchange is over (whole or not): the deadline no longer applies."""
        self._timer.cancel()
        with self._lock:
            self._over = True
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


def _ssl_context() -> ssl.SSLContext:
    """One verifying context per process (httpx builds one per client otherwise, ~20 ms);
    honours SSL_CERT_FILE / SSL_CERT_DIR like httpx does."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        import httpx

        _SSL_CONTEXT = httpx.create_ssl_context()
    return _SSL_CONTEXT


def send_request(
    base_url: str,
    body: bytes,
    key: str,
    api_key: str | None,
    timeout: float,
    on_text: TextCallback | None = None,
    deadline: float = SEND_DEADLINE_S,
) -> Transport:
    """POST the exact bytes to `{base_url}/chat/completions` and read the whole answer.

    httpx (the OpenAI SDK's own client family): https with certificate checks, proxies
    from the environment (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY), no automatic retry.
    Two bounds: `timeout` seconds for each wait for progress (the connect with its TLS
    handshake, each read, each write), and `deadline` seconds by the wall clock for the
    whole exchange, whether bytes keep arriving or not (_ExchangeClock): an answer not
    whole by then is not an answer. An event-stream answer is consumed as it arrives
    (`on_text` sees text deltas) and assembled. Headers are never logged and never part
    of an error text, so the key stays out of the ledger.

    httpx is imported here, not at module level: readers (inspect, the console) import
    this module and never send, and httpx loads rich for its own CLI when rich is
    installed, which the data layer's imports must not do (test_layers).
    """
    import httpx

    # Errors raised before any request byte can have left: the connection (to the
    # provider or to a proxy) was never made, or the URL could not be used at all.
    not_sent = (
        httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.ProxyError,
        httpx.UnsupportedProtocol, httpx.InvalidURL,
    )
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return Transport(None, b"", f"unsupported base_url scheme: {parts.scheme or '(none)'}",
                         maybe_sent=False)
    headers = {"Content-Type": "application/json", "Idempotency-Key": key}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    url = base_url.rstrip("/") + "/chat/completions"
    status: int | None = None
    kept: dict[str, str] = {}
    asked = RetryAfter(None)
    received = bytearray()
    assembler: StreamAssembler | None = None
    cut_by_deadline = False  # whether the deadline came before the body's end was read
    late = f"no whole answer within {deadline:g} s (the deadline)"
    # the connect cannot outlast the deadline either (the clock has no socket to cut yet)
    limits = httpx.Timeout(timeout, connect=min(timeout, deadline))
    clock = _ExchangeClock(deadline)
    try:
        with (
            httpx.Client(timeout=limits, verify=_ssl_context(), follow_redirects=False) as client,
            client.stream("POST", url, content=body, headers=headers,
                          extensions={"trace": clock.trace}) as resp,
        ):
            status = resp.status_code
            kept, asked = kept_headers(resp.headers), parse_retry_after(resp.headers)
            if resp.headers.get("content-type", "").startswith("text/event-stream"):
                assembler = StreamAssembler(on_text)
            for piece in resp.iter_bytes():
                received += piece
                if len(received) > MAX_RESPONSE_BYTES:
                    raise _NotJournaled(f"response larger than {MAX_RESPONSE_BYTES} bytes")
                if assembler is not None:
                    assembler.feed(piece)
            if assembler is not None:
                assembler.finish()
            # the end of a body delimited by the connection's close may be the deadline's
            # own shutdown: then nothing says the answer was whole
            cut_by_deadline = clock.cut and _close_delimited(resp.headers)
    except _NotJournaled as exc:
        return Transport(status, b"", f"{exc}: not journaled", stream=assembler is not None,
                         complete=False, headers=kept)
    except not_sent as exc:
        # the connect's own timeout is capped at the deadline: when that cap was the
        # binding one, its timeout is the deadline's, whichever of the two fired first
        by_deadline = clock.cut or (isinstance(exc, httpx.ConnectTimeout)
                                    and deadline <= timeout)
        why = (f"no connection within {deadline:g} s (the deadline): nothing sent"
               if by_deadline else _describe(exc))
        return Transport(None, b"", why, maybe_sent=False)
    except httpx.HTTPError as exc:
        if clock.cut_before_request:  # shut before a byte of the request was written
            return Transport(None, b"", f"{late}: nothing sent", maybe_sent=False)
        why = f"{late}: not journaled" if clock.cut else _describe(exc)
        if assembler is not None:  # cut off mid-stream: what arrived is not an answer
            return Transport(status, bytes(received), why, stream=True,
                             complete=False, headers=kept)
        return Transport(None, b"", why)
    finally:
        clock.stop()
    if cut_by_deadline:
        return Transport(status, b"", f"{late}: not journaled", stream=assembler is not None,
                         complete=False, headers=kept)
    data = bytes(received)
    if assembler is not None:
        if not assembler.complete:
            why = assembler.problem or "stream ended before finish_reason and [DONE]"
            return Transport(status, data, why, stream=True, complete=False, headers=kept)
        return Transport(status, data, stream=True, completion=assembler.completion(),
                         headers=kept, retry_after=asked)
    return Transport(status, data, completion=parse_json_completion(data), headers=kept,
                     retry_after=asked)


def _close_delimited(headers: Mapping[str, str]) -> bool:
    """A body that ends only when the connection closes (no length, not chunked)."""
    chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    return not chunked and "content-length" not in headers


def _describe(exc: Exception) -> str:
    """The exception's class and message; httpx messages name the URL, never headers."""
    return f"{type(exc).__name__}: {exc}"


def interpret(transport: Transport) -> str:
    """Interpreter v1: success | retryable_error | fatal_error."""
    if transport.status is None:
        return "retryable_error"
    if transport.status in RETRYABLE_STATUSES:
        return "retryable_error"
    if 200 <= transport.status < 300:
        completion = transport.completion
        if completion is None and not transport.stream:
            completion = parse_json_completion(transport.body)
        return "success" if completion is not None else "fatal_error"
    return "fatal_error"


class CallRunner:
    """Appends one call's events through the one writer, calling `on_commit` after
    each durable checkpoint (the harness uses it to kill a producer at a named event)."""

    def __init__(
        self,
        case_dir: str | os.PathLike[str],
        writer: LedgerWriter,
        config: CaseConfig,
        *,
        on_commit: CommitHook | None = None,
        timeout: float = SEND_TIMEOUT_S,
        credential: str | None = None,
        on_text: TextCallback | None = None,
        max_retry_wait: float = MAX_RETRY_WAIT_S,
        deadline: float = SEND_DEADLINE_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.on_text = on_text  # streamed text as it arrives (provisional until journaled)
        self.case_dir = Path(case_dir)
        self.writer = writer
        self.config = config
        self.artifacts = ArtifactStore(case_dir)
        self.on_commit = on_commit
        self.timeout = timeout
        self.deadline = deadline  # the whole answer (send_request)
        # the longest Retry-After honoured; a longer one stops the call (never slept)
        self.max_retry_wait = max_retry_wait
        self._sleep = sleep
        # what an operator should hear about this run beyond its status (a wait, a stop)
        self.notes: list[str] = []
        # the caller decides whether a credential may go to this destination
        # (codeai_tui/runtime/destination.py); the runner never reads one from the environment
        self._credential = credential

    def append(self, kind: str, task_id: str, payload: dict[str, Any], **ids: str | None) -> Event:
        event = self.writer.append(kind, task_id, payload, **ids)
        if self.on_commit is not None:
            self.on_commit(event)
        return event

    # ---- context compilation

    def compile_context(
        self,
        task_id: str,
        compilation_id: str,
        offered: list[dict[str, Any]],
        required_ids: list[str],
        inputs: dict[str, str],
    ) -> tuple[str, str] | None:
        """Record a compilation; returns (package_id, rendered_sha256) or None on failure."""
        self.append(
            "context.compilation_requested", task_id,
            {"offered": offered, "required_ids": required_ids}, compilation_id=compilation_id,
        )
        offered_ids = {o["id"] for o in offered}
        missing = sorted(set(required_ids) - offered_ids)
        if missing:
            self.append(
                "context.compilation_failed", task_id,
                {"error": {"type": "RequiredContextMissing", "message": ", ".join(missing)},
                 "missing_ids": []},
                compilation_id=compilation_id,
            )
            return None
        selected = [o["id"] for o in offered if o.get("required")]
        rendered = "\n\n".join(f"[{i}]\n{inputs.get(i, '')}" for i in selected)
        rendered_sha = self.artifacts.put(rendered.encode("utf-8"))
        package_id = f"pkg-{compilation_id}"
        self.append(
            "context.compilation_completed", task_id,
            {"package_id": package_id, "rendered_sha256": rendered_sha, "selected": selected},
            compilation_id=compilation_id,
        )
        return package_id, rendered_sha

    # ---- a call

    def request(self, task_id: str, call_id: str, key: str, purpose: str,
                resumed_from: str | None = None, turn: dict[str, str] | None = None) -> Event:
        """`turn` ({namespace, thread, turn}) names the turn a tool-using call belongs to,
        so its operation keys can be rebuilt from the ledger alone (docs/tools.md)."""
        payload: dict[str, Any] = {
            "idempotency_key": key, "purpose": purpose, "model": self.config.provider.model,
        }
        if resumed_from:
            payload["resumed_from"] = resumed_from
        if turn is not None:
            payload["turn"] = dict(turn)
        return self.append("call.requested", task_id, payload, call_id=call_id)

    def manifest_payload(
        self, key: str, intent: dict[str, Any], package: tuple[str, str] | None
    ) -> dict[str, Any]:
        """Store the request bytes and return the manifest payload (not yet appended)."""
        rendered = None
        if package is not None:
            data = self.artifacts.get(package[1])
            rendered = data.decode("utf-8") if data is not None else None
        body = build_request(intent, self.config.provider.model, rendered)
        sha = self.artifacts.put(body)
        return {
            "idempotency_key": key,
            "intent": intent,
            "request_sha256": sha,
            "request_artifact": sha,
            "context_package_id": package[0] if package else None,
            "rendered_context_sha256": package[1] if package else None,
            "model": self.config.provider.model,
        }

    def manifest(self, task_id: str, call_id: str, key: str, intent: dict[str, Any],
                 package: tuple[str, str] | None) -> Event:
        return self.append(
            "call.manifest", task_id, self.manifest_payload(key, intent, package), call_id=call_id
        )

    def observed_payload(self, transport: Transport) -> JsonObject:
        """Store the response bytes and describe them; a parsed answer also records its
        tool plan, so the projection knows the plan without reading the artifact."""
        response_sha = self.artifacts.put(transport.body) if transport.body else None
        wire: JsonObject = {"status": transport.status, "bytes": len(transport.body)}
        if transport.stream:
            wire["stream"] = True
        if transport.error:
            wire["error"] = transport.error
        if not transport.maybe_sent:
            # the connection was never made: evidence that the provider got nothing
            # (docs/reconcile.md section 4), so the projection says effect none
            wire["sent"] = False
        if transport.headers:
            # allow-listed only (retry_after.KEPT_HEADERS): request ids to quote to the
            # provider, and the wait it asked for (docs/reconcile.md section 6)
            wire["headers"] = dict(transport.headers)
        observed: JsonObject = {
            "transport": wire,
            "response_sha256": response_sha,
            "response_artifact": response_sha,
        }
        ok = transport.status is not None and 200 <= transport.status < 300
        if ok and transport.completion is not None:
            plan: list[JsonValue] = [dict(c.as_ledger()) for c in tool_plan(transport.completion)]
            observed["tool_plan"] = plan
        return observed

    def _retry_decision(self, transport: Transport, retry: bool,
                        attempt_no: int) -> tuple[JsonObject, float]:
        """The retry_decided payload and the seconds to wait before the next attempt.

        A Retry-After within `max_retry_wait` is waited out; a longer one stops the call
        (the provider said not to come back yet, and a resume must not hang on it)."""
        reason = f"status {transport.status}" if transport.status else (transport.error or "")
        asked = transport.retry_after
        decided: JsonObject = {"decision": "retry" if retry else "stop", "reason": reason}
        if asked.seconds is None:
            if retry and asked.problem:
                decided["reason"] = f"{reason}; {asked.problem}, retrying at once"
            return decided, 0.0
        decided["retry_after_s"] = round(asked.seconds, 3)
        if not retry:
            return decided, 0.0
        if asked.seconds > self.max_retry_wait:
            why = (f"{asked.source} asks {asked.seconds:g} s, more than the "
                   f"{self.max_retry_wait:g} s bound: stopped")
            decided.update(decision="stop", reason=f"{reason}; {why}")
            self.notes.append(f"attempt {attempt_no}: {reason}; {why} without retrying")
            return decided, 0.0
        decided["wait_s"] = round(asked.seconds, 3)
        decided["reason"] = f"{reason}; waiting {asked.seconds:g} s ({asked.source})"
        return decided, asked.seconds

    def execute(self, task_id: str, call_id: str, key: str, request_sha256: str,
                max_attempts: int = 2, first_attempt: int = 1) -> str:
        """Run attempts for a call whose manifest is recorded; returns the final call status
        ("succeeded"/"failed") or "effect_unknown" when the outcome could not be observed.
        `first_attempt` > 1 continues a call whose earlier attempts are recorded
        (codeai_tui/actions/advance.py: start the next attempt)."""
        # Exactly the bytes whose hash attempt.started records: read back verified
        # (a regular file in the case whose bytes hash to the name), never "whatever is
        # at that path".
        found = self.artifacts.read(request_sha256)
        if found.data is None:
            self.append(
                "call.preparation_failed", task_id,
                {"error": {"type": "ArtifactUnusable",
                           "message": found.describe(request_sha256)}},
                call_id=call_id,
            )
            return "failed"
        body = found.data
        api_key = self._credential
        for attempt_no in range(first_attempt, max_attempts + 1):
            attempt_id = f"{call_id}-a{attempt_no}"
            ids = {"call_id": call_id, "attempt_id": attempt_id}
            self.append("attempt.started", task_id,
                        {"attempt_no": attempt_no, "request_sha256": request_sha256}, **ids)
            transport = send_request(self.config.provider.base_url, body, key, api_key,
                                     self.timeout, self.on_text, self.deadline)
            if (transport.status is None and transport.maybe_sent) or not transport.complete:
                # Connected, then no whole answer (timeout, reset, a stream cut off): the
                # provider may have served it. Record nothing we do not know, above all no
                # tool plan from half a response; the projection says effect_unknown and
                # nothing regenerates a different plan automatically. The operator hears
                # why (a timeout, a cut stream, the deadline); the ledger keeps no guess.
                self.notes.append(f"attempt {attempt_no}: {transport.error or 'no whole answer'}"
                                  "; the provider may have served it (effect unknown)")
                return "effect_unknown"
            self.append("attempt.observed", task_id, self.observed_payload(transport), **ids)
            outcome = interpret(transport)
            self.append("attempt.interpreted", task_id,
                        {"interpreter": "v1", "outcome": outcome}, **ids)
            if outcome == "success":
                self.append("attempt.completed", task_id, {"status": "succeeded"}, **ids)
                self.append("call.completed", task_id,
                            {"status": "succeeded", "adopted_attempt_id": attempt_id},
                            call_id=call_id)
                return "succeeded"
            retry = outcome == "retryable_error" and attempt_no < max_attempts
            decided, wait = self._retry_decision(transport, retry, attempt_no)
            # committed before the wait: a kill while waiting leaves `start_next_attempt`,
            # and no write transaction is open while waiting
            self.append("attempt.retry_decided", task_id, decided, **ids)
            if decided["decision"] == "retry":
                if wait > 0:
                    self.notes.append(f"waited {wait:g} s before attempt {attempt_no + 1}: "
                                      f"the provider asked ({transport.retry_after.source})")
                    self._sleep(wait)
                continue
            self.append("attempt.completed", task_id, {"status": "failed"}, **ids)
            self.append("call.completed", task_id,
                        {"status": "failed", "adopted_attempt_id": attempt_id}, call_id=call_id)
            return "failed"
        return "failed"
