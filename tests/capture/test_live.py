"""Capture with `live=True`, end to end: real SDK calls against the replaying server (the
recorded stream sent in pieces that cut its events), the live entries they publish (one per
SSE event or JSON line, bytes as received, `seq` 0, 1, ..., the end marked `final`), and a
real worker turning them into deltas in `seq` order and the record `thoughtline.normalize`
gives for the same recorded stream; an abandoned stream ends as a cut one."""

from __future__ import annotations

import asyncio
import gzip
from typing import Any

import msgspec
import pytest
import redis
from prometheus_client import CollectorRegistry

import thoughtline
from tests.capture.conftest import RECORDED, dropped, published
from tests.capture.replay import ReplayServer
from tests.capture.sdks import SDKS
from tests.service.support import running_worker, wait_until
from thoughtline import capture
from thoughtline.streams.framing import StreamCutter
from thoughtline.worker.settings import load_settings

pytestmark = pytest.mark.redis

CASES = [
    ("openai_chat", "zai-glm-stream-reasoning-content.sse", False),
    ("anthropic", "sonnet-stream-thinking-signature-delta.sse", True),
    ("ollama", "generate-stream-gpt-oss-thinking.jsonl", False),
]


def _expected(body: bytes) -> list[tuple[bytes | None, bytes | None]]:
    """(payload, final) of each live entry the whole body gives: its pieces, then what is
    left as the final chunk, or an end entry when nothing is."""
    cutter = StreamCutter()
    entries: list[tuple[bytes | None, bytes | None]] = [
        (piece, None) for piece in cutter.feed(body)
    ]
    rest = cutter.end()
    entries.append((rest, b"1") if rest.strip() else (None, b"1"))
    return entries


def _by_stream(entries: list[dict[str, bytes]]) -> dict[bytes, list[dict[str, bytes]]]:
    streams: dict[bytes, list[dict[str, bytes]]] = {}
    for fields in entries:
        streams.setdefault(fields["stream"], []).append(fields)
    return streams


def _deltas(client: redis.Redis, stream: str) -> dict[str, list[dict[str, Any]]]:
    deltas: dict[str, list[dict[str, Any]]] = {}
    for _, fields in client.xrange(stream):
        delta = msgspec.json.decode(fields[b"delta"])
        deltas.setdefault(delta["id"], []).append(delta)
    return deltas


async def _run_worker(
    redis_url: str, stream_names: dict[str, str], client: redis.Redis, records: int
) -> list[thoughtline.Record]:
    settings = load_settings(redis_url=redis_url, metrics_port=0, block_ms=50, **stream_names)
    async with running_worker(settings):
        output = stream_names["output_stream"]
        await wait_until(lambda: client.xlen(output) == records, 20)
    assert client.xlen(stream_names["dead_stream"]) == 0
    outputs = client.xrange(stream_names["output_stream"])
    return [thoughtline.decode(fields[b"record"]) for _, fields in outputs]


async def test_live_chunks_become_deltas_in_order_and_the_record_normalize_gives(
    redis_url: str,
    stream_names: dict[str, str],
    server: ReplayServer,
    redis_client: redis.Redis,
) -> None:
    publisher = capture.Publisher(redis_url, stream=stream_names["input_stream"])
    options = {"publisher": publisher, "live": True, "meta": {"app": "gateway"}}
    bodies = []
    for sdk, name, in_async in CASES:
        body = (RECORDED / name).read_bytes()
        bodies.append(body)
        stream_type = SDKS[sdk].stream_type
        server.reply(body, content_type=stream_type, mode="chunked", pieces=7)
        server.reply(body, content_type=stream_type, mode="chunked", pieces=7)
        if in_async:
            got = await SDKS[sdk].call_async(server.url, options, True)
            assert got == await SDKS[sdk].call_async(server.url, None, True)
        else:
            got = await asyncio.to_thread(SDKS[sdk].call, server.url, options, True)
            assert got == await asyncio.to_thread(SDKS[sdk].call, server.url, None, True)
    publisher.close(5)
    expected = [_expected(body) for body in bodies]
    total = sum(map(len, expected))
    streams = _by_stream(published(redis_client, stream_names["input_stream"], total))
    assert len(streams) == len(CASES)

    for (sdk, _, _), body, want, entries in zip(
        CASES, bodies, expected, streams.values(), strict=True
    ):
        assert len(want) > 3
        assert [fields["seq"] for fields in entries] == [b"%d" % n for n in range(len(want))]
        assert all(fields["format"] == SDKS[sdk].format.encode() for fields in entries)
        assert [(fields.get("payload"), fields.get("final")) for fields in entries] == want
        assert body.startswith(b"".join(fields.get("payload", b"") for fields in entries))
        meta = msgspec.json.decode(entries[0]["meta"])
        assert meta["app"] == "gateway" and meta["stream"] is True and meta["live"] is True
        assert all("meta" not in fields for fields in entries[1:])

    records = await _run_worker(redis_url, stream_names, redis_client, len(CASES))
    deltas = _deltas(redis_client, stream_names["deltas_stream"])
    for body, (stream_id, entries) in zip(bodies, streams.items(), strict=True):
        (record,) = [record for record in records if record.id == stream_id.decode()]
        normalized = thoughtline.normalize(
            body, record_id=stream_id.decode(), meta=entries[0]["meta"]
        )
        assert thoughtline.encode(record) == thoughtline.encode(normalized)
        stream_deltas = deltas[stream_id.decode()]
        assert [delta["seq"] for delta in stream_deltas] == list(range(len(entries)))
        assert [delta["is_final"] for delta in stream_deltas][-1] is True
        assert stream_deltas[-1]["accumulated_text"] == (record.content or "")
        assert stream_deltas[-1]["accumulated_thinking"] == (record.thinking or "")


def _abandon(url: str, options: dict[str, Any]) -> None:
    import httpx2
    import openai

    http = httpx2.Client(transport=capture.Transport(**options))
    with openai.OpenAI(api_key="test", base_url=f"{url}/v1", http_client=http) as client:
        events = client.chat.completions.create(
            model="glm-4.7", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        next(iter(events))
        events.close()


async def test_an_abandoned_live_stream_ends_as_a_cut_stream(
    redis_url: str,
    stream_names: dict[str, str],
    server: ReplayServer,
    redis_client: redis.Redis,
) -> None:
    publisher = capture.Publisher(redis_url, stream=stream_names["input_stream"])
    cut = (RECORDED / "zai-glm-stream-reasoning-content.sse").read_bytes()
    server.reply(cut, content_type="text/event-stream", mode="stall_half", pieces=6)
    await asyncio.to_thread(_abandon, server.url, {"publisher": publisher, "live": True})
    server.release.set()
    publisher.close(5)
    entries = published(redis_client, stream_names["input_stream"], 1)
    assert entries[-1]["final"] == b"1" and len(entries) >= 2
    arrived = b"".join(fields.get("payload", b"") for fields in entries)
    assert cut.startswith(arrived) and len(arrived) < len(cut)

    (record,) = await _run_worker(redis_url, stream_names, redis_client, 1)
    assert [found.code for found in record.detections][-1] == "truncated_stream"
    assert record.finish_reason is None and record.usage.output_tokens is None
    normalized = thoughtline.normalize(arrived, record_id=record.id, meta=entries[0]["meta"])
    assert thoughtline.encode(record) == thoughtline.encode(normalized)
    deltas = _deltas(redis_client, stream_names["deltas_stream"])[record.id]
    assert [delta["seq"] for delta in deltas] == list(range(len(entries)))
    assert deltas[-1]["is_final"] is True


def test_a_live_chunk_the_buffer_cannot_take_is_counted_as_dropped(
    redis_url: str,
    stream: str,
    server: ReplayServer,
    redis_client: redis.Redis,
    registry: CollectorRegistry,
) -> None:
    body = (RECORDED / "zai-glm-stream-reasoning-content.sse").read_bytes()
    server.reply(body, content_type="text/event-stream", mode="chunked")
    publisher = capture.Publisher(redis_url, stream=stream, registry=registry, max_bytes=1)
    SDKS["openai_chat"].call(server.url, {"publisher": publisher, "live": True}, True)
    publisher.close(5)
    chunks = len(_expected(body)) - 1
    assert dropped(registry, "buffer_full") == chunks  # every chunk: each is over the bound
    (end,) = published(redis_client, stream, 1)  # the end entry has no payload: it fits
    assert end["final"] == b"1" and end["seq"] == b"%d" % chunks and "payload" not in end


def test_a_broken_live_stream_ends_with_its_cut_event_and_the_request_entry_says_so(
    stream: str, server: ReplayServer, redis_client: redis.Redis, publisher: capture.Publisher
) -> None:
    body = (RECORDED / "sonnet-stream-thinking-signature-delta.sse").read_bytes()
    server.reply(body, content_type="text/event-stream", mode="break_half", pieces=5)
    options = {"publisher": publisher, "live": True, "requests": True}
    import anthropic
    import httpx2

    # the SDK raises as it would without capture
    with pytest.raises((anthropic.APIConnectionError, httpx2.RemoteProtocolError)):
        SDKS["anthropic"].call(server.url, options, True)
    publisher.flush(5)
    entries = [fields for fields in published(redis_client, stream, 2) if "kind" not in fields]
    (request,) = [fields for fields in published(redis_client, stream, 2) if "kind" in fields]
    assert request["kind"] == b"request" and request["id"] == entries[0]["stream"]
    assert msgspec.json.decode(request["meta"])["ended"] == "broken"
    assert [fields["seq"] for fields in entries] == [b"%d" % n for n in range(len(entries))]
    assert entries[-1]["final"] == b"1" and all("final" not in fields for fields in entries[:-1])
    arrived = b"".join(fields.get("payload", b"") for fields in entries)
    assert body.startswith(arrived) and len(body) // 3 < len(arrived) < len(body)


@pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")
@pytest.mark.parametrize(
    ("sdk", "name"),
    [
        ("openai_chat", "zai-glm-stream-reasoning-content.sse"),
        ("gemini", "gemini25-pro-stream-thoughts.sse"),
        ("mistral", "magistral-stream-thinking-chunks.sse"),
        ("ollama", "generate-stream-gpt-oss-thinking.jsonl"),
    ],
)
def test_with_redis_down_every_live_stream_reads_as_without_capture_and_each_chunk_is_counted(
    sdk: str, name: str, server: ReplayServer, registry: CollectorRegistry
) -> None:
    body = (RECORDED / name).read_bytes()
    server.default = server.reply(body, content_type=SDKS[sdk].stream_type, mode="chunked")
    publisher = capture.Publisher("redis://127.0.0.1:1/0", registry=registry, socket_timeout=0.2)
    try:
        captured = SDKS[sdk].call(server.url, {"publisher": publisher, "live": True}, True)
        assert captured == SDKS[sdk].call(server.url, None, True)
        publisher.flush(5)
    finally:
        publisher.close(1)
    assert dropped(registry, "redis_error") == len(_expected(body))


GEMINI_ARRAY = "gemini25-pro-stream-thoughts.array.json"
GEMINI_PATH = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"


def _read_raw(url: str, options: dict[str, Any]) -> bytes:
    """A Gemini stream read as a REST caller reads it, without `alt=sse`: the bytes that
    came over the wire, content encoding and all."""
    import httpx2

    with httpx2.Client(transport=capture.Transport(**options)) as http:
        request = {"contents": [{"parts": [{"text": "Hi"}]}]}
        with http.stream("POST", f"{url}{GEMINI_PATH}", json=request) as response:
            return b"".join(response.iter_raw())


async def _read_raw_async(url: str, options: dict[str, Any]) -> bytes:
    import httpx2

    async with httpx2.AsyncClient(transport=capture.AsyncTransport(**options)) as http:
        request = {"contents": [{"parts": [{"text": "Hi"}]}]}
        async with http.stream("POST", f"{url}{GEMINI_PATH}", json=request) as response:
            return b"".join([raw async for raw in response.aiter_raw()])


async def test_gzip_and_json_array_streams_are_cut_live_into_the_record_normalize_gives(
    redis_url: str,
    stream_names: dict[str, str],
    server: ReplayServer,
    redis_client: redis.Redis,
) -> None:
    publisher = capture.Publisher(redis_url, stream=stream_names["input_stream"])
    options = {"publisher": publisher, "live": True}
    sse = (RECORDED / "zai-glm-stream-reasoning-content.sse").read_bytes()
    array = (RECORDED / GEMINI_ARRAY).read_bytes()
    # an SDK reading a gzip SSE stream: it reads what it reads without capture
    for _ in range(2):
        server.reply(sse, content_type="text/event-stream", mode="chunked", gzip=True, pieces=9)
    got = await asyncio.to_thread(SDKS["openai_chat"].call, server.url, options, True)
    assert got == await asyncio.to_thread(SDKS["openai_chat"].call, server.url, None, True)
    # Gemini's JSON array, plain and gzip: the caller gets the bytes on the wire untouched
    server.reply(array, mode="chunked", pieces=13)
    assert await asyncio.to_thread(_read_raw, server.url, options) == array
    gzipped = server.reply(array, mode="chunked", gzip=True, pieces=11)
    assert gzip.decompress(await _read_raw_async(server.url, options)) == array
    assert gzipped.gzip
    publisher.close(5)
    bodies = [(sse, "openai_chat"), (array, "gemini"), (array, "gemini")]
    expected = [_expected(body) for body, _ in bodies]
    streams = _by_stream(
        published(redis_client, stream_names["input_stream"], sum(map(len, expected)))
    )
    assert len(streams) == len(bodies)

    elements = [bytes(item) for item in msgspec.json.decode(array, type=list[msgspec.Raw])]
    assert expected[1] == [(element, None) for element in elements] + [(None, b"1")]
    for (_, format), want, entries in zip(bodies, expected, streams.values(), strict=True):
        assert [fields["seq"] for fields in entries] == [b"%d" % n for n in range(len(want))]
        assert all(fields["format"] == format.encode() for fields in entries)
        assert [(fields.get("payload"), fields.get("final")) for fields in entries] == want

    records = await _run_worker(redis_url, stream_names, redis_client, len(bodies))
    deltas = _deltas(redis_client, stream_names["deltas_stream"])
    for (body, format), (stream_id, entries) in zip(bodies, streams.items(), strict=True):
        (record,) = [record for record in records if record.id == stream_id.decode()]
        normalized = thoughtline.normalize(
            body, format=format, record_id=record.id, meta=entries[0]["meta"]
        )
        assert thoughtline.encode(record) == thoughtline.encode(normalized)
        assert record.content and record.thinking
        stream_deltas = deltas[record.id]
        assert [delta["seq"] for delta in stream_deltas] == list(range(len(entries)))
        assert stream_deltas[-1]["accumulated_text"] == record.content
