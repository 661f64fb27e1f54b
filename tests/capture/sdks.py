"""One real SDK call per case, with or without capture: each builds the SDK's own client
pointed at the replaying server (dummy keys, no retries) and returns what the caller got, as
plain data, so a captured call can be compared with a bare one."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from thoughtline import capture

Options = dict[str, Any] | None
"""Capture options (`publisher=`, `meta=`...) or None for the bare SDK client."""


def _plain(value: Any) -> Any:
    """What the caller got, as JSON-able data."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    dump = value.model_dump(mode="json") if hasattr(value, "model_dump") else value
    if isinstance(dump, dict):  # google-genai keeps the HTTP headers (a date among them)
        dump.pop("sdk_http_response", None)
    return json.loads(json.dumps(dump, default=str, sort_keys=True))


def _transport(options: Options) -> dict[str, Any]:
    return {} if options is None else {"transport": capture.Transport(**options)}


def _async_transport(options: Options) -> dict[str, Any]:
    return {} if options is None else {"transport": capture.AsyncTransport(**options)}


MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]


def openai_chat(url: str, options: Options, stream: bool) -> Any:
    import httpx2
    import openai

    http = httpx2.Client(**_transport(options))
    with openai.OpenAI(
        api_key="test", base_url=f"{url}/v1", http_client=http, max_retries=0
    ) as client:
        if stream:
            return _plain(
                list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
            )  # type: ignore[arg-type]
        return _plain(client.chat.completions.create(model="m", messages=MESSAGES))  # type: ignore[arg-type]


async def openai_chat_async(url: str, options: Options, stream: bool) -> Any:
    import httpx2
    import openai

    http = httpx2.AsyncClient(**_async_transport(options))
    async with openai.AsyncOpenAI(
        api_key="test", base_url=f"{url}/v1", http_client=http, max_retries=0
    ) as client:
        if stream:
            events = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
            return _plain([event async for event in events])
        return _plain(await client.chat.completions.create(model="m", messages=MESSAGES))  # type: ignore[arg-type]


def openai_responses(url: str, options: Options, stream: bool) -> Any:
    import httpx2
    import openai

    http = httpx2.Client(**_transport(options))
    with openai.OpenAI(
        api_key="test", base_url=f"{url}/v1", http_client=http, max_retries=0
    ) as client:
        if stream:
            return _plain(
                list(client.responses.create(model="o4-mini", input="Weather?", stream=True))
            )
        return _plain(client.responses.create(model="o4-mini", input="Weather?"))


async def openai_responses_async(url: str, options: Options, stream: bool) -> Any:
    import httpx2
    import openai

    http = httpx2.AsyncClient(**_async_transport(options))
    async with openai.AsyncOpenAI(
        api_key="test", base_url=f"{url}/v1", http_client=http, max_retries=0
    ) as client:
        if stream:
            events = await client.responses.create(model="o4-mini", input="Weather?", stream=True)
            return _plain([event async for event in events])
        return _plain(await client.responses.create(model="o4-mini", input="Weather?"))


def anthropic_messages(url: str, options: Options, stream: bool) -> Any:
    import anthropic
    import httpx2

    http = httpx2.Client(**_transport(options))
    with anthropic.Anthropic(
        api_key="test", base_url=url, http_client=http, max_retries=0
    ) as client:
        arguments: dict[str, Any] = {
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 1024,
            "messages": MESSAGES,
        }
        if stream:
            return _plain(list(client.messages.create(**arguments, stream=True)))
        return _plain(client.messages.create(**arguments))


async def anthropic_messages_async(url: str, options: Options, stream: bool) -> Any:
    import anthropic
    import httpx2

    http = httpx2.AsyncClient(**_async_transport(options))
    async with anthropic.AsyncAnthropic(
        api_key="test", base_url=url, http_client=http, max_retries=0
    ) as client:
        arguments: dict[str, Any] = {
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 1024,
            "messages": MESSAGES,
        }
        if stream:
            events = await client.messages.create(**arguments, stream=True)
            return _plain([event async for event in events])
        return _plain(await client.messages.create(**arguments))


def _genai_client(url: str, options: Options) -> Any:
    from google import genai
    from google.genai import types

    extra = {} if options is None else capture.google_http_options(**options)
    http_options = types.HttpOptions(
        base_url=url, retry_options=types.HttpRetryOptions(attempts=1), **extra
    )
    return genai.Client(api_key="test", http_options=http_options)


def gemini(url: str, options: Options, stream: bool) -> Any:
    client = _genai_client(url, options)
    try:
        if stream:
            return _plain(
                list(
                    client.models.generate_content_stream(
                        model="gemini-2.5-pro", contents="Weather?"
                    )
                )
            )
        return _plain(client.models.generate_content(model="gemini-2.5-pro", contents="Weather?"))
    finally:
        client.close()


async def gemini_async(url: str, options: Options, stream: bool) -> Any:
    client = _genai_client(url, options)
    try:
        if stream:
            events = await client.aio.models.generate_content_stream(
                model="gemini-2.5-pro", contents="Weather?"
            )
            return _plain([event async for event in events])
        return _plain(
            await client.aio.models.generate_content(model="gemini-2.5-pro", contents="Weather?")
        )
    finally:
        await client.aio.aclose()
        client.close()


def mistral(url: str, options: Options, stream: bool) -> Any:
    import httpx2
    from mistralai.client import Mistral

    http = capture.http_client(**options) if options is not None else httpx2.Client()
    try:
        with Mistral(api_key="test", server_url=url, client=http) as client:
            chat = client.chat
            if stream:
                return _plain(list(chat.stream(model="magistral-medium-latest", messages=MESSAGES)))  # type: ignore[arg-type]
            return _plain(chat.complete(model="magistral-medium-latest", messages=MESSAGES))  # type: ignore[arg-type]
    finally:
        http.close()


async def mistral_async(url: str, options: Options, stream: bool) -> Any:
    import httpx2
    from mistralai.client import Mistral

    http = capture.async_http_client(**options) if options is not None else httpx2.AsyncClient()
    try:
        async with Mistral(api_key="test", server_url=url, async_client=http) as client:
            chat = client.chat
            if stream:
                events = await chat.stream_async(model="magistral-medium-latest", messages=MESSAGES)  # type: ignore[arg-type]
                return _plain([event async for event in events])
            return _plain(
                await chat.complete_async(model="magistral-medium-latest", messages=MESSAGES)
            )  # type: ignore[arg-type]
    finally:
        await http.aclose()


def ollama_generate(url: str, options: Options, stream: bool) -> Any:
    import ollama

    with ollama.Client(host=url, **_transport(options)) as client:
        if stream:
            return _plain(
                list(client.generate(model="gpt-oss:120b", prompt="Weather?", stream=True))
            )
        return _plain(client.generate(model="gpt-oss:120b", prompt="Weather?"))


async def ollama_generate_async(url: str, options: Options, stream: bool) -> Any:
    import ollama

    client = ollama.AsyncClient(host=url, **_async_transport(options))
    try:
        if stream:
            events = await client.generate(model="gpt-oss:120b", prompt="Weather?", stream=True)
            return _plain([event async for event in events])
        return _plain(await client.generate(model="gpt-oss:120b", prompt="Weather?"))
    finally:
        await client.close()


@dataclass(frozen=True)
class Sdk:
    name: str
    format: str
    call: Callable[[str, Options, bool], Any]
    call_async: Callable[[str, Options, bool], Awaitable[Any]]
    stream_type: str = "text/event-stream"


SDKS = {
    sdk.name: sdk
    for sdk in [
        Sdk("openai_chat", "openai_chat", openai_chat, openai_chat_async),
        Sdk("openai_responses", "openai_responses", openai_responses, openai_responses_async),
        Sdk("anthropic", "anthropic", anthropic_messages, anthropic_messages_async),
        Sdk("gemini", "gemini", gemini, gemini_async),
        Sdk("mistral", "mistral", mistral, mistral_async),
        Sdk("ollama", "ollama", ollama_generate, ollama_generate_async, "application/x-ndjson"),
    ]
}
