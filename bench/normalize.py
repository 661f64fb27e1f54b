"""Normalization throughput, as ratios against a floor measured in the same process run.

    python bench/normalize.py [--repeat N] [--seconds S] [--no-litellm]
    python bench/normalize.py --floor-only [--format NAME ...]

Rates are per-process CPU time (`time.process_time`), so other jobs on a shared machine do not
count. Contenders are interleaved round by round so noise hits them alike. Every rate is the
median of --repeat rounds, and every ratio is the median of the per-round ratios.

1. The floor, per format: responses/s of `thoughtline.normalize` (format given) followed by
   `thoughtline.encode` of the record, against `msgspec.json.Decoder().decode` followed by
   `msgspec.json.Encoder().encode` of the decoded value, on the same bytes. A normalizer
   cannot be faster than reading the payload and writing a record of it. Goal: every format
   >= 0.8 of the floor. Measured on synthetic bodies shaped like the recorded ones
   (bench/payloads.py: 0.7-22 KB, a third with astral characters, signatures, tool calls; Chat
   twice, once with its reasoning inline in `<think>`), and on the recorded corpus beside the
   checkout (non-streamed bodies; skipped when absent).
2. Per format over the corpus: responses/s of `normalize` alone, and its fraction of a plain
   `msgspec.json.decode` of the same bodies (size-neutral: the corpus bodies of different
   formats differ ~40x in size, which alone moves responses/s).
3. With the `bench` extra (litellm): the synthetic bodies and the corpus through LiteLLM's
   per-provider `transform_response` (see bench/litellm_baseline.py), and our ratio to it per
   format and over all bodies. Goal: >= 12x. Skipped, with a message, when litellm is absent.
4. Inline reasoning: the corpus bodies whose visible text holds inline tags (real responses
   of OpenAI-compatible servers), each against its same-size plain-text twin (the tags'
   brackets swapped for parentheses, so nothing is extracted). Goal: >= 0.8x. Then synthetic
   Chat bodies of 4 KB, one per dialect kind (`<think>`, `[THINK]`, harmony, Gemma, an orphan
   closer), the same way. And a 100 KB answer full of fenced code: extraction costs one pass
   (its time in units of one regex scan for the candidate characters, at 100 KB and at 1 MB:
   the same figure at both sizes means linear).
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
from thoughtline.contract.record import KNOWN_FORMATS as FORMATS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bound  # beside this script
import payloads
from payloads import CORPUS, CORPUS_DIRECTORIES, corpus_bodies, format_bodies

FLOOR_GOAL = 0.8
LITELLM_GOAL = 12.0

Payload = TypeVar("Payload")


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
    """Responses/s per registered format over the corpus, and its fraction of a plain decode."""
    decoder = msgspec.json.Decoder()
    rates: dict[str, float] = {}
    fractions: dict[str, float] = {}
    print(
        f"  {'format':18s} {'bodies':>6s} {'KiB/body':>8s} {'responses/s':>12s} {'of decode':>9s}"
    )
    for format_name in FORMATS:
        bodies = format_bodies(format_name)
        if not bodies:
            print(f"  {format_name:18s} no corpus bodies")
            continue
        measured = median_rates(
            {"normalize": normalizer(format_name), "decode": decoder.decode},
            bodies,
            repeat,
            seconds,
        )
        rates[format_name] = measured["normalize"]
        fractions[format_name] = measured.ratio("normalize", "decode")
        size = sum(map(len, bodies)) / len(bodies) / 1024
        print(
            f"  {format_name:18s} {len(bodies):6d} {size:8.1f} "
            f"{rates[format_name]:12,.0f} {fractions[format_name]:9.2f}"
        )
    _print_spread("responses/s", rates)
    _print_spread("normalize / decode (size-neutral)", fractions)
    return rates


def _print_spread(what: str, values: dict[str, float]) -> None:
    slowest = min(values, key=values.__getitem__)
    fastest = max(values, key=values.__getitem__)
    spread = values[slowest] / values[fastest]
    print(f"per format, {what}: slowest ({slowest}) / fastest ({fastest}) = {spread:.2f}x")


def floor_contenders(format_name: str) -> dict[str, Callable[[bytes], object]]:
    """`normalize` + `encode` against decoding the bytes and encoding what came out."""
    decoder = msgspec.json.Decoder()
    encoder = msgspec.json.Encoder()
    normalize, encode = thoughtline.normalize, thoughtline.encode

    def ours(payload: bytes) -> object:
        return encode(normalize(payload, format_name))

    def floor(payload: bytes) -> object:
        return encoder.encode(decoder.decode(payload))

    return {"normalize+encode": ours, "floor": floor}


def with_bound(
    contenders: dict[str, Callable[[bytes], object]], kind: str, name: str
) -> dict[str, Callable[[bytes], object]]:
    """The contenders, plus the least-work reader of bench/bound.py on the synthetic bodies
    it has one for."""
    reader = bound.READERS.get(name) if kind == "synthetic" else None
    return contenders if reader is None else {**contenders, "bound": reader}


def against_floor(
    repeat: int, seconds: float, only: frozenset[str] = frozenset()
) -> dict[str, float]:
    """Per format, on the synthetic bodies and on the corpus: ours / the floor (only the
    formats in `only`, when given)."""
    print(
        f"  {'bodies':8s} {'format':18s} {'n':>3s} {'KiB/body':>8s} {'ours/s':>9s} "
        f"{'floor/s':>9s} {'ratio':>6s} {'bound':>6s} {'of bound':>8s}"
    )
    ratios: dict[str, float] = {}
    rows: list[tuple[str, str, str, list[bytes]]] = [
        ("synthetic", name, format_name, payloads.bodies(name))
        for name, (format_name, _) in payloads.BUILDERS.items()
    ]
    rows += [("corpus", name, name, format_bodies(name)) for name in FORMATS]
    if only:
        rows = [row for row in rows if row[2] in only]
    for kind, name, format_name, bodies in rows:
        if not bodies:
            print(f"  {kind:8s} {name:18s} no bodies")
            continue
        contenders = with_bound(floor_contenders(format_name), kind, name)
        measured = median_rates(contenders, bodies, repeat, seconds)
        ratio = measured.ratio("normalize+encode", "floor")
        ratios[f"{kind} {name}"] = ratio
        size = sum(map(len, bodies)) / len(bodies) / 1024
        bound_columns = ""
        if "bound" in contenders:
            bound_columns = (
                f" {measured.ratio('bound', 'floor'):6.2f}"
                f" {measured.ratio('normalize+encode', 'bound'):8.2f}"
            )
        print(
            f"  {kind:8s} {name:18s} {len(bodies):3d} {size:8.1f} "
            f"{measured['normalize+encode']:9,.0f} {measured['floor']:9,.0f} {ratio:6.2f}"
            + bound_columns
        )
    worst = min(ratios, key=ratios.__getitem__)
    print(
        f"floor: slowest {worst} = {ratios[worst]:.2f} of decode+encode "
        f"(goal: every format >= {FLOOR_GOAL})"
    )
    return ratios


def against_litellm(repeat: int, seconds: float) -> float | None:
    """Our rate over LiteLLM's per format and over all bodies; None when skipped."""
    import litellm_baseline

    version = litellm_baseline.load()
    if version is None:
        print("LiteLLM: skipped (not installed; `pip install -e .[bench]` adds it)")
        return None
    print(f"LiteLLM {version}, per-provider transform_response, same bodies, same run:")
    print(f"  {'bodies':8s} {'format':18s} {'thoughtline/s':>13s} {'litellm/s':>10s} {'ratio':>7s}")
    transforms = {name: litellm_baseline.transform_for(name) for name in FORMATS}
    rows: list[tuple[str, str, str, list[bytes]]] = [
        ("synthetic", name, format_name, payloads.bodies(name))
        for name, (format_name, _) in payloads.BUILDERS.items()
    ]
    rows += [("corpus", name, name, format_bodies(name)) for name in FORMATS]
    everything: list[tuple[str, bytes]] = []
    for kind, name, format_name, bodies in rows:
        if not bodies:
            continue
        everything.extend((format_name, body) for body in bodies)
        rates = median_rates(
            {"ours": normalizer(format_name), "litellm": transforms[format_name]},
            bodies,
            repeat,
            seconds,
        )
        ratio = rates.ratio("ours", "litellm")
        print(
            f"  {kind:8s} {name:18s} {rates['ours']:13,.0f} {rates['litellm']:10,.0f} {ratio:6.1f}x"
        )
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
        f"all bodies ({len(everything)}): thoughtline / LiteLLM = {ratio:.1f}x "
        f"(goal >= {LITELLM_GOAL:.0f}x)"
    )
    return ratio


_ANSWER_LINE = "The median of the list is the middle value once the list is sorted. "


def _chat_body(content: str) -> bytes:
    message = {"role": "assistant", "content": content}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    body = {"id": "b", "object": "chat.completion", "model": "m", "choices": [choice]}
    return msgspec.json.encode(body)


def _same_size_plain(tagged: str) -> str:
    text = _ANSWER_LINE * (len(tagged) // len(_ANSWER_LINE) + 1)
    return text[: len(tagged)]


INLINE_BLOCKS: dict[str, str] = {
    "think": "<think>{reasoning}</think>\n\n{answer}",
    "mistral": "[THINK]{reasoning}[/THINK]{answer}",
    "harmony": "<|channel|>analysis<|message|>{reasoning}<|end|>"
    "<|start|>assistant<|channel|>final<|message|>{answer}<|return|>",
    "gemma": "<|channel>thought\n{reasoning}<channel|>{answer}",
    "orphan closer": "{reasoning}</think>\n\n{answer}",
}
"""One answer per dialect kind: 1.5 KB of reasoning, then 2.5 KB of answer."""


def _untagged(body: bytes) -> bytes:
    """The same body, the same size, with no delimiter left: `<think>` becomes `(think)`."""
    return body.replace(b"<think>", b"(think)").replace(b"</think>", b"(/think)")


def corpus_inline_against_plain(repeat: int, seconds: float) -> float | None:
    """Real bodies with inline tags against their same-size twins without them."""
    bodies = [
        body
        for directory in CORPUS_DIRECTORIES["openai_chat"]
        for body in corpus_bodies(directory)
        if b"<think>" in body and b"</think>" in body
    ]
    if not bodies:
        print("  no corpus body with inline tags")
        return None

    def work(payload: bytes) -> object:
        return thoughtline.normalize(payload, "openai_chat")

    rates = _paired_rates(
        {"tagged": work, "plain": work},
        {"tagged": bodies, "plain": [_untagged(body) for body in bodies]},
        repeat,
        seconds,
    )
    ratio = rates.ratio("tagged", "plain")
    size = sum(map(len, bodies)) / len(bodies) / 1024
    print(
        f"inline tags, {len(bodies)} corpus bodies ({size:.1f} KiB each): tagged / same-size "
        f"plain = {ratio:.2f}x (goal >= 0.8)"
    )
    return ratio


def inline_against_plain(repeat: int, seconds: float) -> float:
    reasoning = ("First sort the list, then take the middle element. " * 30)[:1500]
    answer = (_ANSWER_LINE * 40)[:2500]
    worst = float("inf")
    print(f"  {'dialect':14s} {'tagged/s':>10s} {'plain/s':>10s} {'ratio':>6s}")
    for name, template in INLINE_BLOCKS.items():
        tagged = template.format(reasoning=reasoning, answer=answer)
        contenders = {
            "tagged": lambda payload: thoughtline.normalize(payload, "openai_chat"),
            "plain": lambda payload: thoughtline.normalize(payload, "openai_chat"),
        }
        rates = _paired_rates(
            contenders,
            {"tagged": [_chat_body(tagged)], "plain": [_chat_body(_same_size_plain(tagged))]},
            repeat,
            seconds,
        )
        ratio = rates.ratio("tagged", "plain")
        worst = min(worst, ratio)
        print(f"  {name:14s} {rates['tagged']:10,.0f} {rates['plain']:10,.0f} {ratio:6.2f}")
    print(f"synthetic 4 KB answers: slowest dialect / same-size plain text = {worst:.2f}x")
    return worst


def _paired_rates(
    contenders: dict[str, Callable[[bytes], object]],
    payloads: dict[str, list[bytes]],
    repeat: int,
    seconds: float,
) -> Rates:
    """Like `median_rates`, with each contender on its own payloads."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for name, work in contenders.items():
        work(payloads[name][0])
    for _ in range(repeat):
        for name, work in contenders.items():
            samples[name].append(rate(work, payloads[name], seconds))
    return Rates(samples)


def fenced_code_passes(repeat: int, seconds: float) -> float:
    """Extraction time of a code-heavy answer in units of one candidate scan, at two sizes."""
    import re

    from thoughtline.reasoning.shortcuts import extract

    candidates = re.compile(r"[<\[◁`~]")
    block = (
        "Strip the reasoning before showing the answer:\n\n```python\nimport re\n\n"
        'THINK = re.compile(r"<think>.*?</think>", re.DOTALL)\n\n'
        "def visible(text: str) -> str:\n"
        '    return THINK.sub("", text).strip()  # `<think>` never reaches users\n```\n\n'
        "Inline, `[THINK]` and `<|channel|>` are text too.\n\n"
    )
    figures = []
    for size in (100_000, 1_000_000):
        text = (block * (size // len(block) + 1))[:size]
        rates = median_rates(
            {
                "extract": extract,
                "one scan": lambda value: sum(1 for _ in candidates.finditer(value)),
            },
            [text],
            repeat,
            seconds,
        )
        passes = rates.ratio("one scan", "extract")
        figures.append(passes)
        print(f"  {size // 1000:5d} KB of fenced code: extract = {passes:.1f} candidate scans")
    growth = figures[1] / figures[0]
    print(
        f"fenced code: {figures[0]:.1f} scans at 100 KB, {figures[1]:.1f} at 1 MB "
        f"(1 MB / 100 KB = {growth:.2f}: linear when ~1)"
    )
    return figures[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--no-litellm", action="store_true", help="skip the LiteLLM baseline")
    parser.add_argument("--floor-only", action="store_true", help="only the floor figures")
    parser.add_argument(
        "--format",
        action="append",
        default=[],
        choices=FORMATS,
        help="with --floor-only: only this format's rows (repeatable)",
    )
    arguments = parser.parse_args()
    repeat, seconds = arguments.repeat, arguments.seconds
    where = CORPUS if CORPUS.is_dir() else f"{CORPUS} not found: the corpus rows are empty"
    print(f"Median of {repeat} rounds of {seconds}s; corpus {where}")
    print("normalize + encode against decode + encode of the same bytes (the floor):")
    against_floor(repeat, seconds, frozenset(arguments.format))
    if arguments.floor_only:
        return
    print(f"Per format over the corpus ({len(FORMATS)} registered), normalize alone:")
    if any(format_bodies(name) for name in FORMATS):
        per_format(repeat, seconds)
    print("Inline reasoning, tagged against same-size plain text:")
    corpus_inline_against_plain(repeat, seconds)
    inline_against_plain(repeat, seconds)
    fenced_code_passes(repeat, seconds)
    if not arguments.no_litellm:
        against_litellm(repeat, seconds)


if __name__ == "__main__":
    main()
