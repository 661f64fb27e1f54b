"""Markdown code is text: the scanner's steps at a backtick or tilde run. A run that opens a
fence (at a line's start, up to three spaces in) makes the mode `fence` until its closing
fence; an inline run is paired with the next run of the same length (a table of runs built
at most once per run of the scanner, so unpaired runs stay linear); complete fenced blocks
and candidate-free lines after a line-start run are skipped in one regex call.
"""

from __future__ import annotations

import bisect
import re

from thoughtline.reasoning.cursor import Cursor, NeedMoreTextError
from thoughtline.reasoning.markers import BACKTICK_RUN, FENCED_LINES
from thoughtline.reasoning.search import closing_fence


class CodeContext(Cursor):
    """The code-context steps; the scanner calls them where its search finds a code run."""

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

    def _backtick_run(self, match: re.Match[str]) -> None:
        text, start, end = self._text, match.start(), match.end()
        if end == len(text) and not self._final:
            raise NeedMoreTextError  # the run may go on
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
        raise NeedMoreTextError

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
                raise NeedMoreTextError
            self._literal(end)
            self._mode = "text"
            return
        if self._final:
            self._literal(len(text))
            return
        last_line = text.rfind("\n", position) + 1
        self._emit_up_to(max(last_line, position))
        raise NeedMoreTextError
