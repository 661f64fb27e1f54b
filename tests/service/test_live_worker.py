"""Live entries through the worker's live handler against a real Redis: chunks applied in
`seq` order whatever order they come in, exactly once, by any of several handlers; idle
streams closed as truncated; late chunks dead-lettered; state gone after its TTL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import cast

import msgspec
import pytest
import pytest_asyncio
import redis
import redis.asyncio as redis_asyncio

import thoughtline
from tests.streams.live_entries import accumulate, run_live
from thoughtline.live import LiveState, LiveStream
from thoughtline.worker.commit import Committer
from thoughtline.worker.entries import DeliveredEntry, process
from thoughtline.worker.group import ensure_group
from thoughtline.worker.live import LiveHandler
from thoughtline.worker.live_entries import KeysOfStreams, is_live, live_keys, stream_keys
from thoughtline.worker.live_parked import Parked
from thoughtline.worker.live_scripts import pack
from thoughtline.worker.metrics import Metrics
from thoughtline.worker.settings import Settings, load_settings

pytestmark = pytest.mark.redis

LONG = "An answer long enough to be given out before the stream ends, chunk by chunk. " * 2


def _chat(fragments: Sequence[str], finish: bool = True) -> list[bytes]:
    chunks: list[dict[str, object]] = [
        {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": fragment}}]}
        for fragment in fragments
    ]
    if finish:
        finish_chunk = {"index": 0, "delta": {}, "finish_reason": "stop"}
        chunks.append({"id": "c", "model": "m", "choices": [finish_chunk]})
    return [json.dumps(chunk).encode() for chunk in chunks]


PAYLOADS = _chat(["<think>The user", " asks; I answer.</th", "ink>", LONG[:60], LONG[60:]])


@pytest.fixture
def live_settings(redis_url: str, stream_names: dict[str, str]) -> Settings:
    return load_settings(
        redis_url=redis_url,
        metrics_port=0,
        min_idle_ms=60_000,
        live_idle_ms=300,
        live_ttl_seconds=2,
        **stream_names,
    )


@pytest_asyncio.fixture
async def aclient(redis_url: str) -> AsyncIterator[redis_asyncio.Redis]:
    client = redis_asyncio.Redis.from_url(redis_url)
    yield client
    await client.aclose()


async def _publish(
    client: redis_asyncio.Redis,
    settings: Settings,
    stream: str,
    seqs: Sequence[int],
    payloads: Sequence[bytes] = PAYLOADS,
    *,
    final_at: int | None = None,
) -> None:
    last = len(payloads) - 1 if final_at is None else final_at
    for seq in seqs:
        fields: dict[str, bytes | str] = {
            "stream": stream,
            "seq": str(seq),
            "format": "openai_chat",
            "payload": payloads[seq],
        }
        if seq == last:
            fields["final"] = "1"
        await client.xadd(settings.input_stream, fields)  # type: ignore[arg-type]


async def _read(client: redis_asyncio.Redis, settings: Settings) -> list[DeliveredEntry]:
    found = await client.xreadgroup(
        settings.group, "test-consumer", {settings.input_stream: ">"}, count=1000
    )
    return [DeliveredEntry(entry_id, fields, 1) for _, page in found for entry_id, fields in page]


def _deltas(client: redis.Redis, settings: Settings, stream: str) -> list[dict[str, object]]:
    return [
        json.loads(fields[b"delta"])
        for _, fields in client.xrange(settings.deltas_stream)
        if fields[b"id"] == stream.encode()
    ]


def _expected(stream: str, payloads: Sequence[bytes] = PAYLOADS) -> bytes:
    record = thoughtline.normalize(b"\n".join(payloads), "openai_chat", record_id=stream)
    return thoughtline.encode(record)


async def _handler(client: redis_asyncio.Redis, settings: Settings) -> LiveHandler:
    await ensure_group(client, settings)
    return LiveHandler(client, settings, Metrics())


def _pending(client: redis.Redis, settings: Settings) -> int:
    return int(client.xpending(settings.input_stream, settings.group)["pending"])


async def test_chunks_in_order_give_the_core_deltas_and_the_recorded_record(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "s1", range(len(PAYLOADS)))
    await handler.handle(await _read(aclient, live_settings))
    expected, _ = run_live(PAYLOADS, "openai_chat", "s1")
    assert _deltas(client, live_settings, "s1") == [
        json.loads(msgspec.json.encode(delta)) for delta in expected
    ]
    records = client.xrange(live_settings.output_stream)
    assert [fields[b"record"] for _, fields in records] == [_expected("s1")]
    assert _pending(client, live_settings) == 0


async def test_chunks_out_of_order_wait_and_are_applied_in_order(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    handler = await _handler(aclient, live_settings)
    order = [3, 1, 5, 0, 2, 4]
    for seq in order:  # one batch each: 3, 1 and 5 come before their predecessor
        await _publish(aclient, live_settings, "s2", [seq])
        await handler.handle(await _read(aclient, live_settings))
    assert [delta["seq"] for delta in _deltas(client, live_settings, "s2")] == list(range(6))
    assert [f[b"record"] for _, f in client.xrange(live_settings.output_stream)] == [
        _expected("s2")
    ]
    assert _pending(client, live_settings) == 0
    exposition = handler._metrics.exposition().decode()
    assert 'thoughtline_live_chunks_total{outcome="waited"} 3.0' in exposition
    assert 'thoughtline_live_chunks_total{outcome="applied"} 6.0' in exposition


async def test_a_parked_chunk_is_checked_again_when_it_is_applied(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """A chunk read from an entry is checked once (as it is read); one taken from the parked
    hash, where anything may have written it, is checked again before it is applied."""
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "s-parked", [1])
    await handler.handle(await _read(aclient, live_settings))
    keys = live_keys(live_settings, "s-parked")
    stored = msgspec.msgpack.decode(cast(bytes, client.hget(keys.parked, "1")), type=Parked)
    stored.format = "no_such_format"
    client.hset(keys.parked, "1", msgspec.msgpack.encode(stored))
    await _publish(aclient, live_settings, "s-parked", [0])
    await handler.handle(await _read(aclient, live_settings))
    assert [delta["seq"] for delta in _deltas(client, live_settings, "s-parked")] == [0]
    assert client.hget(keys.state, "seq") == b"1"


async def test_a_chunk_published_twice_is_applied_once(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "s3", [0, 1, 1, 2, 0])
    await handler.handle(await _read(aclient, live_settings))
    await _publish(aclient, live_settings, "s3", range(3, len(PAYLOADS)))
    await handler.handle(await _read(aclient, live_settings))
    assert [delta["seq"] for delta in _deltas(client, live_settings, "s3")] == list(range(6))
    assert _pending(client, live_settings) == 0
    assert client.xlen(live_settings.dead_stream) == 0


async def test_several_handlers_racing_apply_each_chunk_once_in_order(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    handlers = [await _handler(aclient, live_settings) for _ in range(3)]
    streams = [f"race-{number}" for number in range(6)]
    for seq in range(len(PAYLOADS)):
        for stream in streams:
            await _publish(aclient, live_settings, stream, [seq])
    entries = await _read(aclient, live_settings)
    shares = [entries[number::3] for number in range(3)]  # each handler gets every third
    await asyncio.gather(
        *(handler.handle(share) for handler, share in zip(handlers, shares, strict=True))
    )
    for handler in handlers:
        for stream in streams:
            await handler.apply_parked(stream)
    for stream in streams:
        assert [d["seq"] for d in _deltas(client, live_settings, stream)] == list(range(6))
    records = {f[b"id"]: f[b"record"] for _, f in client.xrange(live_settings.output_stream)}
    assert records == {stream.encode(): _expected(stream) for stream in streams}
    assert client.xlen(live_settings.output_stream) == len(streams)
    assert _pending(client, live_settings) == 0


async def test_an_idle_stream_closes_as_truncated_and_a_late_chunk_is_a_dead_letter(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "s4", [0, 1, 3])  # 2 never comes
    await handler.handle(await _read(aclient, live_settings))
    await handler.sweep()
    assert client.xlen(live_settings.output_stream) == 0  # not idle yet
    await asyncio.sleep(0.4)
    await handler.sweep()
    deltas = _deltas(client, live_settings, "s4")
    assert [delta["seq"] for delta in deltas] == [0, 1, 2]
    assert deltas[-1]["is_final"] is True
    (record,) = [json.loads(f[b"record"]) for _, f in client.xrange(live_settings.output_stream)]
    assert [d["code"] for d in record["detections"]][-1] == "truncated_stream"
    assert record["content"] == deltas[-1]["accumulated_text"]
    dead = [fields for _, fields in client.xrange(live_settings.dead_stream)]
    assert [(f[b"seq"], f[b"reason"]) for f in dead] == [(b"3", b"live_stream_closed")]
    assert dead[0][b"payload"] == PAYLOADS[3]
    await _publish(aclient, live_settings, "s4", [4])
    await handler.handle(await _read(aclient, live_settings))
    assert client.xlen(live_settings.dead_stream) == 2
    assert _pending(client, live_settings) == 0


async def test_no_state_is_left_after_the_ttl(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "s5", range(len(PAYLOADS)))
    await _publish(aclient, live_settings, "s6", [0, 2])
    await handler.handle(await _read(aclient, live_settings))
    keys = live_keys(live_settings, "s5")
    assert 0 < client.ttl(keys.state) <= live_settings.live_ttl_seconds
    await asyncio.sleep(0.4)
    await handler.sweep()  # s6 closes as idle
    await asyncio.sleep(live_settings.live_ttl_seconds + 0.5)
    assert list(client.scan_iter(match=f"{live_settings.input_stream}:live:*")) == []


async def test_a_bad_live_entry_is_a_dead_letter(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    handler = await _handler(aclient, live_settings)
    await aclient.xadd(live_settings.input_stream, {"stream": "s7", "seq": "x", "format": "a"})
    await aclient.xadd(live_settings.input_stream, {"stream": "s7", "seq": "0", "format": "nope",
                                                   "payload": "{}"})  # fmt: skip
    await handler.handle(await _read(aclient, live_settings))
    reasons = [f[b"reason"] for _, f in client.xrange(live_settings.dead_stream)]
    assert reasons == [b"invalid_entry", b"unknown_format"]
    assert _pending(client, live_settings) == 0


async def test_the_python_client_publishes_live_chunks(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    from thoughtline import client as tl

    handler = await _handler(aclient, live_settings)
    stream = live_settings.input_stream
    for seq, payload in enumerate(PAYLOADS[:-1]):
        tl.publish_live(client, "s8", seq, payload, format="openai_chat", stream=stream)
    await tl.apublish_live(aclient, "s8", len(PAYLOADS) - 1, PAYLOADS[-1], format="openai_chat",
                           stream=stream)  # fmt: skip
    await tl.apublish_live(aclient, "s8", len(PAYLOADS), None, format="openai_chat",
                           final=True, stream=stream)  # fmt: skip
    await handler.handle(await _read(aclient, live_settings))
    assert [d["seq"] for d in _deltas(client, live_settings, "s8")] == list(range(7))
    assert [f[b"record"] for _, f in client.xrange(live_settings.output_stream)] == [
        _expected("s8")
    ]


async def test_the_same_chunks_published_twice_and_applied_at_once_are_applied_once(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """A producer that retried: every chunk twice, as different entries, each copy handled by
    another worker at the same moment. The `seq` check lets one of each pair through."""
    first, second = [await _handler(aclient, live_settings) for _ in range(2)]
    await _publish(aclient, live_settings, "s9", range(len(PAYLOADS)))
    copies = await _read(aclient, live_settings)
    await _publish(aclient, live_settings, "s9", range(len(PAYLOADS)))
    again = await _read(aclient, live_settings)
    await asyncio.gather(first.handle(copies), second.handle(again))
    assert [d["seq"] for d in _deltas(client, live_settings, "s9")] == list(range(6))
    assert client.xlen(live_settings.output_stream) == 1
    assert _pending(client, live_settings) == 0


async def test_a_stream_that_progressed_since_the_sweep_looked_is_not_closed(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """The sweep saw the stream idle, then a chunk was applied before it closed the stream:
    the close script sees the new progress and does nothing."""
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "s10", [0, 1])
    await handler.handle(await _read(aclient, live_settings))
    await handler._close_idle("s10")  # as if the sweep had looked before chunk 1 came
    assert client.xlen(live_settings.output_stream) == 0
    assert [d["seq"] for d in _deltas(client, live_settings, "s10")] == [0, 1]
    await _publish(aclient, live_settings, "s10", range(2, len(PAYLOADS)))
    await handler.handle(await _read(aclient, live_settings))
    assert client.xlen(live_settings.output_stream) == 1


async def _until_pending_is_retried(handler_task: asyncio.Task[None]) -> None:
    """Long enough for the handler to have tried (and been refused) at least once."""
    for _ in range(20):
        await asyncio.sleep(0.05)
        assert not handler_task.done()


@pytest.mark.parametrize("refused", ["output_stream", "deltas_stream", "dead_stream"])
async def test_a_refused_write_acknowledges_nothing_and_is_waited_out(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings, refused: str
) -> None:
    """A key of the wrong type refuses the step's write: the chunk stays pending (nothing
    acknowledged, nothing lost); once the key is put right the step goes through."""
    handler = await _handler(aclient, live_settings)
    key = getattr(live_settings, refused)
    client.set(key, "in the way")
    await _publish(aclient, live_settings, "r1", range(len(PAYLOADS)))
    await aclient.xadd(live_settings.input_stream, {"stream": "r1", "seq": "x", "format": "a"})
    task = asyncio.create_task(handler.handle(await _read(aclient, live_settings)))
    await _until_pending_is_retried(task)
    assert _pending(client, live_settings) >= 1
    client.delete(key)
    await asyncio.wait_for(task, timeout=10)
    assert [d["seq"] for d in _deltas(client, live_settings, "r1")] == list(range(6))
    assert [f[b"record"] for _, f in client.xrange(live_settings.output_stream)] == [
        _expected("r1")
    ]
    assert [f[b"reason"] for _, f in client.xrange(live_settings.dead_stream)] == [b"invalid_entry"]
    assert _pending(client, live_settings) == 0


async def test_a_live_chunk_over_the_size_limit_is_a_dead_letter_unread(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    settings = live_settings.model_copy(update={"live_max_chunk_bytes": 1000})
    handler = await _handler(aclient, settings)
    big = _chat(["x" * 2000])[0]
    await _publish(aclient, settings, "big", [0], [big], final_at=0)
    await handler.handle(await _read(aclient, settings))
    (dead,) = [fields for _, fields in client.xrange(settings.dead_stream)]
    assert dead[b"reason"] == b"too_large" and dead[b"payload"] == big
    assert client.xlen(settings.deltas_stream) == 0
    assert _pending(client, settings) == 0


async def test_a_large_step_is_computed_off_the_event_loop(
    aclient: redis_asyncio.Redis,
    client: redis.Redis,
    live_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threaded: list[str] = []
    real = asyncio.to_thread

    async def spy(function: object, *arguments: object) -> object:
        threaded.append(getattr(function, "__name__", "?"))
        return await real(function, *arguments)  # type: ignore[arg-type]

    monkeypatch.setattr("thoughtline.worker.live_plans.asyncio.to_thread", spy)
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "small", range(len(PAYLOADS)))
    await handler.handle(await _read(aclient, live_settings))
    assert threaded == []
    large = _chat(["y" * 200_000])
    await _publish(aclient, live_settings, "large", range(len(large)), large)
    await handler.handle(await _read(aclient, live_settings))
    assert threaded == ["_compute"]
    assert client.xlen(live_settings.output_stream) == 2


async def test_a_lost_group_republishes_no_live_stream_whatever_its_age(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """The group is recreated at 0 after every live key expired: the entries come again and
    are acknowledged only, since the committed-ids record holds them."""
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "g1", range(len(PAYLOADS)))
    await _publish(aclient, live_settings, "g2", [0, 2])  # 2 is parked (1 never comes)
    await handler.handle(await _read(aclient, live_settings))
    deltas, records = (
        client.xlen(live_settings.deltas_stream),
        client.xlen(live_settings.output_stream),
    )
    client.xgroup_destroy(live_settings.input_stream, live_settings.group)
    for key in client.scan_iter(match=f"{live_settings.input_stream}:live:*"):
        client.delete(key)  # as if the TTL had passed
    client.xgroup_create(live_settings.input_stream, live_settings.group, id="0")
    again = LiveHandler(aclient, live_settings, Metrics())
    await again.handle(await _read(aclient, live_settings))
    assert client.xlen(live_settings.deltas_stream) == deltas
    assert client.xlen(live_settings.output_stream) == records
    assert _pending(client, live_settings) == 0


async def _hold_an_ordinary_entry(client: redis_asyncio.Redis, settings: Settings) -> bytes:
    """Adds an ordinary entry that a consumer reads and never acknowledges (a dead worker's);
    returns its payload."""
    body = b'{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}'
    await client.xadd(settings.input_stream, {"payload": body, "format": "openai_chat"})
    await client.xreadgroup(settings.group, "dead-consumer", {settings.input_stream: ">"}, count=1)
    return body


async def _lose_the_group(
    aclient: redis_asyncio.Redis, client: redis.Redis, settings: Settings
) -> tuple[int, int]:
    """Deletes the group and every live key (as if their TTL had passed), then recreates the
    group as a worker does; returns how many deltas and records there were."""
    deltas = client.xlen(settings.deltas_stream)
    records = client.xlen(settings.output_stream)
    client.xgroup_destroy(settings.input_stream, settings.group)
    for key in client.scan_iter(match=f"{settings.input_stream}:live:*"):
        client.delete(key)
    await ensure_group(aclient, settings)
    return deltas, records


async def test_a_batch_commit_keeps_what_the_live_script_recorded(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """Both scripts keep one committed-ids record. An ordinary entry held by a dead consumer
    keeps the low mark below the live entries, so the live script lists them; the batch
    commit that follows (its first: no high mark yet) must keep that list, or a lost group
    brings the live stream back once its keys have expired."""
    handler = await _handler(aclient, live_settings)
    body = await _hold_an_ordinary_entry(aclient, live_settings)
    await _publish(aclient, live_settings, "g1", range(len(PAYLOADS)))
    await handler.handle(await _read(aclient, live_settings))
    await aclient.xadd(live_settings.input_stream, {"payload": body, "format": "openai_chat"})
    delivered = await _read(aclient, live_settings)
    outcomes = [process(entry.entry_id, entry.fields, 1, live_settings) for entry in delivered]
    assert await Committer(aclient, live_settings).commit(outcomes) == [True]
    deltas, records = await _lose_the_group(aclient, client, live_settings)
    live_entries = [entry for entry in await _read(aclient, live_settings) if is_live(entry.fields)]
    assert live_entries
    await LiveHandler(aclient, live_settings, Metrics()).handle(live_entries)
    assert client.xlen(live_settings.deltas_stream) == deltas
    assert client.xlen(live_settings.output_stream) == records


async def test_the_committed_ids_record_stays_bounded_while_an_entry_is_held(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """Live-only traffic while one entry stays pending (a dead consumer holds it): the
    committed-ids record keeps the marks and the entries in flight, not every live entry
    committed meanwhile; and a lost group still publishes none of them again."""
    handler = await _handler(aclient, live_settings)
    await _hold_an_ordinary_entry(aclient, live_settings)
    committed = f"{live_settings.input_stream}:committed"
    sizes = []
    for round_number in range(8):
        for number in range(5):
            await _publish(aclient, live_settings, f"b{round_number}-{number}", range(3))
        await handler.handle(await _read(aclient, live_settings))
        sizes.append(client.zcard(committed))
    assert max(sizes) <= 3  # the two marks and the held entry
    deltas, records = await _lose_the_group(aclient, client, live_settings)
    entries = await _read(aclient, live_settings)
    assert [entry for entry in entries if not is_live(entry.fields)]  # the held one comes again
    live_entries = [entry for entry in entries if is_live(entry.fields)]
    assert len(live_entries) == 8 * 5 * 3
    await LiveHandler(aclient, live_settings, Metrics()).handle(live_entries)
    assert client.xlen(live_settings.deltas_stream) == deltas
    assert client.xlen(live_settings.output_stream) == records


async def test_a_revision_is_counted(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    handler = await _handler(aclient, live_settings)
    payloads = _chat(["The user asks", " for a sum.", "</think>" + LONG])
    await _publish(aclient, live_settings, "rev", range(len(payloads)), payloads)
    await handler.handle(await _read(aclient, live_settings))
    deltas = _deltas(client, live_settings, "rev")
    assert deltas[0]["delta"] == {"text": "The user asks", "thinking": ""}
    revision = deltas[2]["revision"]
    assert isinstance(revision, dict) and revision["direction"] == "text_to_thinking"
    exposition = handler._metrics.exposition().decode()
    assert 'thoughtline_live_revisions_total{direction="text_to_thinking"} 1.0' in exposition


def _count_rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, the length of the log of each engine rebuilt from a whole stream."""
    rebuilt: list[int] = []
    restore = LiveStream.restore

    def counting(state: LiveState, log: Sequence[bytes], *, prompt_table: bool) -> LiveStream:
        rebuilt.append(len(log))
        return restore(state, log, prompt_table=prompt_table)

    monkeypatch.setattr(LiveStream, "restore", counting)
    return rebuilt


async def test_a_worker_parking_chunks_keeps_the_engine_it_read(
    aclient: redis_asyncio.Redis,
    client: redis.Redis,
    live_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker that reads a stream to find its chunk ahead (then parks it) keeps the engine
    it brought up to date: its next chunk of the stream costs the log elements it missed, not
    a rebuild from the whole stream (which made a stream spread over workers quadratic)."""
    first, second = [await _handler(aclient, live_settings) for _ in range(2)]
    payloads = _chat([f"word {number} " for number in range(20)])
    await _publish(aclient, live_settings, "spread", range(10), payloads)
    await first.handle(await _read(aclient, live_settings))
    rebuilt = _count_rebuilds(monkeypatch)
    for seq in (11, 12, 13):  # 10 has not come: each is parked
        await _publish(aclient, live_settings, "spread", [seq], payloads)
        await second.handle(await _read(aclient, live_settings))
    await _publish(aclient, live_settings, "spread", [10], payloads)
    await first.handle(await _read(aclient, live_settings))  # 10, then the parked 11-13
    await _publish(aclient, live_settings, "spread", range(14, len(payloads)), payloads)
    await second.handle(await _read(aclient, live_settings))
    assert rebuilt == [10]  # the second handler's first read; then what it missed
    assert [f[b"record"] for _, f in client.xrange(live_settings.output_stream)] == [
        _expected("spread", payloads)
    ]


async def test_a_stream_moving_between_workers_reads_only_what_each_missed(
    aclient: redis_asyncio.Redis,
    client: redis.Redis,
    live_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two handlers take turns: each brings its engine up to date from the log elements the
    other added (not the whole stream), and the deltas are those of one worker."""
    handlers = [await _handler(aclient, live_settings) for _ in range(2)]
    payloads = _chat([f"word {number} " for number in range(40)])
    rebuilt = _count_rebuilds(monkeypatch)
    for seq in range(len(payloads)):
        await _publish(aclient, live_settings, "hop", [seq], payloads)
        await handlers[seq % 2].handle(await _read(aclient, live_settings))
    expected, _ = run_live(payloads, "openai_chat", "hop", warm=True)
    assert _deltas(client, live_settings, "hop") == [
        json.loads(msgspec.json.encode(delta)) for delta in expected
    ]
    assert rebuilt == [1]  # the second handler's first chunk; then only what it missed
    assert [f[b"record"] for _, f in client.xrange(live_settings.output_stream)] == [
        _expected("hop", payloads)
    ]


async def test_the_python_client_rebuilds_the_accumulations(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """The deltas carry what each chunk added; the client gives every delta its
    `accumulated_text` and `accumulated_thinking`, revisions included."""
    from thoughtline import client as tl

    handler = await _handler(aclient, live_settings)
    revising = _chat(["The user asks", " for a sum.", "</think>" + LONG])
    await _publish(aclient, live_settings, "c1", range(len(PAYLOADS)))
    await _publish(aclient, live_settings, "c2", range(len(revising)), revising)
    await handler.handle(await _read(aclient, live_settings))
    read = list(
        tl.live_deltas(client, stream=live_settings.deltas_stream, block_ms=10, stop_when_idle=True)
    )
    for stream, payloads in (("c1", PAYLOADS), ("c2", revising)):
        mine = [delta for delta in read if delta.id == stream]
        expected, record = run_live(payloads, "openai_chat", stream, warm=True)
        assert [(d.accumulated_text, d.accumulated_thinking) for d in mine] == accumulate(expected)
        assert record is not None and mine[-1].accumulated_text == record.content
    raw = [json.loads(f[b"delta"]) for _, f in client.xrange(live_settings.deltas_stream)]
    assert [d["accumulated_text"] is None for d in raw].count(False) == 3  # 2 finals, 1 revision


async def test_batches_applied_in_the_background_overlap_and_keep_every_guarantee(
    aclient: redis_asyncio.Redis,
    client: redis.Redis,
    live_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reader's path: each batch's steps are computed while the batch before commits.
    The streams that batch was using are computed once it is committed, from the engines it
    left, in the same script call as the others (one call per batch, no rebuild); every chunk
    is applied once, in order, and each record is the recorded stream's."""
    handler = await _handler(aclient, live_settings)
    calls: list[int] = []
    commit_streams = handler._committer.commit_streams

    async def counting(runs: Sequence[tuple[object, str, Sequence[object]]]) -> list[list[int]]:
        calls.append(len(runs))
        return await commit_streams(runs)  # type: ignore[arg-type]

    monkeypatch.setattr(handler._committer, "commit_streams", counting)
    rebuilt = _count_rebuilds(monkeypatch)
    payloads = _chat([f"word {number} " for number in range(7)])
    names = ["bg1", "bg2", "bg3"]
    for first in range(0, len(payloads), 2):
        for name in names:
            await _publish(aclient, live_settings, name, range(first, first + 2), payloads)
        await handler.handle_in_background(await _read(aclient, live_settings))
    await handler.finish()
    assert calls == [3, 3, 3, 3]
    assert rebuilt == []
    expected, _ = run_live(payloads, "openai_chat", "bg1")
    for name in names:
        assert [d["seq"] for d in _deltas(client, live_settings, name)] == list(range(8))
        assert _deltas(client, live_settings, name) == [
            json.loads(msgspec.json.encode(delta).replace(b'"bg1"', f'"{name}"'.encode()))
            for delta in expected
        ]
    records = sorted(f[b"record"] for _, f in client.xrange(live_settings.output_stream))
    assert records == sorted(_expected(name, payloads) for name in names)
    assert _pending(client, live_settings) == 0


async def test_a_handle_waits_for_the_batch_committing_in_the_background(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """The reclaimer's and the stop's path (`handle`) first lets the background batch finish:
    its chunks are all applied when it returns."""
    handler = await _handler(aclient, live_settings)
    await _publish(aclient, live_settings, "fg", range(3))
    await handler.handle_in_background(await _read(aclient, live_settings))
    await _publish(aclient, live_settings, "fg", range(3, len(PAYLOADS)))
    await handler.handle(await _read(aclient, live_settings))
    assert [d["seq"] for d in _deltas(client, live_settings, "fg")] == list(range(len(PAYLOADS)))
    assert client.xlen(live_settings.output_stream) == 1


async def test_every_write_of_a_run_renews_the_keys_and_the_progress(
    aclient: redis_asyncio.Redis, client: redis.Redis, live_settings: Settings
) -> None:
    """The script renews the TTLs and the open set's progress once per stream and call, after
    its steps: the state, the log and the parked chunks all expire with the stream, and the
    stream's progress is the call's time; a stream that ends leaves the open set."""
    handler = await _handler(aclient, live_settings)
    keys = live_keys(live_settings, "renew")
    payloads = _chat([f"word {number} " for number in range(6)])
    await _publish(aclient, live_settings, "renew", [0, 1, 2, 4], payloads)  # 4 is parked
    await handler.handle(await _read(aclient, live_settings))
    ttl = live_settings.live_ttl_seconds
    for key in (keys.state, keys.log, keys.parked):
        assert 0 < client.pttl(key) <= ttl * 1000, key
    client.persist(keys.log)  # as if the TTL had been lost: the next applied step renews it
    client.persist(keys.parked)
    before = client.zscore(keys.open, "renew")
    await asyncio.sleep(0.01)
    await _publish(aclient, live_settings, "renew", [3], payloads)  # then the parked 4
    await handler.handle(await _read(aclient, live_settings))
    assert [d["seq"] for d in _deltas(client, live_settings, "renew")] == [0, 1, 2, 3, 4]
    for key in (keys.state, keys.log, keys.parked):
        assert 0 < client.pttl(key) <= ttl * 1000, key
    assert (client.zscore(keys.open, "renew") or 0) > (before or 0)
    await _publish(aclient, live_settings, "renew", [5, 6], payloads)
    await handler.handle(await _read(aclient, live_settings))
    assert client.zscore(keys.open, "renew") is None
    assert client.pttl(keys.log) <= 1000 and client.pttl(keys.parked) <= 1000
    assert 0 < client.pttl(keys.state) <= ttl * 1000


def test_a_streams_keys_are_made_once_and_stay_right() -> None:
    """`KeysOfStreams` gives each stream the keys `stream_keys` makes (the script's three as
    their bytes), the same object while it is kept, and stays bounded."""
    partition = Settings().keys()
    keys_of = KeysOfStreams(partition, size=2)
    first = keys_of("a")
    assert first == stream_keys(partition, "a")
    assert first.script == (first.state.encode(), first.parked.encode(), first.log.encode())
    assert keys_of("a") is first
    for stream in ("b", "c", "a"):  # past the size: made again, the same keys
        assert keys_of(stream) == stream_keys(partition, stream)
    assert len(keys_of._keys) <= 2


def test_the_script_reads_every_argument_as_packed(client: redis.Redis) -> None:
    """`pack` writes what the script's `cmsgpack.unpack` reads: strings and bytes (any byte)
    of every header size, lists of every header size, nested."""
    sizes = [0, 1, 31, 32, 255, 256, 65535, 65536]
    strings: list[object] = [
        bytes(range(256)) * (size // 256) + bytes(size % 256) for size in sizes
    ]
    strings += ["", "é" * 40, "a" * 300]
    value: list[object] = [strings, [b"x"] * 15, [b"y"] * 16, [[b"deep", []], "z"]]
    flattened = client.eval(
        """
        local out = {}
        local function walk(item)
          if type(item) == 'table' then
            out[#out + 1] = '[' .. #item
            for _, child in ipairs(item) do walk(child) end
          else
            out[#out + 1] = item
          end
        end
        walk(cmsgpack.unpack(ARGV[1]))
        return out
        """,
        0,
        pack(value),
    )

    def walk(item: object) -> list[bytes]:
        if isinstance(item, list):
            return [f"[{len(item)}".encode()] + [part for child in item for part in walk(child)]
        return [item.encode() if isinstance(item, str) else cast(bytes, item)]

    assert flattened == walk(value)
