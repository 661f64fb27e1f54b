"""Live streams: how long from a chunk's `XADD` until its delta can be read, and how many chunks
one worker applies per second.

    python bench/live.py [--streams 20] [--chunks 100] [--interval-ms 5] [--burst-streams 100]

A private redis-server and one `thoughtline serve` process. Latency: `--streams` synthetic
Chat streams of `--chunks` chunks each (an inline `<think>` block, then an answer), their
chunks published one at a time, interleaved, one every `--interval-ms` (a steady load well
under the worker's capacity); a reader blocks on the deltas stream and notes when each
chunk's delta appears. Throughput: `--burst-streams` streams of `--chunks` chunks published
all at once; chunks/s is their count over the time until the last delta is published. Prints
the median and p99 latency and the chunks/s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.*` helpers, run as a script

from bench.live_chaos import synthetic_stream
from tests.chaos.fleet import Fleet
from tests.chaos.servers import RedisServer
from thoughtline.worker.settings import Settings, load_settings


class DeltaReader(threading.Thread):
    """Notes the time each (stream, seq) delta became readable."""

    def __init__(self, url: str, stream: str) -> None:
        super().__init__(name="delta-reader", daemon=True)
        self.client = redis.Redis.from_url(url, socket_timeout=30)
        self.stream = stream
        self.seen: dict[tuple[str, int], float] = {}
        self.stopped = threading.Event()

    def run(self) -> None:
        last = "0-0"
        while not self.stopped.is_set():
            found = self.client.xread({self.stream: last}, count=1000, block=200)
            now = time.perf_counter()
            for _, entries in found:
                for entry_id, fields in entries:
                    last = entry_id
                    delta = json.loads(fields[b"delta"])
                    self.seen[(delta["id"], delta["seq"])] = now
        self.client.close()


def _fields(name: str, seq: int, payloads: list[bytes]) -> dict[str, bytes | str]:
    fields: dict[str, bytes | str] = {
        "stream": name,
        "seq": str(seq),
        "format": "openai_chat",
        "payload": payloads[seq],
    }
    if seq == len(payloads) - 1:
        fields["final"] = "1"
    return fields


def latency(
    url: str, settings: Settings, streams: int, chunks: int, interval: float
) -> list[float]:
    source = random.Random(1)
    made = [synthetic_stream(f"lat-{number}", chunks, source) for number in range(streams)]
    reader = DeltaReader(url, settings.deltas_stream)
    reader.start()
    client = redis.Redis.from_url(url)
    sent: dict[tuple[str, int], float] = {}
    order = [(stream, seq) for seq in range(chunks) for stream in made]
    for stream, seq in order:
        started = time.perf_counter()
        client.xadd(settings.input_stream, _fields(stream.name, seq, stream.payloads))  # type: ignore[arg-type]
        sent[(stream.name, seq)] = started
        time.sleep(max(0.0, interval - (time.perf_counter() - started)))
    deadline = time.monotonic() + 120
    while len(reader.seen) < len(sent) and time.monotonic() < deadline:
        time.sleep(0.05)
    reader.stopped.set()
    reader.join()
    client.close()
    return [reader.seen[key] - sent[key] for key in sent if key in reader.seen]


def throughput(url: str, settings: Settings, streams: int, chunks: int) -> tuple[int, float]:
    source = random.Random(2)
    made = [synthetic_stream(f"burst-{number}", chunks, source) for number in range(streams)]
    client = redis.Redis.from_url(url)
    before = int(client.xlen(settings.deltas_stream))
    total = streams * chunks
    pipeline = client.pipeline(transaction=False)
    started = time.perf_counter()
    for seq in range(chunks):
        for stream in made:
            pipeline.xadd(settings.input_stream, _fields(stream.name, seq, stream.payloads))  # type: ignore[arg-type]
    pipeline.execute()
    deadline = time.monotonic() + 600
    while int(client.xlen(settings.deltas_stream)) - before < total:
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    client.close()
    return total, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--chunks", type=int, default=100)
    parser.add_argument("--interval-ms", type=float, default=5.0)
    parser.add_argument("--burst-streams", type=int, default=100)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="thoughtline-live-bench-") as directory:
        server = RedisServer(Path(directory) / "redis")
        server.start()
        settings = load_settings(redis_url=server.url, block_ms=100, metrics_port=0)
        fleet = Fleet(settings, Path(directory) / "workers", 1)
        try:
            fleet.start()
            problems = fleet.health_problems()
            if problems:
                print("\n".join(problems))
                return 1
            seconds = latency(
                server.url, settings, options.streams, options.chunks, options.interval_ms / 1000
            )
            count, elapsed = throughput(server.url, settings, options.burst_streams, options.chunks)
        finally:
            fleet.kill_all()
            server.kill()
    seconds.sort()
    p99 = seconds[min(len(seconds) - 1, int(len(seconds) * 0.99))]
    print(
        f"latency, XADD to delta readable ({len(seconds)} chunks of {options.streams} streams "
        f"x {options.chunks}, one every {options.interval_ms:g} ms): "
        f"median {statistics.median(seconds) * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms"
    )
    print(
        f"throughput, one worker: {count} chunks ({options.burst_streams} streams x "
        f"{options.chunks}) in {elapsed:.1f} s = {count / elapsed:.0f} chunks/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
