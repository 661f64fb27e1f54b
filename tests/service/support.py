"""Helpers of the service tests: run a worker in this process or as `thoughtline serve`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import redis

from thoughtline.worker.app import Worker
from thoughtline.worker.settings import Settings


@asynccontextmanager
async def running_worker(settings: Settings, **options: Any) -> AsyncIterator[Worker]:
    """A worker running in this event loop; stopped (and its exit status checked) after."""
    assert settings.redis_url is not None
    worker = Worker(settings, settings.redis_url, **options)
    task = asyncio.create_task(worker.run())
    try:
        # Every partition's reader: FastStream starts them one after another, and under load
        # the later ones start well after the first (whose entries may be done by then).
        deadline = time.monotonic() + 10
        while not (worker._readers_running() and worker.metrics_port):
            assert not task.done(), "the worker stopped while starting"
            assert time.monotonic() < deadline, "the worker did not start within 10 s"
            await asyncio.sleep(0.01)
        yield worker
    finally:
        worker.stop()
        assert await asyncio.wait_for(task, 40) == 0


async def wait_until(condition: Any, timeout: float = 10.0) -> None:
    """Poll `condition()` (sync or async) until it is true, or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        assert time.monotonic() < deadline, f"not true within {timeout} s"
        await asyncio.sleep(0.02)


async def ignore_cancels_for(seconds: float) -> None:
    """Run on for `seconds`, whatever cancels come meanwhile: a task slow to stop (a commit
    that finishes before its task takes the cancel)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(left)


def wait_for_length(client: redis.Redis, stream: str, length: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while client.xlen(stream) < length:
        assert time.monotonic() < deadline, f"{stream} did not reach {length} entries"
        time.sleep(0.02)


def serve_environment(settings: Settings, **overrides: str) -> dict[str, str]:
    """The environment of a `thoughtline serve` process for these settings."""
    return {
        **{
            name: value for name, value in os.environ.items() if not name.startswith("THOUGHTLINE_")
        },
        "THOUGHTLINE_REDIS_URL": settings.redis_url or "",
        "THOUGHTLINE_INPUT_STREAM": settings.input_stream,
        "THOUGHTLINE_OUTPUT_STREAM": settings.output_stream,
        "THOUGHTLINE_DEAD_STREAM": settings.dead_stream,
        "THOUGHTLINE_DELTAS_STREAM": settings.deltas_stream,
        "THOUGHTLINE_BLOCK_MS": str(settings.block_ms),
        "THOUGHTLINE_BATCH_SIZE": str(settings.batch_size),
        "THOUGHTLINE_METRICS_PORT": "0",
        "THOUGHTLINE_MIN_IDLE_MS": str(settings.min_idle_ms),
        "THOUGHTLINE_MAX_DELIVERIES": str(settings.max_deliveries),
        **overrides,
    }


def serve(
    settings: Settings, log: Path, *, code: str | None = None, **overrides: str
) -> subprocess.Popen[bytes]:
    """`thoughtline serve` as a real process; stdout and stderr go to `log` (appended).

    `code` runs before the command (to plant a crashing normalizer, say).
    """
    serve = "from thoughtline.cli import main\nraise SystemExit(main(['serve']))"
    command = f"{code or ''}\n{serve}"
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-c", command],
            env=serve_environment(settings, **overrides),
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def wait_exit(process: subprocess.Popen[bytes], timeout: float = 40.0) -> int:
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise


def published_ids(client: redis.Redis, stream: str) -> list[str]:
    """The `id` field of every entry of `stream`, in order (duplicates kept)."""
    return [fields[b"id"].decode() for _, fields in client.xrange(stream)]


def publish_many(client: redis.Redis, stream: str, payload: bytes, count: int) -> list[str]:
    ids = [f"entry-{number}" for number in range(count)]
    with client.pipeline(transaction=False) as pipeline:
        for entry_id in ids:
            pipeline.xadd(stream, {"payload": payload, "id": entry_id})
        pipeline.execute()
    return ids
