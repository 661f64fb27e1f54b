"""Fixtures of the export tests: a client of the suite's Redis and a local OTLP receiver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.export.receiver import Receiver, running_receiver


@pytest.fixture
def client(redis_url: str) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running
