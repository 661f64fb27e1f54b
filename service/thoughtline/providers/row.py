"""The row type: one provider format and the code that serves it in each layer. Each provider
folder writes its row (`row.py`); `registry.py` lists them in detection order."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from thoughtline.contract.record import FormatName, Record, ToolCall
from thoughtline.inspection import readers
from thoughtline.providers.shape import Probes
from thoughtline.reading.turn import VisibleTextReading
from thoughtline.replay import parts
from thoughtline.replay.contents import HistoryReader, TurnWriter
from thoughtline.streams.base import Assembler, StreamRun

RequestReader = Callable[[dict[str, Any]], readers.RequestReading]
TurnBuilder = Callable[[str, list[ToolCall], list[str | None]], list[Any]]
StreamStarter = Callable[[], StreamRun[Any]]
"""A stream assembly to feed chunk by chunk (a live stream)."""
CacheWriteReader = Callable[[bytes], int | None]
"""The prompt tokens a response wrote to the provider's cache, read from the record's
`native_usage` (the provider's own usage object); None where it does not say."""


def no_cache_writes(native_usage: bytes) -> int | None:
    """A format whose usage does not count cache writes apart."""
    return None


class BodyModule(Protocol):
    """A body reader's module: `normalize` reads one non-streamed body of its format (and,
    given `explained`, leaves there the reading of its visible text)."""

    def normalize(
        self,
        payload: bytes,
        *,
        record_id: str | None = ...,
        meta: msgspec.Raw | None = ...,
        explained: list[VisibleTextReading] | None = ...,
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
    replay_message: parts.MessageFormat | None
    """A Chat-shaped format's message: where it holds reasoning (None for a part-list one)."""
    shape: Probes
    """How detection tells its bodies and streams apart (its folder's `shape.py`)."""
    opaque_values: parts.OpaqueReader
    """A replay part's opaque values (signatures, redacted or encrypted reasoning) under
    OpenInference's names, for the export (its folder's `replay.py`)."""
    cache_write_tokens: CacheWriteReader = no_cache_writes
    """Prompt tokens written to the provider's cache, from the record's `native_usage`, for
    the export (the record's `usage` counts them inside `input_tokens` only)."""
    read_history: HistoryReader | None = None
    """A history in this format's request shape read into neutral turns, for
    `convert_contents` (Gemini's `contents`; its folder's `contents.py`)."""
    write_history_turn: TurnWriter | None = None
    """A converted history's turn as this format's request items (Chat messages, Responses
    input items); None: `convert_contents` does not convert to this format."""
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
        self,
        payload: bytes,
        *,
        record_id: str | None,
        meta: msgspec.Raw | None,
        explained: list[VisibleTextReading] | None = None,
    ) -> Record:
        if explained is None:  # the usual call, in the form a test's stand-in reader takes
            return self.body.normalize(payload, record_id=record_id, meta=meta)
        return self.body.normalize(payload, record_id=record_id, meta=meta, explained=explained)

    @property
    def message_shaped(self) -> bool:
        """Chat-shaped formats keep one message object as the record's replay part."""
        return self.replay_parts is None
