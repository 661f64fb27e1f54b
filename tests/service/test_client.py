"""`thoughtline.client`: publish raw responses, read records in your own group."""

from __future__ import annotations

import json

import pytest
import redis
import redis.asyncio as redis_asyncio

import thoughtline
from tests.service.support import running_worker, wait_until
from thoughtline import client as tl
from thoughtline.cli.demo import sample_files
from thoughtline.worker.settings import Settings

pytestmark = pytest.mark.redis
GOOD = next(s for s in sample_files() if s.name == "gemini.thought-and-answer.json").read_bytes()


def test_entry_fields_follow_the_input_contract() -> None:
    fields = tl.entry(
        GOOD, format="gemini", id="req-1", meta={"user": "u1"}, kind="response", deltas=True
    )
    assert fields == {
        "payload": GOOD,
        "format": b"gemini",
        "id": b"req-1",
        "meta": b'{"user":"u1"}',
        "kind": b"response",
        "deltas": b"1",
    }
    assert tl.entry({"candidates": []}) == {"payload": b'{"candidates":[]}'}


async def test_published_responses_come_back_as_records_in_your_group(
    settings: Settings, client: redis.Redis
) -> None:
    tl.publish(client, GOOD, stream=settings.input_stream, id="sync", meta={"n": 1})
    async with redis_asyncio.Redis.from_url(settings.redis_url or "") as aclient:
        await tl.apublish(aclient, GOOD.decode(), stream=settings.input_stream, id="async")
    async with running_worker(settings):
        await wait_until(lambda: client.xlen(settings.output_stream) == 2)
    messages = list(
        tl.records(
            client,
            group="billing",
            consumer="b1",
            stream=settings.output_stream,
            block_ms=10,
            stop_when_idle=True,
        )
    )
    assert [message.record.id for message in messages] == ["sync", "async"]
    assert json.loads(bytes(messages[0].record.meta)) == {"n": 1}
    assert (
        thoughtline.encode(messages[0].record)
        == client.xrange(settings.output_stream)[0][1][b"record"]
    )  # decoded and encoded again: the same bytes
    messages[0].ack()
    # Restarted without acknowledging the second one: it comes back first, the first does not.
    again = list(
        tl.records(
            client,
            group="billing",
            consumer="b1",
            stream=settings.output_stream,
            block_ms=10,
            stop_when_idle=True,
        )
    )
    assert [message.record.id for message in again] == ["async"]
    # Another group reads everything independently.
    audit = list(
        tl.records(
            client,
            group="audit",
            consumer="a1",
            stream=settings.output_stream,
            block_ms=10,
            stop_when_idle=True,
        )
    )
    assert len(audit) == 2


async def test_async_records_and_acknowledgement(settings: Settings, client: redis.Redis) -> None:
    for number in range(3):
        tl.publish(client, GOOD, stream=settings.input_stream, id=f"r{number}")
    async with running_worker(settings):
        await wait_until(lambda: client.xlen(settings.output_stream) == 3)
    async with redis_asyncio.Redis.from_url(settings.redis_url or "") as aclient:
        seen = []
        async for message in tl.arecords(
            aclient,
            group="g",
            consumer="c",
            stream=settings.output_stream,
            block_ms=10,
            stop_when_idle=True,
        ):
            seen.append(message.record.id)
            assert await message.ack() == 1
    assert seen == ["r0", "r1", "r2"]
    assert client.xpending(settings.output_stream, "g")["pending"] == 0


def _add_records(client: redis.Redis, stream: str, count: int) -> None:
    record = thoughtline.normalize(GOOD, "gemini", record_id="r")
    for _ in range(count):
        client.xadd(stream, {"record": thoughtline.encode(record), "id": "r", "format": "gemini"})


def test_a_restart_with_a_full_page_pending_goes_on_to_new_records(
    settings: Settings, client: redis.Redis
) -> None:
    stream = settings.output_stream
    _add_records(client, stream, 3)
    first = tl.records(client, group="g", consumer="c", stream=stream, count=2, block_ms=10)
    handed = [next(first).entry_id, next(first).entry_id]  # a full page, none acknowledged
    first.close()
    # Restarted: the pending page again, then an empty history read, then the new record.
    again = list(
        tl.records(
            client,
            group="g",
            consumer="c",
            stream=stream,
            count=2,
            block_ms=10,
            stop_when_idle=True,
        )
    )
    assert [message.entry_id for message in again][:2] == handed
    assert len(again) == 3


async def test_async_restart_with_a_full_page_pending_goes_on_to_new_records(
    settings: Settings, client: redis.Redis
) -> None:
    stream = settings.output_stream
    _add_records(client, stream, 3)
    async with redis_asyncio.Redis.from_url(settings.redis_url or "") as aclient:
        first = tl.arecords(aclient, group="g", consumer="c", stream=stream, count=2, block_ms=10)
        handed = [(await anext(first)).entry_id, (await anext(first)).entry_id]
        await first.aclose()
        again = [
            message.entry_id
            async for message in tl.arecords(
                aclient,
                group="g",
                consumer="c",
                stream=stream,
                count=2,
                block_ms=10,
                stop_when_idle=True,
            )
        ]
    assert again[:2] == handed
    assert len(again) == 3
