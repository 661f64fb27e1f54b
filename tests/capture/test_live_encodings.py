"""Live capture of streams in every content encoding the HTTP libraries decode: br, zstd and
stacked encodings cut as they arrive into the live entries the same stream gives unencoded
(through the real openai SDK, and through the transport with the encoded bytes cut anywhere);
without the decoder, the stream published once at its end as before; damaged bytes end the
live stream with everything the SDK got, the SDK failing as it does without capture."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.capture.conftest import BROTLI_MODULES, RECORDED, ZSTD_MODULES, published, without
from tests.capture.replay import ReplayServer, encode
from tests.capture.sdks import MESSAGES, SDKS
from tests.capture.test_live import _by_stream, _expected
from tests.conftest import delete_keys, fresh_hash_tag
from thoughtline import capture

pytestmark = pytest.mark.redis

SSE = (RECORDED / "zai-glm-stream-reasoning-content.sse").read_bytes()
ENCODINGS = ("br", "zstd", "gzip, br", "br, zstd", "deflate, zstd")
CHAT = "/v1/chat/completions"


def _entries(fields: list[dict[str, bytes]]) -> list[tuple[bytes, bytes | None, bytes | None]]:
    return [(entry["seq"], entry.get("payload"), entry.get("final")) for entry in fields]


async def test_br_zstd_and_stacked_streams_are_cut_live_as_the_same_stream_unencoded(
    stream: str, server: ReplayServer, redis_client: redis.Redis, publisher: capture.Publisher
) -> None:
    options = {"publisher": publisher, "live": True}
    for pieces, encoding in enumerate(("", *ENCODINGS), start=5):
        for _ in range(2):
            server.reply(
                SSE,
                content_type="text/event-stream",
                mode="chunked",
                pieces=pieces,
                encoding=encoding,
                wire=encode(SSE, encoding, flush_events=pieces % 2 == 0),
            )
        got = await asyncio.to_thread(SDKS["openai_chat"].call, server.url, options, True)
        assert got == await asyncio.to_thread(SDKS["openai_chat"].call, server.url, None, True)
    assert "br" in server.seen[0].headers["Accept-Encoding"]  # the SDK asks for them
    assert "zstd" in server.seen[0].headers["Accept-Encoding"]
    server.reply(SSE, content_type="text/event-stream", mode="chunked", encoding="zstd, br")
    got = await SDKS["openai_chat"].call_async(server.url, options, True)
    assert got[-1]["choices"][0]["finish_reason"] == "stop"
    publisher.close(5)
    want = _expected(SSE)
    streams = list(_by_stream(published(redis_client, stream, len(want) * 7)).values())
    plain, *encoded = [_entries(fields) for fields in streams]
    assert [(payload, final) for _, payload, final in plain] == want
    assert len(encoded) == len(ENCODINGS) + 1
    assert all(entries == plain for entries in encoded)


class _Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks


def _read_through_capture(
    url: str, stream: str, wire: bytes, encoding: str, cuts: list[int]
) -> bytes:
    """The wire bytes cut where `cuts` say, read through a live capture transport as an SDK
    reads them (decoded by httpx2); what the reader got."""
    import httpx2

    ends = [*sorted({min(cut, len(wire)) for cut in cuts}), len(wire)]
    pieces = [wire[start:end] for start, end in itertools.pairwise([0, *ends])]

    class Inner(httpx2.BaseTransport):
        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            headers = {"content-type": "text/event-stream", "content-encoding": encoding}
            stream_class = type("Stream", (_Chunks, httpx2.SyncByteStream), {})
            return httpx2.Response(200, headers=headers, stream=stream_class(pieces))

    publisher = capture.Publisher(url, stream=stream)
    transport = capture.Transport(publisher=publisher, inner=Inner(), live=True)
    try:
        with (
            httpx2.Client(transport=transport) as client,
            client.stream("POST", f"http://provider.test{CHAT}", json={"model": "m"}) as response,
        ):
            return b"".join(response.iter_bytes())
    finally:
        publisher.close(5)


WIRES = {
    (encoding, flushed): encode(SSE, encoding, flush_events=flushed)
    for encoding in ("", "gzip", *ENCODINGS)
    for flushed in (False, True)
}
"""Each stream encoded whole, and flushed after each event as a server streaming it sends it."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    wire=st.sampled_from(list(WIRES)),
    cuts=st.lists(st.integers(0, max(map(len, WIRES.values()))), max_size=25),
)
def test_an_encoded_stream_cut_anywhere_gives_the_live_entries_of_the_stream_unencoded(
    redis_url: str, wire: tuple[str, bool], cuts: list[int]
) -> None:
    encoding, _ = wire
    tag = fresh_hash_tag()
    stream = f"{{{tag}}}:raw"
    client = redis.Redis.from_url(redis_url)
    try:
        read = _read_through_capture(redis_url, stream, WIRES[wire], encoding, cuts)
        assert read == SSE
        want = _expected(SSE)
        entries = published(client, stream, len(want))
        assert [(fields.get("payload"), fields.get("final")) for fields in entries] == want
        assert [fields["seq"] for fields in entries] == [b"%d" % n for n in range(len(want))]
    finally:
        client.close()
        delete_keys(redis_url, f"{{{tag}}}*")


@pytest.mark.parametrize(("encoding", "modules"), [("br", BROTLI_MODULES), ("zstd", ZSTD_MODULES)])
def test_without_its_decoder_an_encoded_stream_is_published_once_when_it_ends(
    encoding: str,
    modules: tuple[str, ...],
    stream: str,
    server: ReplayServer,
    redis_client: redis.Redis,
    publisher: capture.Publisher,
) -> None:
    options = {"publisher": publisher, "live": True}
    server.reply(SSE, content_type="text/event-stream", mode="chunked", encoding=encoding)
    with without(*modules):  # for capture only: httpx2 keeps its own, and decodes for the SDK
        got = SDKS["openai_chat"].call(server.url, options, True)
    assert got[-1]["choices"][0]["finish_reason"] == "stop"
    publisher.close(5)
    (entry,) = published(redis_client, stream, 1)
    assert entry["payload"] == SSE and "seq" not in entry and "final" not in entry
    assert b'"live"' not in entry["meta"] and b'"ended":"closed"' in entry["meta"]  # at [DONE]


def _events_until_failure(url: str, options: dict[str, Any] | None) -> tuple[int, str]:
    """How many events the openai SDK gave before it failed, and how it failed."""
    import httpx2
    import openai

    transport = {} if options is None else {"transport": capture.Transport(**options)}
    http = httpx2.Client(**transport)
    events = 0
    with openai.OpenAI(
        api_key="test", base_url=f"{url}/v1", http_client=http, max_retries=0
    ) as client:
        try:
            for _ in client.chat.completions.create(
                model="m",
                messages=MESSAGES,  # type: ignore[arg-type]
                stream=True,
            ):
                events += 1
        except Exception as error:
            return events, f"{type(error).__name__}: {error}"
    raise AssertionError("the damaged stream did not fail")


@pytest.mark.parametrize("encoding", ["gzip", "br", "zstd", "gzip, br"])
def test_a_damaged_encoding_ends_the_live_stream_with_all_the_sdk_got_and_fails_it_as_before(
    encoding: str,
    stream: str,
    server: ReplayServer,
    redis_client: redis.Redis,
    publisher: capture.Publisher,
) -> None:
    before = SSE[: len(SSE) * 2 // 3]
    wire = (
        encode(before, encoding, flush_events=True, end=False)
        + b"\xff" * 24
        + encode(SSE, encoding)
    )
    for _ in range(2):
        server.reply(SSE, content_type="text/event-stream", mode="chunked", pieces=6, wire=wire)
        server.replies[-1].encoding = encoding
    captured = _events_until_failure(server.url, {"publisher": publisher, "live": True})
    assert captured == _events_until_failure(server.url, None)
    publisher.close(5)
    entries = published(redis_client, stream, 2)
    assert entries[-1]["final"] == b"1" and all("final" not in fields for fields in entries[:-1])
    assert [fields["seq"] for fields in entries] == [b"%d" % n for n in range(len(entries))]
    arrived = b"".join(fields.get("payload", b"") for fields in entries)
    assert before.startswith(arrived)
    events, _ = captured
    assert 0 < events <= arrived.count(b"\ndata: ") + arrived.startswith(b"data: ")
