"""The least-work readers of `bench/bound.py` do what they claim: on every synthetic bench
body they keep the same replay parts and give the same content and thinking as `normalize`
(inline extraction aside). A reader that skipped part of that work would make the bound it
prints too high to mean anything."""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec
import pytest

import thoughtline

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bound  # beside the bench scripts
import payloads


@pytest.mark.parametrize("name", sorted(payloads.BUILDERS))
def test_the_bound_reader_keeps_what_normalize_keeps(name: str) -> None:
    format_name = payloads.BUILDERS[name][0]
    for body in payloads.bodies(name, count=12):
        record = thoughtline.normalize(body, format_name)
        least = thoughtline.decode(bound.READERS[name](body))
        assert [bytes(part) for part in least.replay_parts] == [
            bytes(part) for part in record.replay_parts
        ]
        if name == "openai_chat_think":  # the bound reads the text, it extracts nothing
            assert least.content == msgspec.json.decode(body)["choices"][0]["message"]["content"]
            continue
        assert (least.content, least.thinking) == (record.content, record.thinking)
