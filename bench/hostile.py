"""Hostile input: 10k generated payloads through the normalizer, a subset through a real worker.

    python bench/hostile.py [--cases 10000] [--worker-cases 500] [--seed 1]

1. Normalizer: the hypothesis strategies of tests/hostile/strategies.py (provider payloads with
   fields swapped, deleted, nulled or blown up; truncation, invalid UTF-8, NaN, duplicate keys,
   200k-deep nesting, huge arrays, random bytes), `--cases` of them. The only error allowed is
   `NormalizeError`; anything else is a failure, printed with its payload's first bytes.
2. Giants, one at a time, each with the process's peak RSS reset first (Linux
   /proc/self/clear_refs): a 10 MB string, 200k-deep nesting, a 2 MB flood of `<` (each one
   could open an inline tag), a payload just under the size cap and one just over it (refused
   before it is decoded: no growth beyond its own bytes).
3. Worker: `--worker-cases` of the generated payloads plus the giants XADDed to one
   `thoughtline serve` process on a private Redis. It must never stop (same pid, healthy at the
   end), each entry must end as exactly one record or one dead letter, and every dead letter
   must hold its payload byte-identical. Its peak RSS (VmHWM) is printed. `/healthz` is polled
   all along: a worker silent for more than `MAX_HEALTHZ_GAP_SECONDS` (normalizing a giant on
   its event loop, say) fails the run.

Exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import redis
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `tests.*` helpers, run as a script

import thoughtline
from tests.chaos.fleet import Fleet, HealthMonitor
from tests.chaos.servers import RedisServer
from tests.chaos.workload import stream_entries
from tests.hostile.strategies import broken_bytes, mutated_payloads
from thoughtline.contract.errors import NormalizeError
from thoughtline.worker.settings import load_settings

CAP: Final = 16 * 1024 * 1024
"""The size cap of this run (THOUGHTLINE_MAX_PAYLOAD_BYTES), half the default: cheaper giants."""
MEGABYTE: Final = 1024 * 1024
MAX_HEALTHZ_GAP_SECONDS: Final = 1.0


@dataclass
class Findings:
    cases: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    largest_case: int = 0
    kept: list[bytes] = field(default_factory=list)
    """The first generated payloads, for the worker run."""


def giants() -> dict[str, bytes]:
    text = "x" * (10 * MEGABYTE)
    gemini = '{"candidates":[{"content":{"parts":[{"text":"%s"}]}}]}'
    filler = "y" * (CAP - len(gemini) + 2 - 64)
    return {
        "10 MB string": (gemini % text).encode(),
        "10 MB string, invalid UTF-8": (gemini % text).encode().replace(b"xxxx", b"x\xff\xfex", 1),
        "200k-deep nesting": b'{"choices":' + b"[" * 200_000 + b"]" * 200_000 + b"}",
        "2 MB flood of <": (gemini % ("<" * (2 * MEGABYTE))).encode(),
        "500k-item array": b'{"candidates":[{"content":{"parts":[' + b'{"text":"x"},' * 500_000
        + b'{"text":"x"}]}}]}',
        "just under the cap": (gemini % filler).encode(),
        "just over the cap (not JSON)": b"\xff" * (CAP + 1),
    }  # fmt: skip


def normalize_case(payload: bytes, findings: Findings) -> None:
    findings.cases += 1
    findings.largest_case = max(findings.largest_case, len(payload))
    try:
        record = thoughtline.normalize(payload, max_payload_bytes=CAP)
        thoughtline.encode(record)
    except NormalizeError as error:
        findings.outcomes[error.reason] += 1
    except Exception as error:  # the point of the run: anything else is a finding
        findings.failures.append(f"{type(error).__name__} on {payload[:80]!r}")
    else:
        findings.outcomes["record"] += 1


def run_generated(cases: int, keep: int, random_seed: int) -> Findings:
    """`cases` payloads from the hostile strategies (generation only: nothing to shrink)."""
    findings = Findings()

    @seed(random_seed)
    @settings(max_examples=cases, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(payload=st.one_of(mutated_payloads(), broken_bytes()))
    def one(payload: bytes) -> None:
        if len(findings.kept) < keep:
            findings.kept.append(payload)
        normalize_case(payload, findings)

    one()
    return findings


def peak_growth(payload: bytes) -> tuple[str, float]:
    """(outcome, peak RSS growth in MB) of normalizing `payload` once."""
    before = _reset_peak()
    findings = Findings()
    normalize_case(payload, findings)
    outcome = findings.failures[0] if findings.failures else next(iter(findings.outcomes))
    return outcome, (_status_kilobytes("VmHWM") - before) / 1024


def run_worker(payloads: list[bytes], directory: Path) -> tuple[list[str], dict[str, float]]:
    """Every payload through one real worker; (failures, figures)."""
    failures: list[str] = []
    server = RedisServer(directory / "redis").start()
    worker_settings = load_settings(redis_url=server.url, max_payload_bytes=CAP, block_ms=200,
                                    batch_size=50, metrics_port=0)  # fmt: skip
    fleet = Fleet(worker_settings, directory / "workers", 1)
    client = redis.Redis.from_url(server.url)
    monitor = HealthMonitor(fleet)
    started = time.monotonic()
    try:
        fleet.start()
        pid = fleet.workers[0].process.pid
        failures += fleet.health_problems()  # started: its resting size is the baseline
        monitor.start()
        resting_megabytes = _status_kilobytes("VmRSS", pid) / 1024
        for number, payload in enumerate(payloads):
            client.xadd(worker_settings.input_stream, {"payload": payload, "id": f"h-{number}"})
        done = 0
        deadline = time.monotonic() + 300
        while done < len(payloads) and time.monotonic() < deadline:
            time.sleep(0.2)
            done = client.xlen(worker_settings.output_stream) + client.xlen(
                worker_settings.dead_stream)  # fmt: skip
        peak_megabytes = _status_kilobytes("VmHWM", pid) / 1024
        monitor.stop()
        if monitor.longest_gap > MAX_HEALTHZ_GAP_SECONDS:
            failures.append(f"/healthz went {monitor.longest_gap:.1f} s unanswered")
        failures += fleet.health_problems()
        if fleet.workers[0].process.pid != pid or fleet.self_exits:
            failures.append(f"the worker stopped: exits {fleet.self_exits}")
        records = stream_entries(client, worker_settings.output_stream)
        dead = stream_entries(client, worker_settings.dead_stream)
        seen = Counter(fields[b"id"] for _, fields in [*records, *dead])
        expected = {f"h-{number}".encode() for number in range(len(payloads))}
        if set(seen) != expected or any(count != 1 for count in seen.values()):
            failures.append(f"{len(expected - set(seen))} entries without an outcome, "
                            f"{sum(c - 1 for c in seen.values() if c > 1)} with two")  # fmt: skip
        changed = sum(fields.get(b"payload") != payloads[int(fields[b"id"][2:])]
                      for _, fields in dead)  # fmt: skip
        if changed:
            failures.append(f"{changed} dead letters whose payload changed")
        figures = {"records": len(records), "dead letters": len(dead),
                   "seconds": time.monotonic() - started,
                   "worker RSS at rest MB": resting_megabytes,
                   "worker peak RSS MB": peak_megabytes,
                   "longest /healthz silence ms": monitor.longest_gap * 1000}  # fmt: skip
        exit_codes = fleet.stop_all()
        if exit_codes != [0]:
            failures.append(f"SIGTERM exit status {exit_codes}")
    finally:
        monitor.stop()
        fleet.kill_all()
        client.close()
        server.kill()
    return failures, figures


def _reset_peak() -> int:
    """Reset this process's peak RSS to its current RSS (Linux >= 4.0); returns it in kB."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_kilobytes("VmRSS")


def _status_kilobytes(name: str, pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise LookupError(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--worker-cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args(argv)
    started = time.monotonic()
    findings = run_generated(arguments.cases, arguments.worker_cases, arguments.seed)
    failures = list(findings.failures)
    print(f"normalizer: {findings.cases} generated cases in {time.monotonic() - started:.0f} s, "
          f"largest {findings.largest_case / MEGABYTE:.1f} MB; outcomes "
          f"{dict(findings.outcomes.most_common())}; other exceptions: "
          f"{len(findings.failures)}")  # fmt: skip
    print(f"giants (size cap {CAP // MEGABYTE} MiB), peak RSS growth while normalizing:")
    giant_payloads = giants()
    for name, payload in giant_payloads.items():
        outcome, growth = peak_growth(payload)
        if " on " in outcome:
            failures.append(outcome)
        ratio = growth * MEGABYTE / len(payload)
        print(f"  {name:30} {len(payload) / MEGABYTE:7.1f} MB -> {outcome:14} "
              f"+{growth:6.1f} MB ({ratio:.1f}x the payload)")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="thoughtline-hostile-") as directory:
        worker_payloads = findings.kept + list(giant_payloads.values())
        worker_failures, figures = run_worker(worker_payloads, Path(directory))
    failures += worker_failures
    print(f"worker: {len(worker_payloads)} entries ({len(findings.kept)} generated + "
          f"{len(giant_payloads)} giants): " + ", ".join(
              f"{name} {value:.0f}" for name, value in figures.items()))  # fmt: skip
    print("RESULT: " + ("PASS" if not failures else "FAIL: " + "; ".join(failures[:10])))
    return 0 if not failures else 1


if __name__ == "__main__":
    raise SystemExit(main())
