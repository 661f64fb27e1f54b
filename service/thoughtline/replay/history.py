"""Next-turn history from records: the provider-native assistant turns, and what was left out.

For each record, in order:

- a record of the target format goes back natively: its replay parts byte for byte, minus the
  reasoning the provider does not need (`parts.py`, `messages.py`); when inline reasoning was cut
  out of its visible text, that text is replaced by the record's `content`. A Chat-shaped
  record's own reasoning field goes back where its provider asks for it: `reasoning_details`
  always, `reasoning_content` / Ollama `thinking` for the records of a *tool turn* (the records
  from one user message to the next, read as: up to and including the first record without
  tool calls, or to the end of the history) that called a tool;
- a record of another format is rebuilt from its `content` and `tool_calls` (`rebuild.py`): its
  reasoning, text or opaque, never crosses providers;
- a record that leaves nothing to send adds no turn (an empty assistant turn is one the model
  never sent).

Every drop is a `ReplayNote` (record, path into the record, reason): reported, never silent;
every turn says which carry-back rules it followed (`ReplayTurn.rules`).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from thoughtline.contract.errors import ReplayError
from thoughtline.contract.record import KNOWN_FORMATS, FormatName, Record, is_format_name
from thoughtline.reasoning.results import REASONING_IN_TEXT_CODES
from thoughtline.replay import rebuild
from thoughtline.replay.messages import native_message, read_message
from thoughtline.replay.parts import (
    MessageFormat,
    NoteReason,
    PartFormat,
    PartReading,
    ReplayRow,
    ReplayRule,
    Rows,
    carries_rebuildable,
    encode_raw,
    fields_of,
    read_part,
)


class ReplayNote(msgspec.Struct, frozen=True):
    """Something of a record that the history leaves out (or, for ids, adds), and why."""

    record_id: str
    record_format: FormatName
    path: str
    """Into the record: `replay_parts[2]`, `replay_parts[0].reasoning_content`, `thinking`."""
    reason: NoteReason


class ReplayTurn(msgspec.Struct, frozen=True):
    """One record's items in the target format: one message / content, or Responses items."""

    record_id: str
    items: list[msgspec.Raw]
    rules: tuple[ReplayRule, ...] = ()
    """The carry-back rules this turn followed: `thought_signatures`, `signed_thinking`,
    `reasoning_items`, `reasoning_details`, `reasoning_in_tool_turn`, `preserved_thinking`;
    `answer_only` when no
    reasoning state went back; `rebuilt_from_content` for a record of another format."""


class History(msgspec.Struct):
    format: FormatName
    turns: list[ReplayTurn]
    notes: list[ReplayNote]

    def items(self) -> list[msgspec.Raw]:
        """Every turn's items in order, ready to interleave with the caller's own messages."""
        return [item for turn in self.turns for item in turn.items]


_Kept = tuple[int, msgspec.Raw, PartReading]


def build_history(
    records: Iterable[Record], to: str, rows: Rows, *, preserve_reasoning: bool = False
) -> History:
    """The assistant turns of `records` for a request in format `to`, with notes on every drop.

    `rows`: each format's row by name (handed by the API).

    `preserve_reasoning`: a Chat-shaped record's `reasoning_content` (Ollama: `thinking`) goes
    back on every turn, not only on turns that called tools: for a request that asks the
    provider to keep earlier reasoning (GLM's preserved thinking, `clear_thinking: false`).
    """
    if not is_format_name(to):
        raise ReplayError(f"unknown target format {to!r}; known: {', '.join(KNOWN_FORMATS)}")
    history = History(format=to, turns=[], notes=[])
    listed = list(records)
    for index, (record, tool_turn) in enumerate(zip(listed, tool_turns(listed), strict=True)):
        items, rules = _record_items(
            record, index, rows, to, history.notes, tool_turn, preserve_reasoning
        )
        if items:
            history.turns.append(ReplayTurn(record.id, items, rules))
        else:
            history.notes.append(ReplayNote(record.id, record.format, "", "empty_turn"))
    return history


def tool_turns(records: list[Record]) -> list[bool]:
    """For each record: whether it belongs to a turn that called a tool.

    A turn runs from one user message to the next; in a history of assistant records that is up
    to and including the first record without tool calls (the model answered, so the user speaks
    next), or to the end (a tool loop still open).
    """
    flags: list[bool] = []
    start = 0
    for index, record in enumerate(records):
        if not record.tool_calls or index == len(records) - 1:
            called = any(turn_record.tool_calls for turn_record in records[start : index + 1])
            flags.extend([called] * (index + 1 - start))
            start = index + 1
    return flags


def encode_history(history: History, row: ReplayRow) -> bytes:
    """`{"format", <request field>: [...], "turns": [...], "notes": [...]}`; opaque parts keep
    their bytes. `turns` says, per record, which carry-back rules its items followed."""
    field = row.history_field
    turns = [{"record_id": turn.record_id, "rules": turn.rules} for turn in history.turns]
    return msgspec.json.encode(
        {"format": history.format, field: history.items(), "turns": turns, "notes": history.notes}
    )


def _record_items(
    record: Record,
    record_index: int,
    rows: Rows,
    target: str,
    notes: list[ReplayNote],
    tool_turn: bool,
    preserve: bool,
) -> tuple[list[msgspec.Raw], tuple[ReplayRule, ...]]:
    if record.format != target:
        foreign = _foreign_items(record, record_index, rows(record.format), rows(target), notes)
        return foreign, ("rebuilt_from_content",)
    row = rows(target)
    if row.message_shaped:
        return _message_items(record, row, notes, tool_turn, preserve)
    items, carried_state = _part_items(record, row, notes)
    rule = _part_format(row).rule if carried_state else "answer_only"
    return items, (rule,)


def _foreign_items(
    record: Record, record_index: int, own: ReplayRow, target: ReplayRow, notes: list[ReplayNote]
) -> list[msgspec.Raw]:
    paths = reasoning_paths(record, own)
    if not paths and record.thinking is not None:
        paths = ["thinking"]
    notes.extend(ReplayNote(record.id, record.format, path, "foreign_reasoning") for path in paths)
    if not own.message_shaped:
        notes.extend(
            _note(record, index, "unsupported_part")
            for index, raw in enumerate(record.replay_parts)
            if not carries_rebuildable(own.replay_parts, raw)
        )
    ids, assigned = rebuild.call_ids(record, record_index, target)
    notes.extend(
        ReplayNote(record.id, record.format, f"tool_calls[{index}]", "tool_call_id_assigned")
        for index in assigned
    )
    return [msgspec.Raw(item) for item in rebuild.rebuilt_items(record, target, ids)]


def reasoning_paths(record: Record, row: ReplayRow) -> list[str]:
    """Where a record's native reasoning (text or opaque) sits inside its replay parts (`row`:
    the record's format's)."""
    if row.message_shaped:
        shape = _message_format(row)
        return [
            f"replay_parts[{index}]{suffix}"
            for index, raw in enumerate(record.replay_parts)
            for suffix, _ in read_message(raw, shape).dropped
        ]
    paths = []
    for index, raw in enumerate(record.replay_parts):
        reading = read_part(row.replay_parts, raw)
        if reading.kind in ("opaque", "dropped"):
            paths.append(f"replay_parts[{index}]")
        elif reading.signed and row.replay_parts is not None:
            paths.append(f"replay_parts[{index}].{row.replay_parts.signature_field}")
    return paths


def _message_items(
    record: Record, row: ReplayRow, notes: list[ReplayNote], tool_turn: bool, preserve: bool
) -> tuple[list[msgspec.Raw], tuple[ReplayRule, ...]]:
    tool_calls: list[msgspec.Raw] = []
    carried: dict[str, msgspec.Raw] = {}
    rules: list[ReplayRule] = []
    shape = _message_format(row)
    for index, raw in enumerate(record.replay_parts):
        reading = read_message(
            raw, shape, row.tool_turn_reasoning, tool_turn=tool_turn, preserve=preserve
        )
        tool_calls.extend(reading.tool_calls)
        carried.update(reading.carried)
        rules.extend(rule for rule in reading.rules if rule not in rules)
        notes.extend(
            ReplayNote(record.id, record.format, f"replay_parts[{index}]{suffix}", reason)
            for suffix, reason in reading.dropped
        )
    if _has_inline_reasoning(record):  # `content` is already cut; say what it lost
        notes.append(ReplayNote(record.id, record.format, "content", "inline_reasoning"))
    message = native_message(record, shape, tool_calls, carried)
    if message is None:
        return [], ()
    return [msgspec.Raw(message)], tuple(rules) or ("answer_only",)


def _part_items(
    record: Record, row: ReplayRow, notes: list[ReplayNote]
) -> tuple[list[msgspec.Raw], bool]:
    """The record's kept parts as turn items, and whether reasoning state is among them."""
    spec = _part_format(row)
    kept: list[_Kept] = []
    for index, raw in enumerate(record.replay_parts):
        reading = read_part(spec, raw)
        if reading.kind == "dropped":
            notes.append(_note(record, index, reading.reason or "reasoning_text"))
        else:
            kept.append((index, raw, reading))
    if _has_inline_reasoning(record):
        kept = _rewrite_visible(record, spec, kept, notes)
    if spec.reasoning_needs_following_item:
        kept = _drop_trailing_reasoning(record, kept, notes)
    parts = [raw for _, raw, _ in kept]
    carried_state = any(reading.kind == "opaque" or reading.signed for _, _, reading in kept)
    if not parts or spec.assistant_role is None:
        return parts, carried_state
    return [encode_raw({"role": spec.assistant_role, spec.parts_field: parts})], carried_state


def _rewrite_visible(
    record: Record, spec: PartFormat, kept: list[_Kept], notes: list[ReplayNote]
) -> list[_Kept]:
    """Inline reasoning was cut out of the visible text: the record's content replaces it.

    The first visible part carries the whole content (a tag may have spanned parts); the others
    keep only what is not text (a Gemini signature), or go.
    """
    rewrite = spec.rewrite_visible
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
    """A reasoning item only accepted with the item it led to after it (Responses')."""
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


def _message_format(row: ReplayRow) -> MessageFormat:
    message_format = row.replay_message
    assert message_format is not None  # a message-shaped row carries its message format
    return message_format


def _part_format(row: ReplayRow) -> PartFormat:
    part_format = row.replay_parts
    assert part_format is not None  # message-shaped formats take the other branch
    return part_format
