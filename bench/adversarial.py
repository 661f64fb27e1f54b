"""Adversarial text against real text: what a flood of a delimiter's prefix costs.

    python bench/adversarial.py [--megabytes N] [--repeat N] [--entry-megabytes N]

Inline-reasoning extraction looks for delimiters in every visible text, so a text made of
nothing but the start of a delimiter (`<|<|<|…`, `</</…`, `[THIN[THIN…`, backtick runs, fence
lines) is the one an attacker would send to make extraction dear. Each row is 1 MB (by
default) of one such prefix, timed against the baseline: a same-size real answer full of
markup (HTML tags, links, inline code, fenced code, tables) with no delimiter in it. Goal: every
row at most 4x the baseline.

Three columns per row, each the median of --repeat runs of per-process CPU time:
- `extract`: the whole text at once (what `normalize` does to a visible text);
- `normalize`: a Chat completion whose `content` is the text, through `thoughtline.normalize`
  (JSON decoding, the record and its encoding included);
- `live`: the text fed in 4 KiB chunks to `IncrementalExtractor` (a live stream).

Then one entry of --entry-megabytes (default 32 MiB) of `<|` through `thoughtline.normalize`,
the work a worker thread does for such an entry.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import thoughtline
from thoughtline.reasoning.incremental import IncrementalExtractor
from thoughtline.reasoning.shortcuts import extract

GOAL = 4.0

MARKUP_UNIT = (
    "## Rendering the table\n\n"
    'Use <b>bold</b>, <a href="https://example.com/docs">the docs</a> or [a link](https://e.x/p)'
    " with `a < b` and <br/> where 3 < 4 > 2.\n\n"
    "```python\nif a < b and c > d:\n    items = [1, 2, 3]\n```\n\n"
    "| tag | meaning |\n| --- | --- |\n| <kbd>Ctrl</kbd> | a key ~ 1 |\n\n"
    "<div>\n<p>More</p>\n\n- [x] done\n- [ ] open\n</div>\n\n"
)
"""Markup with no delimiter in it: read by the quick check, the cheapest real answer (so the
strictest baseline)."""
SCANNED_MARKUP_UNIT = MARKUP_UNIT.replace("</div>", "</details>")
"""The same with an HTML `</details>` in each unit: a marker (Open WebUI's closer, text outside
its block), so the whole answer goes through the scanner."""


PREFIXES = {
    "<": "<",
    "<|": "<|",
    "</": "</",
    "<thin": "<thin",
    "[THIN": "[THIN",
    "<|START_THINK": "<|START_THINK",
    "◁thin": "◁thin",
    "<details ": "<details ",
    "backticks": "`",
    "backtick pairs": "`` ",
    "``` fences": "```\n",
    "~~~ fences": "~~~\n",
    "scanned markup": SCANNED_MARKUP_UNIT,
}
WRAPPED = {
    "<think>, then </": ("<think>", "</", ""),
    "[THINK], then [THIN": ("[THINK]", "[THIN", ""),
    "``` fences, then [THINK]": ("", "```\n", "\n[THINK]x[/THINK]"),
    "backtick pairs, then [THINK]": ("", "`` ", "\n[THINK]x[/THINK]"),
}
"""Floods the scanner itself reads: inside a block, or code runs before a delimiter (so the
quick check cannot call the text plain)."""


def _fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _chat(text: str) -> bytes:
    message = {"role": "assistant", "content": text}
    body = {
        "id": "adversarial",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    return json.dumps(body).encode()


def _live(text: str) -> None:
    extractor = IncrementalExtractor()
    for start in range(0, len(text), 4096):
        extractor.feed(text[start : start + 4096])
    extractor.flush()


def _seconds(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return statistics.median(times)


def _row(text: str, repeat: int) -> tuple[float, float, float]:
    body = _chat(text)
    return (
        _seconds(lambda: extract(text), repeat),
        _seconds(lambda: thoughtline.normalize(body, "openai_chat"), repeat),
        _seconds(lambda: _live(text), repeat),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--entry-megabytes", type=float, default=32.0, help="minus the envelope")
    arguments = parser.parse_args()
    size = int(arguments.megabytes * (1 << 20))

    baseline = _row(_fill(MARKUP_UNIT, size), arguments.repeat)
    print(
        f"{arguments.megabytes:g} MB each; CPU ms (ratio to the markup answer); goal <= {GOAL:g}x"
    )
    print(f"{'row':30} {'extract':>16} {'normalize':>16} {'live':>16}")
    print(
        f"{'markup answer':30}"
        + "".join(f" {seconds * 1000:9.1f} ms      " for seconds in baseline)
    )
    worst = 0.0
    rows = {name: _fill(prefix, size) for name, prefix in PREFIXES.items()}
    rows |= {name: head + _fill(unit, size) + tail for name, (head, unit, tail) in WRAPPED.items()}
    for name, text in rows.items():
        timings = _row(text, arguments.repeat)
        ratios = [seconds / base for seconds, base in zip(timings, baseline, strict=True)]
        worst = max(worst, *ratios)
        cells = "".join(
            f" {seconds * 1000:9.1f} ms {ratio:4.1f}x"
            for seconds, ratio in zip(timings, ratios, strict=True)
        )
        print(f"{name:30}{cells}")
    print(f"worst ratio: {worst:.1f}x ({'within' if worst <= GOAL else 'ABOVE'} the goal)")

    entry_size = int(arguments.entry_megabytes * (1 << 20)) - len(_chat(""))
    entry = _chat(_fill("<|", entry_size))
    seconds = _seconds(lambda: thoughtline.normalize(entry, "openai_chat"), 1)
    print(f"one {len(entry) / (1 << 20):.1f} MiB entry of `<|` through normalize: {seconds:.2f} s")


if __name__ == "__main__":
    main()
