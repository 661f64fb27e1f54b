"""The searches split by first character find what the whole patterns find.

`extract` looks for the first delimiter with one regex search per first character (each
pattern starts with a literal, so the engine skips to it in C), and a leading block's shortcut
asks whether anything else that can end the block stands before its closer the same way. A
split that lost an alternative would let a delimiter through as plain text; over texts dense in
markers, fragments of them and code runs, from every start, each must agree with the one
pattern it was split from.
"""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from thoughtline.reasoning import markers, search, shortcuts
from thoughtline.reasoning.dialects import DIALECTS, TOOL_CALL_MARKERS

FRAGMENTS = sorted(
    {
        piece
        for marker in markers.ROLES_LITERALS + TOOL_CALL_MARKERS
        for piece in (marker, marker[:1], marker[:2], marker.upper())
    }
    | {"`", "``", "~~~", "[X]", "<b>", "x", " ", "\n", "é", "🎯"}
)
TEXTS = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
WHOLE = markers.marker_pattern(markers.ROLES_LITERALS, code_runs=False)


def _found(match: re.Match[str] | None) -> tuple[int, str] | None:
    return None if match is None else (match.start(), match.group())


@settings(max_examples=300, deadline=None)
@given(TEXTS)
@example("[[THINK]a[/THINK] `<think>` ◁think▷")
@example("a [the docs](x) <b> </div> <|channel|>analysis")
def test_the_first_delimiter_is_the_whole_pattern_s_first_match(text: str) -> None:
    for start in range(len(text) + 1):
        assert _found(search.next_dialect_marker(text, start)) == _found(WHOLE.search(text, start))


@settings(max_examples=300, deadline=None)
@given(TEXTS)
@example("<think>a [x] [TOOL_CALLS] b</think>")
def test_another_block_end_before_the_closer_is_found_as_the_whole_pattern_finds_it(
    text: str,
) -> None:
    for dialect in DIALECTS:
        if dialect.kind == "phrase":
            continue
        closer_start = dialect.closers[0][0]
        pattern = markers.BLOCK_END[dialect.name]
        for start in range(len(text) + 1):
            end = text.find(closer_start, start)
            end = len(text) if end < 0 else end
            whole = pattern.search(text, start)
            expected = whole is not None and whole.start() < end
            assert (
                shortcuts.other_block_end_before(text, dialect, closer_start, start, end)
                == expected
            ), (dialect.name, start)
