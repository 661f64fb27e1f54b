"""`extract`: the common texts read without the scanner, with exactly the scanner's result.

Most answers hold no delimiter (the quick check says so), and the most common leak is one
block that opens the text followed by an answer whose only markers are wrappers; both are read
here with a few searches. Anything else goes to the scanner; tests compare the two."""

from __future__ import annotations

import re

from thoughtline.contract.record import DialectName
from thoughtline.reasoning.dialects import Dialect
from thoughtline.reasoning.markers import (
    BLOCK_END_SEARCHES,
    DIALECT_MARKER_FIRST_CHARACTERS,
    NON_SPACE,
    PHRASE_OPENERS,
    ROLES,
    THOUGHT_LABEL,
    after_opener,
)
from thoughtline.reasoning.results import (
    InlineCode,
    InlineDetection,
    InlineExtraction,
    RemovedSpan,
    SpanRule,
    first_non_space,
    suspected,
)
from thoughtline.reasoning.scanner import scan
from thoughtline.reasoning.search import (
    BLOCK_END_SEARCH,
    code_run_between,
    find_marker,
    next_dialect_marker,
    plain_text,
)


def extract(text: str, *, thought_label: bool = False) -> InlineExtraction:
    """Split inline reasoning out of a whole visible text."""
    # Code runs only matter where a delimiter stands: a text with none is read without them.
    # The quick check, in line: one `in` (a memchr-speed scan) per first character of the
    # table's markers; a text with none of them (most answers) pays no search call.
    first = None
    for character in DIALECT_MARKER_FIRST_CHARACTERS:
        if character in text:
            first = next_dialect_marker(text, 0)
            break
    if first is None:
        plain = plain_text(text, thought_label)
        if plain is not None:
            return plain
    elif not (thought_label and text.startswith(THOUGHT_LABEL)) and not code_run_between(
        text, 0, first.start()
    ):
        single = _one_leading_block(text, first)
        if single is not None:
            return single
    return scan(text, thought_label=thought_label)


def _one_leading_block(text: str, match: re.Match[str]) -> InlineExtraction | None:
    """The most common leak, read without the scanner: one block that opens the text (or an
    orphan closer), and after it an answer whose only markers are wrappers the scanner would
    remove. None for anything else, which the scanner reads. Gives exactly what the scanner
    gives (candidate characters that start no marker are text to both). `match` is the
    text's first delimiter, with no code run before it."""
    start = first_non_space(text)
    if match.start() != start:
        return _leading_orphan(text, match)
    marker = ROLES.get(match.group())
    if marker is None or marker.role != "open" or marker.dialect is None:
        return None
    dialect = marker.dialect
    closer = dialect.closers[0]
    inner_start = after_opener(dialect, text, match.end())
    # The closer, as written in the dialect's table, must be the first thing after the opener
    # that can end a block (what the scanner's block reading looks for); anything else there
    # (a closer in another case, a tool-call marker) and the scanner decides. Usually the first
    # character a block's end can start with opens the closer: one find and a search per other
    # first character say so.
    closer_at = text.find(closer[0], inner_start)
    if (
        closer_at < 0
        or not text.startswith(closer, closer_at)
        or other_block_end_before(text, dialect, closer[0], inner_start, closer_at)
    ):
        end = find_marker(text, BLOCK_END_SEARCH[dialect.name], inner_start, {})
        if end is None or end.group() != closer:
            return None
        closer_at = end.start()
    after = closer_at + len(closer)
    positions = (start, inner_start, closer_at, after)
    return _block_then_answer(text, dialect, positions, "inline_tag")


def other_block_end_before(
    text: str, dialect: Dialect, closer_start: str, start: int, end: int
) -> bool:
    """True when something else that can end a block of `dialect` starts between `start` and
    `end` (where its closer stands, the first `closer_start` after `start`). A `[` of a
    Markdown link in the reasoning is no block end: the regex engine rules it out in C."""
    for character, pattern, longest in BLOCK_END_SEARCHES[dialect.name]:
        if character == closer_start:
            continue
        found = text.find(character, start, end)
        if found < 0:
            continue
        match = pattern.search(text, found, min(len(text), end - 1 + longest))
        if match is not None and match.start() < end:
            return True
    return False


def _leading_orphan(text: str, match: re.Match[str]) -> InlineExtraction | None:
    candidate = match.start()
    marker = ROLES.get(match.group())
    if marker is None or marker.role != "close" or marker.dialect is None:
        return None
    if marker.dialect.kind == "phrase" or text.startswith(PHRASE_OPENERS, first_non_space(text)):
        return None
    positions = (0, 0, candidate, match.end())
    return _block_then_answer(text, marker.dialect, positions, "orphan_close_tag")


def _block_then_answer(
    text: str,
    dialect: Dialect,
    positions: tuple[int, int, int, int],
    code: InlineCode,
) -> InlineExtraction | None:
    """The block's span, its inner text, where the answer starts: `positions` are
    (span start, inner start, inner end, after the block)."""
    span_start, inner_start, inner_end, after = positions
    reasoning = text[inner_start:inner_end].strip()
    rule: SpanRule = "block" if code == "inline_tag" else "orphan_closer"
    spans = [RemovedSpan(span_start, after, rule, dialect.name, bool(reasoning))]
    answer = _answer_with_wrappers(text, after, dialect, spans)
    if answer is None:
        return None
    content = answer.strip()
    detections = (InlineDetection(code, dialect.name),) if reasoning else ()
    return InlineExtraction(
        content, reasoning or None, detections + suspected(content), tuple(spans)
    )


def _answer_with_wrappers(
    text: str,
    position: int,
    block_dialect: Dialect,
    spans: list[RemovedSpan],
) -> str | None:
    """The answer after a leading block when its only markers are answer wrappers the scanner
    would remove (a wrapper of the block's dialect, a token wrapper before any text or of a
    dialect whose wrapper was removed, a trailing one at the very end); None when anything
    else stands there."""
    kept: list[str] = []
    framed: set[DialectName] = set()
    seen_text = False  # visible text before the marker: a token wrapper no longer opens it
    while True:
        match = next_dialect_marker(text, position)
        if match is None:  # code runs, and candidate characters that start no marker, are text
            kept.append(text[position:])
            return "".join(kept)
        candidate = match.start()
        if code_run_between(text, position, candidate):  # the marker may stand in code
            return None
        marker = ROLES.get(match.group()) or ROLES.get(match.group().lower())
        if marker is None or marker.dialect is None:
            return None
        before = text[position:candidate]
        kept.append(before)
        seen_text = seen_text or (bool(before) and not before.isspace())
        dialect = marker.dialect
        removable = marker.role == "wrapper" and (
            dialect is block_dialect
            or (dialect.kind == "token" and (dialect.name in framed or not seen_text))
        )
        if marker.role == "trailing_wrapper":
            removable = NON_SPACE.search(text, match.end()) is None
        if not removable:
            return None
        if marker.role == "wrapper":
            framed.add(dialect.name)
        spans.append(
            RemovedSpan(candidate, match.end(), "answer_wrapper", marker.dialect.name, False)
        )
        position = match.end()
