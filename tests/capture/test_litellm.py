"""LiteLLM with capture enabled: its openai-SDK path and its own HTTP handler, sync and
async, non-streamed and streamed, publish the provider's bytes as served; the proxy's
callback entry point turns the same capture on."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import thoughtline
from tests.capture.conftest import RECORDED, meta_of, published
from tests.capture.replay import ReplayServer
from thoughtline.capture import Publisher

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download at import
litellm = pytest.importorskip("litellm")
capture_litellm = pytest.importorskip("thoughtline.capture.litellm")

pytestmark = [
    pytest.mark.redis,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),  # pydantic, on LiteLLM's types
]

MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
CASES = [
    ("anthropic/claude-sonnet-4", "", "tool-use-after-thinking.json", "anthropic"),
    ("anthropic/claude-sonnet-4", "", "sonnet-stream-thinking-signature-delta.sse", "anthropic"),
    ("openai/glm-4.5", "/v1", "ollama-cloud-reasoning-tool-call.json", "openai_chat"),
    ("openai/glm-4.5", "/v1", "zai-glm-stream-reasoning-content.sse", "openai_chat"),
]


@pytest.fixture
def enabled(publisher: Publisher) -> Iterator[None]:
    capture_litellm.enable(publisher=publisher, meta={"app": "gateway"})
    yield
    capture_litellm.disable()
    litellm.in_memory_llm_clients_cache.flush_cache()


def _call(model: str, base: str, streamed: bool, asynchronous: bool) -> Any:
    arguments = {"model": model, "api_base": base, "api_key": "test", "messages": MESSAGES}
    if not asynchronous:
        if streamed:
            return [
                chunk.choices[0].delta for chunk in litellm.completion(**arguments, stream=True)
            ]
        return litellm.completion(**arguments).choices[0].message

    async def call() -> Any:
        from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

        try:
            if streamed:
                events = await litellm.acompletion(**arguments, stream=True)
                return [chunk.choices[0].delta async for chunk in events]
            return (await litellm.acompletion(**arguments)).choices[0].message
        finally:  # LiteLLM's clients are bound to this loop: close them in it
            await close_litellm_async_clients()
            await litellm.aclient_session.aclose()

    return asyncio.run(call())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(("model", "prefix", "name", "format"), CASES)
def test_litellm_calls_publish_the_provider_bytes(
    model: str,
    prefix: str,
    name: str,
    format: str,
    asynchronous: bool,
    enabled: None,
    server: ReplayServer,
    redis_client: redis.Redis,
    stream: str,
) -> None:
    body = (RECORDED / name).read_bytes()
    streamed = name.endswith(".sse")
    server.reply(
        body,
        content_type="text/event-stream" if streamed else "application/json",
        mode="chunked" if streamed else "whole",
    )
    result = _call(model, server.url + prefix, streamed, asynchronous)
    assert result
    [entry] = published(redis_client, stream, 1)
    assert entry["payload"] == body
    assert entry["format"] == format.encode()
    assert meta_of(entry)["app"] == "gateway"
    assert thoughtline.encode(thoughtline.normalize(entry["payload"], format)) == (
        thoughtline.encode(thoughtline.normalize(body))
    )


def test_the_proxy_callback_turns_capture_on_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, redis_url: str
) -> None:
    from litellm.integrations.custom_logger import CustomLogger
    from litellm.proxy.types_utils.utils import get_instance_fn

    monkeypatch.setenv("THOUGHTLINE_REDIS_URL", redis_url)
    try:
        handler = get_instance_fn("thoughtline.capture.litellm.proxy_handler")
        assert isinstance(handler, CustomLogger)
        assert type(litellm.sync_transport).__name__ == "Transport"
    finally:
        capture_litellm.disable()
    assert getattr(litellm, "sync_transport", None) is None


def test_the_proxy_callback_without_a_redis_url_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("THOUGHTLINE_REDIS_URL", raising=False)
    assert not hasattr(capture_litellm, "proxy_handler")  # no KeyError out of hasattr
    with pytest.raises(AttributeError, match="needs THOUGHTLINE_REDIS_URL"):
        _ = capture_litellm.proxy_handler
    assert getattr(litellm, "sync_transport", None) is None  # capture stayed off
