"""The capturing transports with plain httpx and httpx2 clients: bytes handed on unchanged,
one entry per provider exchange, streams published when they end or are cut, `meta`."""

from __future__ import annotations

import asyncio
import importlib
import time
from types import ModuleType

import pytest
import redis

from tests.capture.conftest import meta_of, published
from tests.capture.replay import ReplayServer
from thoughtline import capture
from thoughtline.capture import Publisher
from thoughtline.capture.exchanges import format_of

pytestmark = pytest.mark.redis

LIBRARIES = ["httpx", "httpx2"]
BODY = (
    b'{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{"index":0,'
    b'"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}\n'
)
_CHUNK = b'data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
STREAM = (
    b"".join(_CHUNK + b'"delta":{"content":"%d "}}]}\n\n' % number for number in range(40))
    + _CHUNK
    + b'"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)
REQUEST = b'{"model":"m","messages":[{"role":"user","content":"hello"}],"stream":false}'


def library(name: str) -> ModuleType:
    return importlib.import_module(name)


@pytest.mark.parametrize(
    ("method", "host", "path", "agent", "expected"),
    [
        ("POST", "api.openai.com", "/v1/chat/completions", "OpenAI/Python", "openai_chat"),
        ("POST", "api.mistral.ai", "/v1/chat/completions", "x", "mistral"),
        ("POST", "gateway", "/v1/chat/completions", "mistral-client-python/3.7.0", "mistral"),
        ("POST", "api.openai.com", "/v1/responses", "", "openai_responses"),
        ("POST", "api.anthropic.com", "/v1/messages", "", "anthropic"),
        ("POST", "api.openai.com", "/v1/threads/t1/messages", "", None),
        ("POST", "g", "/v1beta/models/gemini-2.5-pro:generateContent", "", "gemini"),
        ("POST", "g", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", "", "gemini"),
        ("POST", "localhost", "/api/chat", "ollama-python", "ollama"),
        ("POST", "localhost", "/api/generate", "ollama-python", "ollama"),
        ("GET", "api.openai.com", "/v1/chat/completions", "", None),
        ("POST", "api.openai.com", "/v1/embeddings", "", None),
        ("GET", "api.openai.com", "/v1/models", "", None),
    ],
)
def test_the_format_comes_from_the_request_url(
    method: str, host: str, path: str, agent: str, expected: str | None
) -> None:
    assert format_of(method, host, path, agent) == expected


@pytest.mark.parametrize("name", LIBRARIES)
def test_a_body_reaches_the_caller_unchanged_and_is_published_once(
    name: str, server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    http = library(name)
    server.reply(BODY, gzip=True)
    transport = capture.Transport(publisher=publisher, meta={"app": "tests"})
    with http.Client(transport=transport) as client, capture.context(conversation_id="c1"):
        response = client.post(f"{server.url}/v1/chat/completions", content=REQUEST)
    assert response.content == BODY
    [entry] = published(redis_client, stream, 1)
    assert entry["payload"] == BODY
    assert entry["format"] == b"openai_chat"
    assert len(entry["id"]) == 32
    meta = meta_of(entry)
    assert meta["app"] == "tests" and meta["conversation_id"] == "c1"
    assert meta["model"] == "m" and meta["path"] == "/v1/chat/completions"
    assert meta["status"] == 200 and meta["stream"] is False and meta["ended"] == "complete"
    assert isinstance(meta["latency_ms"], float) and meta["latency_ms"] > 0


@pytest.mark.parametrize("name", LIBRARIES)
def test_a_stream_is_handed_on_chunk_by_chunk_and_published_whole_when_it_ends(
    name: str, server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    http = library(name)
    server.reply(STREAM, content_type="text/event-stream", mode="chunked", pieces=10)
    with (
        http.Client(transport=capture.Transport(publisher=publisher)) as client,
        client.stream("POST", f"{server.url}/v1/chat/completions", content=REQUEST) as response,
    ):
        received = list(response.iter_raw())
    assert b"".join(received) == STREAM
    assert len(received) > 1
    [entry] = published(redis_client, stream, 1)
    assert entry["payload"] == STREAM
    assert meta_of(entry)["stream"] is True
    assert meta_of(entry)["ended"] == "complete"


@pytest.mark.parametrize("name", LIBRARIES)
def test_a_stream_abandoned_half_way_is_published_once_as_truncated(
    name: str, server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    http = library(name)
    server.reply(STREAM, content_type="text/event-stream", mode="stall_half", pieces=10)
    with (
        http.Client(transport=capture.Transport(publisher=publisher)) as client,
        client.stream("POST", f"{server.url}/v1/chat/completions", content=REQUEST) as response,
    ):
        first = next(response.iter_raw())
    server.release.set()
    [entry] = published(redis_client, stream, 1)
    assert STREAM.startswith(entry["payload"]) and entry["payload"].startswith(first)
    assert len(entry["payload"]) < len(STREAM)
    assert meta_of(entry)["ended"] == "closed"
    publisher.flush()
    time.sleep(0.1)
    assert redis_client.xlen(stream) == 1


@pytest.mark.parametrize("name", LIBRARIES)
def test_a_broken_connection_reaches_the_caller_as_before_and_publishes_what_arrived(
    name: str, server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    http = library(name)
    server.reply(STREAM, content_type="text/event-stream", mode="break_half", pieces=10)
    client = http.Client(transport=capture.Transport(publisher=publisher))
    with client, pytest.raises(http.RemoteProtocolError):
        client.post(f"{server.url}/v1/chat/completions", content=REQUEST)
    [entry] = published(redis_client, stream, 1)
    assert STREAM.startswith(entry["payload"]) and 0 < len(entry["payload"]) < len(STREAM)
    assert meta_of(entry)["ended"] == "broken"


@pytest.mark.parametrize("name", LIBRARIES)
def test_the_async_transport_publishes_bodies_and_streams(
    name: str, server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    http = library(name)
    server.reply(BODY)
    server.reply(STREAM, content_type="text/event-stream", mode="chunked")

    async def calls() -> tuple[bytes, bytes]:
        transport = capture.AsyncTransport(publisher=publisher)
        async with http.AsyncClient(transport=transport) as client:
            with capture.context(conversation_id="async"):
                body = await client.post(f"{server.url}/v1/chat/completions", content=REQUEST)
            async with client.stream(
                "POST", f"{server.url}/v1/chat/completions", content=REQUEST
            ) as response:
                streamed = b"".join([chunk async for chunk in response.aiter_raw()])
        return body.content, streamed

    body, streamed = asyncio.run(calls())
    assert (body, streamed) == (BODY, STREAM)
    first, second = published(redis_client, stream, 2)
    assert (first["payload"], second["payload"]) == (BODY, STREAM)
    assert meta_of(first)["conversation_id"] == "async"
    assert "conversation_id" not in meta_of(second)


def test_requests_are_published_only_when_asked_for_with_the_same_id(
    server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    import httpx

    server.reply(BODY)
    server.reply(BODY)
    url = f"{server.url}/v1/chat/completions"
    with httpx.Client(transport=capture.Transport(publisher=publisher)) as client:
        client.post(url, content=REQUEST)
    with httpx.Client(transport=capture.Transport(publisher=publisher, requests=True)) as client:
        client.post(url, content=REQUEST)
    plain, request, response = published(redis_client, stream, 3)
    assert "kind" not in plain
    assert request["kind"] == b"request" and request["payload"] == REQUEST
    assert request["id"] == response["id"] != plain["id"]
    assert "kind" not in response and response["payload"] == BODY


def test_error_responses_and_other_calls_are_passed_through_unpublished(
    server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    import httpx

    error = b'{"error":{"message":"rate limited","type":"rate_limit"}}'
    server.reply(error, status=429)
    server.reply(b'{"data":[]}')
    server.reply(error, status=500)
    with httpx.Client(transport=capture.Transport(publisher=publisher)) as client:
        assert client.post(f"{server.url}/v1/chat/completions", content=REQUEST).content == error
        assert client.get(f"{server.url}/v1/models").content == b'{"data":[]}'
    with httpx.Client(transport=capture.Transport(publisher=publisher, errors=True)) as client:
        client.post(f"{server.url}/v1/chat/completions", content=REQUEST)
    [entry] = published(redis_client, stream, 1)
    assert entry["payload"] == error and meta_of(entry)["status"] == 500


def test_a_format_given_overrides_the_url_and_a_function_decides_alone(
    server: ReplayServer, publisher: Publisher, redis_client: redis.Redis, stream: str
) -> None:
    import httpx

    server.default = server.reply(BODY)
    with httpx.Client(transport=capture.Transport(publisher=publisher, format="mistral")) as client:
        client.post(f"{server.url}/v1/chat/completions", content=REQUEST)
        client.post(f"{server.url}/v1/embeddings", content=REQUEST)
    chooser = capture.Transport(
        publisher=publisher,
        format=lambda request: "openai_chat" if request.url.path == "/gateway" else None,
    )
    with httpx.Client(transport=chooser) as client:
        client.post(f"{server.url}/gateway", content=REQUEST)
        client.post(f"{server.url}/v1/chat/completions", content=REQUEST)
    first, second = published(redis_client, stream, 2)
    assert (first["format"], second["format"]) == (b"mistral", b"openai_chat")
    assert meta_of(second)["path"] == "/gateway"
    publisher.flush()
    assert redis_client.xlen(stream) == 2


@pytest.mark.parametrize("transport_class", [capture.Transport, capture.AsyncTransport])
def test_an_option_of_no_one_is_refused_when_the_transport_is_built(
    transport_class: type[capture.Transport] | type[capture.AsyncTransport],
) -> None:
    """Not at the first request, as the inner transport's TypeError: the error names the
    option and where it belongs."""
    publisher = Publisher(client=redis.Redis())  # never used: nothing is sent
    with pytest.raises(TypeError, match=r"max_entries.*capture\.Publisher"):
        transport_class(publisher=publisher, max_entries=10)
    with pytest.raises(TypeError, match=r"'retrys'.*not a capture option.*HTTPTransport"):
        transport_class(publisher=publisher, retrys=3)
    with pytest.raises(TypeError, match=r"'retries'.*inner="):  # would be ignored
        transport_class(publisher=publisher, inner=object(), retries=3)
    transport_class(publisher=publisher, retries=3, http2=False)  # the inner transport's own
