"""Taking over the entries of dead consumers (`claim_idle`) and the loop that does it.

A worker that dies (SIGKILL, out of memory, a lost node) leaves its entries pending in the
group. Every worker runs a `Reclaimer`: past `THOUGHTLINE_MIN_IDLE_MS` it claims them
(`XAUTOCLAIM`), one at a time, and finishes each through the same path as a fresh batch
(normalize, then the atomic commit). If the group is gone (Redis came back empty, or the
group was deleted), the reclaimer notices (`NOGROUP`) and has it created again, at 0 or, when
entries were retained, where the committed ones end (`thoughtline.worker.group`).

While Redis refuses writes (`check_writes`), nothing is claimed: a claim counts a delivery,
and the commit would be refused too, so claiming would only bring entries nearer to
`THOUGHTLINE_MAX_DELIVERIES`. The refusal is reported to `/readyz` meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from redis import exceptions as redis_errors

from thoughtline.worker.connections import RedisClient
from thoughtline.worker.entries import DeliveredEntry
from thoughtline.worker.group import recreate_vanished_group
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.retry import TRANSIENT_ERRORS, Backoff
from thoughtline.worker.settings import Settings

logger = logging.getLogger(__name__)

Handle = Callable[[Sequence[DeliveredEntry]], Awaitable[Any]]
WritesCheck = Callable[[], Awaitable[str | None]]
"""Why Redis refuses commits now, or None (`thoughtline.worker.commit.Committer.check`)."""
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
        self.readiness = metrics.readiness
        """Where a refusal is reported for `/readyz` (the partition's, with several)."""

    async def run(self, keep_going: Callable[[], bool]) -> None:
        """Reclaim every `interval` until `keep_going()` is false; Redis errors are retried."""
        backoff = Backoff(self.interval, MAX_DELAY_SECONDS)
        while keep_going():
            await backoff.sleep()
            try:
                await self.reclaim_once()
                backoff.reset()
            except redis_errors.ResponseError as error:
                if "NOGROUP" in str(error):
                    await recreate_vanished_group(self._client, self._settings)
                    continue
                delay = backoff.grow()
                logger.error("reclaimer: Redis refused (%s); retrying in %.1f s", error, delay)
            except TRANSIENT_ERRORS as error:
                delay = backoff.grow()
                logger.warning(
                    "reclaimer: Redis unreachable (%s); retrying in %.1f s",
                    type(error).__name__,
                    delay,
                )
            except Exception as error:  # a bug here must not end reclaiming for good
                delay = backoff.grow()
                logger.error("reclaimer: %s; retrying in %.1f s", type(error).__name__, delay)

    async def reclaim_once(self) -> int:
        """Take over every entry idle past `min_idle_ms` and finish it; returns how many."""
        if self.check_writes is not None:
            refusal = await self.check_writes()
            self.readiness.set(WRITES_PROBLEM, refusal)
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


class ClaimedPage(NamedTuple):
    """One `XAUTOCLAIM` page: where the next starts, and the entries it claimed."""

    next_cursor: bytes
    """`0-0` when the scan is through the pending entries."""
    entries: list[DeliveredEntry]


async def claim_idle(
    client: RedisClient, settings: Settings, consumer: str, cursor: bytes, count: int = 1
) -> ClaimedPage:
    """One `XAUTOCLAIM` page, each entry with the times it was delivered.

    The delivery counts come from `XPENDING` right after the claim (which counted itself).
    The worker claims one entry at a time: a claim counts a delivery, so an entry that kills
    every worker reading it would otherwise drag its whole claimed page to the dead letters.
    """
    response = await client.xautoclaim(
        settings.input_stream,
        settings.group,
        consumer,
        min_idle_time=settings.min_idle_ms,
        start_id=cursor,
        count=count,
    )
    next_cursor: bytes
    next_cursor, page, *_deleted_ids = response  # Redis 7 adds the ids it dropped as deleted
    claimed = [(entry_id, fields) for entry_id, fields in page if entry_id is not None]
    if len(claimed) < len(page):  # Redis 6.2: nil for an entry deleted from the stream
        await _acknowledge_deleted(client, settings, consumer, cursor, next_cursor, count)
    if not claimed:
        return ClaimedPage(next_cursor, [])
    async with client.pipeline(transaction=False) as pipeline:
        for entry_id, _ in claimed:
            pipeline.xpending_range(
                settings.input_stream, settings.group, min=entry_id, max=entry_id, count=1
            )
        pending_lists = await pipeline.execute()
    entries = []
    for (entry_id, fields), pending in zip(claimed, pending_lists, strict=True):
        times_delivered = int(pending[0]["times_delivered"]) if pending else 1
        entries.append(DeliveredEntry(entry_id, fields, times_delivered))
    return ClaimedPage(next_cursor, entries)


async def _acknowledge_deleted(
    client: RedisClient,
    settings: Settings,
    consumer: str,
    start: bytes,
    next_cursor: bytes,
    count: int,
) -> None:
    """Acknowledge the entries Redis 6.2's XAUTOCLAIM just claimed as nil (deleted from the
    stream: nothing can process them, and Redis 7 drops them from the pending list itself).

    Redis 6.2 does not say which ids they were: they are this consumer's pending entries in the
    claimed range that the stream no longer holds.
    """
    end = b"+" if next_cursor == b"0-0" else b"(" + next_cursor
    pending = await client.xpending_range(
        settings.input_stream,
        settings.group,
        min=start,
        max=end,
        count=count + 1000,
        consumername=consumer,
    )
    ids = [item["message_id"] for item in pending]
    if not ids:
        return
    async with client.pipeline(transaction=False) as pipeline:
        for entry_id in ids:
            pipeline.xrange(settings.input_stream, min=entry_id, max=entry_id, count=1)
        found = await pipeline.execute()
    deleted = [entry_id for entry_id, entries in zip(ids, found, strict=True) if not entries]
    if deleted:
        await client.xack(settings.input_stream, settings.group, *deleted)
        logger.warning(
            "acknowledged %d pending entries deleted from %s (nothing left to process)",
            len(deleted),
            settings.input_stream,
        )
