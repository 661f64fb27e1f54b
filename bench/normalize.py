"""Normalization throughput, as ratios against ceilings measured in the same process run.

    python bench/normalize.py [--repeat N] [--seconds S]

Gemini: responses/s of `thoughtline.normalize` over the Gemini corpus bodies, and its ratio to
a plain `msgspec.json.decode` of the same payloads (the ceiling: no normalizer can read JSON
faster than the decoder it is built on). Goal: ratio >= 0.45. Medians of --repeat rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

import thoughtline

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def corpus_bodies(directory: str) -> list[bytes]:
    return [path.read_bytes() for path in sorted((CORPUS / directory).glob("*.json"))]


def rate(work: Callable[[bytes], object], payloads: list[bytes], seconds: float) -> float:
    """Payloads per second, running `work` over `payloads` in a loop for about `seconds`."""
    done = 0
    start = time.perf_counter()
    deadline = start + seconds
    while time.perf_counter() < deadline:
        for payload in payloads:
            work(payload)
        done += len(payloads)
    return done / (time.perf_counter() - start)


def median_rates(
    contenders: dict[str, Callable[[bytes], object]],
    payloads: list[bytes],
    repeat: int,
    seconds: float,
) -> dict[str, float]:
    """Interleave the contenders round by round so machine noise hits them alike."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, work in contenders.items():
            samples[name].append(rate(work, payloads, seconds))
    return {name: statistics.median(values) for name, values in samples.items()}


def gemini_against_decode(repeat: int, seconds: float) -> float:
    payloads = corpus_bodies("gemini")
    decoder = msgspec.json.Decoder()
    rates = median_rates(
        {
            "msgspec.json.decode (ceiling)": decoder.decode,
            "thoughtline.normalize": lambda payload: thoughtline.normalize(payload, "gemini"),
            "normalize + encode": lambda payload: thoughtline.encode(
                thoughtline.normalize(payload, "gemini")
            ),
        },
        payloads,
        repeat,
        seconds,
    )
    for name, value in rates.items():
        print(f"  {name:34s} {value:12,.0f} responses/s")
    ratio = rates["thoughtline.normalize"] / rates["msgspec.json.decode (ceiling)"]
    print(f"gemini: normalize / plain decode = {ratio:.2f}x (goal >= 0.45)")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5)
    arguments = parser.parse_args()
    print(f"Gemini corpus, {len(corpus_bodies('gemini'))} bodies, median of {arguments.repeat}")
    gemini_against_decode(arguments.repeat, arguments.seconds)


if __name__ == "__main__":
    main()
