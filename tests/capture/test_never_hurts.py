"""Capture never hurts the application: with Redis down, stalled, or refusing writes every
call returns what it returns without capture, at once; what cannot be published is dropped
and counted, with one warning; memory stays bounded; shutdown flushes within its timeout."""

from __future__ import annotations

import logging
import socket
import threading
import tracemalloc
from collections.abc import Callable, Iterator

import httpx
import pytest
import redis
from prometheus_client import CollectorRegistry

from tests.capture.conftest import RECORDED, dropped, published
from tests.capture.replay import ReplayServer
from tests.capture.sdks import SDKS
from thoughtline import capture
from thoughtline.capture import Publisher

pytestmark = [
    pytest.mark.redis,
    pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning"),
]

PUBLISHER_THREAD = "thoughtline-capture"
BODY = (RECORDED / "tool-use-after-thinking.json").read_bytes()


@pytest.fixture
def down_redis() -> str:
    """A port nothing listens on."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


class _Replay(httpx.BaseTransport):
    """An inner transport that answers every call with the same streamed body, no network."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "application/json"},
            stream=_Chunks([BODY[:1000], BODY[1000:]]),
        )


class _Chunks(httpx.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks


def _calls(transport: capture.Transport, count: int) -> None:
    """`count` calls, each returning the body the provider sent."""
    with httpx.Client(transport=transport) as client:
        for _ in range(count):
            response = client.post("http://provider.test/v1/messages", content=b'{"model":"m"}')
            assert response.content == BODY


class _HeldPipeline:
    """A pipeline whose `execute` waits until the test lets Redis "answer" (with an error)."""

    def __init__(self, held: _HeldRedis) -> None:
        self._held = held

    def xadd(self, *arguments: object, **options: object) -> None:
        pass

    def execute(self, raise_on_error: bool = True) -> list[object]:
        held = self._held
        held.executing_threads.append(threading.current_thread().name)
        if threading.current_thread().name == PUBLISHER_THREAD:  # elsewhere: seen, not held
            held.executing.set()
            held.answer.wait()
        raise redis.ConnectionError("the test's Redis never answered")


class _HeldRedis:
    """A stand-in Redis client that holds every write until `answer` is set: a frozen Redis
    whose wait the test controls, so "no call waits" is seen, not timed."""

    def __init__(self) -> None:
        self.answer = threading.Event()
        self.executing = threading.Event()
        self.executing_threads: list[str] = []

    def pipeline(self, transaction: bool = True) -> _HeldPipeline:
        return _HeldPipeline(self)

    def hgetall(self, key: str) -> dict[bytes, bytes]:
        """The partitions' metadata the publisher looks up: none, one partition."""
        return {}


def _in_a_thread(work: Callable[[], None]) -> bool:
    """Run `work` in a thread of its own; True when it returned (a call that waited on the
    held Redis would hang there until the test gives up on it)."""
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout=120)
    return not thread.is_alive()


@pytest.mark.parametrize("sdk", ["openai_chat", "anthropic", "gemini", "mistral", "ollama"])
def test_every_sdk_call_returns_the_same_result_with_redis_down(
    sdk: str, server: ReplayServer, down_redis: str, registry: CollectorRegistry
) -> None:
    case = SDKS[sdk]
    names = {
        "openai_chat": "ollama-cloud-reasoning-tool-call.json",
        "anthropic": "tool-use-after-thinking.json",
        "gemini": "gemini3-pro-function-call-with-signature.json",
        "mistral": "magistral-thinking-chunks.json",
        "ollama": "generate-gpt-oss-thinking.json",
    }
    body = (RECORDED / names[sdk]).read_bytes()
    server.default = server.reply(body)
    publisher = Publisher(down_redis, registry=registry, socket_timeout=0.2)
    try:
        captured = case.call(server.url, {"publisher": publisher}, False)
        assert captured == case.call(server.url, None, False)
        publisher.flush(5)
    finally:
        publisher.close(1)
    assert dropped(registry, "redis_error") == 1


def test_redis_down_drops_and_counts_with_one_warning(
    down_redis: str, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    publisher = Publisher(down_redis, registry=registry, socket_timeout=0.2)
    with caplog.at_level(logging.WARNING, logger="thoughtline.capture"):
        _calls(capture.Transport(publisher=publisher, inner=_Replay()), 50)
        publisher.flush(10)
    publisher.close(1)
    total = dropped(registry, "redis_error") + dropped(registry, "buffer_full")
    assert total == 50 and dropped(registry, "redis_error") >= 1
    warnings = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "cannot publish" in warnings[0].getMessage()
    assert warnings[0].exc_info is None  # no traceback
    assert "thinking" not in warnings[0].getMessage()


def test_a_stalled_redis_delays_no_call_and_the_bounded_buffer_drops_the_rest(
    registry: CollectorRegistry,
) -> None:
    held = _HeldRedis()
    publisher = Publisher(client=held, registry=registry, max_entries=20)  # type: ignore[arg-type]
    transport = capture.Transport(publisher=publisher, inner=_Replay())
    # All 300 calls return while Redis holds the first write and has answered nothing.
    assert _in_a_thread(lambda: _calls(transport, 300)), "a call waited for Redis"
    assert held.executing.wait(timeout=60) and not held.answer.is_set()
    assert set(held.executing_threads) == {PUBLISHER_THREAD}  # never the caller's thread
    # Shutdown keeps its timeout: it returns while the write is still held.
    assert _in_a_thread(lambda: publisher.close(timeout=0.2)), "close waited for Redis"
    assert not held.answer.is_set()
    held.answer.set()  # Redis fails the held write: it is counted too
    assert publisher.flush(60)
    assert dropped(registry, "buffer_full") >= 250
    counted = sum(dropped(registry, reason) for reason in capture.DROP_REASONS)
    assert counted == 300


def test_a_redis_that_refuses_the_writes_counts_them(
    redis_url: str, stream: str, registry: CollectorRegistry, redis_client: redis.Redis
) -> None:
    redis_client.set(stream, b"not a stream")  # XADD answers WRONGTYPE, as a full Redis answers OOM
    publisher = Publisher(redis_url, stream=stream, registry=registry)
    _calls(capture.Transport(publisher=publisher, inner=_Replay()), 10)
    publisher.flush(5)
    publisher.close(1)
    assert dropped(registry, "redis_error") == 10
    redis_client.delete(stream)


def test_publishing_resumes_when_redis_comes_back(
    redis_url: str, stream: str, registry: CollectorRegistry, redis_client: redis.Redis
) -> None:
    redis_client.set(stream, b"not a stream")
    publisher = Publisher(redis_url, stream=stream, registry=registry)
    transport = capture.Transport(publisher=publisher, inner=_Replay())
    _calls(transport, 3)
    publisher.flush(5)
    redis_client.delete(stream)
    _calls(transport, 2)
    publisher.flush(5)
    publisher.close(1)
    assert dropped(registry, "redis_error") == 3
    assert len(published(redis_client, stream, 2)) == 2


@pytest.mark.slow  # a soak: 11,500 calls
def test_memory_stays_bounded_over_ten_thousand_calls_with_redis_down(
    down_redis: str, registry: CollectorRegistry
) -> None:
    publisher = Publisher(down_redis, registry=registry, socket_timeout=0.2, max_bytes=256 * 1024)
    transport = capture.Transport(publisher=publisher, inner=_Replay())
    _calls(transport, 500)  # imports, caches, the counter's series
    tracemalloc.start()
    try:
        _calls(transport, 1000)  # the buffer filled to its bound, traced
        before = tracemalloc.get_traced_memory()[0]
        _calls(transport, 10_000)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        publisher.close(1)
    # 10k bodies are 20 MB; with the buffer full, nothing may stay behind per call (100 bytes
    # a call would be 1 MB)
    assert grown < 1024 * 1024
    assert sum(dropped(registry, reason) for reason in capture.DROP_REASONS) == 11_500


def test_close_flushes_what_was_buffered(
    redis_url: str, stream: str, registry: CollectorRegistry, redis_client: redis.Redis
) -> None:
    publisher = Publisher(redis_url, stream=stream, registry=registry)
    _calls(capture.Transport(publisher=publisher, inner=_Replay()), 200)
    publisher.close(5)
    assert redis_client.xlen(stream) == 200
    assert sum(dropped(registry, reason) for reason in capture.DROP_REASONS) == 0


class _Failing(Publisher):
    def submit(self, capture: object) -> None:
        raise RuntimeError("a bug in capture")


def test_a_failure_inside_capture_never_reaches_the_caller(
    redis_url: str, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_format(request: object) -> None:
        raise ValueError("a bug in the caller's format function")

    failing = _Failing(redis_url, registry=registry)
    with caplog.at_level(logging.INFO):
        _calls(capture.Transport(publisher=failing, inner=_Replay()), 3)
        _calls(capture.Transport(publisher=failing, inner=_Replay(), format=broken_format), 3)
    ours = [record for record in caplog.records if record.name.startswith("thoughtline")]
    assert not [record for record in ours if record.levelno >= logging.INFO]
