"""Taking over the entries of dead consumers, and bringing back a consumer group that vanished.

A worker that dies (SIGKILL, out of memory, a lost node) leaves its entries pending in the
group. Every worker runs a `Reclaimer`: past `THOUGHTLINE_MIN_IDLE_MS` it claims them
(`XAUTOCLAIM`), one at a time, and finishes each through the same path as a fresh batch
(normalize, then the atomic commit). If the group is gone (Redis came back empty, or the
group was deleted), the reclaimer notices (`NOGROUP`) and creates it again, at 0 or, when
entries were retained, where the committed ones end (`delivery.ensure_group`).

While Redis refuses writes (`check_writes`), nothing is claimed: a claim counts a delivery,
and the commit would be refused too, so claiming would only bring entries nearer to
`THOUGHTLINE_MAX_DELIVERIES`. The refusal is reported to `/readyz` meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis import exceptions as redis_errors

from thoughtline.worker.batches import Entry
from thoughtline.worker.delivery import (
    TRANSIENT_ERRORS,
    WRITE_REFUSALS,
    RedisClient,
    claim_idle,
    describe_refusal,
    ensure_group,
)
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)

Handle = Callable[[Sequence[Entry]], Awaitable[Any]]
WritesCheck = Callable[[], Awaitable[str | None]]
"""Why Redis refuses commits now, or None (`delivery.Committer.check`)."""
MAX_DELAY_SECONDS = 5.0
WRITES_PROBLEM = "writes"
"""The `/readyz` problem this module reports (`Metrics.readiness`)."""


class Reclaimer:
    def __init__(
        self,
        client: RedisClient,
        settings: Settings,
        consumer: str,
        metrics: Metrics,
        handle: Handle,
    ) -> None:
        self._client = client
        self._settings = settings
        self._consumer = consumer
        self._metrics = metrics
        self._handle = handle
        self.interval = min(max(settings.min_idle_ms / 4000, 0.05), MAX_DELAY_SECONDS)
        """A quarter of the idle time: an orphan waits at most 1.25 x min_idle_ms."""
        self.check_writes: WritesCheck | None = None
        """Set by the worker: claiming waits while this reports a refusal."""

    async def run(self, keep_going: Callable[[], bool]) -> None:
        """Reclaim every `interval` until `keep_going()` is false; Redis errors are retried."""
        delay = self.interval
        while keep_going():
            await asyncio.sleep(delay)
            try:
                await self.reclaim_once()
                delay = self.interval
            except redis_errors.ResponseError as error:
                if "NOGROUP" in str(error):
                    await self.recreate_group()
                    continue
                delay = min(delay * 2, MAX_DELAY_SECONDS)
                logger.error("reclaimer: Redis refused (%s); retrying in %.1f s", error, delay)
            except TRANSIENT_ERRORS as error:
                delay = min(delay * 2, MAX_DELAY_SECONDS)
                logger.warning(
                    "reclaimer: Redis unreachable (%s); retrying in %.1f s",
                    type(error).__name__,
                    delay,
                )
            except Exception as error:  # a bug here must not end reclaiming for good
                delay = min(delay * 2, MAX_DELAY_SECONDS)
                logger.error("reclaimer: %s; retrying in %.1f s", type(error).__name__, delay)

    async def reclaim_once(self) -> int:
        """Take over every entry idle past `min_idle_ms` and finish it; returns how many."""
        if self.check_writes is not None:
            refusal = await self.check_writes()
            self._metrics.readiness.set(WRITES_PROBLEM, refusal)
            if refusal is not None:
                logger.debug("reclaimer: not claiming while %s", refusal)
                return 0
        cursor = b"0-0"
        total = 0
        while True:  # one at a time, each committed before the next is claimed (see claim_idle)
            cursor, entries = await claim_idle(self._client, self._settings, self._consumer, cursor)
            if entries:
                self._metrics.reclaimed.inc(len(entries))
                total += len(entries)
                await self._handle(entries)
            if cursor == b"0-0":
                if total:
                    logger.info(
                        "reclaimed %d entries idle for %d ms or more",
                        total,
                        self._settings.min_idle_ms,
                    )
                return total

    async def recreate_group(self) -> None:
        """Create the vanished group again. Redis unreachable or refusing the write (at
        `maxmemory` it refuses `XGROUP CREATE`): the next `NOGROUP` comes back here."""
        try:
            start = await ensure_group(self._client, self._settings)
        except TRANSIENT_ERRORS:
            return
        except WRITE_REFUSALS as error:
            logger.warning(
                "the consumer group %s has vanished and Redis refuses to create it (%s); retrying",
                self._settings.group,
                describe_refusal(error),
            )
            return
        if start is not None:
            logger.warning(
                "the consumer group %s had vanished (Redis restarted empty, or the group "
                "was deleted); recreated it at id %s",
                self._settings.group,
                start,
            )
