"""The export's HTTP server: `/healthz` (the loop made a step or an export attempt lately),
`/readyz` (Redis answers) and `/metrics` (`export/metrics.py`).

The worker's server (`worker/health.py`, no FastStream) on an event loop of its own in a
daemon thread: the export loop is synchronous and must not be slowed by scrapes.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Final

import redis

from thoughtline.export.metrics import ExportMetrics
from thoughtline.worker.health import HealthServer

STALE_AFTER_SECONDS: Final = 120.0
"""`/healthz` fails when the loop has neither stepped nor tried an export this long: longer
than the longest retry pause (30 s) plus an export request's timeout and a blocking read."""


class ExportHealth:
    """Serves the three paths until `stop()`."""

    def __init__(
        self,
        client: redis.Redis,
        metrics: ExportMetrics,
        last_beat: Callable[[], float],
        stale_after_seconds: float = STALE_AFTER_SECONDS,
    ) -> None:
        self._client = client
        self._last_beat = last_beat
        self._stale_after = stale_after_seconds
        self._server = HealthServer(metrics, self._readiness, _nothing, self._liveness)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def start(self, port: int, host: str) -> int:
        """Listen (in a thread) and return the port; an OSError when it cannot be listened on."""
        bound: list[int | BaseException] = []
        ready = threading.Event()

        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                bound.append(await self._server.start(port, host))
            except OSError as error:
                bound.append(error)
                return
            finally:
                ready.set()
            await self._stopped.wait()
            await self._server.stop()

        self._thread = threading.Thread(
            target=asyncio.run, args=(serve(),), name="thoughtline-export-health", daemon=True
        )
        self._thread.start()
        ready.wait()
        (result,) = bound
        if isinstance(result, BaseException):
            self._thread.join()
            raise result
        return result

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join()
            self._thread = None

    async def _liveness(self) -> str | None:
        quiet = time.monotonic() - self._last_beat()
        if quiet > self._stale_after:
            return f"the export loop has not stepped for {quiet:.0f} s"
        return None

    async def _readiness(self) -> str | None:
        try:
            await asyncio.to_thread(self._client.ping)
        except (redis.RedisError, OSError) as error:
            return f"Redis cannot be reached ({type(error).__name__})"
        return None


async def _nothing() -> None:
    return None
