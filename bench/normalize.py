"""Normalization throughput, as ratios against ceilings measured in the same process run.

    python bench/normalize.py [--repeat N] [--seconds S] [--no-litellm]

Rates are per-process CPU time (`time.process_time`), so other jobs on a shared machine do not
count. Contenders are interleaved round by round so noise hits them alike. Every rate is the
median of --repeat rounds, and every ratio is the median of the per-round ratios. Over the
non-streamed corpus bodies (`../shared/corpus`):

1. Per format: responses/s of `thoughtline.normalize` (format given), and the same rate
   divided by a plain `msgspec.json.decode` of the same bodies (size-neutral: the corpus bodies
   of different formats differ ~40x in size, which alone moves responses/s). Goal: the slowest
   format >= 0.6x the fastest.
2. Gemini: normalize / plain decode. Goal: >= 0.45.
3. With the `bench` extra (litellm): the same bodies through LiteLLM's per-provider
   `transform_response` (see bench/litellm_baseline.py), and our ratio to it per format and
   over the whole corpus. Goal: >= 20x. Skipped, with a message, when litellm is absent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

import thoughtline
from thoughtline.normalize import FORMATS

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"

CORPUS_DIRECTORIES: dict[str, tuple[str, ...]] = {
    "gemini": ("gemini",),
    "anthropic": ("anthropic",),
    "openai_chat": ("openai-chat", "openai-compat"),
    "openai_responses": ("openai-responses",),
    "bedrock_converse": ("bedrock-converse",),
    "mistral": ("mistral",),
    "ollama": ("ollama-native",),
}
"""Registered format -> the corpus directories whose `.json` bodies are of that format."""

Payload = TypeVar("Payload")


def corpus_bodies(directory: str) -> list[bytes]:
    return [path.read_bytes() for path in sorted((CORPUS / directory).glob("*.json"))]


def format_bodies(format_name: str) -> list[bytes]:
    directories = CORPUS_DIRECTORIES.get(format_name, ())
    return [body for directory in directories for body in corpus_bodies(directory)]


def rate(work: Callable[[Payload], object], payloads: Sequence[Payload], seconds: float) -> float:
    """Payloads per CPU second, running `work` over `payloads` for about `seconds` of CPU."""
    done = 0
    start = time.process_time()
    deadline = start + seconds
    while time.process_time() < deadline:
        for payload in payloads:
            work(payload)
        done += len(payloads)
    return done / (time.process_time() - start)


class Rates:
    """Per-round rates of several contenders measured side by side."""

    def __init__(self, samples: dict[str, list[float]]) -> None:
        self.samples = samples

    def __getitem__(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def ratio(self, numerator: str, denominator: str) -> float:
        """The median of the per-round ratios (robust to a round slowed by the machine)."""
        pairs = zip(self.samples[numerator], self.samples[denominator], strict=True)
        return statistics.median(ours / theirs for ours, theirs in pairs)


def median_rates(
    contenders: dict[str, Callable[[Payload], object]],
    payloads: Sequence[Payload],
    repeat: int,
    seconds: float,
) -> Rates:
    """Interleave the contenders round by round so machine noise hits them alike."""
    for work in contenders.values():  # warm up: lazy imports and caches stay out of the figures
        for payload in payloads:
            work(payload)
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeat):
        for name, work in contenders.items():
            samples[name].append(rate(work, payloads, seconds))
    return Rates(samples)


def normalizer(format_name: str) -> Callable[[bytes], object]:
    return lambda payload: thoughtline.normalize(payload, format_name)


def per_format(repeat: int, seconds: float) -> dict[str, float]:
    """Responses/s per registered format, and its fraction of the plain-decode ceiling."""
    decoder = msgspec.json.Decoder()
    rates: dict[str, float] = {}
    fractions: dict[str, float] = {}
    print(
        f"  {'format':18s} {'bodies':>6s} {'KiB/body':>8s} {'responses/s':>12s} {'of decode':>9s}"
    )
    for format_name in FORMATS:
        payloads = format_bodies(format_name)
        if not payloads:
            print(f"  {format_name:18s} no corpus bodies")
            continue
        measured = median_rates(
            {"normalize": normalizer(format_name), "decode": decoder.decode},
            payloads,
            repeat,
            seconds,
        )
        rates[format_name] = measured["normalize"]
        fractions[format_name] = measured.ratio("normalize", "decode")
        size = sum(map(len, payloads)) / len(payloads) / 1024
        print(
            f"  {format_name:18s} {len(payloads):6d} {size:8.1f} "
            f"{rates[format_name]:12,.0f} {fractions[format_name]:9.2f}"
        )
    _print_spread("responses/s", rates)
    _print_spread("normalize / decode (size-neutral)", fractions)
    return rates


def _print_spread(what: str, values: dict[str, float]) -> None:
    slowest = min(values, key=values.__getitem__)
    fastest = max(values, key=values.__getitem__)
    spread = values[slowest] / values[fastest]
    print(
        f"per format, {what}: slowest ({slowest}) / fastest ({fastest}) = {spread:.2f}x "
        "(goal >= 0.6)"
    )


def gemini_against_decode(repeat: int, seconds: float) -> float:
    payloads = corpus_bodies("gemini")
    decoder = msgspec.json.Decoder()
    rates = median_rates(
        {
            "msgspec.json.decode (ceiling)": decoder.decode,
            "thoughtline.normalize": normalizer("gemini"),
            "normalize + encode": lambda payload: thoughtline.encode(
                thoughtline.normalize(payload, "gemini")
            ),
        },
        payloads,
        repeat,
        seconds,
    )
    for name in rates.samples:
        print(f"  {name:34s} {rates[name]:12,.0f} responses/s")
    ratio = rates.ratio("thoughtline.normalize", "msgspec.json.decode (ceiling)")
    print(f"gemini: normalize / plain decode = {ratio:.2f}x (goal >= 0.45)")
    return ratio


def against_litellm(repeat: int, seconds: float) -> float | None:
    """Our rate over LiteLLM's per format and over the whole corpus; None when skipped."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import litellm_baseline

    version = litellm_baseline.load()
    if version is None:
        print("LiteLLM: skipped (not installed; `pip install -e .[bench]` adds it)")
        return None
    print(f"LiteLLM {version}, per-provider transform_response, same bodies, same run:")
    print(f"  {'format':18s} {'thoughtline/s':>13s} {'litellm/s':>10s} {'ratio':>7s}")
    transforms = {name: litellm_baseline.transform_for(name) for name in FORMATS}
    everything: list[tuple[str, bytes]] = []
    for format_name, transform in transforms.items():
        payloads = format_bodies(format_name)
        if not payloads:
            continue
        everything.extend((format_name, payload) for payload in payloads)
        rates = median_rates(
            {"ours": normalizer(format_name), "litellm": transform}, payloads, repeat, seconds
        )
        ratio = rates.ratio("ours", "litellm")
        print(f"  {format_name:18s} {rates['ours']:13,.0f} {rates['litellm']:10,.0f} {ratio:6.1f}x")
    overall = median_rates(
        {
            "ours": lambda item: thoughtline.normalize(item[1], item[0]),
            "litellm": lambda item: transforms[item[0]](item[1]),
        },
        everything,
        repeat,
        seconds,
    )
    ratio = overall.ratio("ours", "litellm")
    print(
        f"all formats ({len(everything)} bodies): thoughtline / LiteLLM = {ratio:.1f}x "
        "(goal >= 20x)"
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--no-litellm", action="store_true", help="skip the LiteLLM baseline")
    arguments = parser.parse_args()
    repeat, seconds = arguments.repeat, arguments.seconds
    print(f"Corpus {CORPUS}, non-streamed bodies, median of {repeat} rounds of {seconds}s")
    print(f"Per format ({len(FORMATS)} registered), thoughtline.normalize with the format given:")
    per_format(repeat, seconds)
    print(f"Gemini corpus, {len(corpus_bodies('gemini'))} bodies, median of {repeat}")
    gemini_against_decode(repeat, seconds)
    if not arguments.no_litellm:
        against_litellm(repeat, seconds)


if __name__ == "__main__":
    main()
