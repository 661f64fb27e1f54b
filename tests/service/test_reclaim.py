"""Reclaiming a dead consumer's entries in pages, on a real Redis: one claim per page for the
entries delivered once, one claim each for the others, so that an entry that kills every
worker reading it ends as the only dead letter."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import redis.asyncio as redis_asyncio

import thoughtline
from thoughtline.worker.commit import Committer
from thoughtline.worker.connections import keep_repeated_fields
from thoughtline.worker.entries import DeliveredEntry, process
from thoughtline.worker.group import ensure_group
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.reclaim import Handle, Reclaimer, claim
from thoughtline.worker.settings import Settings

pytestmark = pytest.mark.redis

GEMINI = Path(thoughtline.__file__).parent / "samples" / "gemini.thought-and-answer.json"
PAYLOAD = GEMINI.read_bytes()
IDLE_MS = 20


class WorkerDiedError(Exception):
    """Stands for a SIGKILL: the batch is left pending, nothing of it committed."""


@pytest.fixture
async def aclient(redis_url: str) -> AsyncIterator[redis_asyncio.Redis]:
    connection = redis_asyncio.Redis.from_url(redis_url)
    keep_repeated_fields(connection)
    yield connection
    await connection.aclose()


@pytest.fixture
def eager(settings: Settings) -> Settings:
    return settings.model_copy(update={"min_idle_ms": IDLE_MS})


async def leave_to_a_dead_consumer(
    aclient: redis_asyncio.Redis, settings: Settings, count: int
) -> list[bytes]:
    """`count` entries delivered to a consumer that then died; their ids."""
    await ensure_group(aclient, settings)
    ids = [
        await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"r{number}"})
        for number in range(count)
    ]
    await aclient.xreadgroup(settings.group, "dead-worker", {settings.input_stream: ">"}, count)
    await asyncio.sleep(IDLE_MS / 1000 + 0.01)
    return ids


async def claims_made(aclient: redis_asyncio.Redis) -> int:
    stats = await aclient.info("commandstats")
    return sum(int(stats.get(name, {}).get("calls", 0)) for name in CLAIM_COMMANDS)


CLAIM_COMMANDS = ("cmdstat_xclaim", "cmdstat_xautoclaim")


def committing_handler(
    aclient: redis_asyncio.Redis, settings: Settings, poison: bytes | None = None
) -> tuple[list[list[DeliveredEntry]], Handle]:
    """A handler that normalizes and commits, and dies on `poison` until it is dead-lettered."""
    batches: list[list[DeliveredEntry]] = []
    committer = Committer(aclient, settings)

    async def handle(entries: Sequence[DeliveredEntry]) -> None:
        batches.append(list(entries))
        limit = settings.max_deliveries
        if any(e.fields.get(b"id") == poison and e.delivery_count <= limit for e in entries):
            raise WorkerDiedError
        await committer.commit([process(*entry, settings) for entry in entries])

    return batches, handle


async def test_a_dead_consumers_entries_are_claimed_a_page_at_a_time(
    aclient: redis_asyncio.Redis, eager: Settings
) -> None:
    await leave_to_a_dead_consumer(aclient, eager, 25)
    batches, handle = committing_handler(aclient, eager)
    metrics = Metrics()
    reclaimer = Reclaimer(aclient, eager, "c2", metrics, handle)
    reclaimer.page_size = 10
    before = await claims_made(aclient)
    assert await reclaimer.reclaim_once() == 25
    assert await claims_made(aclient) - before == 3  # ⌈25 / 10⌉
    assert [len(batch) for batch in batches] == [10, 10, 5]
    assert {entry.delivery_count for batch in batches for entry in batch} == {2}
    assert metrics.reclaimed._value.get() == 25
    assert await aclient.xlen(eager.output_stream) == 25
    assert (await aclient.xpending(eager.input_stream, eager.group))["pending"] == 0


async def test_entries_delivered_more_than_once_are_claimed_alone(
    aclient: redis_asyncio.Redis, eager: Settings
) -> None:
    ids = await leave_to_a_dead_consumer(aclient, eager, 4)
    await claim(aclient, eager, "another-dead-worker", ids[1:3])  # delivered twice now
    await asyncio.sleep(IDLE_MS / 1000 + 0.01)
    batches, handle = committing_handler(aclient, eager)
    reclaimer = Reclaimer(aclient, eager, "c2", Metrics(), handle)
    assert await reclaimer.reclaim_once() == 4
    assert [[entry.entry_id for entry in batch] for batch in batches] == [
        [ids[0], ids[3]],
        [ids[1]],
        [ids[2]],
    ]
    assert [entry.delivery_count for batch in batches for entry in batch] == [2, 2, 3, 3]


async def test_an_entry_that_kills_every_worker_is_the_only_dead_letter(
    aclient: redis_asyncio.Redis, eager: Settings
) -> None:
    """Each round a new worker reclaims and dies on the poison while it is under
    THOUGHTLINE_MAX_DELIVERIES; its page-mates are recorded once and never dead-lettered."""
    await leave_to_a_dead_consumer(aclient, eager, 12)
    poison = b"r5"
    for round_number in range(eager.max_deliveries + 3):
        _, handle = committing_handler(aclient, eager, poison)
        reclaimer = Reclaimer(aclient, eager, f"worker-{round_number}", Metrics(), handle)
        with contextlib.suppress(WorkerDiedError):
            await reclaimer.reclaim_once()
        if not (await aclient.xpending(eager.input_stream, eager.group))["pending"]:
            break
        await asyncio.sleep(IDLE_MS / 1000 + 0.01)
    assert (await aclient.xpending(eager.input_stream, eager.group))["pending"] == 0
    dead = await aclient.xrange(eager.dead_stream)
    assert [fields[b"id"] for _, fields in dead] == [poison]
    assert b"too_many_deliveries" in dead[0][1][b"reason"]
    records = await aclient.xrange(eager.output_stream)
    assert len(records) == 11


async def test_nothing_is_claimed_while_writes_are_refused(
    aclient: redis_asyncio.Redis, eager: Settings
) -> None:
    await leave_to_a_dead_consumer(aclient, eager, 3)
    batches, handle = committing_handler(aclient, eager)
    reclaimer = Reclaimer(aclient, eager, "c2", Metrics(), handle)

    async def refused() -> str | None:
        return "READONLY"

    reclaimer.check_writes = refused
    before = await claims_made(aclient)
    assert await reclaimer.reclaim_once() == 0
    assert await claims_made(aclient) == before
    assert batches == []
