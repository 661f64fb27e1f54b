"""Every provider format, one row each: what reads its bodies, assembles its streams, reads
its requests and replays its turns. The one place to look (and to add to) for a format.

Adding a format (docs/architecture.md has the checklist): a body reader in `formats/`, a stream
assembler in `streams/`, a request reader in `inspection/readers.py`, replay pieces in
`replay/`, golden pairs in `tests/golden/<format>/`, the name in `record.FormatName`, then one
row here; a test checks that every known format has a row and every row is complete.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import msgspec

from thoughtline.formats import (
    anthropic,
    bedrock,
    gemini,
    mistral,
    ollama,
    openai_chat,
    openai_responses,
)
from thoughtline.inspection import readers
from thoughtline.record import FormatName, Record, ToolCall
from thoughtline.replay import parts, rebuild
from thoughtline.streams import anthropic as anthropic_stream
from thoughtline.streams import bedrock as bedrock_stream
from thoughtline.streams import gemini as gemini_stream
from thoughtline.streams import ollama as ollama_stream
from thoughtline.streams import openai_chat as chat_stream
from thoughtline.streams import openai_responses as responses_stream
from thoughtline.streams.base import Assembler, StreamRun

RequestReader = Callable[[dict[str, Any]], readers.RequestReading]
TurnBuilder = Callable[[str, list[ToolCall], list[str | None]], list[Any]]
StreamStarter = Callable[[], StreamRun[Any]]
"""A stream assembly to feed chunk by chunk (a live stream)."""


class BodyModule(Protocol):
    """A `formats/` module: `normalize` reads one non-streamed body of its format."""

    def normalize(
        self, payload: bytes, *, record_id: str | None = ..., meta: msgspec.Raw | None = ...
    ) -> Record: ...


@dataclass(frozen=True)
class Format:
    """One provider format and the code that serves it in each layer."""

    name: FormatName
    provider: str
    body: BodyModule
    """The body reader's module (`normalize` is looked up when called, so tests can swap it)."""
    assemble_stream: Assembler
    start_stream: StreamStarter
    read_request: RequestReader
    rebuild_turn: TurnBuilder
    """An assistant turn of this format rebuilt from another format's record."""
    replay_parts: parts.PartFormat | None
    """How its replay parts go back; None: a Chat-shaped format (the one message object)."""
    history_field: str = "messages"
    """The request-body field the next-turn history goes into."""
    stream_family: FormatName | None = None
    """The format whose stream chunks have this one's shape (Mistral's are Chat's)."""
    tool_call_ids: bool = True
    """Whether a tool result refers back to its call by id (Gemini and Ollama: by name)."""
    tool_turn_reasoning: str | None = None
    """Chat-shaped: the message's reasoning field its providers ask back within a turn that
    called tools (and whether `reasoning_details` go back too: any format that has one)."""

    def read_body(
        self, payload: bytes, *, record_id: str | None, meta: msgspec.Raw | None
    ) -> Record:
        return self.body.normalize(payload, record_id=record_id, meta=meta)

    @property
    def message_shaped(self) -> bool:
        """Chat-shaped formats keep one message object as the record's replay part."""
        return self.replay_parts is None


FORMAT_ROWS: Final[tuple[Format, ...]] = (
    Format(
        "gemini",
        "google",
        gemini,
        gemini_stream.assemble,
        gemini_stream.start,
        readers.read_gemini_request,
        rebuild.gemini_turn,
        parts.GEMINI_PARTS,
        history_field="contents",
        tool_call_ids=False,
    ),
    Format(
        "anthropic",
        "anthropic",
        anthropic,
        anthropic_stream.assemble,
        anthropic_stream.start,
        readers.read_anthropic_request,
        rebuild.anthropic_turn,
        parts.ANTHROPIC_BLOCKS,
    ),
    Format(
        "openai_chat",
        "openai",
        openai_chat,
        chat_stream.assemble,
        chat_stream.start,
        readers.read_chat_request,
        rebuild.chat_turn,
        None,
        tool_turn_reasoning="reasoning_content",
    ),
    Format(
        "openai_responses",
        "openai",
        openai_responses,
        responses_stream.assemble,
        responses_stream.start,
        readers.read_responses_request,
        rebuild.responses_turn,
        parts.RESPONSES_ITEMS,
        history_field="input",
    ),
    Format(
        "bedrock_converse",
        "amazon_bedrock",
        bedrock,
        bedrock_stream.assemble,
        bedrock_stream.start,
        readers.read_bedrock_request,
        rebuild.bedrock_turn,
        parts.BEDROCK_BLOCKS,
    ),
    Format(
        "mistral",
        "mistral",
        mistral,
        chat_stream.assemble_mistral,
        chat_stream.start_mistral,
        readers.read_mistral_request,
        rebuild.mistral_turn,
        None,
        stream_family="openai_chat",
    ),
    Format(
        "ollama",
        "ollama",
        ollama,
        ollama_stream.assemble,
        ollama_stream.start,
        readers.read_ollama_request,
        rebuild.ollama_turn,
        None,
        tool_call_ids=False,
        tool_turn_reasoning="thinking",
    ),
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
