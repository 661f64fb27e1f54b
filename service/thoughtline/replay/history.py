"""Next-turn history from records: the provider-native assistant turns, and what was left out.

For each record, in order:

- a record of the target format goes back natively: its replay parts byte for byte, minus the
  reasoning the provider does not need (`parts.py`, `messages.py`); when inline reasoning was cut
  out of its visible text, that text is replaced by the record's `content`;
- a record of another format is rebuilt from its `content` and `tool_calls` (`rebuild.py`): its
  reasoning, text or opaque, never crosses providers;
- a record that leaves nothing to send adds no turn (an empty assistant turn is one the model
  never sent).

Every drop is a `ReplayNote` (record, path into the record, reason): reported, never silent.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from thoughtline import registry
from thoughtline.errors import ReplayError
from thoughtline.formats.inline_reasoning import REASONING_IN_TEXT_CODES
from thoughtline.record import KNOWN_FORMATS, Record
from thoughtline.replay import rebuild
from thoughtline.replay.messages import native_message, read_message
from thoughtline.replay.parts import (
    NoteReason,
    PartFormat,
    PartReading,
    encode_raw,
    fields_of,
    read_part,
)


class ReplayNote(msgspec.Struct, frozen=True):
    """Something of a record that the history leaves out (or, for ids, adds), and why."""

    record_id: str
    record_format: str
    path: str
    """Into the record: `replay_parts[2]`, `replay_parts[0].reasoning_content`, `thinking`."""
    reason: NoteReason


class ReplayTurn(msgspec.Struct, frozen=True):
    """One record's items in the target format: one message / content, or Responses items."""

    record_id: str
    items: list[msgspec.Raw]


class History(msgspec.Struct):
    format: str
    turns: list[ReplayTurn]
    notes: list[ReplayNote]

    def items(self) -> list[msgspec.Raw]:
        """Every turn's items in order, ready to interleave with the caller's own messages."""
        return [item for turn in self.turns for item in turn.items]


_Kept = tuple[int, msgspec.Raw, PartReading]


def build_history(records: Iterable[Record], to: str) -> History:
    """The assistant turns of `records` for a request in format `to`, with notes on every drop."""
    if to not in KNOWN_FORMATS:
        raise ReplayError(f"unknown target format {to!r}; known: {', '.join(KNOWN_FORMATS)}")
    history = History(format=to, turns=[], notes=[])
    for index, record in enumerate(records):
        items = _record_items(record, index, to, history.notes)
        if items:
            history.turns.append(ReplayTurn(record.id, items))
        else:
            history.notes.append(ReplayNote(record.id, record.format, "", "empty_turn"))
    return history


def encode_history(history: History) -> bytes:
    """`{"format", <request field>: [...], "notes": [...]}`; opaque parts keep their bytes."""
    field = registry.format_named(history.format).history_field
    return msgspec.json.encode(
        {"format": history.format, field: history.items(), "notes": history.notes}
    )


def _record_items(
    record: Record, record_index: int, target: str, notes: list[ReplayNote]
) -> list[msgspec.Raw]:
    if record.format != target:
        return _foreign_items(record, record_index, target, notes)
    if registry.format_named(target).message_shaped:
        return _message_items(record, notes)
    return _part_items(record, notes)


def _foreign_items(
    record: Record, record_index: int, target: str, notes: list[ReplayNote]
) -> list[msgspec.Raw]:
    paths = reasoning_paths(record)
    if not paths and record.thinking is not None:
        paths = ["thinking"]
    notes.extend(ReplayNote(record.id, record.format, path, "foreign_reasoning") for path in paths)
    ids, assigned = rebuild.call_ids(record, record_index, target)
    notes.extend(
        ReplayNote(record.id, record.format, f"tool_calls[{index}]", "tool_call_id_assigned")
        for index in assigned
    )
    return [msgspec.Raw(item) for item in rebuild.rebuilt_items(record, target, ids)]


def reasoning_paths(record: Record) -> list[str]:
    """Where a record's native reasoning (text or opaque) sits inside its replay parts."""
    if registry.format_named(record.format).message_shaped:
        return [
            f"replay_parts[{index}]{suffix}"
            for index, raw in enumerate(record.replay_parts)
            for suffix, _ in read_message(raw).dropped
        ]
    paths = []
    for index, raw in enumerate(record.replay_parts):
        reading = read_part(record.format, raw)
        if reading.kind in ("opaque", "dropped"):
            paths.append(f"replay_parts[{index}]")
        elif reading.signed:
            paths.append(f"replay_parts[{index}].thoughtSignature")
    return paths


def _message_items(record: Record, notes: list[ReplayNote]) -> list[msgspec.Raw]:
    tool_calls: list[msgspec.Raw] = []
    for index, raw in enumerate(record.replay_parts):
        reading = read_message(raw)
        tool_calls.extend(reading.tool_calls)
        notes.extend(
            ReplayNote(record.id, record.format, f"replay_parts[{index}]{suffix}", reason)
            for suffix, reason in reading.dropped
        )
    if _has_inline_reasoning(record):  # `content` is already cut; say what it lost
        notes.append(ReplayNote(record.id, record.format, "content", "inline_reasoning"))
    message = native_message(record, tool_calls)
    return [] if message is None else [msgspec.Raw(message)]


def _part_items(record: Record, notes: list[ReplayNote]) -> list[msgspec.Raw]:
    spec = _part_format(record.format)
    kept: list[_Kept] = []
    for index, raw in enumerate(record.replay_parts):
        reading = read_part(record.format, raw)
        if reading.kind == "dropped":
            notes.append(_note(record, index, reading.reason or "reasoning_text"))
        else:
            kept.append((index, raw, reading))
    if _has_inline_reasoning(record):
        kept = _rewrite_visible(record, kept, notes)
    if record.format == "openai_responses":
        kept = _drop_trailing_reasoning(record, kept, notes)
    parts = [raw for _, raw, _ in kept]
    if not parts or spec.assistant_role is None:
        return parts
    return [encode_raw({"role": spec.assistant_role, spec.parts_field: parts})]


def _rewrite_visible(record: Record, kept: list[_Kept], notes: list[ReplayNote]) -> list[_Kept]:
    """Inline reasoning was cut out of the visible text: the record's content replaces it.

    The first visible part carries the whole content (a tag may have spanned parts); the others
    keep only what is not text (a Gemini signature), or go.
    """
    rewrite = _part_format(record.format).rewrite_visible
    result: list[_Kept] = []
    remaining_text = record.content
    for index, raw, reading in kept:
        fields = fields_of(raw) if reading.kind == "visible" else None
        if fields is None:
            result.append((index, raw, reading))
            continue
        notes.append(_note(record, index, "inline_reasoning"))
        rewritten = rewrite(fields, remaining_text)
        remaining_text = ""
        if rewritten is not None:
            result.append((index, encode_raw(rewritten), reading))
    return result


def _drop_trailing_reasoning(
    record: Record, kept: list[_Kept], notes: list[ReplayNote]
) -> list[_Kept]:
    """A Responses reasoning item is only accepted with the item it led to after it."""
    last_answer = max(
        (position for position, (_, _, reading) in enumerate(kept) if reading.kind != "opaque"),
        default=-1,
    )
    for index, _, _ in kept[last_answer + 1 :]:
        notes.append(_note(record, index, "reasoning_without_following_item"))
    return kept[: last_answer + 1]


def _has_inline_reasoning(record: Record) -> bool:
    return any(detection.code in REASONING_IN_TEXT_CODES for detection in record.detections)


def _note(record: Record, index: int, reason: NoteReason) -> ReplayNote:
    return ReplayNote(record.id, record.format, f"replay_parts[{index}]", reason)


def _part_format(format_name: str) -> PartFormat:
    part_format = registry.format_named(format_name).replay_parts
    assert part_format is not None  # message-shaped formats take the other branch
    return part_format
