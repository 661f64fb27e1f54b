"""The publisher's pause after a failed pipeline: longer while Redis stays unusable, from the
start again once a pipeline works."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import redis
from prometheus_client import CollectorRegistry

from thoughtline.capture.publisher import Publisher


def test_pauses_grow_while_redis_stays_unusable_and_start_over_once_it_works(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    publisher = Publisher(client=redis.Redis(port=1), registry=CollectorRegistry())
    waits: list[float] = []

    def wait_for(predicate: Callable[[], bool], timeout: float) -> bool:
        waits.append(timeout)
        return predicate()

    monkeypatch.setattr(publisher._wake, "wait_for", wait_for)
    for _ in range(6):
        publisher._pause()
    publisher._recovered()
    publisher._pause()
    assert waits == [0.1, 0.5, 1.0, 2.0, 5.0, 5.0, 0.1]
    publisher.close(0)
