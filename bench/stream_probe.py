"""What asking every body "are you one stream event?" before reading it would cost.

    python bench/stream_probe.py [--repeat N] [--rounds R] [--gates] [--framing]

With a format given, the front door frames SSE and JSON arrays before any reader (their first
byte tells them) and reads any other body at once, looking at it as JSON lines or one stream
event only when the body reader refuses it; a bare JSON stream cut after its first event is
found that way. Deciding it up front instead would run `is_stream_event` (a decode of the
body's top-level shape) on every body. This prints, per format, that probe's per-process CPU
time as a fraction of `thoughtline.normalize`'s on the same bodies (bench/payloads.py),
the two interleaved, the median of --repeat rounds.

2026-12-02, a 2-core machine shared with six other jobs: 0.18 (mistral) to 0.24 (gemini)
asking each row's probe; 0.13 to 0.18 with the rows' signs compiled into one function (load
4-7, 5 rounds of 20), so the one-event case stays decided after the refusal.

With --framing it prints what the up-front tests cost on the synthetic and the corpus bodies
(the first byte, `holds_several_chunks`, `is_stream_event`), and how many recorded stream
events the body reader of their own format reads as a body: an up-front decision would give
those a cut stream's record instead (2026-12-02: the first byte 0.003-0.004, 0.032 on the
smallest corpus body, as a call of its own; `holds_several_chunks` 0.011-0.013, up to 0.077;
`is_stream_event` 0.13-0.18, corpus 0.13-0.30; 27 of 278 golden and 14 of 4,436 corpus
events, all Chat chunks that carry usage, read as bodies).

With --gates it also prints what two cheaper tests before the probe would cost and miss:
`front`, an anchored match of the first members (up to eight scalar ones, then a member that
names a stream-only event); `needles`, a search of the whole body for every such name (and
for a `\\u` escape, which could spell one). A gate is only worth having if it never says no
to a stream event: the count is over every chunk of the golden recordings and of the
recorded corpus beside the checkout that `is_stream_event` calls one. 2026-12-02, same
machine, medians of 5 rounds of 20: `front` costs 0.011 (bedrock_converse) to 0.073
(openai_responses) of `normalize` but misses 8 of 278 golden and 275 of 4,436 corpus events
(recordings that sort their keys put `choices` before `object`, a long `response` before
`type`); `needles` misses none and costs 1.42 to 1.76x `normalize` (each name is one more
scan of the body). Neither is taken: the one-event case stays decided after the refusal.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import thoughtline
from thoughtline.contract.record import KNOWN_FORMATS
from thoughtline.providers.detection import detect_stream_format, is_stream_event
from thoughtline.providers.registry import format_named
from thoughtline.streams.base import Chunk
from thoughtline.streams.framing import frame, holds_several_chunks

sys.path.insert(0, str(Path(__file__).resolve().parent))
import payloads  # beside this script


def cpu_seconds(work: Callable[[bytes], object], bodies: Sequence[bytes], rounds: int) -> float:
    start = time.process_time()
    for _ in range(rounds):
        for body in bodies:
            work(body)
    return time.process_time() - start


def probe_fraction(
    format_name: str, repeat: int, rounds: int, probe: Callable[[bytes], bool] = is_stream_event
) -> float:
    """`probe`'s CPU time over the format's bodies, as a fraction of `normalize`'s."""
    bodies = payloads.bodies(format_name)

    def normalize(body: bytes) -> object:
        return thoughtline.normalize(body, format_name)

    fractions = []
    for _ in range(repeat):
        read = cpu_seconds(normalize, bodies, rounds)
        probed = cpu_seconds(probe, bodies, rounds)
        fractions.append(probed / read)
    return statistics.median(fractions)


_EVENT_NAMES = (
    b'"message_start"',
    b'"message_delta"',
    b'"message_stop"',
    b'"content_block_start"',
    b'"content_block_delta"',
    b'"content_block_stop"',
    b'"response.',
    b'"chat.completion.chunk"',
    b'"messageStart"',
    b'"contentBlockDelta"',
)
_NAMING_MEMBER = (
    rb'"type"\s*:\s*"(?:message_(?:start|delta|stop)|content_block_(?:start|delta|stop)|response\.)'
    rb'|"object"\s*:\s*"chat\.completion\.chunk"|"(?:messageStart|contentBlockDelta)"\s*:'
)
_FRONT = re.compile(
    rb'\{\s*(?:"[^"\\]{0,64}"\s*:\s*(?:"[^"\\]{0,256}"|[-+.\w]{1,32})\s*,\s*){0,8}(?:'
    + _NAMING_MEMBER
    + rb")"
)


def front_gate(body: bytes) -> bool:
    return _FRONT.match(body) is not None


def needles_gate(body: bytes) -> bool:
    return b"\\u" in body or any(name in body for name in _EVENT_NAMES)


def recorded_events(folder: Path) -> list[bytes]:
    """Every chunk of the recordings below `folder` that is one stream event."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".sse", ".jsonl", ".json"):
            continue
        try:
            framed = frame(path.read_bytes().strip())
        except thoughtline.NormalizeError:
            continue
        found.extend(chunk.data for chunk in framed.chunks if is_stream_event(chunk.data))
    return found


RECORDINGS = {
    "golden": Path(__file__).resolve().parents[1] / "tests" / "golden",
    "corpus": Path(__file__).resolve().parents[2] / "shared" / "corpus",
}
"""The golden recordings, and the recorded corpus beside the checkout (skipped when absent)."""


def gates(repeat: int, rounds: int) -> None:
    events = {name: recorded_events(folder) for name, folder in RECORDINGS.items()}
    for name, gate in (("front", front_gate), ("needles", needles_gate)):
        for where, found in events.items():
            missed = sum(not gate(event) for event in found)
            print(f"{name}: misses {missed} of {len(found)} stream events of the {where}")
        for format_name in KNOWN_FORMATS:
            fraction = probe_fraction(format_name, repeat, rounds, gate)
            print(f"  {format_name:<18} {name} / normalize = {fraction:.3f}")


def corpus_fraction(
    format_name: str, repeat: int, rounds: int, probe: Callable[[bytes], object]
) -> float | None:
    """`probe_fraction` over the format's recorded corpus bodies (None when absent)."""
    bodies = payloads.format_bodies(format_name)
    if not bodies:
        return None

    def normalize(body: bytes) -> object:
        return thoughtline.normalize(body, format_name)

    fractions = []
    for _ in range(repeat):
        read = cpu_seconds(normalize, bodies, rounds)
        fractions.append(cpu_seconds(probe, bodies, rounds) / read)
    return statistics.median(fractions)


def first_byte(body: bytes) -> bool:
    """What the front door asks of every body with a format given: SSE or a JSON array is
    framed before any reader (`detection.is_framed_stream` without its framing call, which
    runs only for a payload that does not start with `{`)."""
    return body[:1] != b"{"


def framing(repeat: int, rounds: int) -> None:
    """What deciding up front costs, per format, on the synthetic bodies (compact, one line)
    and on the corpus (pretty-printed): the first-byte test, `holds_several_chunks` (JSON
    lines too), and `is_stream_event`; and how many recorded stream events the reader of their
    own format reads as a body (an up-front decision would give those a stream's record)."""
    tests = (
        ("first byte", first_byte),
        ("holds_several_chunks", holds_several_chunks),
        ("is_stream_event", is_stream_event),
    )
    for name, test in tests:
        for format_name in KNOWN_FORMATS:
            synthetic = probe_fraction(format_name, repeat, rounds, test)  # type: ignore[arg-type]
            corpus = corpus_fraction(format_name, repeat, rounds, test)
            shown = "-" if corpus is None else f"{corpus:.3f}"
            print(f"  {format_name:<18} {name} / normalize = {synthetic:.3f} (corpus {shown})")
    for where, found in {name: recorded_events(f) for name, f in RECORDINGS.items()}.items():
        read = sum(_read_as_body(event) for event in found)
        print(f"{where}: {read} of {len(found)} stream events read as a body of their format")


def _read_as_body(event: bytes) -> bool:
    own = detect_stream_format([Chunk(0, None, event)])
    try:
        format_named(own).read_body(event, record_id=None, meta=None)
    except thoughtline.NormalizeError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--gates", action="store_true", help="also the cheaper tests")
    parser.add_argument("--framing", action="store_true", help="also the framing tests")
    arguments = parser.parse_args()
    for format_name in KNOWN_FORMATS:
        fraction = probe_fraction(format_name, arguments.repeat, arguments.rounds)
        print(f"{format_name:<18} is_stream_event / normalize = {fraction:.3f}")
    if arguments.gates:
        gates(arguments.repeat, arguments.rounds)
    if arguments.framing:
        framing(arguments.repeat, arguments.rounds)


if __name__ == "__main__":
    main()
