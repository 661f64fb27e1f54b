"""The scanner's candidate search finds what a plain `pattern.search` finds.

`find_marker` jumps between candidate characters with `str.find` instead of letting the
regex engine scan (much slower on one-byte text); a skipped candidate would let a delimiter
through as text. Over texts dense in candidate characters and marker fragments, for the marker
pattern and every dialect's block-end pattern, from every start position, it gives the same
match as the regex's own search.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from thoughtline.formats import inline_reasoning
from thoughtline.formats.dialects import DIALECTS, TOOL_CALL_MARKERS

FRAGMENTS = sorted(
    {
        piece
        for marker in inline_reasoning._ROLES_LITERALS + TOOL_CALL_MARKERS
        for piece in (marker, marker[:1], marker[:2], marker.upper())
    }
    | {"`", "``", "~~~", "~", "[X]", "[[", "<<", "x", " ", "\n", "é", "🎯"}
)

PATTERNS = [
    (inline_reasoning._MARKERS, inline_reasoning._CANDIDATES),
    *(
        (inline_reasoning._BLOCK_END[dialect.name], inline_reasoning._BLOCK_END_CANDIDATES)
        for dialect in DIALECTS
    ),
]


def searched(text: str, pattern: re.Pattern[str], candidates: tuple[str, ...]) -> list[object]:
    """Every match `find_marker` gives, walking the text the way the scanner does (one table
    of next positions for the whole walk)."""
    next_at: dict[str, int] = {}
    found: list[object] = []
    position = 0
    while position <= len(text):
        match = inline_reasoning.find_marker(text, pattern, position, candidates, next_at)
        if match is None:
            break
        found.append((match.start(), match.group()))
        position = match.start() + 1
    return found


def expected(text: str, pattern: re.Pattern[str]) -> list[object]:
    found: list[object] = []
    position = 0
    while position <= len(text):
        match = pattern.search(text, position)
        if match is None:
            break
        found.append((match.start(), match.group()))
        position = match.start() + 1
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join))
@example("[[THINK]a[/THINK]")
@example("<<think>a</think>")
@example("[X] and [y] then [THINK]a[/THINK] and <b> then </think>")
def test_the_candidate_search_finds_what_the_regex_finds(text: str) -> None:
    for pattern, candidates in PATTERNS:
        assert searched(text, pattern, candidates) == expected(text, pattern)


LEADS = ["", "<think>", "[THINK]", "<|channel>thought\n", "  <think>\n", "</think>", "reasoning "]


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(LEADS),
    st.lists(st.sampled_from(FRAGMENTS), max_size=30).map("".join),
    st.booleans(),
)
@example("<think>", "a [b](c) </think> answer [x] <b>", False)
@example("", "reasoning [x] </think> answer", False)
@example("<think>", "a </think> b <answer>c</answer> [x]", False)
def test_the_shortcuts_give_what_the_scanner_gives(lead: str, rest: str, label: bool) -> None:
    """`extract` reads plain texts and single leading blocks without the scanner; with
    candidate characters that start no marker around, it still gives the scanner's result."""
    text = lead + rest
    assert inline_reasoning.extract(text, thought_label=label) == inline_reasoning.scan(
        text, thought_label=label
    )
