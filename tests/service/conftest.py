"""Fixtures of the service tests: settings on this test's own streams, a clean env (the Redis
client is the suite's, in tests/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import redis

from thoughtline.worker.settings import Settings, load_settings


@pytest.fixture(autouse=True)
def _no_thoughtline_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's THOUGHTLINE_* variables must not change what the tests see."""
    for name in list(os.environ):
        if name.startswith("THOUGHTLINE_"):
            monkeypatch.delenv(name)


@pytest.fixture
def settings(redis_url: str, stream_names: dict[str, str]) -> Settings:
    """Fast-reacting settings on this test's streams; metrics on a free port."""
    return load_settings(
        redis_url=redis_url, metrics_port=0, block_ms=50, min_idle_ms=60_000, **stream_names
    )


@pytest.fixture
def partitioned(
    redis_url: str, stream_names: dict[str, str], client: redis.Redis
) -> Iterator[Settings]:
    """Settings of three partitions under the test's own tag; their keys deleted after."""
    settings = Settings(
        redis_url=redis_url, metrics_port=0, block_ms=50, partitions=3, **stream_names
    )
    yield settings
    for key in client.scan_iter(match=f"{{{settings.base_names().tag}*"):
        client.delete(key)
