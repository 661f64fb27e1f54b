"""Golden pairs: `tests/golden/<format>/<feature>.raw.json` -> `<feature>.expected.json`.

Every expected file was written from the record and rules of docs/record.md and read by a
person; the raw file is fed to `thoughtline.normalize` with its directory's format (and once
more with the format left to detection, which must agree), and the encoded record must equal
the expected JSON exactly.
A raw file may also be a recorded stream (`.raw.jsonl` / `.raw.sse`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import thoughtline

GOLDEN = Path(__file__).parent / "golden"
RAW_SUFFIXES = (".raw.json", ".raw.jsonl", ".raw.sse")


def _pairs() -> list[tuple[Path, Path]]:
    pairs = []
    for raw in sorted(GOLDEN.glob("*/*.raw.*")):
        stem = raw.name
        for suffix in RAW_SUFFIXES:
            stem = stem.removesuffix(suffix)
        pairs.append((raw, raw.with_name(f"{stem}.expected.json")))
    return pairs


@pytest.mark.parametrize(
    ("raw", "expected"), _pairs(), ids=[f"{r.parent.name}/{r.name}" for r, _ in _pairs()]
)
def test_golden_pair(raw: Path, expected: Path) -> None:
    assert expected.exists(), f"{raw.name} has no expected file"
    record = thoughtline.normalize(raw.read_bytes(), raw.parent.name)
    assert json.loads(thoughtline.encode(record)) == json.loads(expected.read_bytes())


@pytest.mark.parametrize(("raw", "expected"), _pairs(), ids=[r.name for r, _ in _pairs()])
def test_golden_format_is_detected(raw: Path, expected: Path) -> None:
    detected = thoughtline.normalize(raw.read_bytes())
    if raw.parent.name == "mistral" and detected.format == "openai_chat":
        # A Mistral body with no Mistral-only shape is detected as Chat, with the same result.
        given = thoughtline.normalize(raw.read_bytes(), "mistral")
        assert (detected.content, detected.thinking) == (given.content, given.thinking)
        return
    assert detected.format == raw.parent.name


def test_every_golden_raw_has_an_expected_file_and_back() -> None:
    raws = {raw for raw, _ in _pairs()}
    for expected in GOLDEN.glob("*/*.expected.json"):
        stem = expected.name.removesuffix(".expected.json")
        assert any(expected.parent / f"{stem}{suffix}" in raws for suffix in RAW_SUFFIXES), (
            f"{expected} has no raw file"
        )
