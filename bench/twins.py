"""Whether each one-pass twin reader earns its lines: responses/s of a format's body reader
as it is, against the same reader with its one-pass view switched off (the layered reading
alone), on the synthetic bodies of `payloads.py`.

    python bench/twins.py [--repeat N] [--seconds S]

Rates are per-process CPU time; the two contenders are interleaved round by round, and each
figure is the median of the per-round ratios (twin on / twin off: above 1.0 the twin helps).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import thoughtline
from thoughtline.providers.bedrock_converse import body as bedrock_body
from thoughtline.providers.mistral import body as mistral_body
from thoughtline.providers.openai_chat import body as chat_body
from thoughtline.providers.openai_responses import body as responses_body
from thoughtline.reading.compose import decode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import payloads  # beside this script


def _layered_only(data: bytes, one_pass: type[Any], layered: type[Any], what: str) -> Any:
    return decode(data, layered, what)


def _never(data: Any, view: type[Any]) -> None:
    return None


SWITCHES: dict[str, tuple[Any, str, Callable[..., Any]]] = {
    "openai_chat": (chat_body, "decode_in_one_pass", _layered_only),
    "mistral": (mistral_body, "decode_in_one_pass", _layered_only),
    "openai_responses": (responses_body, "probe_view", _never),
    "bedrock_converse": (bedrock_body, "probe_view", _never),
}


@contextmanager
def twin_off(name: str) -> Iterator[None]:
    module, attribute, replacement = SWITCHES[name]
    original = getattr(module, attribute)
    setattr(module, attribute, replacement)
    try:
        yield
    finally:
        setattr(module, attribute, original)


def rate(name: str, bodies: list[bytes], seconds: float) -> float:
    count, started = 0, time.process_time()
    while time.process_time() - started < seconds:
        for body in bodies:
            thoughtline.normalize(body, name)
        count += len(bodies)
    return count / (time.process_time() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seconds", type=float, default=0.4)
    arguments = parser.parse_args()
    print(f"median of {arguments.repeat} rounds of {arguments.seconds}s; twin on / twin off")
    for name in SWITCHES:
        bodies = payloads.bodies(name)
        ratios = []
        for _ in range(arguments.repeat):
            on = rate(name, bodies, arguments.seconds)
            with twin_off(name):
                off = rate(name, bodies, arguments.seconds)
            ratios.append(on / off)
        print(
            f"  {name:<18} {statistics.median(ratios):.2f}x  (rounds: "
            + ", ".join(f"{ratio:.2f}" for ratio in ratios)
            + ")"
        )


if __name__ == "__main__":
    main()
