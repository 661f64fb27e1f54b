"""Finding markers: the split searches the scanner walks (each part's next match remembered),
the first delimiter of a text, closing fences, and the quick check for a text with none."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import Final, NamedTuple

from thoughtline.reasoning.dialects import SUSPECTED_REASONING_OPENINGS, Dialect
from thoughtline.reasoning.markers import (
    BLOCK_END_SEARCHES,
    DIALECT_MARKER_SEARCHES,
    FENCE_RUNS,
    OPENING_FIRST_CHARACTERS,
    PHRASE_OPENERS,
    THOUGHT_LABEL,
    PerDialect,
)
from thoughtline.reasoning.results import SUSPECTED, InlineExtraction, first_non_space


class Search(NamedTuple):
    """A pattern split by the first character of its matches (every match starts with a
    literal one), each part with the literal text all its matches start with: `str.find`
    (memchr speed, far faster than the regex engine's scan) jumps to the first place the part
    may match, and the part's search goes on from there in C, so no Python step is spent per
    `<` of an HTML answer or per `[` of a Markdown link. `slot` names its place in a search
    memo (see `find_marker`)."""

    slot: int
    parts: tuple[tuple[str, re.Pattern[str]], ...]


_search_slots: Final = itertools.count()


def _split_search(parts: Iterable[tuple[str, re.Pattern[str]]]) -> Search:
    return Search(next(_search_slots), tuple(parts))


TEXT_SEARCH: Final = _split_search(
    (*DIALECT_MARKER_SEARCHES, ("`", re.compile(r"``*")), ("~", re.compile(r"~~~~*")))
)
"""`MARKERS` (delimiters and code runs) split by first character, for `find_marker`."""


def _block_end_search(dialect: Dialect) -> Search:
    searches = BLOCK_END_SEARCHES[dialect.name]
    return _split_search((character, pattern) for character, pattern, _ in searches)


BLOCK_END_SEARCH: Final = PerDialect(_block_end_search)
"""`BLOCK_END` of each dialect, for `find_marker` (compiled at its first lookup)."""


class SearchState:
    """One split search over one text: each part's next match (None: it has no more), the
    nearest of them, the part it came from, and the nearest of the other parts' matches."""

    __slots__ = ("matches", "nearest", "part", "rest")

    def __init__(
        self,
        matches: list[re.Match[str] | None],
        nearest: re.Match[str] | None,
        part: int,
        rest: re.Match[str] | None,
    ) -> None:
        self.matches = matches
        self.nearest = nearest
        self.part = part
        self.rest = rest


_NO_MATCH_LEFT: Final = SearchState([], None, 0, None)
"""The state of a search with no match left in its text (its matches are never read)."""


def find_marker(
    text: str, search: Search, position: int, memo: dict[int, SearchState]
) -> re.Match[str] | None:
    """The first match at or after `position` of the pattern `search` splits: the nearest of
    its parts' matches. Each part's next match stays in `memo` (one per text; the positions
    asked must not go back): a part is searched again only once `position` has passed its
    match, so each is searched about once per match it has, and while one part keeps giving
    the nearest match (the backtick runs of code spans) a step costs one search of it."""
    state = memo.get(search.slot)
    if state is None:  # the first search of this text: every part, in one walk (a live
        # text is searched anew on every run, so this walk is its usual step)
        matches: list[re.Match[str] | None] = []
        nearest = rest = None
        part = 0
        for index, (prefix, pattern) in enumerate(search.parts):
            at = text.find(prefix, position)
            found = pattern.search(text, at) if at >= 0 else None
            matches.append(found)
            if found is None:
                continue
            if nearest is None or found.start() < nearest.start():
                rest, nearest, part = nearest, found, index
            elif rest is None or found.start() < rest.start():
                rest = found
        # With no match at all (most live runs) the one shared empty state does.
        memo[search.slot] = (
            SearchState(matches, nearest, part, rest) if nearest is not None else _NO_MATCH_LEFT
        )
        return nearest
    else:
        nearest = state.nearest
        if nearest is None:  # no match was left
            return None
        if nearest.start() >= position:
            return nearest
        # The nearest's part is searched on (the full walk below would search it too); its
        # next match is the nearest again when it comes before every other part's match.
        rest = state.rest
        prefix, pattern = search.parts[state.part]  # `_part_search`, inlined: the usual step
        at = text.find(prefix, position)
        found = state.matches[state.part] = pattern.search(text, at) if at >= 0 else None
        if found is not None and (rest is None or found.start() < rest.start()):
            state.nearest = found
            return found
    nearest = rest = None
    part = 0
    matches = state.matches
    for index, found in enumerate(matches):  # some part's match was passed: walk them all
        if found is not None and found.start() < position:
            found = matches[index] = _part_search(text, search.parts[index], position)
        if found is None:
            continue
        if nearest is None or found.start() < nearest.start():
            rest, nearest, part = nearest, found, index
        elif rest is None or found.start() < rest.start():
            rest = found
    state.nearest, state.part, state.rest = nearest, part, rest
    return nearest


def _part_search(
    text: str, part: tuple[str, re.Pattern[str]], position: int
) -> re.Match[str] | None:
    prefix, pattern = part
    found = text.find(prefix, position)
    return pattern.search(text, found) if found >= 0 else None


def closing_fence(text: str, position: int, character: str, length: int) -> tuple[int, int] | None:
    """The first line that starts at or after `position` and opens (after up to three spaces)
    with a run of at least `length` of `character` (a fence's closing line): where the line
    starts and where the run ends, or None. `find` of the one character (memchr speed; a
    longer needle is far slower) jumps to where a run of three may start, the regex engine
    finds it from there, and only such runs are checked: the lines of code between cost
    nothing in Python."""
    run_pattern = FENCE_RUNS[character]
    at = text.find(character, position)
    while at >= 0:
        run = run_pattern.search(text, at)
        if run is None:
            return None
        at, end = run.span()
        line_start = at
        while line_start > 0 and at - line_start < 3 and text[line_start - 1] == " ":
            line_start -= 1
        if (
            line_start >= position
            and (line_start == 0 or text[line_start - 1] == "\n")
            and end - at >= length
        ):
            return line_start, end
        at = text.find(character, end)
    return None


def next_dialect_marker(text: str, position: int) -> re.Match[str] | None:
    """The first delimiter, wrapper or tool-call marker at or after `position`, code runs not
    counted. A text with none of their first characters costs one memchr-speed `find` per
    character; where one stands, the regex engine walks its occurrences in C."""
    first: re.Match[str] | None = None
    for character, pattern in DIALECT_MARKER_SEARCHES:
        found = text.find(character, position)
        if found < 0 or (first is not None and found >= first.start()):
            continue
        match = pattern.search(text, found)
        if match is not None and (first is None or match.start() < first.start()):
            first = match
    return first


def code_run_between(text: str, start: int, end: int) -> bool:
    """True when a code span or fence may open between `start` and `end`."""
    return text.find("`", start, end) >= 0 or text.find("~~~", start, end) >= 0


def plain_extraction(text: str, thought_label: bool) -> InlineExtraction | None:
    """The text unchanged when it holds no delimiter and opens with no phrase or label (most
    answers). None when the scanner must read it."""
    if next_dialect_marker(text, 0) is not None:
        return None
    return plain_text(text, thought_label)


def plain_text(text: str, thought_label: bool) -> InlineExtraction | None:
    """A text with no marker unchanged, unless it opens with a phrase or a label."""
    if thought_label and text.startswith(THOUGHT_LABEL):
        return None
    start = first_non_space(text)
    if text[start : start + 1] not in OPENING_FIRST_CHARACTERS:  # most answers: no opening
        return InlineExtraction(text, None, ())
    if text.startswith(PHRASE_OPENERS, start):
        return None
    suspected = text.startswith(SUSPECTED_REASONING_OPENINGS, start)
    return InlineExtraction(text, None, SUSPECTED if suspected else ())
