"""The scanner's split search finds what a plain `pattern.search` finds.

`find_marker` searches a pattern split by first character, part by part, remembering each
part's next match; a part searched too rarely, or a match remembered too long, would let a
delimiter through as text. Over texts dense in candidate characters and marker fragments, for
the marker pattern and every dialect's block-end pattern, from every start position, it gives
the same match as the whole pattern's own search.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from thoughtline.reasoning import markers, scanner, shortcuts
from thoughtline.reasoning import search as searching
from thoughtline.reasoning.dialects import DIALECTS, TOOL_CALL_MARKERS

FRAGMENTS = sorted(
    {
        piece
        for marker in markers.ROLES_LITERALS + TOOL_CALL_MARKERS
        for piece in (marker, marker[:1], marker[:2], marker.upper())
    }
    | {"`", "``", "~~~", "~", "[X]", "[[", "<<", "x", " ", "\n", "é", "🎯"}
)

PATTERNS = [
    (markers.MARKERS, searching.TEXT_SEARCH),
    *(
        (
            markers.BLOCK_END[dialect.name],
            searching.BLOCK_END_SEARCH[dialect.name],
        )
        for dialect in DIALECTS
    ),
]


def searched(text: str, split: searching.Search) -> list[object]:
    """Every match `find_marker` gives, walking the text the way the scanner does (one memo
    for the whole walk)."""
    memo: dict[int, searching.SearchState] = {}
    found: list[object] = []
    position = 0
    while position <= len(text):
        match = searching.find_marker(text, split, position, memo)
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
    for pattern, split in PATTERNS:
        assert searched(text, split) == expected(text, pattern)


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
    assert shortcuts.extract(text, thought_label=label) == scanner.scan(text, thought_label=label)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.lists(st.integers(min_value=0, max_value=30), max_size=20),
)
@example("<think>[THINK]`x`<think>", [20])
def test_the_split_search_follows_positions_that_jump(text: str, steps: list[int]) -> None:
    """The scanner's positions jump over several matches at once (a code span, a block); from
    each position reached, the remembered matches give what a fresh search gives."""
    for pattern, split in PATTERNS:
        memo: dict[int, searching.SearchState] = {}
        position = 0
        for step in [0, *steps]:
            position = min(position + step, len(text))
            match = searching.find_marker(text, split, position, memo)
            fresh = pattern.search(text, position)
            assert (match and (match.start(), match.group())) == (
                fresh and (fresh.start(), fresh.group())
            )


FENCE_FRAGMENTS = ["`", "```", "````", "~", "~~~", "~~~~", " ", "  ", "    ", "\n", "\r", "x", "é"]
FENCE_LINE = re.compile(r"(?m)^ {0,3}(`{3,}|~{3,})")
"""What a closing fence line is, as one pattern: the regex `closing_fence` must agree with."""


def closing_fence_by_pattern(
    text: str, position: int, character: str, length: int
) -> tuple[int, int] | None:
    for line in FENCE_LINE.finditer(text, position):
        run = line.group(1)
        if run[0] == character and len(run) >= length:
            return line.start(), line.end()
    return None


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(FENCE_FRAGMENTS), max_size=30).map("".join),
    st.integers(min_value=0, max_value=40),
    st.sampled_from("`~"),
    st.integers(min_value=3, max_value=5),
)
@example("```\n   ```x", 3, "`", 3)
@example("x\n    ```\n ````", 0, "`", 4)
@example("x\n    ~~~", 0, "~", 3)
@example("x\n   ```", 3, "`", 3)
@example("````", 2, "`", 3)
def test_the_closing_fence_is_the_line_the_pattern_finds(
    text: str, position: int, character: str, length: int
) -> None:
    position = min(position, len(text))
    assert searching.closing_fence(text, position, character, length) == closing_fence_by_pattern(
        text, position, character, length
    )


# --- the guarded trie finds what one branch per marker finds ----------------------------------


def _one_branch_per_marker() -> re.Pattern[str]:
    """Every delimiter, wrapper and tool-call marker as its own branch, longest first (tags in
    any case, openers with attributes as the table describes them): the plain reading of what
    the compiled trie must find."""
    branches = []
    for marker in sorted(set(markers.ROLES_LITERALS), key=len, reverse=True):
        branch = re.escape(marker)
        if marker.lower() in markers.TAG_KEYS:
            branch = f"(?i:{branch})"
        for dialect in DIALECTS:
            if dialect.wrapper_suffix and marker in dialect.wrappers:
                branch += f"(?:\\s*{re.escape(dialect.wrapper_suffix)})?"
        branches.append(branch)
    for dialect in DIALECTS:
        if dialect.attribute_openers:
            names = "|".join(re.escape(name) for name in dialect.attribute_openers)
            required = dialect.required_attribute
            lookahead = f"(?=[^<>]*{required})" if required else ""
            branches.append(f"(?i:(?:{names})\\s{lookahead}[^<>]*(?<!/)>)")
    return re.compile("|".join(branches))


ONE_BRANCH_PER_MARKER = _one_branch_per_marker()
FLOOD_FRAGMENTS = [
    *FRAGMENTS,
    *(marker[:cut] for marker in markers.ROLES_LITERALS for cut in (3, 5, -1)),
    '<think a="1">',
    '<details type="reasoning" done="true">',
    "<think a/>",
    "[END FINAL RESPONSE] <|end|>",
    ">",
    "]",
    "▷",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(FLOOD_FRAGMENTS), max_size=40).map("".join))
@example("<|<|<|START_THINKING|>")
@example("[THIN[THINK]")
@example('<details type="reasoning"><think>')
def test_the_guarded_trie_finds_what_one_branch_per_marker_finds(text: str) -> None:
    for start in range(len(text) + 1):
        found = searching.next_dialect_marker(text, start)
        expected_match = ONE_BRANCH_PER_MARKER.search(text, start)
        assert (found and (found.start(), found.group())) == (
            expected_match and (expected_match.start(), expected_match.group())
        ), start


def test_each_first_character_search_is_guarded() -> None:
    """The lookahead for a closing character is what rejects a prefix flood in C: every
    per-character search carries one."""
    for character, pattern in markers.DIALECT_MARKER_SEARCHES:
        assert pattern.pattern.startswith(re.escape(character) + "(?=[^"), character
