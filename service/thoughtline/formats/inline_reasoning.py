"""Inline reasoning in visible text: find it in every dialect, leave an answer that only talks
about delimiters untouched.

One scanner serves the whole text (`extract`) and text that arrives in pieces
(`IncrementalExtractor`, `extract_chunks`): the whole text is scanned as one final run; a live
stream is scanned in runs over what has arrived, each run stopping where a decision needs text
that has not arrived yet (a backtick run whose partner may still come, a closer that may still
follow). The next run resumes from there, so the pieces give exactly what the whole text
gives, wherever they are cut.

The rules (docs/inline-reasoning.md has them in full, with examples):

- Markdown code is text: no delimiter counts inside a fenced block or an inline code span.
- A *token* opener counts anywhere outside code; a *tag* opener only as the first
  non-whitespace text or after a non-empty block; a *phrase* opener only at the very start,
  and only with its closer present.
- The first delimiter being a closer means the text before it was reasoning (the chat template
  put the opener in the prompt); a later closer after a non-empty block is removed.
- An opener never closed makes the rest reasoning, up to a tool-call marker; a token opener
  does this only where a tag opener would count, elsewhere an unclosed one is text.
- Answer wrappers are removed, their text kept.
- Thinking is the non-empty blocks joined with LF, trimmed at its ends; in content each block
  leaves one space where it would glue two non-space characters, and content is trimmed at its
  ends when anything was removed.

Time is linear in the text on every input: markers are found by one pattern per first
character, each searched again only once the scan has passed its last match (a text with no
candidate character costs one scan), each backtick run is paired at most once, and a live
stream that must wait re-scans only after what is waiting has doubled.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal, NamedTuple

from thoughtline.contract.record import DialectName
from thoughtline.formats.dialects import (
    DIALECTS,
    SUSPECTED_REASONING_OPENINGS,
    TOOL_CALL_MARKERS,
    Dialect,
)

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


_Role = Literal["open", "close", "wrapper", "trailing_wrapper", "tool_call", "block_end"]


class _Marker(NamedTuple):
    role: _Role
    dialect: Dialect | None


# --- the compiled tables -------------------------------------------------------------------


def _marker_roles() -> dict[str, _Marker]:
    roles: dict[str, _Marker] = {}
    for dialect in DIALECTS:
        if dialect.kind == "phrase":  # phrases are looked for at the start only
            if dialect.standalone_closer:
                for closer in dialect.closers:
                    roles[closer] = _Marker("close", dialect)
            for wrapper in dialect.wrappers:
                roles[wrapper] = _Marker("wrapper", dialect)
            continue
        for opener in dialect.openers:
            roles[_key(opener, dialect.kind)] = _Marker("open", dialect)
        for closer in dialect.closers:
            role: _Role = "close" if dialect.standalone_closer else "block_end"
            roles[_key(closer, dialect.kind)] = _Marker(role, dialect)
        for wrapper in dialect.wrappers:
            roles[_key(wrapper, dialect.kind)] = _Marker("wrapper", dialect)
        for wrapper in dialect.trailing_wrappers:
            roles[_key(wrapper, dialect.kind)] = _Marker("trailing_wrapper", dialect)
    for marker in TOOL_CALL_MARKERS:
        roles.setdefault(marker, _Marker("tool_call", None))
    return roles


def _key(marker: str, kind: str) -> str:
    return marker.lower() if kind == "tag" else marker


_ROLES: Final = _marker_roles()
_TAG_KEYS: Final = frozenset(
    _key(marker, "tag")
    for dialect in DIALECTS
    if dialect.kind == "tag"
    for marker in (*dialect.openers, *dialect.closers, *dialect.wrappers)
)
_SUFFIXED_WRAPPERS: Final = {
    wrapper: dialect
    for dialect in DIALECTS
    if dialect.wrapper_suffix
    for wrapper in dialect.wrappers
}
_ATTRIBUTE_OPENER: Final = next(dialect for dialect in DIALECTS if dialect.name == "think")
"""The one tag that takes attributes: `<think signature="…">`."""


def _alternative(marker: str) -> str:
    """One marker as a pattern: tags ignore case, a suffixed wrapper takes its suffix."""
    pattern = re.escape(marker)
    if marker.lower() in _TAG_KEYS:
        return f"(?i:{pattern})"
    dialect = _SUFFIXED_WRAPPERS.get(marker)
    if dialect is not None:
        return f"{pattern}(?:\\s*{re.escape(dialect.wrapper_suffix)})?"
    return pattern


def _marker_pattern(literals: Iterable[str], *, code_runs: bool = True) -> re.Pattern[str]:
    # The longest match wins; ties keep their order, so a pattern split by first character
    # tries its markers in the order the whole pattern does.
    markers = sorted(dict.fromkeys(literals), key=len, reverse=True)
    angle = [marker for marker in markers if marker.startswith("<")]
    others = [marker for marker in markers if not marker.startswith("<")]
    alternatives = [_angle_alternative(angle)] if angle else []
    alternatives += [_alternative(marker) for marker in others]
    if code_runs:
        alternatives += [
            r"``*",  # written so that every branch starts with a literal: the regex engine then
            r"~~~~*",  # skips text with none of these first characters at C speed
        ]
    return re.compile("|".join(alternatives))


def _angle_alternative(angle: list[str]) -> str:
    # After `<`, a lookahead on the next character rejects a flood of `<` at C speed.
    followers = {marker[1] for marker in angle} | {marker[1].upper() for marker in angle}
    follower_class = "".join(re.escape(character) for character in sorted(followers))
    angle_bodies = "|".join(
        f"(?i:{re.escape(marker[1:])})" if marker.lower() in _TAG_KEYS else re.escape(marker[1:])
        for marker in angle
    )
    attribute_opener = r"(?i:think)\s[^<>]*>"
    return f"<(?=[{follower_class}])(?:{angle_bodies}|{attribute_opener})"


_ROLES_LITERALS: Final = (
    tuple(
        marker
        for dialect in DIALECTS
        for marker in (
            *(dialect.openers if dialect.kind != "phrase" else ()),
            *(dialect.closers if dialect.kind != "phrase" or dialect.standalone_closer else ()),
            *dialect.wrappers,
            *dialect.trailing_wrappers,
        )
    )
    + TOOL_CALL_MARKERS
)
_MARKERS: Final = _marker_pattern(_ROLES_LITERALS)
"""Every marker and code run as one pattern: what `_TEXT_SEARCH` finds, split by first
character (the scanner searches the split one; a test holds the two equal)."""
_CANDIDATES: Final = tuple(sorted({marker[0] for marker in _ROLES_LITERALS} | {"`", "~"}))
"""Every character a delimiter, a code run or a wrapper starts with (for the live scanner's
look at a tail that may still grow into a marker)."""
_CANDIDATE: Final = re.compile("[" + re.escape("".join(_CANDIDATES)) + "]")
_MARKER_FIRST_CHARACTERS: Final = frozenset(marker[0] for marker in _ROLES_LITERALS)
_DIALECT_MARKER_SEARCHES: Final = tuple(
    (
        character,
        _marker_pattern(
            (marker for marker in _ROLES_LITERALS if marker.startswith(character)),
            code_runs=False,
        ),
    )
    for character in sorted(_MARKER_FIRST_CHARACTERS)
)
"""Per first character, the delimiters, wrappers and tool-call markers that start with it (no
code runs): each pattern starts with one literal character, so the regex engine's search skips
to the next occurrence of it in C and tries the marker there, with no Python step per `<` of an
HTML or code answer. `_MARKERS` with the code runs left out, split by first character."""


class _Search(NamedTuple):
    """A pattern split by the first character of its matches (every match starts with a
    literal one), each part with the literal text all its matches start with: `str.find`
    (memchr speed, far faster than the regex engine's scan) jumps to the first place the part
    may match, and the part's search goes on from there in C, so no Python step is spent per
    `<` of an HTML answer or per `[` of a Markdown link. `slot` names its place in a search
    memo (see `find_marker`)."""

    slot: int
    parts: tuple[tuple[str, re.Pattern[str]], ...]


_search_slots: Final = itertools.count()


def _split_search(parts: Iterable[tuple[str, re.Pattern[str]]]) -> _Search:
    return _Search(next(_search_slots), tuple(parts))


_TEXT_SEARCH: Final = _split_search(
    (*_DIALECT_MARKER_SEARCHES, ("`", re.compile(r"``*")), ("~", re.compile(r"~~~~*")))
)
"""`_MARKERS` (delimiters and code runs) split by first character, for `find_marker`."""
_LONGEST_MARKER: Final = max(len(marker) for marker in _ROLES_LITERALS) + len("thought\r\n")
"""How far before the end of a live text a marker may still be growing."""


def _literal_first(marker: str, kind: str) -> str:
    """A marker as a pattern that starts with a literal character (tags match in any case):
    with every branch so, the regex engine skips unrelated text at C speed."""
    if kind == "tag":
        return re.escape(marker[0]) + f"(?i:{re.escape(marker[1:])})"
    return re.escape(marker)


def _after_gemma_label(text: str, end: int) -> int:
    """Gemma 4's channel opener may carry the label `thought` and its line break."""
    if text.startswith(_GEMMA_EMPTY_LABEL, end):
        return end + len(_THOUGHT_LABEL)
    if text.startswith(_THOUGHT_LABEL, end):
        after = end + len(_THOUGHT_LABEL)
        for line_break in _LINE_BREAKS:
            if text.startswith(line_break, after):
                return after + len(line_break)
    return end


def _block_end_pattern(dialect: Dialect) -> re.Pattern[str]:
    """What can end a block of `dialect`: its closers, then (if never closed) a tool call."""
    markers = [_literal_first(closer, dialect.kind) for closer in dialect.closers]
    markers += [re.escape(marker) for marker in TOOL_CALL_MARKERS]
    return re.compile("|".join(markers))


def _closer_pattern(dialect: Dialect) -> re.Pattern[str]:
    return re.compile("|".join(_literal_first(closer, dialect.kind) for closer in dialect.closers))


_BLOCK_END: Final = {dialect.name: _block_end_pattern(dialect) for dialect in DIALECTS}
"""As one pattern per dialect, what `_BLOCK_END_SEARCH` finds (a test holds the two equal)."""


def _block_end_searches(dialect: Dialect) -> tuple[tuple[str, re.Pattern[str], int], ...]:
    """`_BLOCK_END` of the dialect split by first character, each with its longest match (all
    are literals): (character, pattern, longest)."""
    markers = [(closer, _literal_first(closer, dialect.kind)) for closer in dialect.closers]
    markers += [(marker, re.escape(marker)) for marker in TOOL_CALL_MARKERS]
    characters = sorted({marker[0] for marker, _ in markers})
    return tuple(
        (
            character,
            re.compile("|".join(pattern for marker, pattern in markers if marker[0] == character)),
            max(len(marker) for marker, _ in markers if marker[0] == character),
        )
        for character in characters
    )


_BLOCK_END_SEARCHES: Final = {dialect.name: _block_end_searches(dialect) for dialect in DIALECTS}
_BLOCK_END_SEARCH: Final = {
    name: _split_search((character, pattern) for character, pattern, _ in searches)
    for name, searches in _BLOCK_END_SEARCHES.items()
}
"""`_BLOCK_END` of each dialect, for `find_marker`."""
_CLOSER_KEYS: Final = {
    dialect.name: frozenset(_key(closer, dialect.kind) for closer in dialect.closers)
    for dialect in DIALECTS
}
_CLOSER: Final = {dialect.name: _closer_pattern(dialect) for dialect in DIALECTS}
_PHRASES: Final = tuple(dialect for dialect in DIALECTS if dialect.kind == "phrase")
_CODE_START: Final = re.compile(r"`|~~~")
_BACKTICK_RUN: Final = re.compile(r"``*")  # a literal first: the engine skips to it in C
_FENCE_RUNS: Final = {"`": re.compile(r"````*"), "~": re.compile(r"~~~~*")}
"""Runs of three or more of a fence's character (each starts with a literal)."""
_NON_SPACE: Final = re.compile(r"\S")
_GEMMA: Final = next(dialect for dialect in DIALECTS if dialect.name == "gemma")
_THOUGHT_LABEL: Final = "thought"
_LINE_BREAKS: Final = ("\r\n", "\n", "\r")
_GEMMA_EMPTY_LABEL: Final = _THOUGHT_LABEL + _GEMMA.closers[0]


# --- output sinks --------------------------------------------------------------------------


class _Output:
    """Pieces of output text, each with where it came from in the source text: a verbatim
    piece `text[start:start + len(piece)]`, or an inserted one (a glue space, the LF between
    blocks) at `start` with `inserted` set. That lets the pieces be handed out per chunk."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.starts: list[int] = []
        self.inserted: list[bool] = []

    def add(self, piece: str, start: int, inserted: bool = False) -> None:
        self.pieces.append(piece)
        self.starts.append(start)
        self.inserted.append(inserted)


_Held = tuple[str, int]
"""A verbatim piece of source text not written yet, with its start."""


class _ContentSink:
    """Visible content: kept text with glue spaces, trimmed at its ends once anything was cut.

    Whitespace is held until what follows it is known: a run at the very end is trimmed when
    anything was removed, and so is leading whitespace, even when the removal comes later.
    """

    def __init__(self) -> None:
        self.output = _Output()
        self.cut_seen = False
        self._glue_pending = False
        self._started = False
        self._leading: list[_Held] = []
        self._waiting_for_cut: list[tuple[str, int, bool]] | None = None
        self._pending_space: list[_Held] = []

    def write(self, text: str, end: int) -> None:
        """`text` is the source text that ends at `end`."""
        if not text:
            return
        start = end - len(text)
        if not self._started:
            body = text.lstrip()
            lead = len(text) - len(body)
            if lead:
                self._leading.append((text[:lead], start))
            if not body:
                return
            self._started = True
            self._glue_pending = False  # nothing stands on the left to glue to
            if self._leading and not self.cut_seen:
                self._waiting_for_cut = []
            text, start = body, start + lead
        body = text.rstrip()
        if not body:
            self._pending_space.append((text, start))
            return
        if self._pending_space:
            for space, space_start in self._pending_space:
                self._emit(space, space_start, False)
            self._pending_space.clear()
        elif self._glue_pending and not body[0].isspace():
            self._emit(" ", start, True)
        self._glue_pending = False
        self._emit(body, start, False)
        if len(body) < len(text):
            self._pending_space.append((text[len(body) :], start + len(body)))

    def cut(self, glue: bool) -> None:
        """Something was removed here; `glue`: a block, which leaves a space between words."""
        self.cut_seen = True
        if glue and self._started:
            self._glue_pending = True
        if self._waiting_for_cut is not None:
            waiting, self._waiting_for_cut = self._waiting_for_cut, None
            self._leading.clear()
            for piece, start, inserted in waiting:
                self._emit(piece, start, inserted)

    def finish(self) -> None:
        """End of text: held whitespace stays only when nothing was removed."""
        if self.cut_seen:
            return
        leading, waiting = self._leading, self._waiting_for_cut or []
        self._waiting_for_cut = None
        for piece, start in leading:
            self._emit(piece, start, False)
        for piece, start, inserted in waiting:
            self._emit(piece, start, inserted)
        for piece, start in self._pending_space:
            self._emit(piece, start, False)
        self._leading, self._pending_space = [], []

    def _emit(self, piece: str, start: int, inserted: bool) -> None:
        if self._waiting_for_cut is not None:
            self._waiting_for_cut.append((piece, start, inserted))
        else:
            self.output.add(piece, start, inserted)


class _ThinkingSink:
    """Inline thinking: the non-empty blocks joined with LF, trimmed at the two ends."""

    def __init__(self) -> None:
        self.output = _Output()
        self.any_block = False
        self._block_has_text = False
        self._block_leading: list[_Held] = []
        self._pending_space: list[_Held] = []

    def start_block(self) -> None:
        self._block_has_text = False
        self._block_leading.clear()

    def write(self, text: str, end: int) -> None:
        """`text` is the source text that ends at `end`."""
        if not text:
            return
        start = end - len(text)
        if not self._block_has_text:
            body = text.lstrip()
            lead = len(text) - len(body)
            if lead:
                self._block_leading.append((text[:lead], start))
            if not body:
                return
            self._block_has_text = True
            if self.any_block:  # the LF between blocks, after the last block's trailing space
                self._flush_space()
                first = self._block_leading[0][1] if self._block_leading else start + lead
                self.output.add("\n", first, inserted=True)
                for space, space_start in self._block_leading:
                    self.output.add(space, space_start)
            self._block_leading.clear()
            self.any_block = True
            text, start = body, start + lead
        body = text.rstrip()
        if not body:
            self._pending_space.append((text, start))
            return
        self._flush_space()
        self.output.add(body, start)
        if len(body) < len(text):
            self._pending_space.append((text[len(body) :], start + len(body)))

    def end_block(self) -> bool:
        """Close the block; True when it held reasoning (not only whitespace)."""
        had_text = self._block_has_text
        self._block_has_text = False
        self._block_leading.clear()
        return had_text

    def _flush_space(self) -> None:
        for space, space_start in self._pending_space:
            self.output.add(space, space_start)
        self._pending_space.clear()


# --- the scanner ---------------------------------------------------------------------------


class _NeedMoreTextError(Exception):
    """A decision at the current position needs text that has not arrived yet."""


_Mode = Literal["text", "block", "fence"]
_Stage = Literal["label", "phrase", "scan"]


class _SearchState:
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


_NO_MATCH_LEFT: Final = _SearchState([], None, 0, None)
"""The state of a search with no match left in its text (its matches are never read)."""


def find_marker(
    text: str, search: _Search, position: int, memo: dict[int, _SearchState]
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
            _SearchState(matches, nearest, part, rest) if nearest is not None else _NO_MATCH_LEFT
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
    run_pattern = _FENCE_RUNS[character]
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


class _Scanner:
    """The one scanner. `run(text, final)` scans `text`, which continues where the last run
    stopped, and returns how much of it was decided; steps are atomic, so a step that needs
    more text changes nothing and is tried again on the next run."""

    def __init__(self, *, thought_label: bool) -> None:
        self.content = _ContentSink()
        self.thinking = _ThinkingSink()
        self.detections: list[InlineDetection] = []
        self.spans: list[RemovedSpan] = []
        self._stage: _Stage = "label" if thought_label else "phrase"
        self._mode: _Mode = "text"
        self._undecided = True  # no delimiter yet: an orphan closer may still claim the text
        self._held_raw: list[tuple[str, int]] = []
        self._held_spans: list[RemovedSpan] = []
        self._held_ops: list[tuple[str | None, int]] = []
        self._held_start = 0
        self._seen_text = False
        self._found_block = False
        self._block_dialects: set[DialectName] = set()  # dialects with a block, empty or not
        self._block: Dialect | None = None
        self._block_start = 0
        self._fence_character = ""
        self._fence_length = 0
        # spaces since the last line break; None: the line has other text before
        self._line_indent: int | None = 0
        self._base = 0
        self._text = ""
        self._position = 0
        self._text_from = 0
        self._found: dict[int, _SearchState] = {}
        self._next_match_at: dict[str, int] = {}
        self._final = False
        self._backticks: dict[int, list[int]] | None = None
        self.finished = False

    # the driver ---------------------------------------------------------------------------

    def run(self, text: str, final: bool) -> int:
        self._text, self._position, self._final = text, 0, final
        self._text_from = 0
        self._found = {}
        self._next_match_at = {}
        self._backticks = None
        try:
            while True:
                if self._stage != "scan":
                    self._start()
                elif self._position >= len(text):
                    break
                elif self._mode == "block":
                    self._in_block()
                elif self._mode == "fence":
                    self._in_fence()
                else:
                    self._in_text()
        except _NeedMoreTextError:
            pass
        if self._mode != "block":
            self._flush_text()
        consumed = self._position
        if not final:  # only a later run needs to know where the line stands
            self._note_line_state(text, consumed)
        self._base += consumed
        if final:
            self._finish()
        return consumed

    def _note_line_state(self, text: str, consumed: int) -> None:
        line_break = text.rfind("\n", 0, consumed)
        start = line_break + 1 if line_break >= 0 else 0
        if consumed - start > 3:
            self._line_indent = None
            return
        tail = text[start:consumed]
        if tail.strip(" "):
            self._line_indent = None
        elif line_break >= 0:
            self._line_indent = len(tail)
        elif self._line_indent is not None:
            indent = self._line_indent + len(tail)
            self._line_indent = indent if indent <= 3 else None

    def _need(self, available: bool) -> None:
        if not available and not self._final:
            raise _NeedMoreTextError

    # the start of the text ----------------------------------------------------------------

    def _start(self) -> None:
        text, position = self._text, self._position
        if self._stage == "label":
            self._need(len(text) - position > len(_THOUGHT_LABEL) + 1)
            if text.startswith(_THOUGHT_LABEL, position):
                after = position + len(_THOUGHT_LABEL)
                line_break = next(
                    (brk for brk in _LINE_BREAKS if text.startswith(brk, after)), None
                )
                if line_break is not None:
                    end = after + len(line_break)
                    self.content.cut(glue=False)
                    self.detections.append(InlineDetection("thought_label", "thought"))
                    self._span(
                        self._base + position,
                        self._base + end,
                        "thought_label",
                        "thought",
                        reasoning=False,
                    )
                    self._skip_to(end)
                    self._held_start = self._base + end
            self._stage = "phrase"
            return
        match = _NON_SPACE.search(text, position)
        self._need(match is not None and len(text) - match.start() > _LONGEST_PHRASE)
        if match is not None:
            start = match.start()
            for dialect in _PHRASES:
                opener = next((o for o in dialect.openers if text.startswith(o, start)), None)
                if opener is None:
                    continue
                closer_at, closer = self._find_phrase_closer(dialect, start + len(opener))
                if closer_at < 0:
                    break
                self._emit_up_to(start)
                self._flush_text()
                self._resolve_as_content()
                self._block_of(
                    dialect,
                    start + len(opener),
                    closer_at,
                    "inline_tag",
                    start,
                    closer_at + len(closer),
                )
                self._skip_to(closer_at + len(closer))
                break
        self._stage = "scan"

    def _find_phrase_closer(self, dialect: Dialect, start: int) -> tuple[int, str]:
        found = [(self._text.find(closer, start), closer) for closer in dialect.closers]
        found = [item for item in found if item[0] >= 0]
        if not found:
            self._need(False)
            return -1, ""
        return min(found)

    # outside any block --------------------------------------------------------------------

    def _in_text(self) -> None:
        """Markers and code runs one after another, until the mode changes or the text is
        read (what the driver's loop would do, without its round per code span)."""
        text, final, found = self._text, self._final, self._found
        while True:
            position = self._position
            match = find_marker(text, _TEXT_SEARCH, position, found)
            if match is None:
                self._emit_up_to(self._safe_end(position))
                return
            start = match.start()
            if not final and len(text) - start < _LONGEST_MARKER:
                self._emit_up_to(start)
                raise _NeedMoreTextError
            self._position = start  # the text before the marker stays as it is
            first = text[start]
            if first == "`":
                self._backtick_run(match)
            elif first == "~":
                self._tilde_run(match)
            else:
                self._marker(match)
            if self._mode != "text" or self._position >= len(text):
                return

    def _safe_end(self, position: int) -> int:
        """Where text with no marker may be emitted up to: all of it, or (live) up to a
        candidate character near the end that may still grow into a marker."""
        text = self._text
        if self._final:
            return len(text)
        tail_start = max(position, len(text) - _LONGEST_MARKER)
        candidate = _CANDIDATE.search(text, tail_start)
        end = candidate.start() if candidate is not None else len(text)
        angle = text.rfind("<", position, end)
        if angle >= 0 and _UNFINISHED_ATTRIBUTE_OPENER.match(text, angle):
            end = angle
        if end == position:
            raise _NeedMoreTextError
        return end

    def _emit_up_to(self, end: int) -> None:
        """Text up to `end` stays as it is; it is written out in one piece when something
        else happens (`_flush_text`), so a run of code spans costs no writes of its own."""
        self._position = max(self._position, end)

    def _flush_text(self) -> None:
        if self._position > self._text_from:
            self._emit_text(self._text[self._text_from : self._position], self._position)
        self._text_from = self._position

    def _skip_to(self, end: int) -> None:
        """Consume a marker that is not text: nothing of it is written."""
        self._position = end
        self._text_from = end

    def _marker(self, match: re.Match[str]) -> None:
        matched = match.group()
        marker = _ROLES.get(matched) or _ROLES.get(matched.lower())
        if marker is None:
            marker = self._unlisted_marker(matched)
        if marker is None:
            self._literal(match.end())
            return
        role, dialect = marker
        if role == "open" and dialect is not None:
            self._opener(match, dialect)
        elif role == "close" and dialect is not None:
            self._closer(match, dialect)
        elif role == "wrapper" and dialect is not None:
            self._wrapper(match, dialect)
        elif role == "trailing_wrapper" and dialect is not None:
            self._trailing_wrapper(match, dialect)
        else:  # a tool-call marker or harmony's `<|end|>` outside a block: text
            self._literal(match.end())

    def _unlisted_marker(self, matched: str) -> _Marker | None:
        """`<think …>` with attributes, or a wrapper followed by its suffix."""
        if matched.startswith("<"):
            if matched.endswith("/>"):  # `<think/>` opens nothing
                return None
            return _Marker("open", _ATTRIBUTE_OPENER)
        for wrapper, dialect in _SUFFIXED_WRAPPERS.items():
            if matched.startswith(wrapper):
                return _Marker("wrapper", dialect)
        return None

    def _literal(self, end: int) -> None:
        self._position = end

    def _opener(self, match: re.Match[str], dialect: Dialect) -> None:
        self._flush_text()
        counts = not self._seen_text or self._found_block
        if not counts and dialect.kind == "token":
            # A token opener mid-text opens a block only when its closer follows.
            counts = self._closer_follows(dialect, match.end())
        if not counts:
            self._resolve_as_content()
            self._literal(match.end())
            return
        end = match.end()
        if dialect is _GEMMA:
            end = _after_gemma_label(self._text, end)
        self._resolve_as_content()
        self._mode = "block"
        self._block = dialect
        self._block_start = self._base + match.start()
        self.thinking.start_block()
        self._skip_to(end)

    def _closer_follows(self, dialect: Dialect, start: int) -> bool:
        """Whether a token opener that stands mid-text opens a block: only when its closer
        follows before any Markdown code starts, so an answer that names `[THINK]` and quotes
        `[/THINK]` in code keeps its words."""
        closer = self._next_position(dialect.name, _CLOSER[dialect.name], start)
        code = self._next_position("code", _CODE_START, start)
        if closer >= 0 and (code < 0 or closer < code):
            return True
        self._need(code >= 0 or closer >= 0)
        return False

    def _next_position(self, key: str, pattern: re.Pattern[str], start: int) -> int:
        """Where `pattern` next matches at or after `start` (-1: nowhere), remembered per
        run, so a flood of unclosed openers searches the text once, not once each."""
        found = self._next_match_at.get(key)
        if found is None or 0 <= found < start:
            match = pattern.search(self._text, start)
            found = match.start() if match is not None else -1
            self._next_match_at[key] = found
        return found

    def _closer(self, match: re.Match[str], dialect: Dialect) -> None:
        self._flush_text()
        if self._undecided:
            raw = list(self._held_raw)
            self._held_raw.clear()
            self._held_spans.clear()
            self._held_ops.clear()
            self._undecided = False
            self._seen_text = False
            self._orphan_block(dialect, raw, match)
        elif self._found_block:  # a stray closer after a block: removed like one
            self.content.cut(glue=True)
            self._span(
                self._base + match.start(),
                self._base + match.end(),
                "stray_closer",
                dialect.name,
                reasoning=False,
            )
        else:
            self._literal(match.end())
            return
        self._skip_to(match.end())

    def _orphan_block(
        self, dialect: Dialect, raw: list[tuple[str, int]], match: re.Match[str]
    ) -> None:
        self.thinking.start_block()
        for text, source in raw:
            self.thinking.write(text, source)
        has_reasoning = self.thinking.end_block()
        self.content.cut(glue=True)
        self._block_dialects.add(dialect.name)
        if has_reasoning:
            self._found_block = True
            self.detections.append(InlineDetection("orphan_close_tag", dialect.name))
        self._span(
            self._held_start,
            self._base + match.end(),
            "orphan_closer",
            dialect.name,
            reasoning=has_reasoning,
        )

    def _wrapper(self, match: re.Match[str], dialect: Dialect) -> None:
        if dialect.kind != "token" and dialect.name not in self._block_dialects:
            self._literal(match.end())
            return
        self._cut_marker(match, dialect)

    def _trailing_wrapper(self, match: re.Match[str], dialect: Dialect) -> None:
        rest = _NON_SPACE.search(self._text, match.end())
        if rest is not None:
            self._literal(match.end())
            return
        self._need(False)
        self._cut_marker(match, dialect)

    def _cut_marker(self, match: re.Match[str], dialect: Dialect) -> None:
        self._flush_text()
        if self._undecided:
            self._held_raw.append((match.group(), self._base + match.end()))
            self._held_ops.append((None, self._base + match.end()))
        else:
            self.content.cut(glue=False)
        self._span(
            self._base + match.start(),
            self._base + match.end(),
            "answer_wrapper",
            dialect.name,
            reasoning=False,
        )
        self._skip_to(match.end())

    # code ---------------------------------------------------------------------------------

    def _backtick_run(self, match: re.Match[str]) -> None:
        text, start, end = self._text, match.start(), match.end()
        if end == len(text) and not self._final:
            raise _NeedMoreTextError  # the run may go on
        length = end - start
        if length >= 3 and self._at_line_start(start):
            line_end = text.find("\n", end)
            self._need(line_end >= 0)
            rest_of_line = text[end : line_end if line_end >= 0 else len(text)]
            if "`" not in rest_of_line:
                self._open_fence("`", length, line_end)
                return
        if self._final:
            # Most spans close with the next run: one look, no table. Only a run with no
            # partner there builds the table (once), so runs that never pair stay linear.
            at = text.find("`", end)
            if at < 0:  # no partner: the run is literal text
                self._position = end
                return
            run = _BACKTICK_RUN.match(text, at)
            if run is not None and run.end() - at == length:
                self._position = run.end()
                return
        partner = self._next_backtick_run(length, end)
        if partner < 0:  # no partner: the run is literal text
            self._literal(end)
            return
        self._literal(partner + length)

    def _next_backtick_run(self, length: int, start: int) -> int:
        """Where the next run of exactly `length` backticks starts, or -1 (final) when none."""
        if self._final:
            if self._backticks is None:
                self._backticks = {}
                for run in _BACKTICK_RUN.finditer(self._text, start):
                    self._backticks.setdefault(run.end() - run.start(), []).append(run.start())
            positions = self._backticks.get(length, [])
            index = bisect.bisect_left(positions, start)
            return positions[index] if index < len(positions) else -1
        for run in _BACKTICK_RUN.finditer(self._text, start):
            if run.end() == len(self._text):
                break  # a run at the end may still grow
            if run.end() - run.start() == length:
                return run.start()
        raise _NeedMoreTextError

    def _tilde_run(self, match: re.Match[str]) -> None:
        text, start, end = self._text, match.start(), match.end()
        self._need(end < len(text))
        if self._at_line_start(start):
            line_end = text.find("\n", end)
            self._need(line_end >= 0)
            self._open_fence("~", end - start, line_end)
            return
        self._literal(end)

    def _at_line_start(self, position: int) -> bool:
        """Whether only up to three spaces stand between a line break and `position`."""
        text, start = self._text, position
        while start > 0 and position - start < 4 and text[start - 1] == " ":
            start -= 1
        indent = position - start
        if indent > 3:
            return False
        if start == 0:
            return self._line_indent is not None and self._line_indent + indent <= 3
        return text[start - 1] == "\n"

    def _open_fence(self, character: str, length: int, line_end: int) -> None:
        end = line_end + 1 if line_end >= 0 else len(self._text)
        self._literal(end)
        self._mode = "fence"
        self._fence_character, self._fence_length = character, length

    def _in_fence(self) -> None:
        text, position = self._text, self._position
        closing = closing_fence(text, position, self._fence_character, self._fence_length)
        if closing is not None:
            line_start, end = closing
            if end == len(text) and not self._final:
                self._emit_up_to(line_start)
                raise _NeedMoreTextError
            self._literal(end)
            self._mode = "text"
            return
        if self._final:
            self._literal(len(text))
            return
        last_line = text.rfind("\n", position) + 1
        self._emit_up_to(max(last_line, position))
        raise _NeedMoreTextError

    # inside a block -----------------------------------------------------------------------

    def _in_block(self) -> None:
        assert self._block is not None
        text, position, dialect = self._text, self._position, self._block
        match = find_marker(text, _BLOCK_END_SEARCH[dialect.name], position, self._found)
        if match is None:
            if self._final:
                self._think_up_to(len(text))
                self._close_block("unclosed_open_tag", self._base + len(text))
                return
            self._think_up_to(max(position, len(text) - _LONGEST_MARKER))
            raise _NeedMoreTextError
        if _key(match.group(), dialect.kind) in _CLOSER_KEYS[dialect.name]:
            self._think_up_to(match.start())
            self._position = match.end()
            self._close_block("inline_tag", self._base + match.end())
            return
        # A tool-call marker: the block ends here only if it is never closed.
        closer = _CLOSER[dialect.name].search(text, match.end())
        if closer is not None:
            self._think_up_to(closer.start())
            return
        self._think_up_to(match.start())
        self._need(False)
        self._close_block("unclosed_open_tag", self._base + match.start())

    def _think_up_to(self, end: int) -> None:
        if end > self._position:
            self.thinking.write(self._text[self._position : end], self._base + end)
            self._position = end

    def _close_block(self, code: InlineCode, end: int) -> None:
        assert self._block is not None
        dialect = self._block
        has_reasoning = self.thinking.end_block()
        self.content.cut(glue=True)
        self._block_dialects.add(dialect.name)
        if has_reasoning:
            self._found_block = True
            self.detections.append(InlineDetection(code, dialect.name))
        rule: SpanRule = "unclosed_opener" if code == "unclosed_open_tag" else "block"
        self._span(self._block_start, end, rule, dialect.name, reasoning=has_reasoning)
        self._mode = "text"
        self._block = None
        self._text_from = self._position

    def _block_of(
        self,
        dialect: Dialect,
        start: int,
        end: int,
        code: InlineCode,
        span_start: int,
        span_end: int,
    ) -> None:
        """A whole block whose extent is known (a phrase block)."""
        self._block = dialect
        self._block_start = self._base + span_start
        self.thinking.start_block()
        self.thinking.write(self._text[start:end], self._base + end)
        self._close_block(code, self._base + span_end)

    # output -------------------------------------------------------------------------------

    def _emit_text(self, text: str, end: int) -> None:
        if not text:
            return
        if not self._seen_text and not text.isspace():
            self._seen_text = True
        if self._undecided:
            self._held_raw.append((text, self._base + end))
            self._held_ops.append((text, self._base + end))
        else:
            self.content.write(text, self._base + end)

    def _resolve_as_content(self) -> None:
        """The first delimiter is no closer: what was held is content after all."""
        if not self._undecided:
            return
        self._undecided = False
        for text, source in self._held_ops:
            if text is None:
                self.content.cut(glue=False)
            else:
                self.content.write(text, source)
        self._held_ops.clear()
        self._held_raw.clear()
        self.spans.extend(self._held_spans)
        self._held_spans.clear()

    def _span(
        self, start: int, end: int, rule: SpanRule, dialect: DialectName | None, *, reasoning: bool
    ) -> None:
        span = RemovedSpan(start, end, rule, dialect, reasoning)
        if self._undecided and rule == "answer_wrapper":  # an orphan block may swallow it
            self._held_spans.append(span)
        else:
            self.spans.append(span)

    def _finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        if self._mode == "block":
            self._close_block("unclosed_open_tag", self._base)
        self._resolve_as_content()
        self.content.finish()


_LONGEST_PHRASE: Final = max(len(opener) for dialect in _PHRASES for opener in dialect.openers)
_PHRASE_OPENERS: Final = tuple(opener for dialect in _PHRASES for opener in dialect.openers)
_UNFINISHED_ATTRIBUTE_OPENER: Final = re.compile(r"(?i:<think)(?:\s[^<>]*)?\Z")


# --- the public calls ----------------------------------------------------------------------


def extract(text: str, *, thought_label: bool = False) -> InlineExtraction:
    """Split inline reasoning out of a whole visible text."""
    # Code runs only matter where a delimiter stands: a text with none is read without them.
    may_hold_marker = "<" in text or "[" in text or "◁" in text  # `_MARKER_FIRST_CHARACTERS`
    first = _next_dialect_marker(text, 0) if may_hold_marker else None
    if first is None:
        plain = _plain_text(text, thought_label)
        if plain is not None:
            return plain
    elif not (thought_label and text.startswith(_THOUGHT_LABEL)) and not _code_run_between(
        text, 0, first.start()
    ):
        single = _one_leading_block(text, first)
        if single is not None:
            return single
    return scan(text, thought_label=thought_label)


def scan(text: str, *, thought_label: bool = False) -> InlineExtraction:
    """What `extract` gives, always through the scanner (no shortcut; tests compare the two)."""
    scanner = _Scanner(thought_label=thought_label)
    scanner.run(text, final=True)
    return _result(scanner)


def _one_leading_block(text: str, match: re.Match[str]) -> InlineExtraction | None:
    """The most common leak, read without the scanner: one block that opens the text (or an
    orphan closer), and after it an answer whose only markers are wrappers the scanner would
    remove. None for anything else, which the scanner reads. Gives exactly what the scanner
    gives (candidate characters that start no marker are text to both). `match` is the
    text's first delimiter, with no code run before it."""
    start = _first_non_space(text)
    if match.start() != start:
        return _leading_orphan(text, match)
    marker = _ROLES.get(match.group())
    if marker is None or marker.role != "open" or marker.dialect is None:
        return None
    dialect = marker.dialect
    closer = dialect.closers[0]
    inner_start = match.end()
    if dialect is _GEMMA:
        inner_start = _after_gemma_label(text, inner_start)
    # The closer, as written in the dialect's table, must be the first thing after the opener
    # that can end a block (what the scanner's block reading looks for); anything else there
    # (a closer in another case, a tool-call marker) and the scanner decides. Usually the first
    # character a block's end can start with opens the closer: one find and a search per other
    # first character say so.
    closer_at = text.find(closer[0], inner_start)
    if (
        closer_at < 0
        or not text.startswith(closer, closer_at)
        or _other_block_end_before(text, dialect, closer[0], inner_start, closer_at)
    ):
        end = find_marker(text, _BLOCK_END_SEARCH[dialect.name], inner_start, {})
        if end is None or end.group() != closer:
            return None
        closer_at = end.start()
    after = closer_at + len(closer)
    positions = (start, inner_start, closer_at, after)
    return _block_then_answer(text, dialect, positions, "inline_tag")


def _other_block_end_before(
    text: str, dialect: Dialect, closer_start: str, start: int, end: int
) -> bool:
    """True when something else that can end a block of `dialect` starts between `start` and
    `end` (where its closer stands, the first `closer_start` after `start`). A `[` of a
    Markdown link in the reasoning is no block end: the regex engine rules it out in C."""
    for character, pattern, longest in _BLOCK_END_SEARCHES[dialect.name]:
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
    marker = _ROLES.get(match.group())
    if marker is None or marker.role != "close" or marker.dialect is None:
        return None
    if marker.dialect.kind == "phrase" or text.startswith(_PHRASE_OPENERS, _first_non_space(text)):
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
        content, reasoning or None, detections + _suspected(content), tuple(spans)
    )


def _answer_with_wrappers(
    text: str,
    position: int,
    block_dialect: Dialect,
    spans: list[RemovedSpan],
) -> str | None:
    """The answer after a leading block when its only markers are answer wrappers the scanner
    would remove (a token wrapper, a trailing one at the very end, a tag wrapper of the
    block's dialect); None when anything else stands there."""
    kept: list[str] = []
    while True:
        match = _next_dialect_marker(text, position)
        if match is None:  # code runs, and candidate characters that start no marker, are text
            kept.append(text[position:])
            return "".join(kept)
        candidate = match.start()
        if _code_run_between(text, position, candidate):  # the marker may stand in code
            return None
        marker = _ROLES.get(match.group()) or _ROLES.get(match.group().lower())
        if marker is None or marker.dialect is None:
            return None
        removable = (marker.role == "wrapper" and marker.dialect.kind == "token") or (
            marker.role == "wrapper" and marker.dialect is block_dialect
        )
        if marker.role == "trailing_wrapper":
            removable = not text[match.end() :].strip()
        if not removable:
            return None
        kept.append(text[position:candidate])
        spans.append(
            RemovedSpan(candidate, match.end(), "answer_wrapper", marker.dialect.name, False)
        )
        position = match.end()


def _next_dialect_marker(text: str, position: int) -> re.Match[str] | None:
    """The first delimiter, wrapper or tool-call marker at or after `position`, code runs not
    counted. A text with none of their first characters costs one memchr-speed `find` per
    character; where one stands, the regex engine walks its occurrences in C."""
    first: re.Match[str] | None = None
    for character, pattern in _DIALECT_MARKER_SEARCHES:
        found = text.find(character, position)
        if found < 0 or (first is not None and found >= first.start()):
            continue
        match = pattern.search(text, found)
        if match is not None and (first is None or match.start() < first.start()):
            first = match
    return first


def _code_run_between(text: str, start: int, end: int) -> bool:
    """True when a code span or fence may open between `start` and `end`."""
    return text.find("`", start, end) >= 0 or text.find("~~~", start, end) >= 0


def _plain_extraction(text: str, thought_label: bool) -> InlineExtraction | None:
    """The text unchanged when it holds no delimiter and opens with no phrase or label (most
    answers). None when the scanner must read it."""
    if _next_dialect_marker(text, 0) is not None:
        return None
    return _plain_text(text, thought_label)


def _plain_text(text: str, thought_label: bool) -> InlineExtraction | None:
    """A text with no marker unchanged, unless it opens with a phrase or a label."""
    if thought_label and text.startswith(_THOUGHT_LABEL):
        return None
    start = _first_non_space(text)
    if text[start : start + 1] not in _OPENING_FIRST_CHARACTERS:  # most answers: no opening
        return InlineExtraction(text, None, ())
    if text.startswith(_PHRASE_OPENERS, start):
        return None
    suspected = text.startswith(SUSPECTED_REASONING_OPENINGS, start)
    return InlineExtraction(text, None, _SUSPECTED if suspected else ())


_OPENING_FIRST_CHARACTERS: Final = frozenset(
    opening[0] for opening in (*_PHRASE_OPENERS, *SUSPECTED_REASONING_OPENINGS)
)


def _first_non_space(text: str) -> int:
    if not text or not text[0].isspace():
        return 0
    return len(text) - len(text.lstrip())


def _suspected(content: str) -> tuple[InlineDetection, ...]:
    if content.startswith(SUSPECTED_REASONING_OPENINGS, _first_non_space(content)):
        return _SUSPECTED
    return ()


_SUSPECTED: Final = (InlineDetection("suspected_reasoning", None),)


def _result(scanner: _Scanner) -> InlineExtraction:
    content = "".join(scanner.content.output.pieces)
    thinking = "".join(scanner.thinking.output.pieces)
    return InlineExtraction(
        content,
        thinking or None,
        tuple(scanner.detections) + _suspected(content),
        tuple(scanner.spans),
    )


class IncrementalExtractor:
    """Inline extraction over a live text that arrives in chunks.

    `feed` returns the (content, thinking) text that is now certain; `flush` returns the rest.
    The result equals `extract` of the joined text, wherever the chunks are cut. Text before
    the first delimiter is held (a closer may still make it reasoning), as is text after a
    decision that waits for more (a backtick run with no partner yet). While text waits, it is
    re-scanned only after it has doubled, so the total work stays linear.
    """

    def __init__(self, *, thought_label: bool = False) -> None:
        self._scanner = _Scanner(thought_label=thought_label)
        self._waiting: list[str] = []
        self._waiting_length = 0
        self._rescan_at = 0
        self._content_sent = 0
        self._thinking_sent = 0

    def feed(self, chunk: str) -> tuple[str, str]:
        """Scan one more chunk; return the content and thinking deltas now certain."""
        if chunk:
            self._waiting.append(chunk)
            self._waiting_length += len(chunk)
        if self._waiting_length >= self._rescan_at:
            self._scan(final=False)
        return self._new_output()

    def flush(self) -> tuple[str, str]:
        """End of text: every waiting decision is taken."""
        self._scan(final=True)
        return self._new_output()

    def result(self) -> InlineExtraction:
        """The content, thinking and detections (complete after `flush`)."""
        return _result(self._scanner)

    @property
    def found(self) -> tuple[InlineDetection, ...]:
        """The blocks found so far, in order (no `suspected_reasoning`: that needs the whole
        content)."""
        return tuple(self._scanner.detections)

    def _scan(self, final: bool) -> None:
        text = "".join(self._waiting)
        consumed = self._scanner.run(text, final)
        rest = text[consumed:]
        self._waiting = [rest] if rest else []
        self._waiting_length = len(rest)
        self._rescan_at = 2 * len(rest) if len(rest) > _LONGEST_MARKER else 0

    def _new_output(self) -> tuple[str, str]:
        content_pieces = self._scanner.content.output.pieces
        thinking_pieces = self._scanner.thinking.output.pieces
        content = "".join(content_pieces[self._content_sent :])
        thinking = "".join(thinking_pieces[self._thinking_sent :])
        self._content_sent = len(content_pieces)
        self._thinking_sent = len(thinking_pieces)
        return content, thinking


def extract_chunks(
    chunks: Sequence[str], *, thought_label: bool = False
) -> tuple[InlineExtraction, list[str], list[str]]:
    """A recorded (complete) text in chunks: the whole extraction, and each chunk's share of
    content and thinking, attributed to the chunk the text came from."""
    text = "".join(chunks)
    plain = _plain_extraction(text, thought_label)
    if plain is not None:
        return plain, list(chunks), [""] * len(chunks)
    scanner = _Scanner(thought_label=thought_label)
    scanner.run(text, final=True)
    ends = list(_running_ends(chunks))
    contents = _share(scanner.content.output, ends)
    thinkings = _share(scanner.thinking.output, ends)
    return _result(scanner), contents, thinkings


def _running_ends(chunks: Iterable[str]) -> Iterable[int]:
    total = 0
    for chunk in chunks:
        total += len(chunk)
        yield total


def _share(output: _Output, ends: list[int]) -> list[str]:
    """Each chunk's share of the output: verbatim pieces split where the chunks were cut, an
    inserted piece with the chunk its position falls in."""
    shares: list[list[str]] = [[] for _ in ends]
    if not ends:
        return []
    last = len(ends) - 1
    for piece, start, inserted in zip(output.pieces, output.starts, output.inserted, strict=True):
        index = min(bisect.bisect_right(ends, start), last)
        if inserted:
            shares[index].append(piece)
            continue
        offset = 0
        while offset < len(piece):
            take = len(piece) - offset if index == last else ends[index] - (start + offset)
            if take > 0:
                shares[index].append(piece[offset : offset + take])
                offset += take
            index += 1
    return ["".join(share) for share in shares]
