"""The turn -> record step: the shared rules applied once for every format to the `Turn` its
reader filled: inline extraction, the native + LF + inline combination, `tool_calls` as the
finish reason of a normal stop with calls, and the cross-field detections (usage, reasoning
repeated in content). It runs the inline extractor, so it stands above the reasoning layer.
"""

from __future__ import annotations

import functools
from typing import Final, NamedTuple

import msgspec

from thoughtline.contract.record import Detection, FormatName, Record, Usage
from thoughtline.reading.compose import EMPTY_META, NO_USAGE, Turn, leaked, malformed
from thoughtline.reasoning.dialects import THOUGHT_LABEL_MODELS
from thoughtline.reasoning.results import InlineExtraction
from thoughtline.reasoning.shortcuts import extract

REASONING_IN_CONTENT_MIN_CHARS: Final = 32
"""Shorter reasoning ("OK", "Yes.") stands in answers by chance; no detection below this."""


@functools.lru_cache(maxsize=256)
def may_carry_thought_label(model: str | None) -> bool:
    """Gemini and Gemma models may open their text with the bare label `thought` (a worker
    sees few model names: the answer is remembered)."""
    if model is None:
        return False
    lowered = model.lower()
    return any(name in lowered for name in THOUGHT_LABEL_MODELS)


class VisibleTextReading(NamedTuple):
    """One visible text as inline extraction read it (what `thoughtline normalize --explain`
    shows)."""

    path: str
    text: str
    extraction: InlineExtraction


def build_record(
    turn: Turn,
    *,
    format: FormatName,
    provider: str,
    record_id: str | None,
    meta: msgspec.Raw | None,
    explained: list[VisibleTextReading] | None = None,
) -> Record:
    """Apply the shared rules (inline extraction, the thinking combination, the tool-call
    finish, the cross-field detections) to a format's turn and return the record. The turn
    is the reader's own and is used up: its lists become the record's. `explained`, when
    given (by `--explain`), receives the visible text's reading: the caller's own list, so
    two explanations at once never see each other's."""
    detections = turn.detections
    visible_text = turn.visible_text
    model = turn.model
    inline = extract(
        visible_text, thought_label=model is not None and may_carry_thought_label(model)
    )
    if inline.detections:
        detections.extend(
            leaked(found.code, turn.visible_path, found.dialect) for found in inline.detections
        )
    if explained is not None:
        explained.append(VisibleTextReading(turn.visible_path, visible_text, inline))
    native = turn.native_thinking or None
    content = inline.content
    if native is None:
        thinking = inline.thinking
    else:
        thinking = native if inline.thinking is None else native + "\n" + inline.thinking
        if len(content) >= REASONING_IN_CONTENT_MIN_CHARS and _reasoning_in_content(
            native, content
        ):
            detections.append(leaked("reasoning_in_content", turn.visible_path))
    usage = turn.usage
    if usage is not NO_USAGE:
        usage = _checked_usage(usage, turn.usage_path, detections)
    finish_reason = turn.finish_reason
    if finish_reason == "stop" and turn.tool_calls:
        finish_reason = "tool_calls"
    return Record(
        id=record_id if record_id is not None else (turn.response_id or ""),
        format=format,
        provider=provider,
        model=model,
        content=content,
        thinking=thinking,
        tool_calls=turn.tool_calls,
        finish_reason=finish_reason,
        native_finish_reason=turn.native_finish_reason,
        usage=usage,
        native_usage=turn.native_usage,
        replay_parts=turn.replay_parts,
        detections=detections,
        meta=meta if meta is not None else EMPTY_META,
    )


def _checked_usage(usage: Usage, path: str, detections: list[Detection]) -> Usage:
    """The usage with the provider's total, else input + output when both are known (never
    invented); a count below zero nulls them all, as formats do for non-integers
    (`native_usage` keeps what the provider sent). Detections: `usage_inconsistent` (a total
    other than input + output), `usage_impossible` (a part above its whole: reasoning is part
    of output, cache reads are part of input)."""
    # Every record with usage passes here: the rules are spelled out in one function (a call
    # per rule was a tenth of a small body's reading).
    input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
    reasoning, cached, total = usage.reasoning_tokens, usage.cached_input_tokens, usage.total_tokens
    if (
        (input_tokens is not None and input_tokens < 0)
        or (output_tokens is not None and output_tokens < 0)
        or (reasoning is not None and reasoning < 0)
        or (cached is not None and cached < 0)
        or (total is not None and total < 0)
    ):
        detections.append(malformed("invalid_usage", path))
        return NO_USAGE
    if input_tokens is None or output_tokens is None:
        if (reasoning is not None and output_tokens is not None and reasoning > output_tokens) or (
            cached is not None and input_tokens is not None and cached > input_tokens
        ):
            detections.append(malformed("usage_impossible", path))
        return usage
    if total is not None and total != input_tokens + output_tokens:
        detections.append(malformed("usage_inconsistent", path))
    if (reasoning is not None and reasoning > output_tokens) or (
        cached is not None and cached > input_tokens
    ):
        detections.append(malformed("usage_impossible", path))
    if total is not None:
        return usage
    return msgspec.structs.replace(usage, total_tokens=input_tokens + output_tokens)


def _reasoning_in_content(native: str, content: str) -> bool:
    minimum = REASONING_IN_CONTENT_MIN_CHARS
    if len(native) > len(content) and not (native[0].isspace() or native[-1].isspace()):
        return False  # the usual case: a long reasoning cannot stand in a shorter answer
    # The needle's first characters, absent from almost every answer, are looked for first:
    # stripping the whole thinking copies it, and a long needle's search first prepares it in
    # time linear in its length.
    head = native[: 2 * minimum].lstrip()[:minimum]
    if len(head) == minimum and head not in content:
        return False
    needle = native.strip()
    return len(needle) >= minimum and needle in content
