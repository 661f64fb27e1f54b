"""The dialect table compiled: every marker's role, and the patterns that find them.

Everything here is derived from `dialects.DIALECTS` and `TOOL_CALL_MARKERS`: a new row there
is found everywhere (its first character included) with no change here. Each search is one
pattern per first character: the literal character (the regex engine skips to it in C), a
guard, and the markers as a trie (see `first_character_patterns`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal, NamedTuple, TypeVar

from thoughtline.contract.record import DialectName
from thoughtline.reasoning.dialects import (
    DIALECTS,
    SUSPECTED_REASONING_OPENINGS,
    TOOL_CALL_MARKERS,
    Dialect,
)

_Role = Literal["open", "close", "wrapper", "trailing_wrapper", "tool_call"]


class Marker(NamedTuple):
    role: _Role
    dialect: Dialect | None


def _marker_roles() -> dict[str, Marker]:
    roles: dict[str, Marker] = {}
    for dialect in DIALECTS:
        if dialect.kind == "phrase":  # phrases are looked for at the start only
            if dialect.standalone_closer:
                for closer in dialect.closers:
                    roles[closer] = Marker("close", dialect)
            for wrapper in dialect.wrappers:
                roles[wrapper] = Marker("wrapper", dialect)
            continue
        for opener in dialect.openers:
            roles[marker_key(opener, dialect.kind)] = Marker("open", dialect)
        for closer in dialect.closers if dialect.standalone_closer else ():
            roles[marker_key(closer, dialect.kind)] = Marker("close", dialect)
        for wrapper in dialect.wrappers:
            roles[marker_key(wrapper, dialect.kind)] = Marker("wrapper", dialect)
        for wrapper in dialect.trailing_wrappers:
            roles[marker_key(wrapper, dialect.kind)] = Marker("trailing_wrapper", dialect)
    for marker in TOOL_CALL_MARKERS:
        roles.setdefault(marker, Marker("tool_call", None))
    return roles


def marker_key(marker: str, kind: str) -> str:
    return marker.lower() if kind == "tag" else marker


ROLES: Final = _marker_roles()


TAG_KEYS: Final = frozenset(
    marker_key(marker, "tag")
    for dialect in DIALECTS
    if dialect.kind == "tag"
    for marker in (*dialect.openers, *dialect.closers, *dialect.wrappers)
)


SUFFIXED_WRAPPERS: Final = {
    wrapper: dialect
    for dialect in DIALECTS
    if dialect.wrapper_suffix
    for wrapper in dialect.wrappers
}


def attribute_opener(dialect: Dialect) -> str:
    """The dialect's openers with attributes, as a pattern after their `<`: a name, whitespace,
    anything but `<` and `>` (holding the required attribute, if any) and a `>` that closes
    no self-closing tag."""
    names = "|".join(re.escape(name[1:]) for name in dialect.attribute_openers)
    required = f"(?=[^<>]*{dialect.required_attribute})" if dialect.required_attribute else ""
    return f"(?i:(?:{names})\\s{required}[^<>]*(?<!/)>)"


ATTRIBUTE_OPENERS: Final = tuple(
    (re.compile("<" + attribute_opener(dialect)), dialect)
    for dialect in DIALECTS
    if dialect.attribute_openers
)
"""Tags that open with attributes (`<think signature="…">`, Open WebUI's `<details
type="reasoning" …>`), each as a whole pattern with its dialect."""


UNFINISHED_ATTRIBUTE_OPENER: Final = re.compile(
    "(?i:"
    + "|".join(re.escape(name) for dialect in DIALECTS for name in dialect.attribute_openers)
    + ")(?:\\s[^<>]*)?\\Z"
)
"""The start of an opener with attributes that a live text may still complete."""


_OPENER_TAILS: Final = {
    dialect.name: (
        re.compile(dialect.opener_tail, re.IGNORECASE if dialect.kind == "tag" else 0),
        dialect.tail_window,
    )
    for dialect in DIALECTS
    if dialect.opener_tail
}
"""What goes with an opener right after it (Gemma's `thought` label and its line break, Open
WebUI's `<summary>`), and how far it may reach."""


class _Alternative(NamedTuple):
    """One marker to search for: its literal text (tags in any case), or, for a marker with no
    one literal form, a pattern for what follows its first character (`raw`; `literal` then
    stands for its first and last character)."""

    literal: str
    ignore_case: bool = False
    raw: str = ""


def _alternatives(literals: Iterable[str]) -> list[_Alternative]:
    """The markers as alternatives: tags ignore case, a suffixed wrapper takes its suffix."""
    found = []
    for marker in dict.fromkeys(literals):
        dialect = SUFFIXED_WRAPPERS.get(marker)
        if dialect is not None:
            suffix = f"(?:\\s*{re.escape(dialect.wrapper_suffix)})?"
            found.append(_Alternative(marker, raw=re.escape(marker[1:]) + suffix))
        else:
            found.append(_Alternative(marker, ignore_case=marker.lower() in TAG_KEYS))
    return found


def _attribute_alternatives(dialects: Iterable[Dialect]) -> list[_Alternative]:
    return [
        _Alternative("<>", raw=attribute_opener(dialect))
        for dialect in dialects
        if dialect.attribute_openers
    ]


def marker_pattern(literals: Iterable[str], *, code_runs: bool = True) -> re.Pattern[str]:
    """Every marker (and Markdown code run) as one pattern: the patterns per first character
    joined (see `_first_character_patterns`)."""
    alternatives = _alternatives(literals)
    if any(alternative.literal.startswith("<") for alternative in alternatives):
        alternatives += _attribute_alternatives(DIALECTS)
    parts = list(_first_character_patterns(alternatives).values())
    if code_runs:
        parts += [
            r"``*",  # written so that every branch starts with a literal: the regex engine then
            r"~~~~*",  # skips text with none of these first characters at C speed
        ]
    return re.compile("|".join(parts))


def _first_character_patterns(alternatives: Iterable[_Alternative]) -> dict[str, str]:
    """Per first character, one pattern for the markers that start with it: the literal
    character (the regex engine skips to it in C), a guard, then the rest of the markers as
    a trie (one branch per next character, the longest match first).

    The guard is why a flood of a delimiter's prefix (`<|<|<|…`, `</</…`, `[THIN[THIN…`) costs
    about what plain text costs: every marker of the group ends with a closing character
    (`>`, `]`, `▷`) that comes before any second first character, so a lookahead that finds
    none before the next first character rejects the position in a few steps of C."""
    groups: dict[str, list[_Alternative]] = {}
    for alternative in alternatives:
        groups.setdefault(alternative.literal[0], []).append(alternative)
    return {
        character: re.escape(character) + _guard(character, group) + _group_body(group)
        for character, group in sorted(groups.items())
    }


def _group_body(group: list[_Alternative]) -> str:
    branches = [alternative.raw for alternative in group if alternative.raw]
    literals = [(a.literal[1:], a.ignore_case) for a in group if not a.raw]
    if literals:
        branches.append(_trie(literals))
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


def _guard(character: str, group: list[_Alternative]) -> str:
    """A lookahead for a closing character of the group before the next `character`, or
    nothing when some marker of the group would not pass it."""
    closing = {alternative.literal[-1] for alternative in group}
    stops = closing | {character}
    for alternative in group:
        first_stop = next((c for c in alternative.literal[1:] if c in stops), None)
        if first_stop not in closing:
            return ""
    stop_class = re.escape("".join(sorted(stops)))
    closing_class = re.escape("".join(sorted(closing)))
    return f"(?=[^{stop_class}]*[{closing_class}])"


def _trie(literals: list[tuple[str, bool]]) -> str:
    """Literal strings as one pattern with their common prefixes shared: at each step the
    engine compares the next character with one branch per distinct character (a quick
    reject in C), instead of trying every marker in turn. A marker that is a prefix of a
    longer one makes the rest optional (greedy: the longest match wins)."""
    root: dict[tuple[str, bool], dict[Any, Any]] = {}
    for literal, ignore_case in literals:
        node = root
        for character in literal:
            cased = ignore_case and character.lower() != character.upper()
            node = node.setdefault((character.lower() if cased else character, cased), {})
        node[_END_OF_MARKER] = {}
    return _trie_node(root)


_END_OF_MARKER: Final = ("", False)


def _trie_node(node: dict[tuple[str, bool], dict[Any, Any]]) -> str:
    branches = []
    for (character, cased), child in node.items():
        if (character, cased) == _END_OF_MARKER:
            continue
        if cased:
            atom = "[" + re.escape(character) + re.escape(character.upper()) + "]"
        else:
            atom = re.escape(character)
        branches.append(atom + _trie_node(child))
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if _END_OF_MARKER in node:
        return f"(?:{body})?"
    return body


ROLES_LITERALS: Final = (
    tuple(
        marker
        for dialect in DIALECTS
        for marker in (
            *(dialect.openers if dialect.kind != "phrase" else ()),
            # a closer that ends only its own block (`<|end|>`, `</details>`) is text outside
            # one, and no delimiter: the text search leaves it to the block's own search
            *(dialect.closers if dialect.standalone_closer else ()),
            *dialect.wrappers,
            *dialect.trailing_wrappers,
        )
    )
    + TOOL_CALL_MARKERS
)


MARKERS: Final = marker_pattern(ROLES_LITERALS)
"""Every marker and code run as one pattern: what `TEXT_SEARCH` finds, split by first
character (the scanner searches the split one; a test holds the two equal)."""


CANDIDATES: Final = tuple(sorted({marker[0] for marker in ROLES_LITERALS} | {"`", "~"}))
"""Every character a delimiter, a code run or a wrapper starts with (for the live scanner's
look at a tail that may still grow into a marker)."""


CANDIDATE: Final = re.compile("[" + re.escape("".join(CANDIDATES)) + "]")


_SKIP_BOUND: Final = "{1,1024}"
"""How many fences or code spans one skip matches at most (the scanner matches again where it
stopped). The regex engine keeps a record per repetition until its match ends: bounded, the
records stay in the CPU's cache; unbounded, a match over more than 1 MB costs twice as much
per MB."""


def _fenced_lines_pattern() -> re.Pattern[str]:
    """Whole lines, from a line start, that are complete fenced blocks or hold no candidate
    character: what the scanner would read as text, one fence after another, matched in one
    call of the regex engine, up to `_SKIP_BOUND` at a time (possessive and atomic, so it
    never backtracks: a backtracking point per line costs the engine more than the line
    itself). A fence opens on a line starting (after up to three spaces) with three or more
    backticks and no backtick after them, or three or more tildes; it closes on a line
    starting with at least as many of the same character; the rest of that line must hold no
    candidate character either."""
    plain = "[^\n" + re.escape("".join(CANDIDATES)) + "]*+\n"
    indent = " {0,3}+"  # possessive: what follows is never a space
    fences = []
    for name, run, info in (("b", "`", "[^`\n]*+"), ("t", "~", "[^\n]*+")):
        character = re.escape(run)
        fences.append(
            f"{indent}(?P<{name}>{character}{{3,}}+){info}\n"  # the opening line
            f"(?:(?!{indent}(?P={name}))[^\n]*+\n)*+"  # lines that do not close it
            f"{indent}(?P={name}){character}*+{plain}"  # the closing line
        )
    return re.compile("(?>(?:" + "|".join((*fences, plain)) + f"){_SKIP_BOUND})")


FENCED_LINES: Final = _fenced_lines_pattern()
"""See `_fenced_lines_pattern`: the scanner skips such lines in C (a flood of fences costs no
Python step per fence)."""


def _code_spans_pattern(*, final: bool) -> re.Pattern[str]:
    """From a backtick run: code spans that each close with the very next backtick run, and
    the text between them as far as it holds no candidate character, matched in one call of
    the regex engine, up to `_SKIP_BOUND` at a time (atomic, so it never backtracks). What
    the scanner would read as text one run at a time; it stops before a span whose next run
    is longer or shorter, which the scanner pairs itself. A run of one or two backticks spans
    lines; a longer one closes on its own line (so it is no fence's opening line). In a live
    text the closing run must have a character after it (it may still grow)."""
    closed = "(?!`)" if final else "(?=[^`])"
    between = "[^" + re.escape("".join(CANDIDATES)) + "]*+"
    # The short runs spelled out, not captured: a group in each alternative costs the
    # engine more than the span itself.
    spans = [f"{run}(?!`)[^`]*+{run}{closed}{between}" for run in ("`", "``")]
    spans.append(f"(?P<l>```+)(?!`)[^`\\n]*+(?P=l){closed}{between}")
    return re.compile("(?>(?:" + "|".join(spans) + f"){_SKIP_BOUND})")


CODE_SPANS: Final = {final: _code_spans_pattern(final=final) for final in (True, False)}
"""See `_code_spans_pattern`, for a whole text (True) and a live one (False): a flood of code
spans costs no Python step per span."""


MARKER_FIRST_CHARACTERS: Final = frozenset(marker[0] for marker in ROLES_LITERALS)


DIALECT_MARKER_SEARCHES: Final = tuple(
    (
        character,
        marker_pattern(
            (marker for marker in ROLES_LITERALS if marker.startswith(character)),
            code_runs=False,
        ),
    )
    for character in sorted(MARKER_FIRST_CHARACTERS)
)
"""Per first character, the delimiters, wrappers and tool-call markers that start with it (no
code runs): each pattern starts with one literal character, so the regex engine's search skips
to the next occurrence of it in C and tries the marker there, with no Python step per `<` of an
HTML or code answer. `MARKERS` with the code runs left out, split by first character."""


DIALECT_MARKER_FIRST_CHARACTERS: Final = tuple(
    character for character, _ in DIALECT_MARKER_SEARCHES
)
"""The first characters of `DIALECT_MARKER_SEARCHES`: a text holding none of them has no
delimiter, wrapper or tool-call marker (`extract`'s quick check, a few `in` tests)."""


LONGEST_MARKER: Final = max(len(marker) for marker in ROLES_LITERALS) + len("thought\r\n")
"""How far before the end of a live text a marker may still be growing."""


def _literal_first(marker: str, kind: str) -> str:
    """A marker as a pattern that starts with a literal character (tags match in any case):
    with every branch so, the regex engine skips unrelated text at C speed."""
    if kind == "tag":
        return re.escape(marker[0]) + f"(?i:{re.escape(marker[1:])})"
    return re.escape(marker)


def after_opener(dialect: Dialect, text: str, end: int) -> int:
    """Where the delimiter ends when an opener of `dialect` ends at `end`: after its tail
    (Gemma's `thought` label, Open WebUI's `<summary>`), when one stands there."""
    tail = _OPENER_TAILS.get(dialect.name)
    if tail is None:
        return end
    pattern, window = tail
    match = pattern.match(text, end, end + window)
    return match.end() if match is not None else end


def _block_markers(dialect: Dialect) -> dict[str, str]:
    """What a block of `dialect` looks for, per first character: its closers, a tool-call
    marker (where a block that is never closed ends) and its own openers (dropped inside it)."""
    alternatives = [
        _Alternative(closer, ignore_case=dialect.kind == "tag") for closer in dialect.closers
    ]
    alternatives += [_Alternative(marker) for marker in TOOL_CALL_MARKERS]
    if dialect.kind != "phrase":  # phrases are words: inside a block they are its text
        alternatives += [
            _Alternative(opener, ignore_case=dialect.kind == "tag") for opener in dialect.openers
        ]
        alternatives += _attribute_alternatives((dialect,))
    return _first_character_patterns(alternatives)


def _block_end_pattern(dialect: Dialect) -> re.Pattern[str]:
    """What a block of `dialect` looks for, as one pattern."""
    return re.compile("|".join(_block_markers(dialect).values()))


def _closer_pattern(dialect: Dialect) -> re.Pattern[str]:
    return re.compile("|".join(_literal_first(closer, dialect.kind) for closer in dialect.closers))


_Compiled = TypeVar("_Compiled")


class PerDialect(dict[str, _Compiled]):
    """A table keyed by dialect name whose entry is compiled at its first lookup: compiling
    every dialect's block patterns at import took a good part of the command line's start,
    and a text meets one dialect or two. A lookup is a dict's; a name that is no dialect's
    raises KeyError. Only lookups by name are meant: iterating lists the entries compiled."""

    def __init__(self, compile: Callable[[Dialect], _Compiled]) -> None:
        super().__init__()
        self._compile = compile

    def __missing__(self, name: str) -> _Compiled:
        compiled = self._compile(_DIALECTS_BY_NAME[name])
        self[name] = compiled
        return compiled


_DIALECTS_BY_NAME: Final[dict[str, Dialect]] = {dialect.name: dialect for dialect in DIALECTS}


BLOCK_END: Final = PerDialect(_block_end_pattern)
"""As one pattern per dialect, what `BLOCK_END_SEARCH` finds (a test holds the two equal)."""


def _block_end_literals(dialect: Dialect) -> tuple[str, ...]:
    """The literal markers `BLOCK_END` finds in a block of the dialect (openers with
    attributes aside)."""
    markers = (*dialect.closers, *TOOL_CALL_MARKERS)
    if dialect.kind != "phrase":
        markers += dialect.openers
    return markers


def fold_case(text: str) -> str:
    """`text` lower-cased character by character, its length kept (a prefix test that folds
    case must not shift positions)."""
    return "".join(character.lower()[:1] for character in text)


_Prefixes = tuple[frozenset[str], re.Pattern[str], int]


def _prefixes(literals: Iterable[str]) -> _Prefixes:
    """The proper prefixes of `literals` (case folded: a superset of what may still grow into
    one), a pattern for their first characters (either case), and the longest prefix's
    length."""
    prefixes = frozenset(
        fold_case(marker[:size]) for marker in literals for size in range(1, len(marker))
    )
    firsts = {prefix[0] for prefix in prefixes}
    firsts |= {character.upper() for character in firsts if len(character.upper()) == 1}
    first = re.compile("[" + re.escape("".join(sorted(firsts))) + "]")
    return prefixes, first, max(map(len, prefixes))


def _block_end_prefixes(dialect: Dialect) -> _Prefixes:
    return _prefixes(_block_end_literals(dialect))


BLOCK_END_PREFIXES: Final = PerDialect(_block_end_prefixes)
"""Per dialect, what `block_end_hold` needs (made at its first lookup, as the patterns are)."""


def block_end_hold(text: str, position: int, dialect_name: DialectName) -> int:
    """How many characters at the end of `text` (after `position`) may be the start of a
    block-end marker of the dialect: the longest such suffix (0 if none). A live text inside
    a block gives out all its thinking but these."""
    return _hold(text, position, BLOCK_END_PREFIXES[dialect_name])


TEXT_PREFIXES: Final = _prefixes((*ROLES_LITERALS, "~~~"))
"""What `text_hold` needs: the proper prefixes of every marker the text search finds, and of
a tilde fence's run (a backtick is a code run by itself)."""


def text_hold(text: str, position: int) -> int:
    """How many characters at the end of `text` (after `position`) may be the start of a
    marker or a tilde run: the longest such suffix (0 if none). A live text outside a block
    gives out all its text with no marker but these (and an opener with attributes that may
    still be growing)."""
    return _hold(text, position, TEXT_PREFIXES)


def _hold(text: str, position: int, table: _Prefixes) -> int:
    """The longest end of `text` (after `position`) that is a prefix in `table`: only where a
    first character of one stands (found in C; most ends have none) is the end looked up."""
    prefixes, first, longest = table
    end = len(text)
    found = first.search(text, max(position, end - longest))
    while found is not None:
        start = found.start()
        tail = text[start:]
        folded = tail.lower()  # in C; `fold_case` only where lower-casing changed a length
        if (folded if len(folded) == len(tail) else fold_case(tail)) in prefixes:
            return end - start
        found = first.search(text, start + 1)
    return 0


def _growing_markers() -> dict[str, int]:
    """Markers (case folded) that are the start of a longer one, each with the longest such
    one's length. None in today's table: a complete marker found in a live text is the one
    the whole text has there."""
    literals = {
        fold_case(marker)
        for marker in (
            *ROLES_LITERALS,
            *(m for dialect in DIALECTS for m in _block_end_literals(dialect)),
        )
    }
    growing: dict[str, int] = {}
    for marker in literals:
        longer = [len(other) for other in literals if other != marker and other.startswith(marker)]
        if longer:
            growing[marker] = max(longer)
    return growing


GROWING_MARKERS: Final = _growing_markers()
"""See `_growing_markers`: a live text waits at such a marker until the longer one can no
longer come."""


def tail_undecided(dialect: Dialect, text: str, end: int) -> bool:
    """Whether more text may still change what goes with an opener of `dialect` that ends at
    `end` (its tail, see `after_opener`): while what follows is a proper prefix of one of the
    tail's forms, or, for a tail with none, until it has matched or `tail_window` characters
    have come."""
    if not dialect.tail_forms:
        return len(text) - end < dialect.tail_window and after_opener(dialect, text, end) == end
    after = text[end : end + dialect.tail_window]
    if dialect.kind == "tag":
        after = fold_case(after)
    return any(
        len(after) < len(form) and form.startswith(after) for form in _TAIL_FORMS[dialect.name]
    )


_TAIL_FORMS: Final = {
    dialect.name: tuple(fold_case(f) if dialect.kind == "tag" else f for f in dialect.tail_forms)
    for dialect in DIALECTS
}


def _block_end_searches(dialect: Dialect) -> tuple[tuple[str, re.Pattern[str], int], ...]:
    """`BLOCK_END` of the dialect split by first character, each with its longest match:
    (character, pattern, longest)."""
    longest: dict[str, int] = {}
    for marker in _block_end_literals(dialect):
        longest[marker[0]] = max(longest.get(marker[0], 0), len(marker))
    if dialect.attribute_openers and dialect.kind != "phrase":  # no longest match
        longest["<"] = _UNBOUNDED
    return tuple(
        (character, re.compile(pattern), longest[character])
        for character, pattern in _block_markers(dialect).items()
    )


_UNBOUNDED: Final = 1 << 62


BLOCK_END_SEARCHES: Final = PerDialect(_block_end_searches)


CLOSER_KEYS: Final = {
    dialect.name: frozenset(marker_key(closer, dialect.kind) for closer in dialect.closers)
    for dialect in DIALECTS
}


CLOSER: Final = {dialect.name: _closer_pattern(dialect) for dialect in DIALECTS}


TOOL_CALL_SET: Final = frozenset(TOOL_CALL_MARKERS)


PHRASES: Final = tuple(dialect for dialect in DIALECTS if dialect.kind == "phrase")


CODE_START: Final = re.compile(r"`|~~~")


BACKTICK_RUN: Final = re.compile(r"``*")  # a literal first: the engine skips to it in C


FENCE_RUNS: Final = {"`": re.compile(r"````*"), "~": re.compile(r"~~~~*")}
"""Runs of three or more of a fence's character (each starts with a literal)."""


NON_SPACE: Final = re.compile(r"\S")


THOUGHT_LABEL: Final = "thought"


LINE_BREAKS: Final = ("\r\n", "\n", "\r")


LONGEST_PHRASE: Final = max(len(opener) for dialect in PHRASES for opener in dialect.openers)


PHRASE_OPENERS: Final = tuple(opener for dialect in PHRASES for opener in dialect.openers)


PHRASE_FIRST_CHARACTERS: Final = frozenset(opener[0] for opener in PHRASE_OPENERS)


ATTRIBUTE_HEAD: Final = re.compile(
    "(?:"
    + "|".join(
        re.escape(name[0]) + f"(?i:{re.escape(name[1:])})"
        for dialect in DIALECTS
        for name in dialect.attribute_openers
    )
    + ")\\s"
)
"""The start of an opener with attributes (whole, it may be longer than any literal marker);
each branch starts with a literal, so the engine skips to it in C."""


OPENING_FIRST_CHARACTERS: Final = frozenset(
    opening[0] for opening in (*PHRASE_OPENERS, *SUSPECTED_REASONING_OPENINGS)
)
