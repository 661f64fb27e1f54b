"""End to end: real SDK calls captured, a real worker reading the entries, and the records it
publishes equal to what `thoughtline normalize` gives for the recorded files (with the
capture's id and meta); a stream the caller abandoned is one record, flagged as cut."""

from __future__ import annotations

import msgspec
import pytest
import redis

import thoughtline
from tests.capture.conftest import RECORDED, published
from tests.capture.replay import ReplayServer
from tests.capture.sdks import SDKS
from tests.service.support import running_worker, wait_until
from thoughtline import capture
from thoughtline.worker.settings import load_settings

pytestmark = [
    pytest.mark.redis,
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]

CASES = [
    ("anthropic", "sonnet-stream-thinking-signature-delta.sse", "text/event-stream"),
    ("gemini", "gemini3-pro-function-call-with-signature.json", "application/json"),
    ("ollama", "generate-stream-gpt-oss-thinking.jsonl", "application/x-ndjson"),
    ("openai_responses", "reasoning-then-function-call.json", "application/json"),
]


def _abandon_a_stream(url: str, publisher: capture.Publisher) -> None:
    import httpx2
    import openai

    http = httpx2.Client(transport=capture.Transport(publisher=publisher))
    with openai.OpenAI(api_key="test", base_url=f"{url}/v1", http_client=http) as client:
        events = client.chat.completions.create(
            model="glm-4.5", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        next(iter(events))
        events.close()


async def test_a_worker_makes_the_records_normalize_gives(
    redis_url: str,
    stream_names: dict[str, str],
    server: ReplayServer,
    redis_client: redis.Redis,
) -> None:
    publisher = capture.Publisher(redis_url, stream=stream_names["input_stream"])
    options = {"publisher": publisher, "meta": {"conversation_id": "c9"}}
    for sdk, name, content_type in CASES:
        streamed = content_type != "application/json"
        mode = "chunked" if streamed else "whole"
        server.reply((RECORDED / name).read_bytes(), content_type=content_type, mode=mode)
        SDKS[sdk].call(server.url, options, streamed)
    cut = (RECORDED / "zai-glm-stream-reasoning-content.sse").read_bytes()
    server.reply(cut, content_type="text/event-stream", mode="stall_half", pieces=6)
    _abandon_a_stream(server.url, publisher)
    server.release.set()
    publisher.close(5)
    entries = published(redis_client, stream_names["input_stream"], len(CASES) + 1)

    settings = load_settings(redis_url=redis_url, metrics_port=0, block_ms=50, **stream_names)
    async with running_worker(settings):
        output_stream = stream_names["output_stream"]
        await wait_until(lambda: redis_client.xlen(output_stream) == len(entries), 20)
    outputs = [fields for _, fields in redis_client.xrange(stream_names["output_stream"])]
    assert redis_client.xlen(stream_names["dead_stream"]) == 0

    for (_, name, _), entry, output in zip(CASES, entries, outputs, strict=False):
        expected = thoughtline.normalize(
            (RECORDED / name).read_bytes(),
            record_id=entry["id"].decode(),
            meta=entry["meta"],
        )
        assert output[b"record"] == thoughtline.encode(expected)
        assert output[b"id"] == entry["id"]

    record = thoughtline.decode(outputs[-1][b"record"])
    assert [found.code for found in record.detections][-1] == "truncated_stream"
    assert record.finish_reason is None and record.usage.output_tokens is None
    meta = msgspec.json.decode(entries[-1]["meta"])
    assert meta["ended"] == "closed" and meta["stream"] is True
    assert cut.startswith(entries[-1]["payload"]) and len(entries[-1]["payload"]) < len(cut)
