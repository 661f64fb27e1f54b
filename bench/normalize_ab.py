"""Normalization throughput of two checkouts, per format, paired in one run.

    python bench/normalize_ab.py --before DIR [--after DIR] [--rounds N] [--seconds S]
                                 [--format NAME ...] [--mode given|detected ...]

Each checkout's package runs in a process of its own (its `service/` first on the path), both
started once and kept; this process hands them the same bodies and asks each in turn, round by
round (the order alternating), for responses per CPU second (`time.process_time` of the process
that normalizes, so other jobs on a shared machine do not count) of `normalize` followed by
`encode`, after one uncounted pass. Per body set and mode it prints both rates (medians of the
rounds) and after / before as the median of the per-round ratios, with their lowest and highest:
a spread that holds 1.0 says the two are the same within the machine's noise.

The bodies: this checkout's synthetic ones (bench/payloads.py, one set per bench format, Chat
twice: with its reasoning inline in `<think>` too), and the recorded corpus beside the checkout
per format (skipped when absent). Modes: `given` (the format named, as the worker reads entries
whose producer names it) and `detected` (no format: detection first). --after defaults to this
checkout; the two checkouts need only share `thoughtline.normalize(payload, format)` and
`thoughtline.encode(record)`, so a checkout from before a refactoring serves as --before
(`git worktree add DIR COMMIT`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))
import payloads  # beside this script

THIS_CHECKOUT = Path(__file__).resolve().parents[1]
MODES = ("given", "detected")

BodySets = dict[str, tuple[str, list[bytes]]]
"""Body set name (`synthetic/<bench name>`, `corpus/<format>`) -> (its format, the bodies)."""


def body_sets(formats: Sequence[str]) -> BodySets:
    """The synthetic sets and the corpus sets of `formats` (every format when empty)."""
    sets: BodySets = {}
    for name, (format_name, _) in payloads.BUILDERS.items():
        if not formats or format_name in formats:
            sets[f"synthetic/{name}"] = (format_name, payloads.bodies(name))
    for format_name in payloads.CORPUS_DIRECTORIES:
        bodies = payloads.format_bodies(format_name)
        if bodies and (not formats or format_name in formats):
            sets[f"corpus/{format_name}"] = (format_name, bodies)
    return sets


class Worker:
    """One checkout's package in a process of its own, measuring on request."""

    def __init__(self, label: str, checkout: Path, sets_file: Path, bytecode: Path) -> None:
        environment = {**os.environ, "PYTHONPATH": str(checkout / "service")}
        environment.pop("PYTHONDONTWRITEBYTECODE", None)
        environment["PYTHONPYCACHEPREFIX"] = str(bytecode)
        self.label = label
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", str(sets_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment,
            text=True,
        )
        loaded = self._reply()
        if not Path(loaded).resolve().is_relative_to(checkout.resolve()):
            raise SystemExit(f"{label}: thoughtline loaded from {loaded}, not from {checkout}")

    def rate(self, set_name: str, mode: str, seconds: float) -> float:
        self._stdin().write(f"{set_name} {mode} {seconds}\n")
        self._stdin().flush()
        return float(self._reply())

    def close(self) -> None:
        self._stdin().close()
        self.process.wait(timeout=60)

    def _stdin(self) -> IO[str]:
        assert self.process.stdin is not None
        return self.process.stdin

    def _reply(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"{self.label}: the worker process ended (see its error above)")
        return line.strip()


def serve(sets_file: Path) -> None:
    """The worker's side: load the package on the path, then answer `SET MODE SECONDS` lines
    with a rate each, until stdin closes."""
    import thoughtline

    sets = msgspec.msgpack.decode(sets_file.read_bytes(), type=BodySets)
    print(thoughtline.__file__, flush=True)
    for line in sys.stdin:
        set_name, mode, seconds = line.split()
        format_name, bodies = sets[set_name]
        given = format_name if mode == "given" else None

        def work(body: bytes, given: str | None = given) -> None:
            thoughtline.encode(thoughtline.normalize(body, given))

        print(cpu_rate(work, bodies, float(seconds)), flush=True)


def cpu_rate(work: Callable[[bytes], None], bodies: Sequence[bytes], seconds: float) -> float:
    """Bodies per CPU second over about `seconds` of CPU, after one uncounted pass (first
    use: lazy imports, compiled patterns)."""
    for body in bodies:
        work(body)
    done = 0
    start = time.process_time()
    while time.process_time() - start < seconds:
        for body in bodies:
            work(body)
        done += len(bodies)
    return done / (time.process_time() - start)


def measure(
    workers: tuple[Worker, Worker],
    names: Sequence[str],
    modes: Sequence[str],
    rounds: int,
    seconds: float,
) -> dict[tuple[str, str], tuple[list[float], list[float]]]:
    """Per (set, mode): the before and after rates of every round, the two asked in turn
    (before first in even rounds, after first in odd ones)."""
    rates: dict[tuple[str, str], tuple[list[float], list[float]]] = {
        (name, mode): ([], []) for name in names for mode in modes
    }
    for round_number in range(rounds):
        for key in rates:
            order = (0, 1) if round_number % 2 == 0 else (1, 0)
            for side in order:
                rates[key][side].append(workers[side].rate(key[0], key[1], seconds))
        print(f"  round {round_number + 1} of {rounds} done", file=sys.stderr, flush=True)
    return rates


def report(sets: BodySets, rates: dict[tuple[str, str], tuple[list[float], list[float]]]) -> None:
    print(
        f"  {'bodies':42s} {'mode':8s} {'before/s':>9s} {'after/s':>9s} "
        f"{'after/before':>12s} {'(lowest-highest)':>16s}"
    )
    for (name, mode), (before, after) in rates.items():
        ratios = [ours / theirs for ours, theirs in zip(after, before, strict=True)]
        label = f"{name} ({sets[name][0]}, {len(sets[name][1])})"
        print(
            f"  {label:42s} {mode:8s} {statistics.median(before):9,.0f} "
            f"{statistics.median(after):9,.0f} {statistics.median(ratios):12.3f} "
            f"{f'{min(ratios):.2f}-{max(ratios):.2f}':>16s}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--before", type=Path, help="the checkout to compare with (required)")
    parser.add_argument("--after", type=Path, default=THIS_CHECKOUT)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.3, help="CPU seconds per measurement")
    parser.add_argument("--format", action="append", default=[], help="only this format")
    parser.add_argument("--mode", action="append", choices=MODES, help="only this mode")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker is not None:
        serve(arguments.worker)
        return
    if arguments.before is None:
        parser.error("--before is required")
    sets = body_sets(arguments.format)
    modes = arguments.mode or list(MODES)
    with tempfile.TemporaryDirectory() as folder:
        sets_file = Path(folder) / "bodies.msgpack"
        sets_file.write_bytes(msgspec.msgpack.encode(sets))
        bytecode = Path(folder) / "bytecode"
        workers = (
            Worker("before", arguments.before, sets_file, bytecode),
            Worker("after", arguments.after, sets_file, bytecode),
        )
        print(f"before: {arguments.before.resolve()}  after: {arguments.after.resolve()}")
        print(
            f"normalize + encode, responses per CPU second: median of {arguments.rounds} "
            f"rounds of {arguments.seconds} s each, the two checkouts asked in turn",
            flush=True,
        )
        rates = measure(workers, list(sets), modes, arguments.rounds, arguments.seconds)
        for worker in workers:
            worker.close()
    report(sets, rates)


if __name__ == "__main__":
    main()
