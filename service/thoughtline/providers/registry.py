"""Every provider format, one row each, in detection order: what reads its bodies, assembles
its streams, reads its requests and replays its turns. Each row is written in its provider's
folder (`providers/<format>/row.py`); this module only lists them. Imported by the API and
the edges, never by the layers below them (they are handed the row they need).

Adding a format: docs/architecture.md has the checklist; a test checks that every known
format has a row and every row is complete.
"""

from __future__ import annotations

from typing import Final

from thoughtline.providers.anthropic.row import ROW as ANTHROPIC
from thoughtline.providers.bedrock_converse.row import ROW as BEDROCK_CONVERSE
from thoughtline.providers.gemini.row import ROW as GEMINI
from thoughtline.providers.mistral.row import ROW as MISTRAL
from thoughtline.providers.ollama.row import ROW as OLLAMA
from thoughtline.providers.openai_chat.row import ROW as OPENAI_CHAT
from thoughtline.providers.openai_responses.row import ROW as OPENAI_RESPONSES
from thoughtline.providers.row import Format

__all__ = ["FORMATS_BY_NAME", "FORMAT_ROWS", "Format", "format_named", "same_stream_shape"]

FORMAT_ROWS: Final[tuple[Format, ...]] = (
    GEMINI,
    ANTHROPIC,
    MISTRAL,  # before Chat: a Chat-shaped body holding a Mistral-only chunk is Mistral's
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    BEDROCK_CONVERSE,
    OLLAMA,
)

FORMATS_BY_NAME: Final[dict[str, Format]] = {row.name: row for row in FORMAT_ROWS}


def format_named(name: str) -> Format:
    """The row of a known format (names are checked where they enter: `check_payload`)."""
    return FORMATS_BY_NAME[name]


def same_stream_shape(first: str, second: str) -> bool:
    """Whether two formats' stream chunks share one shape (Chat and its Mistral dialect)."""
    return _family(first) == _family(second)


def _family(name: str) -> str:
    row = FORMATS_BY_NAME.get(name)
    return (row.stream_family or row.name) if row is not None else name
