"""Capture's added latency: the capturing transport against the bare one, same run.

    python bench/capture.py [--calls N] [--chunks N] [--redis-url URL]

Both clients talk to the same in-process inner transport (no network: what is measured is the
capture, not a socket), which answers a 5 KB JSON body in two chunks, or a stream of
`--chunks` 100-byte SSE events. Calls alternate bare / captured so machine noise hits both
alike. The captured client publishes to a real Redis (a private `redis-server` the bench starts
in a temporary folder and stops after, or `--redis-url`'s, on a stream of its own, deleted
after) from its background thread, so the thread's share of
the interpreter counts against capture too.

Two runs of non-streamed calls: back to back (the publisher's thread then competes with the
calls for the interpreter, the worst case), and with the provider answering after
`--provider-ms` (1 ms by default; real providers take far longer), when that work fits in the
wait as it does in an application. Reported: per non-streamed call, the median and p99 of
both and the added median / p99;
per stream chunk, the added time (the captured stream's time minus the bare one's, divided by
the chunk count, medians of the rounds), published once at the end and with `live=True` (each
chunk cut and handed to the publisher as it arrives; the publisher's thread then sends one
`XADD` per chunk while the stream is read, the worst case: no provider wait between chunks).
Goals: added median under 50 us for a 5 KB body, nothing measurable per chunk published once,
a few microseconds per live chunk.

Then the live stream in each content encoding (`--encodings`, default `gzip,br,zstd`; one
without its package installed is left out), each event compressed and flushed as a server
streaming it sends it, so one chunk is one encoded event: the added time per chunk of each,
the plain live stream's beside them, all in the same rounds (each against the bare client
reading the same bytes), so what one costs beyond the plain one is its decoding.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.*` helpers, run as a script

from tests.chaos.servers import RedisServer
from thoughtline import capture

BODY = b'{"id":"msg_1","type":"message","content":[{"type":"text","text":"%s"}]}' % (b"x" * 5000)


class _Chunks(httpx.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks


class _Inner(httpx.BaseTransport):
    def __init__(self, chunks: list[bytes], content_type: str, wait: float = 0.0) -> None:
        self._chunks = chunks
        self._content_type = content_type
        self._wait = wait

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self._wait:
            time.sleep(self._wait)  # the provider thinking: the GIL is free, as on a socket
        headers = {"content-type": self._content_type}
        return httpx.Response(200, headers=headers, stream=_Chunks(self._chunks))


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def _bodies(
    publisher: capture.Publisher, calls: int, wait: float = 0.0
) -> tuple[list[float], list[float]]:
    inner = _Inner([BODY[:2500], BODY[2500:]], "application/json", wait)
    bare = httpx.Client(transport=inner)
    captured = httpx.Client(transport=capture.Transport(publisher=publisher, inner=inner))
    url = "http://provider.test/v1/messages"
    request = b'{"model":"claude","max_tokens":1024,"messages":[]}'
    times: tuple[list[float], list[float]] = ([], [])
    for index in range(calls):
        for client, into in ((bare, times[0]), (captured, times[1])):
            started = time.perf_counter_ns()
            response = client.post(url, content=request)
            response.read()
            into.append((time.perf_counter_ns() - started) / 1000)
        if index % 500 == 499:
            publisher.flush(10)  # keep the buffer from filling: measure publishing, not drops
    return times


def _streams(
    publisher: capture.Publisher, chunks: int, rounds: int, live: bool = False
) -> list[float]:
    event = b'data: {"type":"content_block_delta","delta":{"text":"%s"}}\n\n' % (b"y" * 40)
    inner = _Inner([event] * chunks, "text/event-stream")
    bare = httpx.Client(transport=inner)
    transport = capture.Transport(publisher=publisher, inner=inner, live=live)
    captured = httpx.Client(transport=transport)
    url = "http://provider.test/v1/messages"
    added = []
    for _ in range(rounds):
        spent = []
        for client in (bare, captured):
            started = time.perf_counter_ns()
            with client.stream("POST", url, content=b'{"model":"m","stream":true}') as response:
                for _chunk in response.iter_raw():
                    pass
            spent.append((time.perf_counter_ns() - started) / 1000)
        added.append((spent[1] - spent[0]) / chunks)
        publisher.flush(10)
    return added


def _encoder(encoding: str) -> Callable[[bytes], bytes] | None:
    """Compress-and-flush for one encoding (a chunk in, the bytes a streaming server sends
    for it out), or None when its package is not installed."""
    if encoding == "identity":
        return lambda chunk: chunk
    if encoding in ("gzip", "deflate"):
        deflater = zlib.compressobj(wbits=zlib.MAX_WBITS | (16 if encoding == "gzip" else 0))
        return lambda chunk: deflater.compress(chunk) + deflater.flush(zlib.Z_SYNC_FLUSH)
    try:
        if encoding == "br":
            import brotli  # type: ignore[import-untyped]

            compressor = brotli.Compressor()
            return lambda chunk: bytes(compressor.process(chunk) + compressor.flush())
        if encoding == "zstd":
            import zstandard

            zstd = zstandard.ZstdCompressor().compressobj()
            return lambda chunk: (
                zstd.compress(chunk) + zstd.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
            )
    except ImportError:
        return None
    raise SystemExit(f"unknown encoding {encoding!r}")


class _EncodedInner(_Inner):
    def __init__(self, chunks: list[bytes], encoding: str) -> None:
        super().__init__(chunks, "text/event-stream")
        self._encoding = encoding

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream", "content-encoding": self._encoding}
        return httpx.Response(200, headers=headers, stream=_Chunks(self._chunks))


def _encoded_streams(
    publisher: capture.Publisher, chunks: int, rounds: int, encodings: list[str]
) -> dict[str, list[float]]:
    """Added time per live chunk of the stream in each encoding, the rounds alternating."""
    clients = {}
    for encoding in ["identity", *encodings]:
        encoder = _encoder(encoding)
        if encoder is None:
            print(f"({encoding}: its package is not installed, left out)")
            continue
        events = [
            b'data: {"type":"content_block_delta","delta":{"text":"%s %d"}}\n\n'
            % (b"y" * 36, index)
            for index in range(chunks)
        ]
        inner = _EncodedInner([encoder(event) for event in events], encoding)
        transport = capture.Transport(publisher=publisher, inner=inner, live=True)
        clients[encoding] = (httpx.Client(transport=inner), httpx.Client(transport=transport))
    url = "http://provider.test/v1/messages"
    added: dict[str, list[float]] = {encoding: [] for encoding in clients}
    for _ in range(rounds):
        for encoding, pair in clients.items():
            spent = []
            for client in pair:
                started = time.perf_counter_ns()
                with client.stream("POST", url, content=b'{"model":"m","stream":true}') as response:
                    for _chunk in response.iter_raw():
                        pass
                spent.append((time.perf_counter_ns() - started) / 1000)
            added[encoding].append((spent[1] - spent[0]) / chunks)
            publisher.flush(10)
    return added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument(
        "--redis-url",
        default=None,
        help="publish to this Redis (default: a private redis-server started for the run)",
    )
    parser.add_argument(
        "--encodings",
        default="gzip,br,zstd",
        help="the live stream's content encodings to measure, by commas (empty: none)",
    )
    parser.add_argument("--linger", type=float, default=0.005, help="the publisher's, seconds")
    parser.add_argument(
        "--provider-ms",
        type=float,
        default=1.0,
        help="the second run's provider answers after this long (the first: at once)",
    )
    arguments = parser.parse_args()
    if arguments.redis_url is not None:
        _measure(arguments, arguments.redis_url)
        return
    with tempfile.TemporaryDirectory(prefix="thoughtline-capture-bench-") as directory:
        server = RedisServer(Path(directory) / "redis").start()
        try:
            _measure(arguments, server.url)
        finally:
            server.stop()


def _measure(arguments: argparse.Namespace, redis_url: str) -> None:
    stream = f"{{bench-capture-{uuid.uuid4().hex[:8]}}}:raw"
    publisher = capture.Publisher(redis_url, stream=stream, maxlen=1000, linger=arguments.linger)
    try:
        _bodies(publisher, 300)  # warm up
        runs = [
            ("provider answers at once", _bodies(publisher, arguments.calls)),
            (
                f"provider answers after {arguments.provider_ms:g} ms",
                _bodies(publisher, arguments.calls // 5, arguments.provider_ms / 1000),
            ),
        ]
        per_chunk = _streams(publisher, arguments.chunks, arguments.rounds)
        per_live_chunk = _streams(publisher, arguments.chunks, arguments.rounds, live=True)
        encodings = [name.strip() for name in arguments.encodings.split(",") if name.strip()]
        per_encoded_chunk = (
            _encoded_streams(publisher, arguments.chunks, arguments.rounds, encodings)
            if encodings
            else {}
        )
        publisher.flush(10)
        published = publisher.published
    finally:
        publisher.close(5)
        redis.Redis.from_url(redis_url).delete(stream)
    for title, (bare, captured) in runs:
        bare_median, captured_median = statistics.median(bare), statistics.median(captured)
        bare_p99, captured_p99 = _percentile(bare, 0.99), _percentile(captured, 0.99)
        print(f"non-streamed 5 KB body, {title}, {len(bare)} calls each, us per call:")
        print(f"  bare      median {bare_median:8.1f}  p99 {bare_p99:8.1f}")
        print(f"  captured  median {captured_median:8.1f}  p99 {captured_p99:8.1f}")
        print(
            f"  added     median {captured_median - bare_median:8.1f}  "
            f"p99 {captured_p99 - bare_p99:8.1f}   (goal: median < 50)"
        )
    for title, added in (("published once", per_chunk), ("live=True", per_live_chunk)):
        chunk_median, chunk_p90 = statistics.median(added), _percentile(added, 0.9)
        print(
            f"stream of {arguments.chunks} chunks, {title}, {arguments.rounds} rounds: added per "
            f"chunk median {chunk_median * 1000:.0f} ns (p90 {chunk_p90 * 1000:.0f} ns)"
        )
    for encoding, added in per_encoded_chunk.items():
        chunk_median, chunk_p90 = statistics.median(added), _percentile(added, 0.9)
        print(
            f"live stream of {arguments.chunks} chunks in {encoding}, {arguments.rounds} rounds: "
            f"added per chunk median {chunk_median * 1000:.0f} ns (p90 {chunk_p90 * 1000:.0f} ns)"
        )
    print(f"entries published: {published}")


if __name__ == "__main__":
    main()
