"""Fixtures of the capture tests: a replaying HTTP server, a publisher on this test's own
stream with its own metrics registry, a way to read what was published, and the optional
content decoders made to look missing."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
import redis
from prometheus_client import CollectorRegistry

from tests.capture.replay import ReplayServer
from thoughtline.capture import Publisher, encodings

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


BROTLI_MODULES = ("brotli", "brotlicffi")
ZSTD_MODULES = ("compression.zstd", "backports.zstd", "zstandard")
"""The optional decoders, in the order capture looks for them (`compression.zstd`, the
standard library's, from Python 3.14 on)."""


@contextlib.contextmanager
def without(*modules: str) -> Iterator[None]:
    """Capture's optional decoders looked up again as if `modules` were not installed (an
    import of a module set to None in `sys.modules` fails), then again as they are. The HTTP
    libraries keep the ones they imported."""
    missing = object()
    saved = {name: sys.modules.get(name, missing) for name in modules}
    encodings._optional_stage.cache_clear()
    try:
        sys.modules.update(dict.fromkeys(modules))
        yield
    finally:
        for name, module in saved.items():
            if module is missing:
                del sys.modules[name]
            else:
                sys.modules[name] = module  # type: ignore[assignment]
        encodings._optional_stage.cache_clear()
