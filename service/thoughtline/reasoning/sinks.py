"""Where extraction writes: the content (kept text, glue spaces, trimmed once anything was cut)
and the thinking (non-empty blocks joined with LF). Each piece keeps where it came from in the
source text, so a recorded stream's output can be handed back chunk by chunk."""

from __future__ import annotations


class Output:
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


class ContentSink:
    """Visible content: kept text with glue spaces, trimmed at its ends once anything was cut.

    Whitespace is held until what follows it is known: a run at the very end is trimmed when
    anything was removed, and so is leading whitespace, even when the removal comes later.
    """

    def __init__(self) -> None:
        self.output = Output()
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


class ThinkingSink:
    """Inline thinking: the non-empty blocks joined with LF, trimmed at the two ends."""

    def __init__(self) -> None:
        self.output = Output()
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
