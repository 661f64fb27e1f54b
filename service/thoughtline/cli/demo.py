"""`thoughtline demo`: the whole service on a machine with nothing running, in a few seconds.

Starts an embedded Redis in a temporary folder, publishes the bundled sample responses (one or
more per format, plus one truncated body that must end as a dead letter), runs a worker in this
process until every entry is finished, then prints each record, each dead letter and the
non-zero counters.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final, cast

import redis.asyncio as redis_asyncio

from thoughtline.cli.console import counter_lines, describe_entry
from thoughtline.client import apublish
from thoughtline.contract.record import FormatName, is_format_name
from thoughtline.worker.app import Worker
from thoughtline.worker.embedded import EmbeddedRedis
from thoughtline.worker.settings import SettingsError, load_settings

WAIT_SECONDS: Final = 20.0


def sample_files() -> list[Traversable]:
    """The bundled samples, `<format>.<what it shows>.json[l]`, sorted by name."""
    folder = resources.files("thoughtline") / "samples"
    names = sorted(
        item.name for item in folder.iterdir() if item.name.endswith((".json", ".jsonl"))
    )
    return [folder / name for name in names]


def sample_format(name: str) -> FormatName | None:
    """The format a sample's file name starts with; None (detect) for the invalid ones."""
    prefix = name.split(".", 1)[0]
    return prefix if is_format_name(prefix) else None


async def run() -> int:
    with tempfile.TemporaryDirectory(prefix="thoughtline-demo-") as folder:
        embedded = EmbeddedRedis(Path(folder))
        url = embedded.start()
        try:
            return await _demo(url)
        finally:
            embedded.stop()


async def _demo(url: str) -> int:
    try:
        settings = load_settings(redis_url=url, metrics_port=0, block_ms=100)
    except SettingsError as error:
        print(f"thoughtline: {error}")
        return 2
    print(f"embedded Redis at {url}")
    client = redis_asyncio.Redis.from_url(url)
    samples = sample_files()
    for sample in samples:
        await apublish(
            client,
            sample.read_bytes(),
            stream=settings.input_stream,
            format=sample_format(sample.name),
            id=sample.name,
        )
    print(f"published {len(samples)} sample responses to {settings.input_stream}\n")
    worker = Worker(settings, url)
    running = asyncio.create_task(worker.run())
    finished = await _wait_for(client, settings.output_stream, settings.dead_stream, len(samples))
    worker.stop()
    status = await running
    for stream in (settings.output_stream, settings.dead_stream):
        page = cast(list[tuple[bytes, dict[bytes, bytes]]], await client.xrange(stream))
        for entry_id, fields in page:
            print(describe_entry(entry_id, fields, as_json=False))
    print("\ncounters (what /metrics serves):")
    for line in counter_lines(worker.metrics.registry):
        print(f"  {line}")
    await client.aclose()
    if not finished:
        print(f"thoughtline: not every sample was finished within {WAIT_SECONDS:g} s")
        return 1
    return status


async def _wait_for(client: redis_asyncio.Redis, output: str, dead: str, count: int) -> bool:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        if await client.xlen(output) + await client.xlen(dead) >= count:
            return True
        await asyncio.sleep(0.05)
    return False
