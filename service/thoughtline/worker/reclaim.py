"""Taking over the entries of dead consumers, in pages, and the loop that does it.

A worker that dies (SIGKILL, out of memory, a lost node) leaves its entries pending in the
group. Every worker runs a `Reclaimer`: past `THOUGHTLINE_MIN_IDLE_MS` it lists the idle pending
entries with their delivery counts (`XPENDING ... IDLE`, a page at a time), claims them
(`XCLAIM`) and finishes them through the same path as a fresh batch (normalize, then the atomic
commit). Entries this worker's own reader is still working on are left alone, however long their
batch takes: they are in flight, not orphaned. A claim counts a delivery, so an entry that kills
every worker reading it (a poison pill) must not drag the entries claimed with it to
`THOUGHTLINE_MAX_DELIVERIES`: the entries delivered once only (a worker died once holding them,
most likely for another entry's sake) are claimed and committed together, one claim per page; an
entry delivered more than once is claimed and committed alone. A poison pill's neighbours thus
get one extra delivery at most, and the pill itself, claimed alone from its second delivery on,
ends as the only dead letter. If the group is gone (Redis came back empty, or the group was
deleted), the reclaimer notices (`NOGROUP`) and has it created again, at 0 or, when entries were
retained, where the committed ones end (`thoughtline.worker.group`).

While Redis refuses writes (`check_writes`), nothing is claimed: a claim counts a delivery,
and the commit would be refused too, so claiming would only bring entries nearer to
`THOUGHTLINE_MAX_DELIVERIES`. The refusal is reported to `/readyz` meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
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
RECLAIM_PAGE = 200
"""A killed worker's batch (`THOUGHTLINE_BATCH_SIZE`, 200 by default) in one claim."""
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
        self.page_size = RECLAIM_PAGE
        """Idle entries listed, and at most claimed together, per `XPENDING`."""
        self.in_flight: Collection[bytes] = frozenset()
        """Set by the worker: the entries its reader is still working on. Idle as they may be
        (a batch that takes longer than `min_idle_ms`), they are not orphans: claiming them
        would only count a delivery, make the faster workers wait another `min_idle_ms` for
        them, and queue them behind the batch that holds them."""

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
        start = b"-"
        total = 0
        while True:
            page = await idle_pending(self._client, self._settings, start, self.page_size)
            idle = [entry for entry in page if entry.entry_id not in self.in_flight]
            for entry_ids in claim_groups(
                idle, self._settings.max_deliveries
            ):  # each group committed before the next claim
                entries = await claim(self._client, self._settings, self._consumer, entry_ids)
                if entries:
                    self._metrics.reclaimed.inc(len(entries))
                    total += len(entries)
                    await self._handle(entries)
            if len(page) < self.page_size:
                if total:
                    logger.info(
                        "reclaimed %d entries idle for %d ms or more",
                        total,
                        self._settings.min_idle_ms,
                    )
                return total
            start = b"(" + page[-1].entry_id


class IdleEntry(NamedTuple):
    """A pending entry idle past `min_idle_ms`, as `XPENDING` lists it."""

    entry_id: bytes
    delivery_count: int
    """How many times it was delivered so far (the claim will count one more)."""


async def idle_pending(
    client: RedisClient, settings: Settings, start: bytes, count: int
) -> list[IdleEntry]:
    """Up to `count` pending entries from `start` on, idle past `min_idle_ms`, any consumer's."""
    pending: Any = await client.xpending_range(
        settings.input_stream,
        settings.group,
        min=start,
        max=b"+",
        count=count,
        idle=settings.min_idle_ms,
    )
    return [IdleEntry(item["message_id"], int(item["times_delivered"])) for item in pending]


def claim_groups(idle: Sequence[IdleEntry], max_deliveries: int) -> list[list[bytes]]:
    """The claims to make, in turn: the entries delivered once only together, then every
    other one alone (one of them may be an entry that kills whoever reads it, and a claim
    counts a delivery for every entry it takes).

    An entry goes into the shared claim only when, should that claim die with a poison pill,
    a claim of its own still leaves it within `max_deliveries` (delivered once, the shared
    claim makes two, its own claim three): with `THOUGHTLINE_MAX_DELIVERIES` below 3 every
    entry is claimed alone, so an innocent neighbour never ends as a dead letter."""
    pageable = max_deliveries >= 3
    once = [entry.entry_id for entry in idle if pageable and entry.delivery_count <= 1]
    alone = [[entry.entry_id] for entry in idle if not pageable or entry.delivery_count > 1]
    return ([once] if once else []) + alone


async def claim(
    client: RedisClient, settings: Settings, consumer: str, entry_ids: Sequence[bytes]
) -> list[DeliveredEntry]:
    """Claim `entry_ids` (one `XCLAIM`), each with the times it was delivered.

    Only the entries still idle past `min_idle_ms` are taken: one another worker claimed
    meanwhile is left to it. The delivery counts come from `XPENDING` right after the claim
    (which counted itself).
    """
    response: Any = await client.xclaim(
        settings.input_stream,
        settings.group,
        consumer,
        min_idle_time=settings.min_idle_ms,
        message_ids=list(entry_ids),
    )
    claimed = [(entry_id, fields) for entry_id, fields in response if entry_id is not None]
    if len(claimed) < len(response):  # Redis 6.2: nil for an entry deleted from the stream
        await _acknowledge_deleted(client, settings, entry_ids, {i for i, _ in claimed})
    if not claimed:
        return []
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
    return entries


async def _acknowledge_deleted(
    client: RedisClient,
    settings: Settings,
    requested: Sequence[bytes],
    returned: set[bytes],
) -> None:
    """Acknowledge the entries Redis 6.2's XCLAIM just claimed as nil (deleted from the
    stream: nothing can process them, and Redis 7 drops them from the pending list itself).

    Redis 6.2 does not say which ids they were: they are the requested ids it did not return
    that the stream no longer holds.
    """
    ids = [entry_id for entry_id in requested if entry_id not in returned]
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
