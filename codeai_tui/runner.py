"""Running a call the way the CodeAI runtime does, with every boundary recorded.

The order is the point: the request artifact and `call.manifest` are durable before any
attempt; `attempt.started` is committed BEFORE the request leaves; the response bytes are
stored and `attempt.observed` committed BEFORE interpretation. Between started and
observed the honest answer is "unknown", which is what the projection says after a kill,
and what the runner leaves behind when it connected but got no answer.
No ledger transaction is ever open while the network is in use.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from codeai_tui.ledger.artifacts import MAX_ARTIFACT_BYTES, ArtifactStore
from codeai_tui.ledger.case import CaseConfig
from codeai_tui.ledger.jsontypes import JsonObject, JsonValue
from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.writer import LedgerWriter
from codeai_tui.request_bytes import build_request
from codeai_tui.responses import (
    ParsedJson,
    StreamAssembler,
    TextCallback,
    parse_json_completion,
    tool_plan,
)

SEND_TIMEOUT_S = 30.0
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


# An answer larger than an artifact may be cannot be journaled (nor read back verified),
# so reading stops there: the attempt stays unobserved, effect unknown.
MAX_RESPONSE_BYTES = MAX_ARTIFACT_BYTES

_SSL_CONTEXT: ssl.SSLContext | None = None


class _TooLarge(Exception):
    pass


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
) -> Transport:
    """POST the exact bytes to `{base_url}/chat/completions` and read the whole answer.

    httpx (the OpenAI SDK's own client family): https with certificate checks, proxies
    from the environment (HTTP(S)_PROXY, ALL_PROXY, NO_PROXY), `timeout` seconds for the
    connect and for each read or write, no automatic retry. An event-stream answer is
    consumed as it arrives (`on_text` sees text deltas) and assembled. Headers are never
    logged and never part of an error text, so the key stays out of the ledger.

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
    received = bytearray()
    assembler: StreamAssembler | None = None
    try:
        with (
            httpx.Client(timeout=timeout, verify=_ssl_context(), follow_redirects=False) as client,
            client.stream("POST", url, content=body, headers=headers) as resp,
        ):
            status = resp.status_code
            if resp.headers.get("content-type", "").startswith("text/event-stream"):
                assembler = StreamAssembler(on_text)
            for piece in resp.iter_bytes():
                received += piece
                if len(received) > MAX_RESPONSE_BYTES:
                    raise _TooLarge
                if assembler is not None:
                    assembler.feed(piece)
            if assembler is not None:
                assembler.finish()
    except _TooLarge:
        return Transport(status, b"", f"response larger than {MAX_RESPONSE_BYTES} bytes: "
                         "not journaled", stream=assembler is not None, complete=False)
    except not_sent as exc:
        return Transport(None, b"", _describe(exc), maybe_sent=False)
    except httpx.HTTPError as exc:
        if assembler is not None:  # cut off mid-stream: what arrived is not an answer
            return Transport(status, bytes(received), _describe(exc), stream=True, complete=False)
        return Transport(None, b"", _describe(exc))
    data = bytes(received)
    if assembler is not None:
        if not assembler.complete:
            why = assembler.problem or "stream ended before finish_reason and [DONE]"
            return Transport(status, data, why, stream=True, complete=False)
        return Transport(status, data, stream=True, completion=assembler.completion())
    return Transport(status, data, completion=parse_json_completion(data))


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
    ) -> None:
        self.on_text = on_text  # streamed text as it arrives (provisional until journaled)
        self.case_dir = Path(case_dir)
        self.writer = writer
        self.config = config
        self.artifacts = ArtifactStore(case_dir)
        self.on_commit = on_commit
        self.timeout = timeout
        # the caller decides whether a credential may go to this destination
        # (codeai_tui/destination.py); the runner never reads one from the environment
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
        so its operation keys can be rebuilt from the ledger alone (ledger/TOOLS.md)."""
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
            # (ledger/RECONCILE.md section 4), so the projection says effect none
            wire["sent"] = False
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

    def execute(self, task_id: str, call_id: str, key: str, request_sha256: str,
                max_attempts: int = 2, first_attempt: int = 1) -> str:
        """Run attempts for a call whose manifest is recorded; returns the final call status
        ("succeeded"/"failed") or "effect_unknown" when the outcome could not be observed.
        `first_attempt` > 1 continues a call whose earlier attempts are recorded
        (codeai_tui/advance.py: start the next attempt)."""
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
                                     self.timeout, self.on_text)
            if (transport.status is None and transport.maybe_sent) or not transport.complete:
                # Connected, then no whole answer (timeout, reset, a stream cut off): the
                # provider may have served it. Record nothing we do not know, above all no
                # tool plan from half a response; the projection says effect_unknown and
                # nothing regenerates a different plan automatically.
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
            reason = f"status {transport.status}" if transport.status else (transport.error or "")
            self.append("attempt.retry_decided", task_id,
                        {"decision": "retry" if retry else "stop", "reason": reason}, **ids)
            if retry:
                continue
            self.append("attempt.completed", task_id, {"status": "failed"}, **ids)
            self.append("call.completed", task_id,
                        {"status": "failed", "adopted_attempt_id": attempt_id}, call_id=call_id)
            return "failed"
        return "failed"
