"""A local HTTP server that answers each request with the next queued reply, byte for byte:
whole (Content-Length), chunked in pieces, or cut half-way (stalled, or the connection
dropped), in any content encoding (`encode`). Requests are kept for the tests to look at."""

from __future__ import annotations

import collections
import gzip
import http.server
import re
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import brotli
import zstandard

Mode = Literal["whole", "chunked", "stall_half", "break_half"]


Encoder = tuple[Callable[[bytes], bytes], Callable[[], bytes], Callable[[], bytes]]
"""One encoding's compress, flush (what it holds, as a server streaming it sends each event)
and finish."""


def _encoder(encoding: str) -> Encoder:
    if encoding in ("gzip", "x-gzip", "deflate"):
        deflater = zlib.compressobj(wbits=zlib.MAX_WBITS | (0 if encoding == "deflate" else 16))
        return deflater.compress, lambda: deflater.flush(zlib.Z_SYNC_FLUSH), deflater.flush
    if encoding == "br":
        compressor = brotli.Compressor()
        return compressor.process, compressor.flush, compressor.finish
    assert encoding == "zstd", encoding
    zstd = zstandard.ZstdCompressor().compressobj()
    return (
        zstd.compress,
        lambda: zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK),
        lambda: zstd.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH),
    )


def encode(
    body: bytes, content_encoding: str, *, flush_events: bool = False, end: bool = True
) -> bytes:
    """`body` in the encodings a `Content-Encoding` value lists, applied in its order (the
    first listed first, each on the one before's output). `flush_events`: every encoder
    flushed after each event (up to each empty line), as a server streaming it does.
    `end=False`: flushed at the end but not ended, a valid beginning of an encoded body that
    decodes to `body` exactly (for a decoder to meet damaged bytes after it)."""
    chain = [
        _encoder(encoding)
        for encoding in (part.strip() for part in content_encoding.lower().split(","))
        if encoding not in ("", "identity")
    ]
    pieces = re.findall(rb".*?\n\n|.+", body, re.DOTALL) if flush_events else [body]
    encoded = []
    for index, piece in enumerate(pieces):
        flush = flush_events or (not end and index == len(pieces) - 1)
        for compress, flushed, _ in chain:
            piece = compress(piece) + (flushed() if flush else b"")
        encoded.append(piece)
    if end:
        tail = b""
        for compress, _, finish in chain:
            tail = compress(tail) + finish()
        encoded.append(tail)
    return b"".join(encoded)


@dataclass
class Reply:
    body: bytes
    content_type: str = "application/json"
    status: int = 200
    mode: Mode = "whole"
    gzip: bool = False
    pieces: int = 8
    encoding: str = ""
    """The `Content-Encoding` to send the body in (`gzip=True` is `encoding="gzip"`)."""
    wire: bytes | None = None
    """The bytes to send as they are, instead of the body encoded (a damaged encoding)."""


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
                encoding = "gzip" if reply.gzip else reply.encoding
                data = reply.wire
                if data is None:
                    data = gzip.compress(reply.body) if reply.gzip else encode(reply.body, encoding)
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                if encoding:
                    self.send_header("content-encoding", encoding)
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
