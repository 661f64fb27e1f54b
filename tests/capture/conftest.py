"""Fixtures of the capture tests: a replaying HTTP server, a publisher on this test's own
stream with its own metrics registry, and a way to read what was published."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import redis
from prometheus_client import CollectorRegistry

from tests.capture.replay import ReplayServer
from thoughtline.capture import Publisher

RECORDED = Path(__file__).parent / "recorded"
"""Small recorded bodies and streams of our own (each with its `.source.txt`)."""


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer()
    replay.start()
    yield replay
    replay.stop()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def stream(stream_names: dict[str, str]) -> str:
    return stream_names["input_stream"]


@pytest.fixture
def publisher(redis_url: str, stream: str, registry: CollectorRegistry) -> Iterator[Publisher]:
    made = Publisher(redis_url, stream=stream, registry=registry)
    yield made
    made.close(5)


def published(
    client: redis.Redis, stream: str, count: int, timeout: float = 10.0
) -> list[dict[str, bytes]]:
    """The stream's entries once it holds `count` (field names as text)."""
    deadline = time.monotonic() + timeout
    while client.xlen(stream) < count:
        assert time.monotonic() < deadline, f"{stream} did not reach {count} entries"
        time.sleep(0.01)
    return [
        {name.decode(): value for name, value in fields.items()}
        for _, fields in client.xrange(stream)
    ]


def meta_of(fields: dict[str, bytes]) -> dict[str, object]:
    meta: dict[str, object] = msgspec.json.decode(fields["meta"])
    return meta


def dropped(registry: CollectorRegistry, reason: str) -> float:
    value = registry.get_sample_value("thoughtline_capture_dropped_total", {"reason": reason})
    return value or 0.0
