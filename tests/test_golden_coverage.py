"""The golden coverage matrix: every format directory under `tests/golden/` has a pair for each
cross-format rule, under one name per rule, and that pair shows the rule it is named for.

A format without the concept a rule is about is listed in `EXCEPTIONS` with its reason. The
rule "a body that is not this format's shape is refused" is a parametrized test over every
format (`tests/normalize/test_format_shapes.py`) rather than a pair per directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.normalize import test_format_shapes
from thoughtline.contract.record import KNOWN_FORMATS

GOLDEN = Path(__file__).parent / "golden"
FORMAT_DIRECTORIES = sorted(path.name for path in GOLDEN.iterdir() if path.is_dir())


def _codes(record: dict[str, Any]) -> list[str]:
    return [detection["code"] for detection in record["detections"]]


def _usage_null(record: dict[str, Any]) -> bool:
    return all(count is None for count in record["usage"].values())


RULES: dict[str, Callable[[dict[str, Any]], bool]] = {
    # Usage counts that are not integers: all counts null, the provider's usage kept.
    "invalid-usage": lambda r: "invalid_usage" in _codes(r) and _usage_null(r),
    # A model, id or finish reason of the wrong JSON type reads as null; the answer counts.
    "wrong-typed-scalars-read-as-null": lambda r: (
        r["model"] is None and r["native_finish_reason"] is None and r["content"] != ""
    ),
    # A part, block, item or chunk of a type we do not know stays in `replay_parts`.
    "unknown-part-kept": lambda r: "unknown_part" in _codes(r) and bool(r["replay_parts"]),
    # A `text` that is not a string adds nothing and is a detection.
    "text-not-string": lambda r: "text_not_string" in _codes(r),
    # The native reasoning also stands verbatim in the visible content.
    "reasoning-in-content": lambda r: (
        "reasoning_in_content" in _codes(r) and r["thinking"] is not None
    ),
    # No usage in the body: usage all null, `native_usage` null, no detection for it.
    "no-usage": lambda r: (
        _usage_null(r) and r["native_usage"] is None and "invalid_usage" not in _codes(r)
    ),
}
"""Rule -> the pair's name, and what its expected record must show."""

EXCEPTIONS: dict[tuple[str, str], str] = {
    ("ollama", "unknown-part-kept"): (
        "Ollama has no parts: the message (or the whole /api/generate body) is the one replay part"
    ),
}
"""(format, rule) cells with no pair, and why the format has no such concept."""

CELLS = [(directory, rule) for directory in FORMAT_DIRECTORIES for rule in RULES]


def test_every_known_format_has_a_golden_directory_and_back() -> None:
    assert sorted(KNOWN_FORMATS) == FORMAT_DIRECTORIES


def test_every_format_is_in_the_not_this_shape_test() -> None:
    assert sorted(test_format_shapes.BODIES) == FORMAT_DIRECTORIES


def test_every_exception_names_a_cell_and_says_why() -> None:
    for (directory, rule), reason in EXCEPTIONS.items():
        assert directory in FORMAT_DIRECTORIES, directory
        assert rule in RULES, rule
        assert reason.strip(), (directory, rule)


@pytest.mark.parametrize(("directory", "rule"), CELLS, ids=[f"{d}/{r}" for d, r in CELLS])
def test_a_format_has_a_pair_for_the_rule(directory: str, rule: str) -> None:
    raw = GOLDEN / directory / f"{rule}.raw.json"
    expected = GOLDEN / directory / f"{rule}.expected.json"
    if (directory, rule) in EXCEPTIONS:
        assert not raw.exists(), f"{directory}/{rule} exists now: drop its exception"
        return
    assert raw.exists(), f"{directory} has no `{rule}` pair"
    assert expected.exists(), f"{directory}/{rule} has no expected file"
    record = json.loads(expected.read_bytes())
    assert RULES[rule](record), f"{directory}/{rule} does not show the rule it is named for"
