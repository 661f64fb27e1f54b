"""Every detection code, with the one line the README shows for it.

The codes are metric label values (`leaked_thought_total{code}`, `malformed_parts_total{code}`),
so the set is fixed here; a test checks that every code the normalizers emit is listed and that
the README lists every code.
"""

from __future__ import annotations

from typing import Final

LEAKED_THOUGHT: Final[dict[str, str]] = {
    "inline_tag": "a `<think>`/`<thinking>` block stood in visible text and was moved to thinking",
    "orphan_close_tag": (
        "a closing tag with no opening tag before it: the text before it was reasoning "
        "(or a later stray closing tag was removed)"
    ),
    "unclosed_open_tag": "an opening tag never closed: the rest of the text was reasoning",
    "reasoning_in_content": (
        "the native reasoning text (32 characters or more) also stands verbatim in the content"
    ),
}

MALFORMED_PART: Final[dict[str, str]] = {
    "thought_not_boolean": "a Gemini `thought` marker that is not JSON `true`/`false` (not a thought)",
    "text_not_string": "a `text` that is not a string: it adds no text and stays in `replay_parts`",
    "unknown_part": "a part, block or item of a type we do not know: kept in `replay_parts`",
    "invalid_tool_call": "a tool call without a usable name or shape: kept in `replay_parts`",
    "tool_arguments_not_json": "tool-call arguments that are not valid JSON: kept as the string",
    "missing_signature": "a reasoning block that must carry a signature for replay has none",
    "usage_inconsistent": "the provider's total tokens differ from its input + output",
}

ALL: Final[dict[str, str]] = {**LEAKED_THOUGHT, **MALFORMED_PART}
