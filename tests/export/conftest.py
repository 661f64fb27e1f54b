"""Fixtures of the export tests: a local OTLP receiver (the Redis client is the suite's, in
tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.export.receiver import Receiver, running_receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as running:
        yield running
