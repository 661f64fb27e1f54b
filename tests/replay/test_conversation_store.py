"""The Redis side of replay detection, against a real Redis (each test its own key prefix)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import msgspec
import pytest
from redis.asyncio import Redis

from tests.conftest import fresh_hash_tag
from thoughtline.api import inspect_request
from thoughtline.contract.record import Detection, Record
from thoughtline.worker.conversations import ConversationStore

pytestmark = pytest.mark.redis

THINKING = (
    "The user asks which plan is cheaper over a whole year of use.\n"
    "Plan A costs twelve euros a month and plan B costs a hundred and twenty a year."
)
LOOP = Detection(kind="leaked_thought", code="reasoning_only_loop", path="meta.conversation_id")
REPLAYED = Detection(kind="leaked_thought", code="replayed_reasoning", path="messages[1]")


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[Redis]:
    connection = Redis.from_url(redis_url)
    yield connection
    await connection.aclose()


@pytest.fixture
async def store(client: Redis) -> AsyncIterator[ConversationStore]:
    prefix = f"{{{fresh_hash_tag()}}}:conversation"
    yield ConversationStore(client, prefix=prefix, ttl_seconds=60, loop_limit=3)
    keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
    if keys:
        await client.delete(*keys)


def response(
    record_id: str, *, thinking: str | None, content: str, conversation: str = "c1"
) -> Record:
    meta = msgspec.Raw(json.dumps({"conversation_id": conversation}).encode())
    return Record(
        id=record_id,
        format="openai_chat",
        provider="openai",
        thinking=thinking,
        content=content,
        meta=meta,
    )


def request(assistant_text: str, conversation: str = "c1") -> bytes:
    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "Which plan is cheaper?"},
            {"role": "assistant", "content": assistant_text},
            {"role": "user", "content": "Thanks, and for two years?"},
        ],
    }
    return json.dumps(body).encode()


async def check(
    store: ConversationStore, payload: bytes, conversation: str = "c1"
) -> list[Detection]:
    meta = json.dumps({"conversation_id": conversation}).encode()
    return await store.check_request(inspect_request(payload, record_id="q", meta=meta))


async def test_a_request_repeating_an_earlier_turn_thinking_is_detected(
    store: ConversationStore,
) -> None:
    await store.observe_response(response("r1", thinking=THINKING, content="Plan B."))
    assert await check(store, request(THINKING + "\n\nPlan B.")) == [REPLAYED]


async def test_a_request_that_only_replays_the_answer_is_not(store: ConversationStore) -> None:
    await store.observe_response(response("r1", thinking=THINKING, content="Plan B."))
    assert await check(store, request("Plan B.")) == []


async def test_other_conversations_and_requests_without_one_are_not_checked(
    store: ConversationStore,
) -> None:
    await store.observe_response(response("r1", thinking=THINKING, content="Plan B."))
    assert await check(store, request(THINKING), conversation="c2") == []
    assert await store.check_request(inspect_request(request(THINKING))) == []


async def test_only_fingerprints_are_stored_never_the_thinking(
    store: ConversationStore, client: Redis
) -> None:
    await store.observe_response(response("r1", thinking=THINKING, content="Plan B."))
    stored = await client.hgetall(store.key("c1"))
    dump = b" ".join(part for item in stored.items() for part in item).lower()
    assert b"plan" not in dump and b"euros" not in dump
    assert {field.split(b":")[0] for field in stored} == {b"fp", b"n", b"s", b"streak"}
    assert 0 < await client.ttl(store.key("c1")) <= 60


async def test_n_consecutive_reasoning_only_records_are_a_loop(store: ConversationStore) -> None:
    found = [
        await store.observe_response(response(f"r{index}", thinking="still thinking", content=""))
        for index in range(5)
    ]
    assert found == [[], [], [LOOP], [LOOP], [LOOP]]


async def test_an_answer_ends_the_streak(store: ConversationStore) -> None:
    for index in range(2):
        await store.observe_response(response(f"r{index}", thinking="hmm", content=""))
    assert await store.observe_response(response("r2", thinking="hmm", content="Answer")) == []
    assert await store.observe_response(response("r3", thinking="hmm", content="")) == []


async def test_a_redelivered_record_is_not_counted_twice(store: ConversationStore) -> None:
    thinking_only = response("r1", thinking="hmm", content="")
    for _ in range(4):
        assert await store.observe_response(thinking_only) == []
    assert await store.count_reasoning_only("c1", "r1", True) == 1


async def test_a_detection_the_request_record_has_is_not_repeated(
    store: ConversationStore,
) -> None:
    await store.observe_response(response("r1", thinking=THINKING, content="Plan B."))
    leaky = request(f"<think>scratch</think>\n{THINKING}\nPlan B.")
    inspection = inspect_request(leaky, meta=b'{"conversation_id": "c1"}')
    assert inspection.record.detections == [REPLAYED]
    assert await store.check_request(inspection) == []
    inspection.record.detections.clear()
    assert await store.check_request(inspection) == [REPLAYED]


def test_settings_below_one_are_refused(client: Redis) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ConversationStore(client, loop_limit=0)


async def test_every_write_sets_the_ttl(store: ConversationStore, client: Redis) -> None:
    await store.remember_thinking("c-thinking", "r1", ["0" * 32])
    await store.count_reasoning_only("c-streak", "r1", True)
    for conversation in ("c-thinking", "c-streak"):
        assert 0 < await client.ttl(store.key(conversation)) <= 60
