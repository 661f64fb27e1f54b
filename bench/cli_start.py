"""How long the command line takes to start, against a bare interpreter.

    python bench/cli_start.py [--repeat N] [--no-bytecode-cache]

Runs `python -c pass`, `thoughtline --version` and `thoughtline normalize small.json` (a 1 KB
Chat body written to a temporary folder) as fresh processes, each --repeat times,
interleaved, and prints the median wall time and CPU time of each and what each command adds
to the bare interpreter (on a busy machine the CPU time is the steadier figure). Goal:
within 0.3 s of `python -c pass`. The commands run as `python -m thoughtline.cli`, with the
checkout's `service/` first on the path, so the figure is this checkout's whether or not it
is installed.

The package's bytecode is cached as an installed package has it (pip compiles on install):
the runs write and read it under the temporary folder (`PYTHONPYCACHEPREFIX`), after one
run of each command that is not counted, whatever `PYTHONDONTWRITEBYTECODE` says. With
--no-bytecode-cache every run compiles the package's modules from source again (what a
checkout run under `PYTHONDONTWRITEBYTECODE=1` pays, about as much again as the imports).

2026-12-02, a 2-core machine shared with six other jobs (CPU time added to `python -c pass`):
before the service commands were split off, `--version` +0.89 s and `normalize small.json`
+0.84 s; after, +0.16 s and +0.33 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
    """The runs' environment: this checkout's package first on the path, and its bytecode
    cached under `folder` (or never written, so every run compiles it)."""
    environment = {**os.environ, "PYTHONPATH": str(SERVICE)}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    environment.pop("PYTHONPYCACHEPREFIX", None)
    if cached:
        environment["PYTHONPYCACHEPREFIX"] = str(folder / "bytecode")
    else:
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
        for command in commands.values():  # not counted: writes the bytecode cache
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
