"""A local HTTP server that answers each request with the next queued reply, byte for byte:
whole (Content-Length), chunked in pieces, or cut half-way (stalled, or the connection
dropped). Requests are kept for the tests to look at."""

from __future__ import annotations

import collections
import gzip
import http.server
import threading
from dataclasses import dataclass, field
from typing import Literal

Mode = Literal["whole", "chunked", "stall_half", "break_half"]


@dataclass
class Reply:
    body: bytes
    content_type: str = "application/json"
    status: int = 200
    mode: Mode = "whole"
    gzip: bool = False
    pieces: int = 8


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class ReplayServer:
    replies: collections.deque[Reply] = field(default_factory=collections.deque)
    seen: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    default: Reply | None = None
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reply(self, body: bytes, **options: object) -> Reply:
        queued = Reply(body, **options)  # type: ignore[arg-type]
        self.replies.append(queued)
        return queued

    def start(self) -> None:
        replay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self._answer()

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                replay.seen.append(Seen(self.command, self.path, dict(self.headers), body))
                reply = replay.replies.popleft() if replay.replies else replay.default
                if reply is None:
                    reply = Reply(b'{"error": "nothing queued"}', status=404)
                data = gzip.compress(reply.body) if reply.gzip else reply.body
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                if reply.gzip:
                    self.send_header("content-encoding", "gzip")
                if reply.mode == "whole":
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                size = max(1, -(-len(data) // reply.pieces))
                pieces = [data[start : start + size] for start in range(0, len(data), size)]
                if reply.mode != "chunked":
                    pieces = pieces[: max(1, len(pieces) // 2)]
                for piece in pieces:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                if reply.mode == "chunked":
                    self.wfile.write(b"0\r\n\r\n")
                elif reply.mode == "stall_half":
                    replay.release.wait(10)
                self.close_connection = True

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
