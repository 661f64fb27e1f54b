"""Chaos run: workers SIGKILLed and Redis crashed under load; then every entry is counted.

    python bench/chaos.py [--entries 100000] [--bad-fraction 0.05] [--workers 3] [--kills 20]
                          [--kill-every 3.0] [--redis-restarts 1] [--seed 1]
                          [--destroy-group N] [--refuse-writes SECONDS] [--full-memory SECONDS]

A private redis-server (append-only file, `appendfsync always`) on a free loopback port; N
`thoughtline serve` processes; a producer that XADDs the entries at a steady pace (valid
samples of every format, and `--bad-fraction` of entries that must be dead-lettered: not
JSON, too large, unknown format, no payload, unknown kind). Every `--kill-every` seconds
(+-30 %) a random worker is SIGKILLed and a new one started; halfway through the kills Redis
itself is SIGKILLed and started again from its append-only file. Workers that exit on their
own are restarted too (a supervisor's job) and counted.

Faults on a timeline of their own, overlapping the kills (none by default):
`--destroy-group N` deletes the consumer group N times (`XGROUP DESTROY`: an operator's mistake,
a restore without the group); `--refuse-writes S` replaces the output stream by a string for S
seconds (every commit is refused with WRONGTYPE; `/readyz` must say so meanwhile);
`--full-memory S` sets Redis's `maxmemory` to what it uses for S seconds (noeviction: every
write that may grow memory is refused). A quarter of the valid entries then carry a
`meta.conversation_id`, so the conversation checks write too. Throughout, every live worker's
`/healthz` is polled: its longest silence is reported.

At the end, read from Redis itself: every valid entry has exactly one record (by `id`), every
bad entry exactly one dead letter with the expected reason and its payload byte-identical,
nothing is pending, nothing is left unread, and every live worker answers /healthz and
/readyz, has polled Redis in the last few seconds and exits 0 on SIGTERM. Any loss,
duplicate or wedged worker fails the run (exit status 1). The test suite runs a small version
(tests/chaos/test_chaos.py).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.*` helpers, run as a script

from tests.chaos.fleet import Fleet, HealthMonitor
from tests.chaos.servers import RedisServer
from tests.chaos.workload import Entry, Producer, build_entries, stream_entries
from thoughtline.worker.settings import Settings, load_settings

T = TypeVar("T")
DESTROY_AT: Final = (0.35, 0.8, 0.3, 0.85, 0.4, 0.9)
"""When the group is deleted, as fractions of the run (the Redis crash is halfway)."""
MAX_PAYLOAD_BYTES = 64 * 1024
"""Lowered from the 32 MiB default so the `too_large` entries stay cheap to publish."""
SLOWER_NORMALIZERS = """
import importlib, time
from thoughtline.providers import registry
def slower(normalize):
    def slow(body, **options):
        time.sleep({seconds})
        return normalize(body, **options)
    return slow
for row in registry.FORMAT_ROWS:
    row.body.normalize = slower(row.body.normalize)
"""


@dataclass(frozen=True)
class Plan:
    entries: int = 100_000
    bad_fraction: float = 0.05
    workers: int = 3
    kills: int = 20
    kill_every: float = 3.0
    redis_restarts: int = 1
    seed: int = 1
    min_idle_ms: int = 1000
    entry_ms: float = 1.0
    """Simulated extra normalization time per entry: the workers stay busy, so kills land
    inside batches (the bundled samples alone take ~50 us each, and a batch ~10 ms)."""
    drain_timeout: float = 600.0
    destroy_group: int = 0
    """How many times the consumer group is deleted during the run."""
    refuse_writes: float = 0.0
    """Seconds the output stream is a string (every commit refused), once; 0: never."""
    full_memory: float = 0.0
    """Seconds Redis is at `maxmemory` (noeviction), once; 0: never."""


@dataclass
class Report:
    plan: Plan
    valid: int = 0
    bad: int = 0
    kills: int = 0
    redis_restarts: int = 0
    self_exits: list[int] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)
    """What the saboteur did, one line each."""
    healthz_gap: float = 0.0
    """The longest a live worker went without answering /healthz, in seconds."""

    @property
    def passed(self) -> bool:
        return not self.failures

    def lines(self) -> list[str]:
        plan, counts = self.plan, self.counts
        return [
            f"chaos: {plan.entries} entries ({self.valid} valid, {self.bad} bad), "
            f"{plan.workers} workers, {self.kills} SIGKILLs, {self.redis_restarts} Redis "
            "restarts (SIGKILL, append-only file, appendfsync always)",
            f"records: {counts.get('records', 0)} for {self.valid} valid ids "
            f"({counts.get('missing_records', 0)} missing, "
            f"{counts.get('duplicate_records', 0)} duplicated, "
            f"{counts.get('unexpected_records', 0)} unexpected)",
            f"dead letters: {counts.get('dead_letters', 0)} for {self.bad} bad ids "
            f"({counts.get('missing_dead', 0)} missing, {counts.get('duplicate_dead', 0)} "
            f"duplicated, {counts.get('unexpected_dead', 0)} unexpected, "
            f"{counts.get('wrong_reason', 0)} wrong reason, "
            f"{counts.get('payload_changed', 0)} payload changed)",
            f"pending: {counts.get('pending', -1)}; unread (after last-delivered-id): "
            f"{counts.get('unread', -1)}; XINFO GROUPS lag: {counts.get('redis_lag', -1)}; "
            f"reclaimed: {counts.get('reclaimed', 0)} entries",
            f"workers: {counts.get('live_workers', 0)} live at the end, "
            f"{counts.get('healthy_workers', 0)} healthy, ready and each alone processing; "
            f"{counts.get('clean_exits', 0)} exited 0 on SIGTERM; "
            f"exits on their own: {len(self.self_exits)} {sorted(set(self.self_exits))}",
            *(f"fault: {line}" for line in self.faults),
            f"/healthz: longest silence of a live worker {self.healthz_gap:.2f} s",
            "seconds: " + ", ".join(f"{name} {value:.1f}" for name, value in self.seconds.items()),
            "RESULT: " + ("PASS" if self.passed else "FAIL: " + "; ".join(self.failures)),
        ]


def run(plan: Plan, directory: Path) -> Report:
    random_source = random.Random(plan.seed)
    entries = build_entries(plan.entries, plan.bad_fraction, random_source, MAX_PAYLOAD_BYTES)
    if plan.full_memory:
        _with_conversations(entries)
    report = Report(plan, valid=sum(e.expected_reason is None for e in entries))
    report.bad = len(entries) - report.valid
    server = RedisServer(directory / "redis", "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    settings = load_settings(redis_url=server.url, min_idle_ms=plan.min_idle_ms, block_ms=200,
                             max_payload_bytes=MAX_PAYLOAD_BYTES, metrics_port=0)  # fmt: skip
    slower = SLOWER_NORMALIZERS.format(seconds=plan.entry_ms / 1000) if plan.entry_ms else None
    fleet = Fleet(settings, directory / "workers", plan.workers, code=slower)
    client = redis.Redis.from_url(server.url, socket_timeout=10)
    monitor = HealthMonitor(fleet)
    duration = plan.kills * plan.kill_every
    saboteur = Saboteur(plan, server.url, settings, fleet, duration)
    started = time.monotonic()
    try:
        fleet.start()
        monitor.start()
        saboteur.start()
        producer = Producer(server.url, settings.input_stream, entries,
                            seconds=duration * 0.8)  # fmt: skip
        producer.start()
        _make_chaos(plan, fleet, server, report, random_source)
        producer.join()
        saboteur.join()
        report.faults = saboteur.lines()
        report.failures += saboteur.failures
        if producer.error is not None:
            report.failures.append(f"the producer failed: {producer.error!r}")
        report.seconds["chaos"] = time.monotonic() - started
        _wait_until_done(client, settings, len(entries), fleet, plan.drain_timeout)
        report.seconds["drain"] = time.monotonic() - started - report.seconds["chaos"]
        report.faults += _fault_figures(fleet, plan)  # what the workers said, drain included
        monitor.stop()
        report.healthz_gap = monitor.longest_gap
        report.self_exits = fleet.self_exits
        _count(client, settings, entries, report)
        _check_workers(fleet, client, entries, report)
    finally:
        monitor.stop()
        saboteur.stop()
        fleet.kill_all()
        client.close()
        server.kill()
    return report


def _with_conversations(entries: list[Entry]) -> None:
    """A quarter of the valid entries join one of 50 conversations (the checks then write)."""
    for number, entry in enumerate(entries):
        if entry.expected_reason is None and number % 4 == 0:
            entry.fields[b"meta"] = json.dumps({"conversation_id": f"c-{number % 50}"}).encode()


class Saboteur(threading.Thread):
    """The faults of the plan, at fixed points of the run, each undone after its time; every
    Redis call retried across the Redis crash."""

    def __init__(
        self, plan: Plan, url: str, settings: Settings, fleet: Fleet, duration: float
    ) -> None:
        super().__init__(name="saboteur", daemon=True)
        self.plan = plan
        self.settings = settings
        self.fleet = fleet
        self.client = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
        # Clear of the Redis crash halfway (a restarted Redis forgets CONFIG SET maxmemory).
        destroys = [(DESTROY_AT[number % len(DESTROY_AT)] + number // len(DESTROY_AT) * 0.02)
                    * duration for number in range(plan.destroy_group)]  # fmt: skip
        self.events: list[tuple[float, str]] = sorted(
            [(at, "destroy") for at in destroys]
            + ([(0.15 * duration, "refuse")] if plan.refuse_writes else [])
            + ([(0.7 * duration, "full")] if plan.full_memory else []))  # fmt: skip
        self.destroyed = 0
        self.refused_seconds = 0.0
        self.full_seconds = 0.0
        self.not_ready: set[int] = set()
        """Pids of workers that answered /readyz 503 with a refusal while writes were refused."""
        self.refused_workers: set[int] = set()
        self.failures: list[str] = []
        self._stopped = threading.Event()

    def run(self) -> None:
        started = time.monotonic()
        try:
            for due, action in self.events:
                if self._stopped.wait(max(0.0, started + due - time.monotonic())):
                    return
                if action == "destroy":
                    self._retry(lambda: self.client.xgroup_destroy(
                        self.settings.input_stream, self.settings.group))  # fmt: skip
                    self.destroyed += 1
                elif action == "refuse":
                    self._refuse_writes()
                else:
                    self._fill_memory()
        except BaseException as error:  # reported by the run, never silently lost
            self.failures.append(f"the saboteur failed: {type(error).__name__}: {error}")
        finally:
            self.client.close()

    def stop(self) -> None:
        self._stopped.set()
        if self.is_alive():
            self.join(timeout=60)

    def lines(self) -> list[str]:
        found = []
        if self.plan.destroy_group:
            found.append(f"consumer group destroyed {self.destroyed} times")
        if self.plan.refuse_writes:
            found.append(
                f"output stream a string for {self.refused_seconds:.1f} s (WRONGTYPE): "
                f"{len(self.not_ready & self.refused_workers)} of {len(self.refused_workers)} "
                "workers live for 1 s or more of it said not ready with the refusal"
            )
        if self.plan.full_memory:
            found.append(f"Redis at maxmemory (noeviction) for {self.full_seconds:.1f} s")
        return found

    def _refuse_writes(self) -> None:
        output = self.settings.output_stream
        saved = f"{output}:saved-by-chaos"
        existed = self._retry(lambda: bool(self.client.exists(output)))
        if existed:  # else nothing was committed yet: there is nothing to keep aside
            self._retry(lambda: self.client.rename(output, saved))
        self._retry(lambda: self.client.set(output, "not a stream"))
        started = time.monotonic()
        seen: dict[int, list[float]] = {}  # pid: first and last time its /readyz answered
        while time.monotonic() - started < self.plan.refuse_writes:
            for worker in list(self.fleet.workers):
                answer = _readiness(worker.port)
                if not answer:
                    continue  # starting, or killed
                now = time.monotonic()
                seen.setdefault(worker.process.pid, [now, now])[1] = now
                if answer.startswith("503") and "refuses writes" in answer:
                    self.not_ready.add(worker.process.pid)
            time.sleep(0.2)
        # Those that answered over a second of it (a reclaimer checks every min_idle_ms / 4).
        self.refused_workers = {pid for pid, (first, last) in seen.items() if last - first >= 1}
        self._retry(lambda: self.client.delete(output))
        if existed:
            self._retry(lambda: self.client.rename(saved, output))
        self.refused_seconds = time.monotonic() - started
        if self.refused_workers - self.not_ready:
            self.failures.append(
                f"{len(self.refused_workers - self.not_ready)} workers did not say not ready "
                "while their writes were refused"
            )

    def _fill_memory(self) -> None:
        used = self._retry(lambda: int(self.client.info("memory")["used_memory"]))
        self._retry(lambda: self.client.config_set("maxmemory-policy", "noeviction"))
        self._retry(lambda: self.client.config_set("maxmemory", str(used)))
        started = time.monotonic()
        self._stopped.wait(self.plan.full_memory)
        # A Redis restarted meanwhile forgot the setting (CONFIG SET is not persisted).
        self._retry(lambda: self.client.config_set("maxmemory", "0"))
        self.full_seconds = time.monotonic() - started

    def _retry(self, call: Callable[[], T]) -> T:
        deadline = time.monotonic() + 60
        while True:
            try:
                return call()
            except (redis.ConnectionError, redis.TimeoutError, redis.exceptions.BusyLoadingError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


FAULT_LINES: Final = {
    "groups created (at start or after the loss)": re.compile(
        rb"created consumer group \S+ at id|recreated it at id"
    ),
    "entries acknowledged as committed before the group was lost": re.compile(
        rb"(\d+) entries were committed before the consumer group was recreated"
    ),
    "records published without their conversation checks": re.compile(
        rb"conversation checks skipped for (\d+) records"
    ),
    "refused commit attempts": re.compile(rb"Redis refused to commit"),
}


def _fault_figures(fleet: Fleet, plan: Plan) -> list[str]:
    """What the workers said about the faults, counted over every worker's log."""
    if not (plan.destroy_group or plan.refuse_writes or plan.full_memory):
        return []
    counts = dict.fromkeys(FAULT_LINES, 0)
    for log in fleet.logs:
        text = log.read_bytes()
        for name, pattern in FAULT_LINES.items():
            for found in pattern.finditer(text):
                counts[name] += int(found.group(1)) if pattern.groups else 1
    return ["workers' logs: " + ", ".join(f"{name} {count}" for name, count in counts.items())]


def _readiness(port: int) -> str:
    """`200 ready` / `503 not ready: ...` of one worker's /readyz ('' if it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return f"{answer.status} {answer.read().decode()}"
    except urllib.error.HTTPError as error:
        return f"{error.code} {error.read().decode()}"
    except (urllib.error.URLError, OSError):
        return ""


def _make_chaos(
    plan: Plan, fleet: Fleet, server: RedisServer, report: Report, random_source: random.Random
) -> None:
    restart_at = {plan.kills * (number + 1) // (plan.redis_restarts + 1)
                  for number in range(plan.redis_restarts)}  # fmt: skip
    for kill_number in range(plan.kills):
        time.sleep(plan.kill_every * random_source.uniform(0.7, 1.3))
        fleet.revive_exited()
        fleet.kill_one(random_source)
        report.kills += 1
        if kill_number + 1 in restart_at:
            server.kill()  # a crash: only what the append-only file holds survives
            time.sleep(1.0)
            server.start()
            report.redis_restarts += 1


def _wait_until_done(
    client: redis.Redis, settings: Settings, total: int, fleet: Fleet, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fleet.revive_exited()
        done = client.xlen(settings.output_stream) + client.xlen(settings.dead_stream)
        if done >= total and _pending(client, settings) == 0:
            return
        time.sleep(0.2)


def _pending(client: redis.Redis, settings: Settings) -> int:
    return int(client.xpending(settings.input_stream, settings.group)["pending"])


def _count(client: redis.Redis, settings: Settings, entries: list[Entry], report: Report) -> None:
    good = {e.fields[b"id"] for e in entries if e.expected_reason is None}
    bad = {e.fields[b"id"]: e for e in entries if e.expected_reason is not None}
    records = Counter(fields[b"id"] for _, fields in stream_entries(client, settings.output_stream))
    dead_letters = [fields for _, fields in stream_entries(client, settings.dead_stream)]
    dead = Counter(fields[b"id"] for fields in dead_letters)
    counts = report.counts
    counts["records"] = sum(records.values())
    counts["missing_records"] = len(good - set(records))
    counts["duplicate_records"] = sum(count - 1 for count in records.values() if count > 1)
    counts["unexpected_records"] = len(set(records) - good)
    counts["dead_letters"] = len(dead_letters)
    counts["missing_dead"] = len(set(bad) - set(dead))
    counts["duplicate_dead"] = sum(count - 1 for count in dead.values() if count > 1)
    counts["unexpected_dead"] = len(set(dead) - set(bad))
    counts["payload_changed"] = 0
    wrong_reasons: Counter[str] = Counter()
    for fields in dead_letters:
        entry = bad.get(fields[b"id"])
        if entry is None:
            continue
        reason = fields.get(b"reason", b"").decode()
        if reason != entry.expected_reason:
            wrong_reasons[f"{entry.expected_reason}->{reason}"] += 1
        counts["payload_changed"] += fields.get(b"payload") != entry.fields.get(b"payload")
    counts["wrong_reason"] = sum(wrong_reasons.values())
    if wrong_reasons:
        report.failures.append(f"dead-letter reasons {dict(wrong_reasons)}")
    counts["pending"] = _pending(client, settings)
    [group] = client.xinfo_groups(settings.input_stream)
    after = "(" + group["last-delivered-id"].decode()
    counts["unread"] = len(stream_entries(client, settings.input_stream, after))
    counts["redis_lag"] = -1 if group.get("lag") is None else int(group["lag"])
    for name in ("missing_records", "duplicate_records", "unexpected_records", "missing_dead",
                 "duplicate_dead", "unexpected_dead", "payload_changed",
                 "pending", "unread"):  # fmt: skip
        if counts[name]:
            report.failures.append(f"{name}={counts[name]}")


def _check_workers(fleet: Fleet, client: redis.Redis, entries: list[Entry], report: Report) -> None:
    """Healthy, ready, and each one alone still turns new entries into records."""
    problems = fleet.health_problems()
    if not problems:
        valid = next(entry for entry in entries if entry.expected_reason is None)
        problems = fleet.probe_each(client, valid.fields[b"payload"])
    report.counts["live_workers"] = len(fleet.workers)
    report.counts["healthy_workers"] = len(fleet.workers) - len(problems)
    report.counts["reclaimed"] = fleet.reclaimed_total()
    report.failures += problems
    exit_codes = fleet.stop_all()
    report.counts["clean_exits"] = sum(code == 0 for code in exit_codes)
    if any(code != 0 for code in exit_codes):
        report.failures.append(f"SIGTERM exit codes {exit_codes}")


def main(argv: list[str] | None = None) -> int:
    defaults = Plan()
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    for name in ("entries", "workers", "kills", "redis_restarts", "seed", "min_idle_ms",
                 "destroy_group"):  # fmt: skip
        option = "--" + name.replace("_", "-")
        parser.add_argument(option, type=int, default=getattr(defaults, name))
    for name in ("bad_fraction", "kill_every", "drain_timeout", "entry_ms", "refuse_writes",
                 "full_memory"):  # fmt: skip
        option = "--" + name.replace("_", "-")
        parser.add_argument(option, type=float, default=getattr(defaults, name))
    arguments = parser.parse_args(argv)
    plan = Plan(**vars(arguments))
    with tempfile.TemporaryDirectory(prefix="thoughtline-chaos-") as directory:
        report = run(plan, Path(directory))
    print("\n".join(report.lines()), flush=True)
    return 0 if report.passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
