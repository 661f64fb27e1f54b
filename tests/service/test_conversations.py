"""Conversation checks in the worker: thinking repeated by a later request, and the
reasoning-only loop, across entries of one `meta.conversation_id`, against a real Redis."""

from __future__ import annotations

import json
import uuid

import pytest
import redis

from tests.service.support import running_worker, wait_until
from thoughtline.worker.settings import Settings

pytestmark = pytest.mark.redis

THINKING = (
    "The user wants the boiling point of water at the top of Mount Everest.\n"
    "Air pressure there is about a third of sea level pressure, roughly 34 kPa.\n"
    "At that pressure water boils near seventy degrees Celsius, not one hundred."
)


def chat_response(*, reasoning: str, content: str) -> bytes:
    message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "deepseek-reasoner",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    return json.dumps(body).encode()


def chat_request(assistant_text: str) -> bytes:
    body = {
        "model": "deepseek-reasoner",
        "messages": [
            {"role": "user", "content": "At what temperature does water boil on Everest?"},
            {"role": "assistant", "content": assistant_text},
            {"role": "user", "content": "And on Mont Blanc?"},
        ],
    }
    return json.dumps(body).encode()


@pytest.fixture
def conversation() -> str:
    """A conversation id of its own (its keys go with the test's, see `stream_names`)."""
    return f"c-{uuid.uuid4().hex}"


def publish(
    client: redis.Redis,
    settings: Settings,
    entry_id: str,
    payload: bytes,
    conversation: str,
    kind: str = "response",
) -> None:
    client.xadd(
        settings.input_stream,
        {
            "payload": payload,
            "id": entry_id,
            "kind": kind,
            "meta": json.dumps({"conversation_id": conversation}),
        },
    )


def codes_by_id(client: redis.Redis, settings: Settings) -> dict[str, list[str]]:
    records = {}
    for _, fields in client.xrange(settings.output_stream):
        record = json.loads(fields[b"record"])
        records[record["id"]] = [detection["code"] for detection in record["detections"]]
    return records


async def test_a_request_replaying_earlier_thinking_is_detected(
    settings: Settings, client: redis.Redis, conversation: str
) -> None:
    publish(
        client,
        settings,
        "turn-1",
        chat_response(reasoning=THINKING, content="About 70 °C."),
        conversation,
    )
    async with running_worker(settings):
        await wait_until(lambda: client.xlen(settings.output_stream) == 1)
        publish(
            client,
            settings,
            "request-2",
            chat_request(THINKING + "\n\nAbout 70 °C."),
            conversation,
            kind="request",
        )
        publish(
            client,
            settings,
            "request-3",
            chat_request("About 70 °C."),
            conversation,
            kind="request",
        )
        await wait_until(lambda: client.xlen(settings.output_stream) == 3)
    codes = codes_by_id(client, settings)
    assert codes["turn-1"] == []
    assert "replayed_reasoning" in codes["request-2"]
    assert codes["request-3"] == []  # the visible answer alone is no leak
    stored = client.hgetall(f"{settings.conversation_prefix}:{conversation}")
    assert stored and all(b"Everest" not in value for value in stored.values())


async def test_consecutive_reasoning_only_records_are_a_loop(
    settings: Settings, client: redis.Redis, conversation: str
) -> None:
    for turn in range(4):
        publish(
            client,
            settings,
            f"turn-{turn}",
            chat_response(reasoning=f"step {turn}", content=""),
            conversation,
        )
    async with running_worker(settings):
        await wait_until(lambda: client.xlen(settings.output_stream) == 4)
    codes = codes_by_id(client, settings)
    assert [("reasoning_only_loop" in codes[f"turn-{turn}"]) for turn in range(4)] == [
        False,
        False,
        True,
        True,
    ]


async def test_a_record_redelivered_after_a_later_one_keeps_its_streak(
    redis_url: str, stream_names: dict[str, str], conversation: str
) -> None:
    import redis.asyncio as redis_async

    from thoughtline.worker.conversations import ConversationStore

    client = redis_async.Redis.from_url(redis_url)
    try:
        prefix = stream_names["conversation_prefix"]
        store = ConversationStore(client, prefix=prefix, loop_limit=3)
        counts = [
            await store.count_reasoning_only(conversation, record_id, True)
            for record_id in ("r1", "r2", "r1", "r2")
        ]
        assert counts == [1, 2, 1, 2]  # a repeat returns what it got, the streak stays 2
        assert await store.count_reasoning_only(conversation, "r3", True) == 3
    finally:
        await client.aclose()
