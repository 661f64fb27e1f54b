"""Live streams as a user sees them: how soon a chunk's text can be read, how many chunks one
worker applies per second at any stream length, what an open stream costs Redis and what a
stream leaves on the deltas stream.

    python bench/live.py [--quick] [--skip-long] [--times N]

A private redis-server and one `thoughtline serve` process (the `thoughtline` on the path:
run it with `PYTHONPATH=<a checkout>/service` to measure that checkout). Measured:

1. **Visible text**: a plain answer (no delimiter), 150 chunks published one every 20 ms;
   for each chunk, the time from its `XADD` to the first delta after which a consumer that
   adds up the deltas (a revision replacing the sums) shows that chunk's text; and from the
   first chunk to the first delta with any visible text. The same for a `<think>`-opened
   answer's first thinking.
2. **Chunks/s** of one worker, the same 10,000 chunks as 100 streams x 100 and as 4 x 2,500,
   and 1 x 20,000 (all published at once, interleaved; counted until the last delta), each
   stream a `<think>` block (a third of its chunks) and then the answer, one word a chunk.
3. **Redis memory per open stream** (`MEMORY USAGE` of its keys, the streams not ended):
   100 streams of 100 chunks, and 2 of 2,500.
4. **Bytes on the deltas stream per stream** (the `delta` fields) after 100, 2,500 and
   10,000 chunks of those streams.
5. **Live chunks/s against whole small responses/s** on the same worker (10,000 of each),
   and, since the rates move with the machine's load, the CPU time the worker process and
   Redis spent per live chunk and per whole response (from `/proc`, over each burst): the
   worker's CPU per whole response over its CPU per live chunk is the ratio a quiet machine
   would give.
6. **Worker memory**: its resident set size (`VmRSS`) after the run, and its peak (`VmHWM`).

It prints each figure and its ratio to the goal of the live-streams work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.*` helpers, run as a script

from tests.chaos.fleet import Fleet
from tests.chaos.servers import RedisServer
from thoughtline.worker.settings import Settings, load_settings

WORDS = (
    "the", "model", "writes", "an", "answer", "one", "token", "at", "a", "time", "and", "a",
    "user", "reads", "it", "live",
)  # fmt: skip


def _chat(name: str, pieces: list[str], *, finish: bool = True) -> list[bytes]:
    objects: list[dict[str, Any]] = [
        {"id": name, "object": "chat.completion.chunk", "model": "bench",
         "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in pieces
    ]  # fmt: skip
    if finish:
        end = {"index": 0, "delta": {}, "finish_reason": "stop"}
        objects.append({"id": name, "object": "chat.completion.chunk", "model": "bench",
                        "choices": [end]})  # fmt: skip
    return [json.dumps(item).encode() for item in objects]


def plain_pieces(chunks: int, offset: int = 0) -> list[str]:
    """One word (a token) per chunk."""
    return [WORDS[(offset + index) % len(WORDS)] + " " for index in range(chunks)]


def think_pieces(chunks: int) -> list[str]:
    words = plain_pieces(chunks)
    third = max(1, chunks // 3)
    return ["<think>" + words[0], *words[1:third], "</think>" + words[third], *words[third + 1 :]]


@dataclass
class Seen:
    """What a consumer of the deltas has shown, per stream, and when."""

    text: dict[str, int] = field(default_factory=dict)
    thinking: dict[str, int] = field(default_factory=dict)
    first_text: dict[str, float] = field(default_factory=dict)
    first_thinking: dict[str, float] = field(default_factory=dict)
    reached: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    """Per stream: (length of text shown, when), each time it grew."""
    count: int = 0
    delta_bytes: dict[str, int] = field(default_factory=dict)
    bytes_at: dict[int, list[int]] = field(default_factory=dict)
    """At `seq` 99, 2,499 and 9,999: the bytes each stream's deltas took so far."""


class DeltaReader(threading.Thread):
    """Reads the deltas stream as a consumer would (sums, revisions replacing them)."""

    def __init__(self, url: str, stream: str) -> None:
        super().__init__(name="delta-reader", daemon=True)
        self.client = redis.Redis.from_url(url, socket_timeout=60)
        self.stream = stream
        self.seen = Seen()
        self.stopped = threading.Event()
        self.last = "0-0"

    def run(self) -> None:
        sums: dict[str, tuple[str, str]] = {}
        seen = self.seen
        while not self.stopped.is_set():
            found = self.client.xread({self.stream: self.last}, count=2000, block=100)
            now = time.perf_counter()
            for _, entries in found:
                for entry_id, fields in entries:
                    self.last = entry_id
                    raw = fields[b"delta"]
                    delta = json.loads(raw)
                    name = delta["id"]
                    seen.count += 1
                    seen.delta_bytes[name] = seen.delta_bytes.get(name, 0) + len(raw)
                    if delta["seq"] in (99, 2499, 9999):
                        seen.bytes_at.setdefault(delta["seq"] + 1, []).append(
                            seen.delta_bytes[name]
                        )
                    text, thinking = sums.get(name, ("", ""))
                    revision = delta.get("revision")
                    if revision:
                        text, thinking = (
                            revision["accumulated_text"],
                            revision["accumulated_thinking"],
                        )
                    else:
                        text += delta["delta"]["text"]
                        thinking += delta["delta"]["thinking"]
                    if delta["is_final"]:
                        sums.pop(name, None)
                    else:
                        sums[name] = (text, thinking)
                    if text and name not in seen.first_text:
                        seen.first_text[name] = now
                    if thinking and name not in seen.first_thinking:
                        seen.first_thinking[name] = now
                    if len(text) > seen.text.get(name, 0):
                        seen.text[name] = len(text)
                        seen.reached.setdefault(name, []).append((len(text), now))
        self.client.close()


def _fields(name: str, seq: int, payloads: list[bytes], final: bool) -> dict[str, bytes | str]:
    fields: dict[str, bytes | str] = {
        "stream": name,
        "seq": str(seq),
        "format": "openai_chat",
        "payload": payloads[seq],
    }
    if final and seq == len(payloads) - 1:
        fields["final"] = "1"
    return fields


class Cpu:
    """CPU seconds (user + system) of the worker and Redis processes, read from `/proc`."""

    def __init__(self, worker: int | None = None, redis_server: int | None = None) -> None:
        self.pids = {"worker": worker, "redis": redis_server}
        self.spent: dict[str, dict[str, float]] = {}
        """Per burst label: CPU seconds per item of the worker and of Redis."""

    def now(self) -> dict[str, float]:
        return {name: _cpu_seconds(pid) for name, pid in self.pids.items()}

    def note(self, label: str, before: dict[str, float], items: int) -> None:
        after = self.now()
        self.spent[label] = {name: (after[name] - before[name]) / max(items, 1) for name in after}


def _cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return float("nan")
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _memory_mib(pid: int | None) -> dict[str, float]:
    """`VmRSS` and `VmHWM` of a process, in MiB (NaN when unreadable)."""
    found = {"VmRSS": float("nan"), "VmHWM": float("nan")}
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines() if pid else []
    except OSError:
        lines = []
    for line in lines:
        name, _, value = line.partition(":")
        if name in found:
            found[name] = int(value.split()[0]) / 1024
    return found


def visible_text(url: str, settings: Settings, chunks: int, interval: float) -> dict[str, float]:
    """Per-chunk latency of its text, first text, first thinking (seconds)."""
    reader = DeltaReader(url, settings.deltas_stream)
    reader.start()
    client = redis.Redis.from_url(url)
    plain = _chat("plain", plain_pieces(chunks))
    thinking = _chat("think", think_pieces(chunks))
    sent: list[tuple[int, float]] = []  # (text length once this chunk is shown, when sent)
    length = 0
    pieces = plain_pieces(chunks)
    first_sent: dict[str, float] = {}
    for seq in range(len(plain)):
        started = time.perf_counter()
        for name, payloads in (("plain", plain), ("think", thinking)):
            client.xadd(settings.input_stream, _fields(name, seq, payloads, True))  # type: ignore[arg-type]
            first_sent.setdefault(name, started)
        if seq < len(pieces):
            length += len(pieces[seq])
            sent.append((length, started))
        time.sleep(max(0.0, interval - (time.perf_counter() - started)))
    deadline = time.monotonic() + 120
    while reader.seen.text.get("plain", 0) < length and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    reader.stopped.set()
    reader.join()
    client.close()
    reached = reader.seen.reached.get("plain", [])
    latencies = []
    for needed, when in sent:
        shown = next((at for size, at in reached if size >= needed), None)
        if shown is not None:
            latencies.append(shown - when)
    latencies.sort()
    seen = reader.seen
    return {
        "median": statistics.median(latencies) if latencies else float("nan"),
        "p99": latencies[int(len(latencies) * 0.99)] if latencies else float("nan"),
        "first_text": seen.first_text.get("plain", float("nan")) - first_sent["plain"],
        "first_thinking": seen.first_thinking.get("think", float("nan")) - first_sent["think"],
    }


def burst(
    url: str,
    settings: Settings,
    prefix: str,
    streams: int,
    chunks: int,
    limit: float,
    cpu: Cpu | None = None,
) -> tuple[int, float, dict[int, list[int]]]:
    """All chunks published at once (interleaved); chunks applied, seconds, delta bytes per
    stream at 100, 2,500 and 10,000 chunks. Stops counting after `limit` seconds."""
    reader = DeltaReader(url, settings.deltas_stream)
    client = redis.Redis.from_url(url)
    reader.last = _last_id(client, settings.deltas_stream)
    reader.start()
    made = {f"{prefix}-{number}": _chat(f"{prefix}-{number}", think_pieces(chunks - 1))
            for number in range(streams)}  # fmt: skip
    total = streams * chunks
    cpu_before = cpu.now() if cpu is not None else {}
    started = time.perf_counter()
    for batch in _batches(((name, seq) for seq in range(chunks) for name in made), 1000):
        pipeline = client.pipeline(transaction=False)
        for name, seq in batch:
            pipeline.xadd(settings.input_stream, _fields(name, seq, made[name], True))  # type: ignore[arg-type]
        pipeline.execute()
    deadline = started + limit
    while reader.seen.count < total and time.perf_counter() < deadline:
        time.sleep(0.02)
    seconds = time.perf_counter() - started
    done = reader.seen.count
    if cpu is not None:
        cpu.note(prefix, cpu_before, done)
    drained = time.perf_counter() + 900  # the rest, untimed: the next run starts on an idle worker
    while reader.seen.count < total and time.perf_counter() < drained:
        time.sleep(0.1)
    reader.stopped.set()
    reader.join()
    client.close()
    return done, seconds, reader.seen.bytes_at


def memory_per_open_stream(
    url: str, settings: Settings, streams: int, chunks: int
) -> tuple[float, float, float]:
    """The mean `MEMORY USAGE` of the keys an open stream keeps (`<input>:live:*:<stream>`),
    of its log alone, and the mean bytes of its chunks' payloads."""
    client = redis.Redis.from_url(url)
    names = [f"open-{chunks}-{number}" for number in range(streams)]
    made = {name: _chat(name, plain_pieces(chunks), finish=False) for name in names}
    before = int(client.xlen(settings.deltas_stream))
    sent = 0
    for batch in _batches(((name, seq) for seq in range(chunks) for name in made), 1000):
        pipeline = client.pipeline(transaction=False)
        for name, seq in batch:
            pipeline.xadd(settings.input_stream, _fields(name, seq, made[name], False))  # type: ignore[arg-type]
        pipeline.execute()
        sent += len(batch)
    deadline = time.monotonic() + 600
    while int(client.xlen(settings.deltas_stream)) - before < sent:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    total = log = 0
    for name in names:
        for key in client.scan_iter(match=f"{settings.input_stream}:live:*:{name}"):
            size = int(client.memory_usage(key) or 0)
            total += size
            if b":live:log:" in key:
                log += size
    client.close()
    payloads = sum(len(payload) for made_payloads in made.values() for payload in made_payloads)
    return total / streams, log / streams, payloads / streams


def whole_responses(
    url: str, settings: Settings, count: int, limit: float, cpu: Cpu | None = None
) -> tuple[int, float]:
    client = redis.Redis.from_url(url)
    before = int(client.xlen(settings.output_stream))
    body = json.dumps({"id": "r", "object": "chat.completion", "model": "bench",
                       "choices": [{"index": 0, "message": {"role": "assistant",
                                    "content": " ".join(plain_pieces(40))},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 40,
                                 "total_tokens": 45}}).encode()  # fmt: skip
    cpu_before = cpu.now() if cpu is not None else {}
    started = time.perf_counter()
    for batch in _batches(iter(range(count)), 1000):
        pipeline = client.pipeline(transaction=False)
        for number in batch:
            pipeline.xadd(settings.input_stream, {"payload": body, "id": f"whole-{number}",
                                                  "format": "openai_chat"})  # fmt: skip
        pipeline.execute()
    deadline = started + limit
    while int(client.xlen(settings.output_stream)) - before < count:
        if time.perf_counter() > deadline:
            break
        time.sleep(0.02)
    done = int(client.xlen(settings.output_stream)) - before
    seconds = time.perf_counter() - started
    if cpu is not None:
        cpu.note("whole", cpu_before, done)
    client.close()
    return done, seconds


def _last_id(client: redis.Redis, stream: str) -> str:
    last = client.xrevrange(stream, count=1)
    return last[0][0].decode() if last else "0-0"


def _batches(items: Iterator[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of every size")
    parser.add_argument("--times", type=float, default=1.0, help="every size times this")
    parser.add_argument("--skip-long", action="store_true", help="no 1 x 20,000 run")
    parser.add_argument("--limit", type=float, default=300.0, help="seconds per burst at most")
    options = parser.parse_args()
    times = 0.1 if options.quick else options.times

    def scale(size: int) -> int:
        return max(1, int(size * times))

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
            seen = visible_text(server.url, settings, 150, 0.02)
            print(
                f"plain answer, 150 chunks one per 20 ms: first visible text "
                f"{seen['first_text']:.3f} s after the first chunk (goal <= 0.25 s: "
                f"{seen['first_text'] / 0.25:.2f} of it); a chunk's text shown after "
                f"median {seen['median'] * 1000:.1f} ms, p99 {seen['p99'] * 1000:.1f} ms"
            )
            print(
                f"<think>-opened answer: first thinking {seen['first_thinking']:.3f} s after "
                f"the first chunk (goal <= 0.25 s)"
            )
            cpu = Cpu(fleet.workers[0].process.pid, server.pid)
            rates: dict[str, float] = {}
            sizes = [("100x100", 100, scale(100)), ("4x2500", 4, scale(2500))]
            if not options.skip_long:
                sizes.append(("1x20000", 1, scale(20000)))
            delta_bytes: dict[int, int] = {}
            for label, streams, chunks in sizes:
                done, seconds, written = burst(
                    server.url, settings, label, streams, chunks, options.limit, cpu
                )
                rates[label] = done / seconds
                complete = "" if done == streams * chunks else f" (only {done} in the limit)"
                print(
                    f"one worker, {streams} x {chunks:,}: {done / seconds:.0f} chunks/s{complete}"
                )
                for at, sizes_found in written.items():
                    delta_bytes[at] = int(statistics.median(sizes_found))
            ratio = rates["4x2500"] / rates["100x100"]
            print(f"4 x 2,500 against 100 x 100: {ratio:.2f} (goal >= 0.8)")
            for at, size in sorted(delta_bytes.items()):
                print(f"deltas stream bytes per stream after {at:,} chunks: {size:,}")
            done, seconds = whole_responses(server.url, settings, scale(10000), options.limit, cpu)
            whole = done / seconds
            print(f"whole small responses: {whole:.0f}/s")
            print(
                f"live chunks/s (100 x {scale(100):,}) / whole responses/s: "
                f"{rates['100x100'] / whole:.2f} (goal >= 0.5)"
            )
            live_cpu, whole_cpu = cpu.spent["100x100"], cpu.spent["whole"]
            print(
                f"CPU per live chunk (100 x {scale(100):,}): worker "
                f"{live_cpu['worker'] * 1e6:.1f} us, Redis {live_cpu['redis'] * 1e6:.1f} us; "
                f"per whole small response: worker "
                f"{whole_cpu['worker'] * 1e6:.1f} us, Redis {whole_cpu['redis'] * 1e6:.1f} us; "
                f"worker CPU per whole response / per live chunk: "
                f"{whole_cpu['worker'] / live_cpu['worker']:.2f}"
            )
            long_cpu = cpu.spent["4x2500"]
            print(
                f"CPU per live chunk (4 x {scale(2500):,}): worker {long_cpu['worker'] * 1e6:.1f} "
                f"us, Redis {long_cpu['redis'] * 1e6:.1f} us"
            )
            for streams, chunks in ((100, scale(100)), (2, scale(2500))):
                per, log, raw = memory_per_open_stream(server.url, settings, streams, chunks)
                print(
                    f"Redis memory per open stream of {chunks} chunks: {per / 1024:.1f} KiB, "
                    f"of which its log {log / 1024:.1f} KiB (its chunks' payloads: "
                    f"{raw / 1024:.1f} KiB)"
                )
            memory = _memory_mib(fleet.workers[0].process.pid)
            print(
                f"worker memory after the run: RSS {memory['VmRSS']:.1f} MiB, "
                f"peak {memory['VmHWM']:.1f} MiB"
            )
        finally:
            fleet.kill_all()
            server.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
