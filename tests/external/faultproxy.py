"""A fault-injecting TCP proxy on 127.0.0.1, for faults a mock server cannot script.

It reads one HTTP request (headers and a Content-Length body), then, by mode:
- `reset_after_answer`: forwards it upstream, waits until the answer starts coming back
  (the upstream served it), and resets the client's connection instead of relaying it;
- `reset_before_forward`: resets the client's connection without forwarding anything.
A reset is a real TCP RST (SO_LINGER 0), the way a dropped link or a crashed load
balancer looks to a client. The proxy stops with its context manager.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from types import TracebackType

MODES = ("reset_after_answer", "reset_before_forward")


class FaultProxy:
    def __init__(self, upstream_port: int, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.upstream_port = upstream_port
        self.mode = mode
        self.port = 0
        self.forwarded = 0  # requests passed on upstream
        self.answered = 0  # of those, how many the upstream began to answer
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        return head + await reader.readexactly(length)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await self._read_request(reader)
            if self.mode == "reset_after_answer":
                up_reader, up_writer = await asyncio.open_connection("127.0.0.1",
                                                                     self.upstream_port)
                up_writer.write(request)
                await up_writer.drain()
                self.forwarded += 1
                if await up_reader.read(1):
                    self.answered += 1
                up_writer.close()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # linger 0: the close is an RST

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop)
        self._server = future.result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
