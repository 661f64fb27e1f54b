"""The live engine in process: CPU time per chunk of `LiveStream.apply`.

    python bench/live_engine.py [--rounds N] [--against CHECKOUT] [--profile]

Feeds the Chat streams bench/live.py publishes (a plain answer and a `<think>`-opened one,
one word a chunk, 100 and 2,500 chunks, the last chunk final) through one engine per stream,
as a worker that keeps its engines does, and prints the CPU microseconds per chunk
(`time.process_time`, the median of the rounds; the final step and its record included).

`--against CHECKOUT` runs the same measure for another checkout (its `service` on the path)
in alternated subprocesses, this one and that one round by round, and prints both medians:
an A/B on a busy machine. `--profile` prints a cProfile of one round instead.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench.live, run as a script

from bench.live import _chat, plain_pieces, think_pieces

SHAPES = (("plain", 100), ("think", 100), ("plain", 2500), ("think", 2500))


def _streams(kind: str, chunks: int, per_round: int = 20_000) -> list[list[bytes]]:
    pieces = plain_pieces(chunks - 1) if kind == "plain" else think_pieces(chunks - 1)
    count = max(1, per_round // chunks)
    return [_chat(f"{kind}-{number}", pieces) for number in range(count)]


def _round(streams: list[list[bytes]]) -> float:
    """CPU µs per chunk over all the streams."""
    from thoughtline.live import LiveChunk, LiveStream

    entries = [
        [
            LiveChunk(f"s{number}", seq, "openai_chat", payload, seq == len(payloads) - 1)
            for seq, payload in enumerate(payloads)
        ]
        for number, payloads in enumerate(streams)
    ]
    total = sum(len(stream) for stream in entries)
    started = time.process_time()
    for stream in entries:
        engine = LiveStream.start(stream[0])
        for chunk in stream:
            step = engine.apply(chunk)
        assert step.record is not None
    return (time.process_time() - started) / total * 1e6


def measure(rounds: int, per_round: int) -> dict[str, list[float]]:
    made = {f"{kind} x {chunks}": _streams(kind, chunks, per_round) for kind, chunks in SHAPES}
    for streams in made.values():
        _round(streams[:2])  # warm up: imports, caches
    return {name: [_round(streams) for _ in range(rounds)] for name, streams in made.items()}


def _child(service: Path, rounds: int, per_round: int) -> dict[str, list[float]]:
    env = dict(os.environ, PYTHONPATH=f"{service}:{Path(__file__).resolve().parents[1]}")
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--rounds",
            str(rounds),
            "--per-round",
            str(per_round),
            "--json",
        ],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, list[float]] = json.loads(out)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout, measured alternately")
    parser.add_argument("--alternations", type=int, default=4)
    parser.add_argument("--per-round", type=int, default=20_000, help="chunks of each shape")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.profile:
        streams = _streams("think", 100) + _streams("plain", 2500)
        _round(streams[:2])
        profile = cProfile.Profile()
        profile.runcall(_round, streams)
        pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        return 0
    if args.json:
        print(json.dumps(measure(args.rounds, args.per_round)))
        return 0
    if args.against is None:
        for name, values in measure(args.rounds, args.per_round).items():
            print(f"{name:>13}: {statistics.median(values):6.2f} µs CPU per chunk")
        return 0
    here = Path(__file__).resolve().parents[1] / "service"
    there = args.against.resolve() / "service"
    sides: dict[str, dict[str, list[float]]] = {"this": {}, "against": {}}
    for _ in range(args.alternations):
        for side, service in (("against", there), ("this", here)):
            for name, values in _child(service, args.rounds, args.per_round).items():
                sides[side].setdefault(name, []).extend(values)
    for name in sides["this"]:
        before = statistics.median(sides["against"][name])
        after = statistics.median(sides["this"][name])
        print(
            f"{name:>13}: {before:6.2f} -> {after:6.2f} µs CPU per chunk "
            f"({after / before - 1:+.0%}; {args.against} -> this checkout)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
