"""What inline extraction gives: the content, the thinking, a detection per block, and the
stretches of text that left the content with the rule that removed each (for `--explain`)."""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

from thoughtline.contract.record import DialectName
from thoughtline.reasoning.dialects import SUSPECTED_REASONING_OPENINGS

InlineCode = Literal[
    "inline_tag",
    "orphan_close_tag",
    "unclosed_open_tag",
    "thought_label",
    "suspected_reasoning",
]


SpanRule = Literal[
    "block",
    "orphan_closer",
    "unclosed_opener",
    "stray_closer",
    "answer_wrapper",
    "thought_label",
]


REASONING_IN_TEXT_CODES: Final[frozenset[str]] = frozenset(
    {"inline_tag", "orphan_close_tag", "unclosed_open_tag", "thought_label", "thought_in_content"}
)
"""Codes that say the provider's visible text held reasoning (so its raw message must not be
sent back as it is)."""


class InlineDetection(NamedTuple):
    """One leaked-reasoning finding in visible text, with the dialect that matched (or None)."""

    code: InlineCode
    dialect: DialectName | None


class RemovedSpan(NamedTuple):
    """A stretch of the visible text that did not stay in content, and why (for `--explain`)."""

    start: int
    end: int
    rule: SpanRule
    dialect: DialectName | None
    reasoning: bool
    """Whether the span's inner text went to thinking (a non-empty block)."""


class InlineExtraction(NamedTuple):
    """What inline extraction made of a visible text."""

    content: str
    thinking: str | None
    detections: tuple[InlineDetection, ...]
    spans: tuple[RemovedSpan, ...] = ()


def suspected(content: str) -> tuple[InlineDetection, ...]:
    if content.startswith(SUSPECTED_REASONING_OPENINGS, first_non_space(content)):
        return SUSPECTED
    return ()


SUSPECTED: Final = (InlineDetection("suspected_reasoning", None),)


def first_non_space(text: str) -> int:
    if not text or not text[0].isspace():
        return 0
    return len(text) - len(text.lstrip())
