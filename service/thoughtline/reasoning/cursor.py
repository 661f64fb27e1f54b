"""Where the scanner stands in the text: the run's text and position, whether the run is
the last, the mode (text, block, fence) and what the line so far says; and the one way a
step says it needs text that has not arrived yet (`NeedMoreTextError`). The scanner
(`scanner.py`) and its code-context steps (`code_context.py`) stand on it.
"""

from __future__ import annotations

from typing import Literal

Mode = Literal["text", "block", "fence"]


class NeedMoreTextError(Exception):
    """A decision at the current position needs text that has not arrived yet."""


class Cursor:
    """The position in the text of the current run, and what carries from one run to the
    next (the offset of the run's start, the indent of the line the last run ended in)."""

    def __init__(self) -> None:
        self._mode: Mode = "text"
        self._fence_character = ""
        self._fence_length = 0
        # spaces since the last line break; None: the line has other text before
        self._line_indent: int | None = 0
        self._base = 0
        self._text = ""
        self._position = 0
        self._final = False
        self._backticks: dict[int, list[int]] | None = None

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
            raise NeedMoreTextError

    def _emit_up_to(self, end: int) -> None:
        """Text up to `end` stays as it is; it is written out in one piece when something
        else happens (`_flush_text`), so a run of code spans costs no writes of its own."""
        self._position = max(self._position, end)

    def _literal(self, end: int) -> None:
        self._position = end
