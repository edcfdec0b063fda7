"""A synthetic OpenAI-compatible provider that keeps its own receipt log.

It appends and fsyncs one receipt line per request it receives *before* it starts work,
does not deduplicate by `Idempotency-Key` (a key is a handle, not a guarantee), and can
hold a request (`latency`) so a test can kill the caller while the request is in flight.
It binds to loopback only. The Authorization header is never logged or stored.

Answers are scripted and deterministic, derived from the request bytes: a request that
offers `tools` (and carries no tool results yet) is answered with tool calls whose ids
derive from the request, so the same bytes asked again get the same ids.
`fresh_tool_call_ids` answers every request with new ids instead (derived from its
receipt id), as a real model asked again does: an executor keyed on tool-call ids then
sees a second operation where there was one decision; `stream: true` is answered with server-sent events in the
`chat.completion.chunk` format; `truncate_after` cuts every stream after N chunks by
closing the connection mid-body, the way a dropped network link looks to a client;
`stall_after` stops after N chunks but keeps the stream open with a keep-alive comment
every STALL_PING_S, the way a generation that hung looks (no read ever times out).
`fail_first` answers the first N requests with `fail_status` (503 overloaded, or 429 rate
limited), carrying `Retry-After: <retry_after>` verbatim when one is given (seconds, an
HTTP-date, or a broken value to test a client with). Every answer names its request with
`x-request-id` (the receipt id, so an observation points at its receipt) and says how
long it took in `openai-processing-ms`, as OpenAI's API does.

In bundle mode a demo bundle is served under its own id, `/b/<bundle id>/c/<case>/v1`
(the id is the bundle's `bundle.json` "bundle_id", or `--bundle-id`): a request naming
another id is answered 404 and logged nowhere, so a case never reaches another bundle's
provider by its port alone, and `GET .../v1/health` answers `{"identity": <bundle id>}`
only for this bundle's cases (what resume asks before anything is written).

HTTP is served by aiohttp rather than `http.server`: it reads chunked request bodies,
drains a body the handler did not need before the next keep-alive request, and streams
responses; the hand-written handler it replaced got all three wrong.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import logging
import os
import re
import secrets
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
FAIL_STATUSES = {503: ("synthetic overload", "overloaded"),
                 429: ("synthetic rate limit", "rate_limit_exceeded")}
MAX_BODY = 8 * 1024 * 1024
STALL_PING_S = 0.5  # how often a stalled stream sends its keep-alive comment
ARGUMENT_PIECE = 16  # characters of tool-call arguments per streamed chunk

JsonObject = dict[str, Any]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class ReceiptWriter:
    """Append-and-fsync, one line per received request, serialised by a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, key: str, body: bytes) -> dict[str, object]:
        receipt = {
            "receipt_id": f"rcpt-{uuid.uuid4().hex[:16]}",
            "received_at": _now(),
            "idempotency_key": key,
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "bytes": len(body),
        }
        line = (json.dumps(receipt, sort_keys=True) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
        return receipt


_CASE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
BUNDLE_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,64}")
BUNDLE_MANIFEST = Path("bundle.json")
BUNDLE_MANIFEST_LIMIT = 1024 * 1024


def new_bundle_id() -> str:
    """A random id for one demo bundle (64 bits: two bundles never share one by chance)."""
    return secrets.token_hex(8)


def bundle_id_in(root: Path) -> str | None:
    """The "bundle_id" `root/bundle.json` names, or None: no manifest (not a demo bundle,
    or one built before bundles had ids), or none usable in it. The manifest comes with
    an untrusted bundle: read without following links or blocking, and the id is taken
    only in its own form (it becomes a URL path segment)."""
    from codeai_tui.ledger.errors import LedgerError
    from codeai_tui.ledger.safefile import read_regular

    try:
        raw = read_regular(root, BUNDLE_MANIFEST, limit=BUNDLE_MANIFEST_LIMIT)
        doc = json.loads(raw) if raw is not None else None
    except (LedgerError, OSError, ValueError, RecursionError):
        return None
    found = doc.get("bundle_id") if isinstance(doc, dict) else None
    return found if isinstance(found, str) and BUNDLE_ID_RE.fullmatch(found) else None


def bundle_case_url(port: int, case: str, bundle_id: str | None,
                    host: str = "127.0.0.1") -> str:
    """The base URL a bundle-mode provider on `port` logs to `case`'s receipt log for."""
    under = f"/b/{bundle_id}" if bundle_id is not None else ""
    return f"http://{host}:{port}{under}/c/{case}/v1"


class BadRequest(ValueError):
    """The body is not a chat-completions request this provider can answer (HTTP 400)."""


# ---- the scripted answers (pure functions of the request)


def _validate(body: bytes) -> JsonObject:
    try:
        request = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("body is not JSON") from None
    if not isinstance(request, dict):
        raise BadRequest("body is not a JSON object")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' is required (a non-empty string)")
    if not isinstance(request.get("messages"), list):
        raise BadRequest("'messages' is required (a list)")
    if "stream" in request and not isinstance(request["stream"], bool):
        raise BadRequest("'stream' must be a boolean")
    tools = request.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise BadRequest("'tools' must be a list")
        for tool in tools:
            fn = tool.get("function") if isinstance(tool, dict) else None
            if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
                raise BadRequest("each tool needs function.name")
    return request


def _example(schema: object, name: str, digest: str) -> object:
    """A deterministic value for one JSON-schema property."""
    if not isinstance(schema, dict):
        return f"synthetic {name} {digest[:8]}"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "integer" or kind == "number":
        return len(name)
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return _arguments(schema, digest)
    return f"synthetic {name} {digest[:8]}"


def _arguments(parameters: object, digest: str) -> JsonObject:
    props = parameters.get("properties") if isinstance(parameters, dict) else None
    if not isinstance(props, dict):
        return {}
    return {name: _example(schema, name, digest) for name, schema in sorted(props.items())}


def _chosen_tools(request: JsonObject) -> list[JsonObject]:
    """The functions this answer calls: none once tool results are in the conversation."""
    tools = [t["function"] for t in request.get("tools") or []]
    if not tools or request.get("tool_choice") == "none":
        return []
    if any(isinstance(m, dict) and m.get("role") == "tool" for m in request["messages"]):
        return []  # the follow-up call: the tools ran, answer in words
    choice = request.get("tool_choice")
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        tools = [t for t in tools if t["name"] == choice["function"].get("name")]
    if request.get("parallel_tool_calls") is False:
        tools = tools[:1]
    return tools


def tool_call_id(seed: str, index: int) -> str:
    """Deterministic per seed: the request's digest (the same bytes asked again get the
    same ids) or, for fresh ids, the request's receipt id (new on every request)."""
    return "call_" + hashlib.sha256(f"{seed}:{index}".encode()).hexdigest()[:24]


def completion_for(request: JsonObject, digest: str, body_len: int,
                   id_seed: str | None = None) -> JsonObject:
    """The whole `chat.completion` for a validated request (streams are cut from it).
    Tool-call ids derive from `id_seed` when given, else from the request's digest."""
    tools = _chosen_tools(request)
    message: JsonObject
    if tools:
        calls = [
            {
                "id": tool_call_id(id_seed or digest, i),
                "type": "function",
                "function": {
                    "name": fn["name"],
                    "arguments": json.dumps(
                        _arguments(fn.get("parameters"), digest), sort_keys=True,
                        separators=(",", ":"),
                    ),
                },
            }
            for i, fn in enumerate(tools)
        ]
        message = {"role": "assistant", "content": None, "tool_calls": calls}
        finish = "tool_calls"
    else:
        results = sum(
            1 for m in request["messages"] if isinstance(m, dict) and m.get("role") == "tool"
        )
        if results:
            text = f"synthetic answer after {results} tool result(s) for request {digest[:12]}: done"
        else:
            text = f"synthetic review of request {digest[:12]}: no unclear sentences"
        message = {"role": "assistant", "content": text}
        finish = "stop"
    return {
        "id": f"chatcmpl-{digest[:24]}",
        "object": "chat.completion",
        "created": 0,
        "model": request["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": body_len // 4, "completion_tokens": 9, "total_tokens": body_len // 4 + 9},
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def stream_chunks(completion: JsonObject, include_usage: bool = False) -> Iterator[JsonObject]:
    """The `chat.completion.chunk` objects that assemble back into `completion`."""
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: JsonObject, finish: str | None = None) -> JsonObject:
        out: JsonObject = {
            "id": completion["id"], "object": "chat.completion.chunk", "created": 0,
            "model": completion["model"],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if include_usage:
            out["usage"] = None
        return out

    calls = message.get("tool_calls") or []
    if calls:
        for i, call in enumerate(calls):
            head: JsonObject = {"tool_calls": [{
                "index": i, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }]}
            if i == 0:
                head = {"role": "assistant", "content": None, **head}
            yield chunk(head)
            for piece in _pieces(call["function"]["arguments"], ARGUMENT_PIECE):
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    else:
        yield chunk({"role": "assistant", "content": ""})
        for piece in re.findall(r"\S+\s*|\s+", message.get("content") or ""):
            yield chunk({"content": piece})
    yield chunk({}, choice["finish_reason"])
    if include_usage:
        yield {
            "id": completion["id"], "object": "chat.completion.chunk", "created": 0,
            "model": completion["model"], "choices": [], "usage": completion["usage"],
        }


# ---- the server


class ProviderServer:
    """One receipt log (`receipts`), or bundle mode (`receipts_root`): a request to
    `/c/<case>/v1/chat/completions` is logged in `<root>/<case>/provider/receipts.jsonl`,
    so one provider serves every case of a demo bundle with each case's own log. A
    bundle with an id (`bundle_id`, else the root's bundle.json) is served only under
    `/b/<bundle id>/c/<case>/v1`."""

    def __init__(
        self,
        host: str,
        port: int,
        receipts: Path | None,
        latency: float = 0.0,
        fail_first: int = 0,
        receipts_root: Path | None = None,
        truncate_after: int | None = None,
        fail_status: int = 503,
        retry_after: str | None = None,
        stall_after: int | None = None,
        fresh_tool_call_ids: bool = False,
        bundle_id: str | None = None,
    ) -> None:
        if host not in LOOPBACK_HOSTS:
            raise ValueError(f"the synthetic provider binds to loopback only, not {host!r}")
        if (receipts is None) == (receipts_root is None):
            raise ValueError("give exactly one of --receipts and --receipts-root")
        if truncate_after is not None and truncate_after < 0:
            raise ValueError("--truncate-after must be >= 0")
        if stall_after is not None and (stall_after < 0 or truncate_after is not None):
            raise ValueError("--stall-after must be >= 0, and not with --truncate-after")
        if fail_status not in FAIL_STATUSES:
            raise ValueError(f"--fail-status must be one of {sorted(FAIL_STATUSES)}")
        if retry_after is not None and (
            not retry_after or any(not " " <= ch <= "~" for ch in retry_after)
        ):
            raise ValueError("--retry-after must be printable ASCII text")
        if bundle_id is not None and (receipts_root is None
                                      or not BUNDLE_ID_RE.fullmatch(bundle_id)):
            raise ValueError("--bundle-id needs --receipts-root, and 8 to 64 of A-Z a-z "
                             "0-9 _ -")
        if bundle_id is None and receipts_root is not None:
            bundle_id = bundle_id_in(receipts_root)
        self.bundle_id = bundle_id
        self.host = host
        self.port = port
        self.receipts = ReceiptWriter(receipts) if receipts is not None else None
        self.receipts_root = receipts_root
        self._case_writers: dict[str, ReceiptWriter] = {}
        self._writers_lock = threading.Lock()
        self.latency = latency
        self.fail_first = fail_first
        self.truncate_after = truncate_after
        self.stall_after = stall_after
        self.fail_status = fail_status
        self.retry_after = retry_after
        self.fresh_tool_call_ids = fresh_tool_call_ids
        self._served = 0
        self._count_lock = threading.Lock()
        self._runner: web.AppRunner | None = None

    def case_of(self, path: str) -> tuple[str, str] | None:
        """(case name, endpoint path after the case prefix) for a bundle-mode request
        path, or None where it names no case of this bundle: another bundle's id, no id
        where this bundle has one, or no such case directory."""
        if self.receipts_root is None:
            return None
        if self.bundle_id is not None:
            under = f"/b/{self.bundle_id}/"
            if not path.startswith(under):
                return None
            path = path[len(under) - 1:]
        parts = path.split("/", 3)  # "", "c", name, rest
        if len(parts) < 4 or parts[1] != "c" or not _CASE_NAME_RE.fullmatch(parts[2]):
            return None
        if parts[2] in (".", "..") or not (self.receipts_root / parts[2]).is_dir():
            return None
        return parts[2], "/" + parts[3]

    def writer_for(self, path: str) -> tuple[ReceiptWriter | None, str]:
        """(receipt writer, endpoint path without the case prefix) for a request path."""
        if self.receipts is not None:
            return self.receipts, path
        found = self.case_of(path)
        if found is None:
            return None, path
        name, endpoint = found
        assert self.receipts_root is not None
        with self._writers_lock:
            writer = self._case_writers.get(name)
            if writer is None:
                writer = self._case_writers[name] = ReceiptWriter(
                    self.receipts_root / name / "provider" / "receipts.jsonl"
                )
        return writer, endpoint

    def health(self, path: str) -> web.Response:
        """`GET .../health`. A bundle with an id answers only for its own cases, with
        its identity: what a client compares with the identity its case names before
        it sends anything (codeai_tui/runtime/destination.py)."""
        if self.bundle_id is None:
            return _json(200, {"status": "ok"})
        found = self.case_of(path)
        if found is None or found[1].rstrip("/") != "/v1/health":
            return _json(404, {"error": {"message": "no such case in this provider's bundle"}})
        return _json(200, {"status": "ok", "identity": self.bundle_id, "case": found[0]})

    def next_index(self) -> int:
        with self._count_lock:
            self._served += 1
            return self._served

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        started = asyncio.get_running_loop().time()
        resp = await self._answer(request)
        if not resp.prepared:  # a stream sent its headers already, with its own ids
            ms = round((asyncio.get_running_loop().time() - started) * 1000)
            resp.headers.setdefault("openai-processing-ms", str(ms))
        return resp

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        # Read every body, whatever the path: an unread body left in a keep-alive stream
        # would be parsed as the next request.
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _json(413, {"error": {"message": "request body too large"}}, close=True)
        path = request.rel_url.raw_path
        if request.method == "GET" and path.rstrip("/").endswith("/health"):
            return self.health(path)
        writer, endpoint = self.writer_for(path)
        if (request.method != "POST" or writer is None
                or not endpoint.rstrip("/").endswith("/chat/completions")):
            return _json(404, {"error": {"message": "not found"}})
        key = request.headers.get("Idempotency-Key", "")
        # The receipt is durable before any work starts: it is the provider's own record
        # that the request reached it, whatever happens to the caller afterwards.
        receipt = await asyncio.to_thread(writer.append, key, body)
        request_id = {"x-request-id": str(receipt["receipt_id"])}
        index = self.next_index()
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        if index <= self.fail_first:
            message, kind = FAIL_STATUSES[self.fail_status]
            headers = dict(request_id)
            if self.retry_after is not None:
                headers["Retry-After"] = self.retry_after
            return _json(self.fail_status, {"error": {"message": message, "type": kind}},
                         headers=headers)
        try:
            parsed = _validate(body)
        except BadRequest as exc:
            return _json(400, {"error": {"message": str(exc), "type": "invalid_request_error"}},
                         headers=request_id)
        # fresh ids: the receipt id is new on every request, so is every tool-call id
        seed = str(receipt["receipt_id"]) if self.fresh_tool_call_ids else None
        completion = completion_for(parsed, str(receipt["body_sha256"]), len(body), seed)
        if not parsed.get("stream"):
            return _json(200, completion, headers=request_id)
        options = parsed.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        return await self._stream(request, completion, usage, request_id)

    async def _stream(
        self, request: web.Request, completion: JsonObject, usage: bool,
        extra_headers: dict[str, str],
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                 **extra_headers}
        )
        await resp.prepare(request)
        for sent, chunk in enumerate(stream_chunks(completion, usage)):
            if self.truncate_after is not None and sent >= self.truncate_after:
                # Cut mid-body: no terminating chunk, no [DONE]. The client sees the
                # connection drop, exactly as with a failed network link.
                if request.transport is not None:
                    request.transport.close()
                return resp
            if self.stall_after is not None and sent >= self.stall_after:
                return await self._stall(request, resp)
            await resp.write(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    async def _stall(self, request: web.Request, resp: web.StreamResponse
                     ) -> web.StreamResponse:
        """Keep the stream open with SSE comments (which carry no data) until the client
        goes away: only a deadline on the whole answer ends the wait."""
        while request.transport is not None and not request.transport.is_closing():
            try:
                await resp.write(b": keep-alive\n\n")
            except (ConnectionError, RuntimeError):
                break  # the client closed the connection
            await asyncio.sleep(STALL_PING_S)
        return resp

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def start(self) -> int:
        """Bind and serve in the running loop; returns the bound port."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        # access_log=None: nothing about a request is logged, so no header can leak
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        self._runner = runner
        self.port = int(sock.getsockname()[1])
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"


def _json(status: int, body: JsonObject, close: bool = False,
          headers: dict[str, str] | None = None) -> web.Response:
    resp = web.Response(
        status=status, body=json.dumps(body, sort_keys=True).encode("utf-8"),
        content_type="application/json", headers=headers,
    )
    if close:
        resp.force_close()
    return resp


class _OneLineLog(logging.Handler):
    """aiohttp reports a malformed request with a traceback; for the operator of a local
    test provider one line says it (and a log line never carries request headers)."""

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        text = record.getMessage() + (f": {type(exc).__name__}: {exc}" if exc else "")
        print(f"provider: {text}".splitlines()[0][:300], file=sys.stderr, flush=True)


def serve(
    host: str,
    port: int,
    receipts: Path | None,
    latency: float = 0.0,
    fail_first: int = 0,
    ready: threading.Event | None = None,
    announce: bool = True,
    receipts_root: Path | None = None,
    truncate_after: int | None = None,
    fail_status: int = 503,
    retry_after: str | None = None,
    stall_after: int | None = None,
    fresh_tool_call_ids: bool = False,
    bundle_id: str | None = None,
) -> None:
    """Run until interrupted. Prints `listening on http://HOST:PORT/v1` once bound."""
    server = ProviderServer(host, port, receipts, latency, fail_first, receipts_root,
                            truncate_after, fail_status, retry_after, stall_after,
                            fresh_tool_call_ids=fresh_tool_call_ids, bundle_id=bundle_id)
    aiohttp_log = logging.getLogger("aiohttp")
    aiohttp_log.addHandler(_OneLineLog(logging.WARNING))
    aiohttp_log.propagate = False

    async def main() -> None:
        await server.start()
        if announce:
            print(f"listening on {server.base_url}", flush=True)
            if receipts_root is not None:
                under = f"/b/{server.bundle_id}" if server.bundle_id is not None else ""
                print(f"bundle mode: POST {under}/c/<case>/v1/chat/completions logs to "
                      f"{receipts_root}/<case>/provider/receipts.jsonl", flush=True)
        if ready is not None:
            ready.set()
        try:
            await asyncio.Event().wait()  # until cancelled (Ctrl-C) or killed
        finally:
            await server.stop()

    asyncio.run(main())


class ProviderProcess:
    """The provider in its own OS process (for the demo harness and tests).

    `with ProviderProcess(receipts) as p: p.base_url` — waits for the bound port with a
    timeout and kills the process on exit. The process binds the port itself (0: one the
    system chooses) and reports it: nothing can take it between the choice and the use.
    """

    def __init__(
        self,
        receipts: Path | None = None,
        *,
        latency: float = 0.0,
        fail_first: int = 0,
        port: int = 0,
        receipts_root: Path | None = None,
        truncate_after: int | None = None,
        fail_status: int = 503,
        retry_after: str | None = None,
        stall_after: int | None = None,
        fresh_tool_call_ids: bool = False,
        bundle_id: str | None = None,
    ) -> None:
        self.receipts = Path(receipts) if receipts is not None else None
        self.receipts_root = Path(receipts_root) if receipts_root is not None else None
        # bundle mode: the id it serves under (else the root's own, read as it would be)
        self.bundle_id = (bundle_id if bundle_id is not None or self.receipts_root is None
                          else bundle_id_in(self.receipts_root))
        self.latency = latency
        self.fail_first = fail_first
        self.port = port
        self.truncate_after = truncate_after
        self.stall_after = stall_after
        self.fail_status = fail_status
        self.retry_after = retry_after
        self.fresh_tool_call_ids = fresh_tool_call_ids
        self.proc: object | None = None
        self.base_url = ""
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=50)

    def start(self, timeout: float = 15.0) -> ProviderProcess:
        import subprocess
        import sys

        cmd = [
            sys.executable, "-m", "codeai_tui", "provider", "--port", str(self.port),
            "--latency", str(self.latency), "--fail-first", str(self.fail_first),
            "--fail-status", str(self.fail_status),
        ]
        if self.retry_after is not None:
            cmd += ["--retry-after", self.retry_after]
        if self.receipts is not None:
            cmd += ["--receipts", str(self.receipts)]
        if self.receipts_root is not None:
            cmd += ["--receipts-root", str(self.receipts_root)]
        if self.bundle_id is not None:
            cmd += ["--bundle-id", self.bundle_id]
        if self.truncate_after is not None:
            cmd += ["--truncate-after", str(self.truncate_after)]
        if self.stall_after is not None:
            cmd += ["--stall-after", str(self.stall_after)]
        if self.fresh_tool_call_ids:
            cmd.append("--fresh-tool-call-ids")
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True,
        )
        self.proc = proc
        line = _readline_with_timeout(proc, timeout)
        if not line.startswith("listening on "):
            err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
            self.stop()
            raise RuntimeError(f"provider did not start: {line.strip() or err.strip()}")
        self.base_url = line.split("listening on ", 1)[1].strip()  # http://127.0.0.1:PORT/v1
        self.port = int(self.base_url.rsplit(":", 1)[1].split("/", 1)[0])
        # keep reading what it says: a full stderr pipe would block the provider
        threading.Thread(target=self._drain, args=(proc.stderr,), daemon=True).start()
        return self

    def case_url(self, case: str) -> str:
        """The base URL under which this (bundle-mode) provider logs to `case`'s log."""
        return bundle_case_url(self.port, case, self.bundle_id)

    def _drain(self, stream: object) -> None:
        from io import TextIOBase

        if not isinstance(stream, TextIOBase):
            return
        try:
            for line in stream:
                self.stderr_tail.append(line.rstrip("\n"))
        except (OSError, ValueError):  # closed by stop()
            return

    def stop(self) -> None:
        import subprocess

        proc = self.proc
        if isinstance(proc, subprocess.Popen) and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        if isinstance(proc, subprocess.Popen):
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> ProviderProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _readline_with_timeout(proc: object, timeout: float) -> str:
    import selectors
    import subprocess

    assert isinstance(proc, subprocess.Popen) and proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            return ""
        return proc.stdout.readline()
    finally:
        sel.close()
