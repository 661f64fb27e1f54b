"""The live sweep: every `interval`, each worker looks at the open live streams that made no
progress for an interval, the longest idle first. Parked chunks that became next (their
predecessor's worker died before applying them) are applied; a stream idle past
`THOUGHTLINE_LIVE_IDLE_MS` is closed as truncated (`worker/live.py` explains both)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final, cast

from redis import exceptions as redis_errors

from thoughtline.worker.connections import RedisClient
from thoughtline.worker.live_plans import now_ms
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.retry import TRANSIENT_ERRORS, Backoff
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)

SWEEP_PAGE: Final = 500
"""Open streams looked at per sweep step."""


SweepStream = Callable[[str, bool], Awaitable[None]]
"""The live handler's work on one stream the sweep found without progress: its parked chunks
that are next applied and, if the flag says it is idle, the stream closed."""


class LiveSweep:
    """The sweep of one partition's open streams (each handed to a `SweepStream`, taken per
    call: the sweep holds no reference to the handler that holds it)."""

    def __init__(self, client: RedisClient, settings: Settings, metrics: Metrics) -> None:
        self._client = client
        self._settings = settings
        self._metrics = metrics
        self._open_set = settings.keys().live_open_set
        self.interval = min(max(settings.live_idle_ms / 4000, 0.05), 1.0)
        """How often `sweep` runs: parked chunks whose worker died wait about this long."""

    async def run_sweeps(self, sweep_stream: SweepStream) -> None:
        """`sweep` every `interval`, for the worker's life; Redis errors are waited out."""
        backoff = Backoff(first=self.interval)
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.sweep(sweep_stream)
                backoff.reset()
            except (*TRANSIENT_ERRORS, redis_errors.ResponseError) as error:
                logger.debug("live sweep skipped: %s", type(error).__name__)
                await backoff.wait()
            except Exception as error:  # a bug here must not end the sweeps for good
                logger.error("live sweep failed: %s", type(error).__name__)
                await backoff.wait()

    async def sweep(self, sweep_stream: SweepStream) -> None:
        """Apply parked chunks that are next (their worker died after the predecessor) and
        close streams idle past `THOUGHTLINE_LIVE_IDLE_MS`. Only streams without progress for
        an `interval` are looked at (a stream in progress has its parked chunks applied by the
        worker that applies their predecessor), the longest idle first."""
        now = now_ms()
        members = await self._client.zrangebyscore(self._open_set, 0, "+inf")
        self._metrics.set_live_open(self._open_set, len(members))
        open_streams = await self._client.zrangebyscore(
            self._open_set, 0, now - self.interval * 1000, start=0, num=SWEEP_PAGE, withscores=True
        )
        for member, score in cast(list[tuple[bytes, float]], open_streams):
            idle = now - score >= self._settings.live_idle_ms
            await sweep_stream(member.decode(), idle)
