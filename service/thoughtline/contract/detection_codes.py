"""Every detection code, with the one line docs/record.md shows for it.

The codes are metric label values (`leaked_thought_total{code}`, `malformed_parts_total{code}`),
so the set is fixed here; a test checks that every code the normalizers emit is listed and that
docs/record.md lists every code.
"""

from __future__ import annotations

from typing import Final, Literal

LEAKED_THOUGHT: Final[dict[str, str]] = {
    "inline_tag": (
        "a reasoning block in one of the dialects (`<think>`, `[THINK]`, harmony, …) stood in "
        "visible text and was moved to thinking; `dialect` names it"
    ),
    "orphan_close_tag": (
        "the first delimiter was a closer with no opener before it: the text before it was "
        "reasoning (the opener was in the prompt)"
    ),
    "unclosed_open_tag": (
        "an opener never closed: the rest of the text (up to a tool-call marker) was reasoning"
    ),
    "thought_label": (
        "a Gemini or Gemma model's text opened with the bare label `thought` and a line "
        "break: the label was removed"
    ),
    "thought_in_content": (
        "text the provider marked as thought (Gemini's `extra_content.google.thought` on an "
        "OpenAI-compatible surface) stood in `content`: it was moved to thinking"
    ),
    "suspected_reasoning": (
        "visible text opens like reasoning with no delimiter (`The user asks`, `Thinking "
        "Process:`): nothing was moved"
    ),
    "reasoning_in_content": (
        "the native reasoning text (32 characters or more) also stands verbatim in the content"
    ),
    "replayed_reasoning": (
        "a request sends reasoning back as ordinary text: a thought-marked part or reasoning "
        "field where the format reads text, inline reasoning in an assistant or user message, "
        "or a message repeating reasoning of the request or its conversation (a provider's "
        "own reasoning field sent back to it is protocol, not this)"
    ),
    "reasoning_only_loop": (
        "the conversation's Nth reasoning-only record in a row (no content, no tool call): "
        "a caller re-asking after every reasoning-only turn may never stop"
    ),
}

MALFORMED_PART: Final[dict[str, str]] = {
    "thought_not_boolean": (
        "a Gemini `thought` marker that is not JSON `true`/`false` (not a thought)"
    ),
    "text_not_string": "a `text` that is not a string: it adds no text and stays in `replay_parts`",
    "unknown_part": "a part, block or item of a type we do not know: kept in `replay_parts`",
    "invalid_tool_call": "a tool call without a usable name or shape: kept in `replay_parts`",
    "tool_arguments_not_json": "tool-call arguments that are not valid JSON: kept as the string",
    "missing_signature": "a reasoning block that must carry a signature for replay has none",
    "redacted_without_data": "a redacted reasoning block without its encrypted data to replay",
    "reasoning_not_string": "a native reasoning field that is not a string: it adds no thinking",
    "usage_inconsistent": "the provider's total tokens differ from its input + output",
    "usage_impossible": (
        "a count above the count that includes it (reasoning tokens above output tokens, cache "
        "reads above input tokens): the provider or a gateway miscounted; the counts are kept"
    ),
    "truncated_stream": (
        "a recorded stream cut before its terminal event: usage and finish reason are null"
    ),
    "stream_error": "a recorded stream ended with an error event: finish reason `error`",
    "invalid_chunk": "a recorded stream chunk that is not JSON (or not an object): skipped",
    "stream_out_of_order": (
        "a stream event before the event that opens it, or after the stream ended: applied"
    ),
    "invalid_usage": "a usage object whose counts are not integers: counts null, raw kept",
}

DetectionCode = Literal[
    "inline_tag",
    "orphan_close_tag",
    "unclosed_open_tag",
    "thought_label",
    "thought_in_content",
    "suspected_reasoning",
    "reasoning_in_content",
    "replayed_reasoning",
    "reasoning_only_loop",
    "thought_not_boolean",
    "text_not_string",
    "unknown_part",
    "invalid_tool_call",
    "tool_arguments_not_json",
    "missing_signature",
    "redacted_without_data",
    "reasoning_not_string",
    "usage_inconsistent",
    "usage_impossible",
    "truncated_stream",
    "stream_error",
    "invalid_chunk",
    "stream_out_of_order",
    "invalid_usage",
]
"""Every detection code, for the type checker (a test keeps it equal to the tables above)."""

NO_DIALECT: Final = "none"
"""The `dialect` label value of a detection that names no dialect."""

DIALECT_CODES: Final = frozenset({"inline_tag", "orphan_close_tag", "unclosed_open_tag"})
"""Codes whose detections name the dialect that matched (any row of the table)."""

THOUGHT_DIALECT_CODES: Final = frozenset({"thought_label", "thought_in_content"})
"""Codes whose detections always name the `thought` dialect."""


def markdown_table() -> str:
    """The table of detection codes in docs/record.md (`thoughtline.doc_tables` puts it there)."""
    rows = ["| kind | code | meaning |", "| --- | --- | --- |"]
    for kind, codes in (("leaked_thought", LEAKED_THOUGHT), ("malformed_part", MALFORMED_PART)):
        rows.extend(f"| `{kind}` | `{code}` | {meaning} |" for code, meaning in codes.items())
    return "\n".join(rows)
