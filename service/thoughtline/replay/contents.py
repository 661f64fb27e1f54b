"""A history in one format's request shape converted to another format's request items: the
format-agnostic half of `convert_contents` (docs/replay.md, "Gemini-style history to OpenAI").

The source format's reader (its row's `read_history`) turns the whole history into turns of
neutral events (a text, a call, a call's result), pairing calls with their results and noting
the paths of what it left out (reasoning, signatures); the target format's writer (its row's
`write_history_turn`) turns one turn into that format's items. Both are handed by the API.
A history that leaves nothing to send raises `EmptyHistoryError`; JSON bytes or text that do
not decode raise `ReplayError` ("contents are not JSON: ..."), so a caller catches one error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from thoughtline.contract.errors import EmptyHistoryError, ReplayError

TurnRole = Literal["user", "assistant"]


class HistoryText(msgspec.Struct, frozen=True):
    text: str


class HistoryCall(msgspec.Struct, frozen=True):
    call_id: str
    name: str
    arguments: str
    """The arguments as a JSON object's text."""


class HistoryResult(msgspec.Struct, frozen=True):
    call_id: str
    """The id of the call this result answers."""
    output: str
    """The result as JSON text."""


HistoryEvent = HistoryText | HistoryCall | HistoryResult


class HistoryTurn(msgspec.Struct, frozen=True):
    """One content of the history: who spoke, and what it holds in order."""

    role: TurnRole
    events: list[HistoryEvent]


class HistoryReading(msgspec.Struct, frozen=True):
    turns: list[HistoryTurn]
    """One per content of the history, in order."""
    dropped: list[str]
    """Paths of what was left out (`contents[1].parts[0].text`)."""


HistoryReader = Callable[[Any], HistoryReading]
"""A format's history (decoded JSON) read into neutral turns; refuses what it cannot carry."""
TurnWriter = Callable[[HistoryTurn], list[dict[str, Any]]]
"""One neutral turn as a format's request items (none for a turn that holds nothing)."""


class ConvertedHistory(msgspec.Struct, frozen=True):
    items: list[dict[str, Any]]
    """Chat messages, or Responses input items."""
    dropped: list[str]
    """Paths of what was left out: thought texts and signatures (`contents[1].parts[0].text`)."""


def convert_history(history: Any, read: HistoryReader, write: TurnWriter) -> ConvertedHistory:
    """A history (decoded, or its JSON bytes / text) read by `read` and written by `write`."""
    if isinstance(history, (bytes, str)):
        history = _decoded(history)
    reading = read(history)
    items = [item for turn in reading.turns for item in write(turn)]
    if not items:
        raise EmptyHistoryError(
            f"all {len(reading.turns)} contents held only reasoning: nothing is left to send"
        )
    return ConvertedHistory(items, reading.dropped)


def _decoded(history: bytes | str) -> Any:
    """JSON bytes / text decoded; msgspec's message names the fault and its byte, never the
    text around it (which may be reasoning)."""
    try:
        return msgspec.json.decode(history)
    except msgspec.DecodeError as error:  # ValidationError too (a number out of range)
        raise ReplayError(f"contents are not JSON: {error}") from error
    except RecursionError as error:
        raise ReplayError("contents are not JSON: nested too deeply") from error
