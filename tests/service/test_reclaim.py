"""Reclaiming a dead consumer's entries in pages, on a real Redis: one claim per page for the
entries delivered once, one claim each for the others, so that an entry that kills every
worker reading it ends as the only dead letter; a dead worker's live chunks of many streams
are claimed together and their streams finished in the same pass."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as redis_asyncio

import thoughtline
from thoughtline.worker.app import Worker
from thoughtline.worker.commit import Committer
from thoughtline.worker.connections import keep_repeated_fields
from thoughtline.worker.entries import DeliveredEntry, process
from thoughtline.worker.group import ensure_group
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.reclaim import Handle, IdleEntry, Reclaimer, claim, claim_groups
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


@pytest.mark.parametrize(
    ("max_deliveries", "expected"),
    [
        (5, [[b"1-0", b"3-0"], [b"2-0"]]),
        (3, [[b"1-0", b"3-0"], [b"2-0"]]),
        # a shared claim that dies would leave no delivery for a claim of its own
        (2, [[b"1-0"], [b"2-0"], [b"3-0"]]),
        (1, [[b"1-0"], [b"2-0"], [b"3-0"]]),
    ],
)
def test_entries_share_a_claim_only_while_a_claim_of_their_own_would_still_be_allowed(
    max_deliveries: int, expected: list[list[bytes]]
) -> None:
    idle = [IdleEntry(b"1-0", 1), IdleEntry(b"2-0", 2), IdleEntry(b"3-0", 1)]
    assert claim_groups(idle, max_deliveries) == expected


def _chat_chunks(stream: str) -> list[bytes]:
    """A Chat stream of six chunks: inline thinking, then an answer, then the finish."""
    pieces = ["<think>Which", f" stream is {stream}?</think>", "It is ", stream, "."]
    chunks: list[dict[str, object]] = [
        {"id": stream, "model": "m", "choices": [{"index": 0, "delta": {"content": piece}}]}
        for piece in pieces
    ]
    chunks.append({"id": stream, "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})  # fmt: skip
    return [json.dumps(chunk).encode() for chunk in chunks]


async def _publish_live(
    aclient: redis_asyncio.Redis, settings: Settings, streams: Sequence[str], seqs: range
) -> None:
    for seq in seqs:
        for stream in streams:
            chunks = _chat_chunks(stream)
            fields = {"stream": stream, "seq": str(seq), "format": "openai_chat",
                      "payload": chunks[seq]}  # fmt: skip
            if seq == len(chunks) - 1:
                fields["final"] = "1"
            await aclient.xadd(settings.input_stream, fields)  # type: ignore[arg-type]


async def _read_as(
    aclient: redis_asyncio.Redis, settings: Settings, consumer: str
) -> list[DeliveredEntry]:
    found = await aclient.xreadgroup(settings.group, consumer, {settings.input_stream: ">"}, 1000)
    return [DeliveredEntry(entry_id, fields, 1) for _, page in found for entry_id, fields in page]


async def test_a_dead_workers_live_chunks_are_claimed_together_and_their_streams_end_at_once(
    aclient: redis_asyncio.Redis, client: redis.Redis, eager: Settings, redis_url: str
) -> None:
    """A worker dies holding one chunk of each of 40 live streams, whose later chunks (the
    final ones included) another worker has parked meanwhile. One reclaim pass claims the 40
    with one claim, applies them, applies the parked chunks after them and publishes every
    stream's record: no stream waits for a claim of its own, nor for the sweep."""
    streams = [f"held-{number}" for number in range(40)]
    alive = Worker(eager, redis_url, consumer="alive")
    rescuer = Worker(eager, redis_url, consumer="rescuer")
    try:
        await ensure_group(aclient, eager)
        await _publish_live(aclient, eager, streams, range(3))
        await alive.handle(await _read_as(aclient, eager, "alive"))
        await _publish_live(aclient, eager, streams, range(3, 4))
        assert len(await _read_as(aclient, eager, "killed")) == 40  # then SIGKILLed
        await _publish_live(aclient, eager, streams, range(4, 6))
        await alive.handle(await _read_as(aclient, eager, "alive"))  # parked behind seq 3
        assert client.xlen(eager.output_stream) == 0
        await asyncio.sleep(IDLE_MS / 1000 + 0.01)
        before = await claims_made(aclient)
        assert await rescuer.reclaimer.reclaim_once() == 40
        assert await claims_made(aclient) - before == 1
    finally:
        await alive.client.aclose()
        await rescuer.client.aclose()
    records = {f[b"id"].decode(): f[b"record"] for _, f in client.xrange(eager.output_stream)}
    assert records == {stream: _expected_record(stream) for stream in streams}
    assert client.xlen(eager.output_stream) == len(streams)
    for stream in streams:
        deltas = client.xrange(eager.deltas_stream)
        seqs = [json.loads(f[b"delta"])["seq"] for _, f in deltas if f[b"id"] == stream.encode()]
        assert seqs == list(range(6))
    assert client.xpending(eager.input_stream, eager.group)["pending"] == 0
    assert client.xlen(eager.dead_stream) == 0


def _expected_record(stream: str) -> bytes:
    whole = b"\n".join(_chat_chunks(stream))
    return thoughtline.encode(thoughtline.normalize(whole, "openai_chat", record_id=stream))


async def test_a_busy_worker_leaves_its_own_batch_to_the_others(
    aclient: redis_asyncio.Redis, client: redis.Redis, eager: Settings, redis_url: str
) -> None:
    """A worker still working on its batch past THOUGHTLINE_MIN_IDLE_MS (a worker just
    started, building its streams' engines from their logs) does not claim that batch itself:
    the claim would count a delivery and make the other workers wait another idle time for
    entries queued behind the batch. Another worker claims and finishes them; the busy
    worker's late work then adds nothing."""
    streams = [f"busy-{number}" for number in range(5)]
    busy = Worker(eager, redis_url, consumer="busy")
    other = Worker(eager, redis_url, consumer="other")
    release = asyncio.Event()
    apply = busy.live.handle_in_background
    calls = 0

    async def slow_first_batch(
        entries: Sequence[DeliveredEntry], done: Callable[[], None] = lambda: None
    ) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # the reader's batch: held until released
            await release.wait()
        await apply(entries, done)

    busy.live.handle_in_background = slow_first_batch  # type: ignore[method-assign]
    try:
        await ensure_group(aclient, eager)
        await _publish_live(aclient, eager, streams, range(6))
        reading = asyncio.create_task(
            busy.batches.handle_in_background(await _read_as(aclient, eager, "busy"))
        )
        await asyncio.sleep(IDLE_MS / 1000 + 0.05)
        before = await claims_made(aclient)
        assert await busy.reclaimer.reclaim_once() == 0
        assert await claims_made(aclient) == before
        held = await aclient.xpending_range(eager.input_stream, eager.group, "-", "+", 100)
        assert {(item["consumer"], item["times_delivered"]) for item in held} == {(b"busy", 1)}
        assert await other.reclaimer.reclaim_once() == 30
        release.set()
        await reading
        await busy.batches.finish()
        assert not busy.batches.in_flight
    finally:
        release.set()
        await busy.client.aclose()
        await other.client.aclose()
    records = {f[b"id"].decode(): f[b"record"] for _, f in client.xrange(eager.output_stream)}
    assert records == {stream: _expected_record(stream) for stream in streams}
    assert client.xlen(eager.output_stream) == len(streams)
    assert client.xlen(eager.deltas_stream) == 30
    assert client.xpending(eager.input_stream, eager.group)["pending"] == 0


async def test_a_live_batch_committing_in_the_background_is_not_its_own_workers_orphan(
    aclient: redis_asyncio.Redis, client: redis.Redis, eager: Settings, redis_url: str
) -> None:
    """The reader hands a batch of live chunks to the live handler, whose script call runs in
    the background while the reader reads on. While that call is still running (a slow
    Redis), the chunks stay the reader's: its own reclaimer does not claim them, though they
    are idle past THOUGHTLINE_MIN_IDLE_MS and the reader's batch has returned."""
    streams = [f"committing-{number}" for number in range(4)]
    busy = Worker(eager, redis_url, consumer="busy")
    release = asyncio.Event()
    run = busy.live._run

    async def slow_commit(batch: Any) -> None:
        await release.wait()
        await run(batch)

    busy.live._run = slow_commit  # type: ignore[method-assign]
    try:
        await ensure_group(aclient, eager)
        await _publish_live(aclient, eager, streams, range(3))
        await busy.batches.handle_in_background(await _read_as(aclient, eager, "busy"))
        await asyncio.sleep(IDLE_MS / 1000 + 0.05)
        assert len(busy.batches.in_flight) == 12
        before = await claims_made(aclient)
        assert await busy.reclaimer.reclaim_once() == 0
        assert await claims_made(aclient) == before
        release.set()
        await busy.batches.finish()
        assert not busy.batches.in_flight
    finally:
        release.set()
        await busy.client.aclose()
    assert client.xlen(eager.deltas_stream) == 12
    assert client.xpending(eager.input_stream, eager.group)["pending"] == 0
