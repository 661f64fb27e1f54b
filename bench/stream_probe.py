"""What asking every body "are you one stream event?" before reading it would cost.

    python bench/stream_probe.py [--repeat N] [--rounds R]

With a format given, the front door reads the body at once and looks at a payload as a
recorded stream only when the body reader refuses it; a stream cut after its first event is
found that way. Deciding it up front instead would run `is_stream_event` (a decode of the
body's top-level shape) on every body. This prints, per format, that probe's per-process CPU
time as a fraction of `thoughtline.normalize`'s on the same bodies (bench/payloads.py),
the two interleaved, the median of --repeat rounds.

2026-12-02, a 2-core machine shared with six other jobs: 0.18 (mistral) to 0.24 (gemini),
so the one-event case stays decided after the refusal.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import thoughtline
from thoughtline.contract.record import KNOWN_FORMATS
from thoughtline.providers.detection import is_stream_event

sys.path.insert(0, str(Path(__file__).resolve().parent))
import payloads  # beside this script


def cpu_seconds(work: Callable[[bytes], object], bodies: Sequence[bytes], rounds: int) -> float:
    start = time.process_time()
    for _ in range(rounds):
        for body in bodies:
            work(body)
    return time.process_time() - start


def probe_fraction(format_name: str, repeat: int, rounds: int) -> float:
    bodies = payloads.bodies(format_name)

    def normalize(body: bytes) -> object:
        return thoughtline.normalize(body, format_name)

    fractions = []
    for _ in range(repeat):
        read = cpu_seconds(normalize, bodies, rounds)
        probed = cpu_seconds(is_stream_event, bodies, rounds)
        fractions.append(probed / read)
    return statistics.median(fractions)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=40)
    arguments = parser.parse_args()
    for format_name in KNOWN_FORMATS:
        fraction = probe_fraction(format_name, arguments.repeat, arguments.rounds)
        print(f"{format_name:<18} is_stream_event / normalize = {fraction:.3f}")


if __name__ == "__main__":
    main()
