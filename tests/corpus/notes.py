"""Reading the corpus notes: the expected block of each `<name>.source.txt`.

The notes were written by the corpus's collector from the recorded bodies, independently of
this code; tests compare our records against them (DESIGN wins where the two disagree, and
each test says where it maps a note's native value to the record's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"


def corpus_dir(name: str) -> Path:
    return CORPUS / name


def expected_block(source_note: Path) -> dict[str, Any]:
    """The JSON object after 'expected normalized output' in a `.source.txt`."""
    text = source_note.read_text()
    start = text.index("{", text.index("expected normalized output"))
    block, _ = json.JSONDecoder().raw_decode(text[start:])
    assert isinstance(block, dict)
    return block


def bodies(name: str) -> list[Path]:
    """The non-streamed bodies (`.json`) of a corpus directory."""
    return sorted(corpus_dir(name).glob("*.json"))
