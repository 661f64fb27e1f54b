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

Time is linear in the text on every input: markers are found by one pattern per first
character, each searched again only once the scan has passed its last match (a text with no
candidate character costs one scan), each backtick run is paired at most once, and a live
stream that must wait re-scans only after what is waiting has doubled.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from typing import Literal

from thoughtline.contract.record import DialectName
from thoughtline.reasoning.dialects import Dialect
from thoughtline.reasoning.markers import (
    ATTRIBUTE_HEAD,
    ATTRIBUTE_OPENERS,
    BACKTICK_RUN,
    CANDIDATE,
    CLOSER,
    CLOSER_KEYS,
    CODE_START,
    FENCED_LINES,
    LINE_BREAKS,
    LONGEST_MARKER,
    LONGEST_PHRASE,
    NON_SPACE,
    PHRASE_FIRST_CHARACTERS,
    PHRASES,
    ROLES,
    SUFFIXED_WRAPPERS,
    THOUGHT_LABEL,
    TOOL_CALL_SET,
    UNFINISHED_ATTRIBUTE_OPENER,
    Marker,
    after_opener,
    block_end_hold,
    marker_key,
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
    closing_fence,
    find_marker,
    next_dialect_marker,
    plain_extraction,
)
from thoughtline.reasoning.sinks import ContentSink, Output, ThinkingSink


class _NeedMoreTextError(Exception):
    """A decision at the current position needs text that has not arrived yet."""


_Mode = Literal["text", "block", "fence"]


_Stage = Literal["label", "phrase", "scan"]


class _Scanner:
    """The one scanner. `run(text, final)` scans `text`, which continues where the last run
    stopped, and returns how much of it was decided; steps are atomic, so a step that needs
    more text changes nothing and is tried again on the next run."""

    def __init__(self, *, thought_label: bool) -> None:
        self.content = ContentSink()
        self.thinking = ThinkingSink()
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
        self._reasoning_dialects: set[DialectName] = set()  # dialects with a non-empty block
        self._framed_dialects: set[DialectName] = set()  # dialects whose wrapper was removed
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
        self._found: dict[int, SearchState] = {}
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
            self._need(len(text) - position > len(THOUGHT_LABEL) + 1)
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
        self._need(match is not None and len(text) - match.start() > LONGEST_PHRASE)
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
            if not final and len(text) - start < LONGEST_MARKER:
                self._emit_up_to(start)
                raise _NeedMoreTextError
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

    def _skip_fenced_lines(self, start: int) -> bool:
        """At a code run that begins a line: skip, in one regex call, the complete fenced
        blocks and candidate-free lines from that line on (they are text, as the walk below
        would find one fence at a time). False when nothing complete lies past the run."""
        text = self._text
        line_start = start
        while line_start > 0 and start - line_start < 3 and text[line_start - 1] == " ":
            line_start -= 1
        if line_start > 0 and text[line_start - 1] != "\n":
            return False
        if line_start == 0 and self._line_indent != 0:  # the line began in an earlier run
            return False
        skipped = FENCED_LINES.match(text, line_start)
        if skipped is None or skipped.end() <= start:
            return False
        self._position = skipped.end()
        return True

    def _safe_end(self, position: int) -> int:
        """Where text with no marker may be emitted up to: all of it, or (live) up to a
        candidate character near the end that may still grow into a marker."""
        text = self._text
        if self._final:
            return len(text)
        tail_start = max(position, len(text) - LONGEST_MARKER)
        candidate = CANDIDATE.search(text, tail_start)
        end = candidate.start() if candidate is not None else len(text)
        angle = text.rfind("<", position, end)
        if angle >= 0 and UNFINISHED_ATTRIBUTE_OPENER.match(text, angle):
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

    def _literal(self, end: int) -> None:
        self._position = end

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
        if dialect.opener_tail:  # the tail goes with the opener: wait until it has arrived
            self._need(len(self._text) - end >= dialect.tail_window)
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
            run = BACKTICK_RUN.match(text, at)
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
                for run in BACKTICK_RUN.finditer(self._text, start):
                    self._backticks.setdefault(run.end() - run.start(), []).append(run.start())
            positions = self._backticks.get(length, [])
            index = bisect.bisect_left(positions, start)
            return positions[index] if index < len(positions) else -1
        for run in BACKTICK_RUN.finditer(self._text, start):
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
            raise _NeedMoreTextError
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
        self._need(len(text) - match.start() >= LONGEST_MARKER)
        end = match.end()
        if dialect.opener_tail:
            self._need(len(text) - end >= dialect.tail_window)
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


def scan(text: str, *, thought_label: bool = False) -> InlineExtraction:
    """What `extract` gives, always through the scanner (no shortcut; tests compare the two)."""
    scanner = _Scanner(thought_label=thought_label)
    scanner.run(text, final=True)
    return _result(scanner)


def _result(scanner: _Scanner) -> InlineExtraction:
    content = "".join(scanner.content.output.pieces)
    thinking = "".join(scanner.thinking.output.pieces)
    return InlineExtraction(
        content,
        thinking or None,
        tuple(scanner.detections) + suspected(content),
        tuple(scanner.spans),
    )


class IncrementalExtractor:
    """Inline extraction over a live text that arrives in chunks.

    `feed` returns the (content, thinking) text that is now certain; `flush` returns the rest.
    The result equals `extract` of the joined text, wherever the chunks are cut. Text before
    the first delimiter is held (a closer may still make it reasoning), as is text after a
    decision that waits for more (a backtick run with no partner yet). While text waits, it is
    re-scanned only after it has doubled, so the total work stays linear.

    Until the first sign of a delimiter arrives, the scanner would only hold the text, so it is
    held unscanned: code runs then cost nothing (a stream of fence lines is as cheap as prose),
    and at the end a text that never showed a delimiter is plain text, as `extract` reads it.
    The first sign (a marker, or the head of an opener with attributes, in the new text and
    the end of the old) starts the scanner on all of it.
    """

    def __init__(self, *, thought_label: bool = False) -> None:
        self._scanner = _Scanner(thought_label=thought_label)
        self._waiting: list[str] = []
        self._waiting_length = 0
        self._rescan_at = 0
        self._content_sent = 0
        self._thinking_sent = 0
        # a Gemini/Gemma label is removed as soon as it arrives: the scanner runs from the start
        self._unscanned = not thought_label
        self._tail = ""  # the end of the unscanned text, where a marker may have begun
        self._opening_seen = False
        self._plain: InlineExtraction | None = None

    def feed(self, chunk: str) -> tuple[str, str]:
        """Scan one more chunk; return the content and thinking deltas now certain."""
        if chunk:
            self._waiting.append(chunk)
            self._waiting_length += len(chunk)
        if self._unscanned and self._still_unscanned(chunk):
            return "", ""
        if self._waiting_length >= self._rescan_at:
            self._scan(final=False)
        return self._new_output()

    def flush(self) -> tuple[str, str]:
        """End of text: every waiting decision is taken."""
        if self._unscanned:
            text = "".join(self._waiting)
            self._plain = plain_extraction(text, thought_label=False)
            if self._plain is not None:
                self._waiting, self._waiting_length = [], 0
                return text, ""
            self._unscanned = False
        self._scan(final=True)
        return self._new_output()

    def decide_now(self) -> tuple[str, str]:
        """Scan all that waits at once, unscanned text included, and return what is now
        certain: a live stream whose tail holds a marker wants the decision now, not when the
        waiting text has doubled."""
        self._unscanned = False
        self._scan(final=False)
        return self._new_output()

    def result(self) -> InlineExtraction:
        """The content, thinking and detections (complete after `flush`)."""
        return self._plain if self._plain is not None else _result(self._scanner)

    @property
    def found(self) -> tuple[InlineDetection, ...]:
        """The blocks found so far, in order (no `suspected_reasoning`: that needs the whole
        content)."""
        return tuple(self._scanner.detections)

    def _still_unscanned(self, chunk: str) -> bool:
        """Whether the text may stay unscanned after `chunk`: no marker and no head of an
        opener with attributes stands in it or across its start, and the text does not open
        with what may be a phrase (the scanner reads a phrase block as soon as it closes)."""
        window = self._tail + chunk
        if not self._opening_seen and window.strip():
            self._opening_seen = True
            if window.lstrip()[0] in PHRASE_FIRST_CHARACTERS:
                self._unscanned = False
        if self._unscanned and (
            next_dialect_marker(window, 0) is not None or ATTRIBUTE_HEAD.search(window)
        ):
            self._unscanned = False
        if self._unscanned:
            self._tail = window[-LONGEST_MARKER:]
            return True
        self._rescan_at = 0  # scan all that waits now
        return False

    def _scan(self, final: bool) -> None:
        text = "".join(self._waiting)
        consumed = self._scanner.run(text, final)
        rest = text[consumed:]
        self._waiting = [rest] if rest else []
        self._waiting_length = len(rest)
        self._rescan_at = 2 * len(rest) if len(rest) > LONGEST_MARKER else 0

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
    plain = plain_extraction(text, thought_label)
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


def _share(output: Output, ends: list[int]) -> list[str]:
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
