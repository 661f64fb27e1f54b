"""How long the command line takes to start, against a bare interpreter.

    python bench/cli_start.py [--repeat N] [--no-bytecode-cache]

Runs `python -c pass`, `thoughtline --version` and `thoughtline normalize small.json` (a 1 KB
Chat body written to a temporary folder) as fresh processes, each --repeat times,
interleaved, and prints the median wall time and CPU time of each and what each command adds
to the bare interpreter (on a busy machine the CPU time is the steadier figure). Goal:
within 0.3 s of `python -c pass`. The commands run as `python -m thoughtline.cli` with a copy
of this checkout's `service/thoughtline`, made in a temporary folder, first on the path: the
figure is this checkout's whether or not it is installed, and no bytecode left beside its
sources counts. By default its bytecode is cached as an
installed package has it (pip compiles on install): one uncounted run of each command writes it
beside the copy. With --no-bytecode-cache nothing is written (`PYTHONDONTWRITEBYTECODE=1`) and
every run compiles the package's modules from source again, what a checkout run with that
setting pays; the standard library and msgspec keep their installed bytecode either way.

2026-12-02, a 2-core machine shared with six other jobs (CPU time added to `python -c pass`):
before the service commands were split off, `--version` +0.89 s and `normalize small.json`
+0.84 s; after, +0.16 s and +0.33 s (the package compiled from source in every run, as
--no-bytecode-cache does now). Later that day, the machine under a load of 3, this script
run on this version and on the version before, one after the other, `--version` /
`normalize small.json`: bytecode cached +0.064 s / +0.073 s (before: +0.065 s / +0.112 s);
--no-bytecode-cache +0.065 s / +0.121 s (before: +0.064 s / +0.159 s). `normalize` no longer
loads the version lookup, the request check or the history engine, and compiles only the block
patterns of the dialects its text holds (tests/cli/test_fast_start.py).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_SECONDS = 0.3
SERVICE = Path(__file__).resolve().parents[1] / "service"
SMALL_BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "<think>add them</think>2 + 2 = 4"},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21},
}


def seconds(command: list[str], environment: dict[str, str]) -> tuple[float, float]:
    """Wall time, and the CPU time (user + system) the process used: on a shared machine the
    CPU time is the figure that does not depend on what else runs."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, env=environment, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _environment(folder: Path, *, cached: bool) -> dict[str, str]:
    """The runs' environment: a copy of this checkout's package, made in `folder`, first on
    the path; its bytecode written beside it, or never written (every run compiles it)."""
    copy = folder / "service"
    shutil.copytree(
        SERVICE / "thoughtline",
        copy / "thoughtline",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    environment = {**os.environ, "PYTHONPATH": str(copy)}
    environment.pop("PYTHONPYCACHEPREFIX", None)
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    if not cached:
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
    return environment


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile the package from source in every run (no .pyc written or read)",
    )
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        environment = _environment(Path(folder), cached=not arguments.no_bytecode_cache)
        small = Path(folder) / "small.json"
        small.write_text(json.dumps(SMALL_BODY))
        cli = [sys.executable, "-m", "thoughtline.cli"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "thoughtline --version": [*cli, "--version"],
            "thoughtline normalize small.json": [*cli, "normalize", str(small)],
        }
        for command in commands.values():  # not counted: writes the bytecode, when cached
            seconds(command, environment)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(arguments.repeat):
            for name, command in commands.items():
                wall, cpu = seconds(command, environment)
                walls[name].append(wall)
                cpus[name].append(cpu)
    cache = "no bytecode cache" if arguments.no_bytecode_cache else "bytecode cached"
    print(f"median of {arguments.repeat} runs, fresh processes, {cache}: wall time, CPU time")
    for label, times in (("wall", walls), ("cpu", cpus)):
        bare = statistics.median(times["python -c pass"])
        for name, measured in times.items():
            median = statistics.median(measured)
            added = median - bare
            verdict = ""
            if name != "python -c pass":
                within = "within" if added <= GOAL_SECONDS else "over"
                verdict = f"  +{added:.3f} s ({within} the {GOAL_SECONDS} s goal)"
            print(f"  {label:<4} {name:<34} {median:.3f} s{verdict}")


if __name__ == "__main__":
    main()
