"""Chaos run: workers SIGKILLed and Redis crashed under load; then every entry is counted.

    python bench/chaos.py [--entries 100000] [--bad-fraction 0.05] [--workers 3] [--kills 20]
                          [--kill-every 3.0] [--redis-restarts 1] [--seed 1]

A private redis-server (append-only file, `appendfsync always`) on a free loopback port; N
`thoughtline serve` processes; a producer that XADDs the entries at a steady pace (valid
samples of every format, and `--bad-fraction` of entries that must be dead-lettered: not
JSON, too large, unknown format, no payload, unknown kind). Every `--kill-every` seconds
(+-30 %) a random worker is SIGKILLed and a new one started; halfway through the kills Redis
itself is SIGKILLed and started again from its append-only file. Workers that exit on their
own are restarted too (a supervisor's job) and counted.

At the end, read from Redis itself: every valid entry has exactly one record (by `id`), every
bad entry exactly one dead letter with the expected reason and its payload byte-identical,
nothing is pending, nothing is left unread, and every live worker answers /healthz and
/readyz, has polled Redis in the last few seconds and exits 0 on SIGTERM. Any loss,
duplicate or wedged worker fails the run (exit status 1). The test suite runs a small version
(tests/chaos/test_chaos.py).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.*` helpers, run as a script

from tests.chaos.fleet import Fleet
from tests.chaos.servers import RedisServer
from tests.chaos.workload import Entry, Producer, build_entries, stream_entries
from thoughtline.config import Settings, load_settings

MAX_PAYLOAD_BYTES = 64 * 1024
"""Lowered from the 32 MiB default so the `too_large` entries stay cheap to publish."""
SLOWER_NORMALIZERS = """
import importlib, time
formats = importlib.import_module("thoughtline.normalize").FORMATS
def slower(normalize):
    def slow(body, **options):
        time.sleep({seconds})
        return normalize(body, **options)
    return slow
for name in list(formats):
    formats[name] = slower(formats[name])
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
            "seconds: " + ", ".join(f"{name} {value:.1f}" for name, value in self.seconds.items()),
            "RESULT: " + ("PASS" if self.passed else "FAIL: " + "; ".join(self.failures)),
        ]


def run(plan: Plan, directory: Path) -> Report:
    random_source = random.Random(plan.seed)
    entries = build_entries(plan.entries, plan.bad_fraction, random_source, MAX_PAYLOAD_BYTES)
    report = Report(plan, valid=sum(e.expected_reason is None for e in entries))
    report.bad = len(entries) - report.valid
    server = RedisServer(directory / "redis", "--appendonly", "yes", "--appendfsync", "always")
    server.start()
    settings = load_settings(redis_url=server.url, min_idle_ms=plan.min_idle_ms, block_ms=200,
                             max_payload_bytes=MAX_PAYLOAD_BYTES, metrics_port=0)  # fmt: skip
    slower = SLOWER_NORMALIZERS.format(seconds=plan.entry_ms / 1000) if plan.entry_ms else None
    fleet = Fleet(settings, directory / "workers", plan.workers, code=slower)
    client = redis.Redis.from_url(server.url, socket_timeout=10)
    started = time.monotonic()
    try:
        fleet.start()
        producer = Producer(server.url, settings.input_stream, entries,
                            seconds=plan.kills * plan.kill_every * 0.8)  # fmt: skip
        producer.start()
        _make_chaos(plan, fleet, server, report, random_source)
        producer.join()
        if producer.error is not None:
            report.failures.append(f"the producer failed: {producer.error!r}")
        report.seconds["chaos"] = time.monotonic() - started
        _wait_until_done(client, settings, len(entries), fleet, plan.drain_timeout)
        report.seconds["drain"] = time.monotonic() - started - report.seconds["chaos"]
        report.self_exits = fleet.self_exits
        _count(client, settings, entries, report)
        _check_workers(fleet, client, entries, report)
    finally:
        fleet.kill_all()
        client.close()
        server.kill()
    return report


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
    for name in ("entries", "workers", "kills", "redis_restarts", "seed", "min_idle_ms"):
        option = "--" + name.replace("_", "-")
        parser.add_argument(option, type=int, default=getattr(defaults, name))
    for name in ("bad_fraction", "kill_every", "drain_timeout", "entry_ms"):
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
