"""Real SDK calls (openai, anthropic, google-genai, mistralai, ollama), non-streamed and
streamed, sync and async, against a local server replaying recorded bodies byte for byte: the
caller gets what it gets without capture, the published payload is the served bytes, and it
normalizes to the record the recorded file gives."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import redis

import thoughtline
from tests.capture.conftest import RECORDED, meta_of, published
from tests.capture.replay import ReplayServer
from tests.capture.sdks import SDKS, Sdk
from tests.conftest import SHARED
from thoughtline.capture import Publisher

pytestmark = [
    pytest.mark.redis,
    # google-genai subclasses aiohttp's ClientSession when aiohttp is installed
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]

OWN_CASES = [
    ("openai_chat", "ollama-cloud-reasoning-tool-call.json"),
    ("openai_chat", "zai-glm-stream-reasoning-content.sse"),
    ("openai_responses", "reasoning-then-function-call.json"),
    ("anthropic", "tool-use-after-thinking.json"),
    ("anthropic", "sonnet-stream-thinking-signature-delta.sse"),
    ("gemini", "gemini3-pro-function-call-with-signature.json"),
    ("gemini", "gemini25-pro-stream-thoughts.sse"),
    ("mistral", "magistral-thinking-chunks.json"),
    ("mistral", "magistral-stream-thinking-chunks.sse"),
    ("ollama", "generate-gpt-oss-thinking.json"),
    ("ollama", "generate-stream-gpt-oss-thinking.jsonl"),
]

CORPUS_FOLDERS = {
    "openai-chat": "openai_chat",
    "openai-compat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "mistral": "mistral",
    "ollama-native": "ollama",
}


def _corpus_cases() -> list[tuple[str, str]]:
    cases = []
    for folder, sdk in CORPUS_FOLDERS.items():
        suffixes = {".json", ".jsonl"} if sdk == "ollama" else {".json", ".sse"}
        for path in sorted((SHARED / "corpus" / folder).glob("*")):
            if path.suffix in suffixes:
                cases.append((sdk, f"{folder}/{path.name}"))
    return cases


def _is_stream(path: Path) -> bool:
    return path.suffix in {".sse", ".jsonl"}


def _serve(server: ReplayServer, sdk: Sdk, path: Path, times: int) -> bytes:
    body = path.read_bytes()
    streamed = _is_stream(path)
    for _ in range(times):
        server.reply(
            body,
            content_type=sdk.stream_type if streamed else "application/json",
            mode="chunked" if streamed else "whole",
        )
    return body


def _same_record(payload: bytes, format: str, recorded: bytes) -> None:
    assert thoughtline.encode(thoughtline.normalize(payload, format)) == thoughtline.encode(
        thoughtline.normalize(recorded)
    )


def _check(
    sdk: Sdk,
    path: Path,
    server: ReplayServer,
    publisher: Publisher,
    redis_client: redis.Redis,
    stream: str,
    *,
    asynchronous: bool,
) -> None:
    body = _serve(server, sdk, path, 2)
    options = {"publisher": publisher, "meta": {"conversation_id": "c1"}}
    streamed = _is_stream(path)
    if asynchronous:
        captured = asyncio.run(sdk.call_async(server.url, options, streamed))
        bare = asyncio.run(sdk.call_async(server.url, None, streamed))
    else:
        captured = sdk.call(server.url, options, streamed)
        bare = sdk.call(server.url, None, streamed)
    assert captured == bare
    assert captured  # the SDK read something
    [entry] = published(redis_client, stream, 1)
    assert entry["payload"] == body
    assert entry["format"] == sdk.format.encode()
    meta = meta_of(entry)
    assert meta["conversation_id"] == "c1" and meta["status"] == 200
    assert meta["stream"] is streamed
    assert meta["ended"] in ("complete", "closed")  # some SDKs close at their terminal event
    assert meta["model"]
    _same_record(entry["payload"], sdk.format, body)


@pytest.mark.parametrize(("sdk", "name"), OWN_CASES)
def test_a_real_sdk_call_is_captured_byte_for_byte(
    sdk: str,
    name: str,
    server: ReplayServer,
    publisher: Publisher,
    redis_client: redis.Redis,
    stream: str,
) -> None:
    _check(SDKS[sdk], RECORDED / name, server, publisher, redis_client, stream, asynchronous=False)


@pytest.mark.parametrize(("sdk", "name"), OWN_CASES)
def test_a_real_async_sdk_call_is_captured_byte_for_byte(
    sdk: str,
    name: str,
    server: ReplayServer,
    publisher: Publisher,
    redis_client: redis.Redis,
    stream: str,
) -> None:
    _check(SDKS[sdk], RECORDED / name, server, publisher, redis_client, stream, asynchronous=True)


@pytest.mark.needs_shared
@pytest.mark.parametrize(("sdk", "name"), _corpus_cases())
def test_every_recorded_body_and_stream_is_captured_from_its_sdk(
    sdk: str,
    name: str,
    server: ReplayServer,
    publisher: Publisher,
    redis_client: redis.Redis,
    stream: str,
) -> None:
    path = SHARED / "corpus" / name
    _check(SDKS[sdk], path, server, publisher, redis_client, stream, asynchronous=False)
