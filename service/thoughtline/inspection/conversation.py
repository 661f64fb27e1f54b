"""Rules over a conversation's records, pure: what the worker-side store remembers and counts.

- `thinking_fingerprints(record)`: what a later request is checked against (never the text).
- `is_reasoning_only(record)`: a turn that reasoned and said nothing: no visible content, no
  tool call, but thinking text, reasoning tokens or opaque reasoning.
- `reasoning_only_loop(streak, limit)`: the backstop that dropping replayed reasoning needs.
  Once reasoning is no longer replayed, a caller that re-asks after every reasoning-only turn
  sends the same request forever; `limit` consecutive reasoning-only records of one
  conversation are flagged (`leaked_thought` / `reasoning_only_loop`), each one from the limit
  on.
"""

from __future__ import annotations

from typing import Final

import msgspec

from thoughtline.contract.record import Detection, Record
from thoughtline.inspection.fingerprints import text_fingerprints
from thoughtline.reading.compose import leaked
from thoughtline.replay.history import reasoning_paths
from thoughtline.replay.parts import ReplayRow

DEFAULT_REASONING_ONLY_LOOP_LIMIT: Final = 3
"""Two reasoning-only turns in a row happen (a retry after a length cut); three is a loop."""

LOOP_DETECTION_PATH: Final = "meta.conversation_id"


class _ConversationMeta(msgspec.Struct):
    conversation_id: str | None = None


def conversation_id(record: Record) -> str | None:
    """`meta.conversation_id` when it is a non-empty string; None otherwise."""
    try:
        meta = msgspec.json.decode(record.meta, type=_ConversationMeta)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return meta.conversation_id or None


def thinking_fingerprints(record: Record) -> list[str]:
    """Fingerprints of the record's thinking, line by line (see `fingerprints.py`)."""
    return text_fingerprints(record.thinking) if record.thinking else []


def is_reasoning_only(record: Record, row: ReplayRow) -> bool:
    """A turn that reasoned and said nothing (`row`: the record's format's, for where its
    opaque reasoning sits)."""
    if record.content.strip() or record.tool_calls:
        return False
    if record.thinking is not None or (record.usage.reasoning_tokens or 0) > 0:
        return True
    return bool(reasoning_paths(record, row))


def reasoning_only_loop(
    streak: int, limit: int = DEFAULT_REASONING_ONLY_LOOP_LIMIT
) -> Detection | None:
    """The loop detection for a record that makes `streak` reasoning-only records in a row."""
    if streak >= limit:
        return leaked("reasoning_only_loop", LOOP_DETECTION_PATH)
    return None
