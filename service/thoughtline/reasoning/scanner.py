"""Inline reasoning in visible text: find it in every dialect, leave an answer that only talks
about delimiters untouched.

One scanner serves the whole text (`extract`) and text that arrives in pieces
(`incremental.py`: `IncrementalExtractor`, `extract_chunks`): the whole text is scanned as one
final run; a live
stream is scanned in runs over what has arrived, each run stopping where a decision needs text
that has not arrived yet (a backtick run whose partner may still come, a closer that may still
follow). The next run resumes from there, so the pieces give exactly what the whole text
gives, wherever they are cut.

The rules (docs/inline-reasoning.md has them in full, with examples):

- Markdown code is text: no delimiter counts inside a fenced block or an inline code span.
- A *tag* opener counts only as the first non-whitespace text or after a non-empty block; a
  *token* opener there too, and also after a block of its own dialect or at the start of a
  line when its closer follows (mid-sentence it is text); a *phrase* opener only at the very
  start, and only with its closer present. Inside a block an opener of its own dialect is
  dropped.
- The first delimiter being a closer means the text before it was reasoning (the chat template
  put the opener in the prompt); a later closer after a non-empty block is removed.
- An opener never closed makes the rest reasoning, up to a tool-call marker; a token opener
  does this only where a tag opener would count, elsewhere an unclosed one is text.
- Answer wrappers are removed, their text kept: a token wrapper at the start, after a block of
  its dialect or closing what its dialect framed, a trailing one only at the very end, a tag
  wrapper after a block of its dialect.
- No silent edit: what leaves the content is reasoning with a detection naming its dialect, a
  delimiter of a block or wrapper that counts, or a stray closer after a block of its dialect.
- Thinking is the non-empty blocks joined with LF, trimmed at its ends; in content each block
  leaves one space where it would glue two non-space characters, and content is trimmed at its
  ends when anything was removed.

The scanner stands on its place in the text (`cursor.py`) and on the steps at a code run
(`code_context.py`); text that arrives in pieces is fed to it by `incremental.py`.

Time is linear in the text on every input: markers are found by one pattern per first
character, each searched again only once the scan has passed its last match (a text with no
candidate character costs one scan), code spans and fences are skipped one stretch per
regex match (`code_context.py`), each backtick run left is paired at most once, and a live
stream that must wait re-scans only after what is waiting has doubled.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from thoughtline.contract.record import DialectName
from thoughtline.reasoning.code_context import CodeContext
from thoughtline.reasoning.cursor import NeedMoreTextError
from thoughtline.reasoning.dialects import Dialect
from thoughtline.reasoning.markers import (
    ATTRIBUTE_OPENERS,
    CLOSER,
    CLOSER_KEYS,
    CODE_START,
    GROWING_MARKERS,
    LINE_BREAKS,
    LONGEST_PHRASE,
    NON_SPACE,
    PHRASE_OPENERS,
    PHRASES,
    ROLES,
    SUFFIXED_WRAPPERS,
    THOUGHT_LABEL,
    TOOL_CALL_SET,
    UNFINISHED_ATTRIBUTE_OPENER,
    Marker,
    after_opener,
    block_end_hold,
    fold_case,
    marker_key,
    tail_undecided,
    text_hold,
)
from thoughtline.reasoning.results import (
    InlineCode,
    InlineDetection,
    InlineExtraction,
    RemovedSpan,
    SpanRule,
    suspected,
)
from thoughtline.reasoning.search import (
    BLOCK_END_SEARCH,
    TEXT_SEARCH,
    SearchState,
    find_marker,
)
from thoughtline.reasoning.sinks import ContentSink, ThinkingSink

_Stage = Literal["label", "phrase", "scan"]


class Scanner(CodeContext):
    """The one scanner. `run(text, final)` scans `text`, which continues where the last run
    stopped, and returns how much of it was decided; steps are atomic, so a step that needs
    more text changes nothing and is tried again on the next run."""

    def __init__(self, *, thought_label: bool) -> None:
        super().__init__()
        self.content = ContentSink()
        self.thinking = ThinkingSink()
        self.detections: list[InlineDetection] = []
        self.spans: list[RemovedSpan] = []
        self._stage: _Stage = "label" if thought_label else "phrase"
        self._undecided = True  # no delimiter yet: an orphan closer may still claim the text
        self._held_raw: list[tuple[str, int]] = []
        self._held_spans: list[RemovedSpan] = []
        self._held_ops: list[tuple[str | None, int]] = []
        self._held_start = 0
        self._seen_text = False
        self._found_block = False
        self._block_dialects: set[DialectName] = set()  # dialects with a block, empty or not
        self._reasoning_dialects: set[DialectName] = set()  # dialects with a non-empty block
        self._framed_dialects: set[DialectName] = set()  # dialects whose wrapper was removed
        self._block: Dialect | None = None
        self._block_start = 0
        self._text_from = 0
        self._found: dict[int, SearchState] = {}
        self._next_match_at: dict[str, int] = {}
        self._attributes_checked = -1  # the last `<` of this run known to start no open opener
        self.finished = False

    # the driver ---------------------------------------------------------------------------

    def run(self, text: str, final: bool) -> int:
        self._text, self._position, self._final = text, 0, final
        self._text_from = 0
        self._found = {}
        self._next_match_at = {}
        self._backticks = None
        self._attributes_checked = -1
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
        except NeedMoreTextError:
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

    # the start of the text ----------------------------------------------------------------

    def _start(self) -> None:
        text, position = self._text, self._position
        if self._stage == "label":
            # wait only while the text may still become the label and its line break
            head = text[position : position + len(_LABEL_FORM)]
            self._need(
                self._final or not (len(head) < len(_LABEL_FORM) and _LABEL_FORM.startswith(head))
            )
            if text.startswith(THOUGHT_LABEL, position):
                after = position + len(THOUGHT_LABEL)
                line_break = next((brk for brk in LINE_BREAKS if text.startswith(brk, after)), None)
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
        match = NON_SPACE.search(text, position)
        self._need(
            match is not None and (self._final or not _may_become_phrase(text, match.start()))
        )
        if match is not None:
            start = match.start()
            for dialect in PHRASES:
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
            match = find_marker(text, TEXT_SEARCH, position, found)
            if match is None:
                self._emit_up_to(self._safe_end(position))
                return
            start = match.start()
            if not final:
                wait = self._unsettled(match, position)
                if wait >= 0:
                    self._emit_up_to(wait)
                    raise NeedMoreTextError
            self._position = start  # the text before the marker stays as it is
            first = text[start]
            if first in "`~" and self._skip_fenced_lines(start):
                continue
            if first == "`":
                self._backtick_run(match)
            elif first == "~":
                self._tilde_run(match)
            else:
                self._marker(match)
            if self._mode != "text" or self._position >= len(text):
                return

    def _unsettled(self, match: re.Match[str], position: int) -> int:
        """Where a live text must wait when the marker or code run found at `match` may still
        turn out otherwise once more text comes (-1: it stands, and its step decides at
        once, or says itself what it needs): an opener with attributes before it that may
        still close around it (`<think a [THINK]` …), the marker the start of a longer one
        (none in today's table), or a wrapper whose suffix may still follow (`[END FINAL
        RESPONSE]` and whitespace). Only these: a complete marker is the one the whole text
        has there, so a decided opener gives out the thinking after it at once."""
        text, start = self._text, match.start()
        angle = text.rfind("<", position, start)
        if angle > self._attributes_checked:
            if UNFINISHED_ATTRIBUTE_OPENER.match(text, angle):
                return angle
            self._attributes_checked = angle  # each `<` is looked at once per run
        if self._may_grow(match):
            return start
        dialect = SUFFIXED_WRAPPERS.get(match.group())
        if dialect is not None:  # the suffix is not in the match: may it still follow?
            suffix = dialect.wrapper_suffix
            after = NON_SPACE.search(text, match.end())
            if after is None or (
                len(text) - after.start() < len(suffix) and suffix.startswith(text[after.start() :])
            ):
                return start
        return -1

    def _may_grow(self, match: re.Match[str]) -> bool:
        """Whether the complete marker at `match` is the start of a longer one that may still
        come (live only)."""
        if not GROWING_MARKERS or self._final:
            return False
        longest = GROWING_MARKERS.get(fold_case(match.group()))
        return longest is not None and len(self._text) - match.start() < longest

    def _safe_end(self, position: int) -> int:
        """Where text with no marker may be emitted up to: all of it, or (live) up to the end
        that may still grow into a marker (or an opener with attributes)."""
        text = self._text
        if self._final:
            return len(text)
        end = len(text) - text_hold(text, position)
        angle = text.rfind("<", position, end)
        if angle >= 0 and UNFINISHED_ATTRIBUTE_OPENER.match(text, angle):
            end = angle
        if end == position:
            raise NeedMoreTextError
        return end

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
        marker = ROLES.get(matched) or ROLES.get(matched.lower())
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
        else:  # a tool-call marker outside a block: text
            self._literal(match.end())

    def _unlisted_marker(self, matched: str) -> Marker | None:
        """`<think …>` with attributes, or a wrapper followed by its suffix."""
        if matched.startswith("<"):
            for pattern, dialect in ATTRIBUTE_OPENERS:
                if pattern.fullmatch(matched):
                    return Marker("open", dialect)
            return None
        for wrapper, dialect in SUFFIXED_WRAPPERS.items():
            if matched.startswith(wrapper):
                return Marker("wrapper", dialect)
        return None

    def _opener(self, match: re.Match[str], dialect: Dialect) -> None:
        self._flush_text()
        counts = not self._seen_text or self._found_block
        if not counts and dialect.kind == "token" and self._token_may_start_block(dialect, match):
            # A token opener after a block of its dialect or at a line start opens a block
            # only when its closer follows; in the middle of a sentence it is text.
            counts = self._closer_follows(dialect, match.end())
        if not counts:
            self._resolve_as_content()
            self._literal(match.end())
            return
        end = match.end()
        if dialect.opener_tail:  # the tail goes with the opener: wait until it is known
            self._need(self._final or not tail_undecided(dialect, self._text, end))
            end = after_opener(dialect, self._text, end)
        self._resolve_as_content()
        self._mode = "block"
        self._block = dialect
        self._block_start = self._base + match.start()
        self.thinking.start_block()
        self._skip_to(end)

    def _token_may_start_block(self, dialect: Dialect, match: re.Match[str]) -> bool:
        """Whether a token opener stands after a block of its own dialect (even an empty
        one) or at the start of a line (after at most three spaces: more is indented code)."""
        return dialect.name in self._block_dialects or self._at_line_start(match.start())

    def _closer_follows(self, dialect: Dialect, start: int) -> bool:
        """Whether a token opener that stands mid-text opens a block: only when its closer
        follows before any Markdown code starts, so an answer that names `[THINK]` and quotes
        `[/THINK]` in code keeps its words."""
        closer = self._next_position(dialect.name, CLOSER[dialect.name], start)
        code = self._next_position("code", CODE_START, start)
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
            self._framed_dialects.clear()  # a wrapper before an orphan closer was reasoning
            self._orphan_block(dialect, raw, match)
        elif dialect.name in self._reasoning_dialects:
            # a stray closer after a non-empty block of its dialect: removed like one (that
            # block's detection names its dialect)
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
            self._reasoning_dialects.add(dialect.name)
            self.detections.append(InlineDetection("orphan_close_tag", dialect.name))
        self._span(
            self._held_start,
            self._base + match.end(),
            "orphan_closer",
            dialect.name,
            reasoning=has_reasoning,
        )

    def _wrapper(self, match: re.Match[str], dialect: Dialect) -> None:
        self._flush_text()  # the text before it says whether the wrapper opens the text
        counts = dialect.name in self._block_dialects
        if dialect.kind == "token":
            # a token wrapper also frames a text it opens, and closes what its dialect framed
            counts = counts or not self._seen_text or dialect.name in self._framed_dialects
        if not counts:
            self._literal(match.end())
            return
        self._framed_dialects.add(dialect.name)
        self._cut_marker(match, dialect)

    def _trailing_wrapper(self, match: re.Match[str], dialect: Dialect) -> None:
        rest = NON_SPACE.search(self._text, match.end())
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

    # code runs: the steps of `code_context.CodeContext`, which the scanner stands on

    # inside a block -----------------------------------------------------------------------

    def _in_block(self) -> None:
        assert self._block is not None
        text, position, dialect = self._text, self._position, self._block
        match = find_marker(text, BLOCK_END_SEARCH[dialect.name], position, self._found)
        if match is None:
            if self._final:
                self._think_up_to(len(text))
                self._close_block("unclosed_open_tag", self._base + len(text))
                return
            # Held back: only what may still grow into a marker that ends the block.
            safe_end = len(text) - block_end_hold(text, position, dialect.name)
            if dialect.attribute_openers:  # an opener with attributes may still be growing
                angle = text.rfind("<", position, safe_end)
                if angle >= 0 and UNFINISHED_ATTRIBUTE_OPENER.match(text, angle):
                    safe_end = angle
            self._think_up_to(safe_end)
            raise NeedMoreTextError
        if marker_key(match.group(), dialect.kind) in CLOSER_KEYS[dialect.name]:
            self._think_up_to(match.start())
            self._position = match.end()
            self._close_block("inline_tag", self._base + match.end())
            return
        if match.group() not in TOOL_CALL_SET:  # an opener of its own (with attributes or not)
            self._nested_opener(dialect, match)
            return
        # A tool-call marker: the block ends here only if it is never closed.
        closer = self._next_position(dialect.name, CLOSER[dialect.name], match.end())
        if closer >= 0:
            self._think_up_to(match.end())
            return
        self._think_up_to(match.start())
        self._need(False)
        self._close_block("unclosed_open_tag", self._base + match.start())

    def _nested_opener(self, dialect: Dialect, match: re.Match[str]) -> None:
        """An opener of the block's own dialect inside it is dropped (with its tail), so no
        delimiter reaches thinking; a live text waits until a longer opener or the tail can
        no longer grow."""
        self._think_up_to(match.start())
        text = self._text
        self._need(not self._may_grow(match))
        end = match.end()
        if dialect.opener_tail:
            self._need(self._final or not tail_undecided(dialect, text, end))
            end = after_opener(dialect, text, end)
        self._position = end

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
            self._reasoning_dialects.add(dialect.name)
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


_LABEL_FORM: Final = THOUGHT_LABEL + "\r\n"
"""What the label's decision may need to see: the label and its longest line break (the text
so far a proper prefix of it, the label may still come; anything else decides it)."""


def _may_become_phrase(text: str, start: int) -> bool:
    """Whether the text from `start` (its first non-whitespace) may still become a phrase
    opener: it is a proper prefix of one. Anything else, a phrase opener or not, is decided."""
    head = text[start : start + LONGEST_PHRASE]
    return any(len(head) < len(opener) and opener.startswith(head) for opener in PHRASE_OPENERS)


def scan(text: str, *, thought_label: bool = False) -> InlineExtraction:
    """What `extract` gives, always through the scanner (no shortcut; tests compare the two)."""
    scanner = Scanner(thought_label=thought_label)
    scanner.run(text, final=True)
    return extraction_of(scanner)


def extraction_of(scanner: Scanner) -> InlineExtraction:
    """What the scanner found, as extraction gives it (`suspected` read on the content)."""
    content = "".join(scanner.content.output.pieces)
    thinking = "".join(scanner.thinking.output.pieces)
    return InlineExtraction(
        content,
        thinking or None,
        tuple(scanner.detections) + suspected(content),
        tuple(scanner.spans),
    )
