"""The worker's small HTTP server: `/metrics`, `/healthz` (the process answers) and `/readyz`
(Redis and the group are there, and no part of the worker reports a problem).

`thoughtline export otlp` serves the same three paths with this server (in a thread of its
own, with a liveness check of its loop): the module imports no FastStream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import NamedTuple, Protocol

from prometheus_client import CONTENT_TYPE_LATEST

Readiness = Callable[[], Awaitable[str | None]]
"""Returns None when ready, else the one-line reason it is not."""


class Exposition(Protocol):
    def exposition(self) -> bytes: ...


class HealthServer:
    """`/metrics`, `/healthz` (the process answers) and `/readyz` (Redis and group are there).

    A plain asyncio server on the worker's own event loop: no thread, no framework, and a
    wedged loop shows up as a failing `/healthz`, which is what a liveness probe should see.
    """

    def __init__(
        self,
        metrics: Exposition,
        readiness: Readiness,
        before_scrape: Callable[[], Awaitable[None]],
        liveness: Readiness | None = None,
    ) -> None:
        self._metrics = metrics
        self._readiness = readiness
        self._before_scrape = before_scrape
        self._liveness = liveness
        """None: answering is alive enough (the worker's loop serves the requests itself)."""
        self._server: asyncio.Server | None = None

    async def start(self, port: int, host: str) -> int:
        """Listen on `host` and return the port (the chosen one when `port` is 0)."""
        self._server = await asyncio.start_server(self._handle, host, port)
        bound_port: int = self._server.sockets[0].getsockname()[1]
        return bound_port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(_read_head(reader), timeout=5)
            status, content_type, body = await self._respond(request_line)
        except (TimeoutError, ValueError, asyncio.IncompleteReadError):
            status, content_type, body = _Response(
                "400 Bad Request", "text/plain", b"bad request\n"
            )
        head = (
            f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        with contextlib.suppress(ConnectionError):
            writer.write(head.encode() + body)
            await writer.drain()
            writer.close()

    async def _respond(self, request_line: bytes) -> _Response:
        parts = request_line.split()
        path = parts[1].split(b"?")[0] if len(parts) >= 2 else b""
        if path == b"/metrics":
            await self._before_scrape()
            return _Response("200 OK", CONTENT_TYPE_LATEST, self._metrics.exposition())
        if path == b"/healthz":
            problem = None if self._liveness is None else await self._liveness()
            return _answer(problem, b"ok\n", "not alive")
        if path == b"/readyz":
            return _answer(await self._readiness(), b"ready\n", "not ready")
        return _Response("404 Not Found", "text/plain", b"try /metrics, /healthz or /readyz\n")


def _answer(problem: str | None, fine: bytes, prefix: str) -> _Response:
    if problem is None:
        return _Response("200 OK", "text/plain", fine)
    return _Response("503 Service Unavailable", "text/plain", f"{prefix}: {problem}\n".encode())


class _Response(NamedTuple):
    status: str
    content_type: str
    body: bytes


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    """The request line, after reading the headers up to their blank line (ignored)."""
    request_line = await reader.readline()
    line = request_line
    while line not in (b"\r\n", b"\n"):
        if not line:
            raise asyncio.IncompleteReadError(request_line, None)
        line = await reader.readline()
    return request_line
