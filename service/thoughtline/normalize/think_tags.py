"""Inline reasoning tags in visible text: `<think>…</think>` and `<thinking>…</thinking>`.

DESIGN §4.3, exactly. One scanner serves both the whole-text call (`extract`) and the
incremental one (`IncrementalExtractor`: feed chunks, flush at the end), so the two agree
however the text is cut. It scans with `str.find` for `<` and compares the few characters after
it; a lazy regex measured about 6x slower on this work.

Rules, in the order the scanner applies them:
- tags are matched case-insensitively, with no attributes; a block closes with its own name;
- a closing tag before any opening tag means all text before it was reasoning (templates that
  put the opening tag in the prompt); a later stray closing tag is removed;
- an opening tag never closed makes the rest reasoning;
- blocks join with one LF and the joined thinking is trimmed at its two ends;
- in content each removed tag or block leaves one space where it would glue two non-space
  characters, and content is trimmed at its ends when anything was removed.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

InlineCode = Literal["inline_tag", "orphan_close_tag", "unclosed_open_tag"]

_TAG_NAMES: Final = ("thinking", "think")  # longest first: "<think" is a prefix of "<thinking"
_ALL_TAGS: Final = tuple(f"<{slash}{name}>" for slash in ("", "/") for name in _TAG_NAMES)
_LONGEST_TAG: Final = max(len(tag) for tag in _ALL_TAGS)

_Mode = Literal["undecided", "content", "thinking"]


class InlineExtraction(NamedTuple):
    """What inline extraction made of a visible text."""

    content: str
    thinking: str | None
    codes: tuple[InlineCode, ...]


def extract(text: str) -> InlineExtraction:
    """Split inline reasoning out of a whole visible text (DESIGN §4.3)."""
    if "<" not in text:
        return InlineExtraction(text, None, ())
    extractor = IncrementalExtractor()
    extractor.feed(text)
    extractor.flush()
    return extractor.result()


def _match_tag(text: str, start: int) -> tuple[bool, str, int] | None:
    """The tag at `start` as (is_closing, name, length), or None when it is no tag of ours."""
    closing = text.startswith("/", start + 1)
    name_start = start + 2 if closing else start + 1
    window = text[name_start : name_start + len("thinking") + 1].lower()
    for name in _TAG_NAMES:
        if window.startswith(name) and window[len(name) : len(name) + 1] == ">":
            return closing, name, name_start - start + len(name) + 1
    return None


def _could_become_tag(tail: str) -> bool:
    """True when `tail` (starting at `<`) is a proper prefix of one of our tags."""
    lowered = tail.lower()
    return any(tag.startswith(lowered) and tag != lowered for tag in _ALL_TAGS)


class _ThinkingSink:
    """Emits inline thinking as blocks joined with LF and trimmed at both ends."""

    def __init__(self) -> None:
        self.started = False
        self.pending_whitespace = ""
        self.block_count = 0
        self.emitted: list[str] = []

    def start_block(self) -> None:
        if self.block_count:
            self.pending_whitespace += "\n"
        self.block_count += 1

    def write(self, piece: str) -> str:
        if not self.started:
            piece = piece.lstrip()
            if not piece:
                return ""
            self.started = True
            self.pending_whitespace = ""
        body = piece.rstrip()
        if not body:
            self.pending_whitespace += piece
            return ""
        out = self.pending_whitespace + body
        self.pending_whitespace = piece[len(body) :]
        self.emitted.append(out)
        return out


class _ContentSink:
    """Emits visible content: verbatim until a tag is removed, then glued and trimmed."""

    def __init__(self) -> None:
        self.trimming = False
        self.glue_pending = False
        self.started = False
        self.last_char = ""
        self.pending_whitespace = ""
        self.emitted: list[str] = []

    def mark_removal(self) -> None:
        self.trimming = True
        self.glue_pending = True

    def write(self, piece: str) -> str:
        if not piece:
            return ""
        if not self.trimming:
            self._remember(piece)
            self.emitted.append(piece)
            return piece
        if not self.started:
            piece = piece.lstrip()
            if not piece:
                return ""
            self.started = True
            self.glue_pending = False  # nothing stands on the left to glue to
        body = piece.rstrip()
        if not body:
            self.pending_whitespace += piece
            return ""
        prefix = self.pending_whitespace
        if (
            self.glue_pending
            and not prefix
            and self.last_char
            and not self.last_char.isspace()
            and not body[0].isspace()
        ):
            prefix = " "
        self.glue_pending = False
        out = prefix + body
        self.pending_whitespace = piece[len(body) :]
        self._remember(out)
        self.emitted.append(out)
        return out

    def _remember(self, out: str) -> None:
        self.last_char = out[-1]
        self.started = True


class IncrementalExtractor:
    """Inline extraction over a text that arrives in chunks.

    `feed` returns the (content, thinking) text that is now certain; `flush` returns the rest.
    Until the first tag is seen the extractor cannot know whether a later orphan closing tag
    will turn the text so far into reasoning, so it holds that text back; with a
    `whole_text_hint` (the `extract` result of the full text, known for recorded streams) it
    emits eagerly instead. Either way the final result equals `extract` of the joined text.
    """

    def __init__(self, whole_text_hint: InlineExtraction | None = None) -> None:
        self._mode: _Mode = "undecided"
        self._open_name = ""
        self._tail = ""  # a trailing fragment that may still become a tag
        self._held = ""  # undecided text: content, unless an orphan closing tag follows
        self._codes: list[InlineCode] = []
        self._content = _ContentSink()
        self._thinking = _ThinkingSink()
        if whole_text_hint is not None:
            self._apply_hint(whole_text_hint)

    def _apply_hint(self, hint: InlineExtraction) -> None:
        if not hint.codes:
            self._mode = "content"
        elif hint.codes[0] == "orphan_close_tag":
            self._mode = "thinking"
            self._open_name = ""  # any closing tag ends the orphan block
            self._thinking.start_block()
        else:
            self._mode = "content"
            self._content.trimming = True

    def feed(self, chunk: str) -> tuple[str, str]:
        """Scan one more chunk; return the content and thinking deltas now certain."""
        text = self._tail + chunk
        self._tail = ""
        content_out: list[str] = []
        thinking_out: list[str] = []
        position = 0
        while True:
            found = text.find("<", position)
            if found < 0:
                self._write(text[position:], content_out, thinking_out)
                break
            if len(text) - found < _LONGEST_TAG and _could_become_tag(text[found:]):
                self._write(text[position:found], content_out, thinking_out)
                self._tail = text[found:]
                break
            tag = _match_tag(text, found)
            if tag is None:
                self._write(text[position : found + 1], content_out, thinking_out)
                position = found + 1
                continue
            self._write(text[position:found], content_out, thinking_out)
            closing, name, length = tag
            self._on_tag(closing, name, text[found : found + length], content_out, thinking_out)
            position = found + length
        return "".join(content_out), "".join(thinking_out)

    def flush(self) -> tuple[str, str]:
        """End of text: a held fragment is literal text; an open block stays reasoning."""
        content_out: list[str] = []
        thinking_out: list[str] = []
        tail, self._tail = self._tail, ""
        self._write(tail, content_out, thinking_out)
        if self._mode == "undecided":
            content_out.append(self._content.write(self._held))
            self._held = ""
            self._mode = "content"
        elif self._mode == "thinking":
            self._codes.append("unclosed_open_tag")
            self._mode = "content"
        return "".join(content_out), "".join(thinking_out)

    def result(self) -> InlineExtraction:
        """The content, thinking and detection codes so far (complete after `flush`)."""
        thinking = "".join(self._thinking.emitted)
        return InlineExtraction(
            "".join(self._content.emitted), thinking or None, tuple(self._codes)
        )

    def _write(self, text: str, content_out: list[str], thinking_out: list[str]) -> None:
        if not text:
            return
        if self._mode == "undecided":
            self._held += text
        elif self._mode == "content":
            content_out.append(self._content.write(text))
        else:
            thinking_out.append(self._thinking.write(text))

    def _on_tag(
        self,
        closing: bool,
        name: str,
        raw_tag: str,
        content_out: list[str],
        thinking_out: list[str],
    ) -> None:
        if self._mode == "thinking":
            if closing and (name == self._open_name or not self._open_name):
                self._codes.append("orphan_close_tag" if not self._open_name else "inline_tag")
                self._mode = "content"
                self._content.mark_removal()
            else:  # another tag inside a block is reasoning text, kept as it stood
                thinking_out.append(self._thinking.write(raw_tag))
            return
        if closing and self._mode == "undecided":
            self._thinking.start_block()
            thinking_out.append(self._thinking.write(self._held))
            self._held = ""
            self._codes.append("orphan_close_tag")
            self._mode = "content"
            self._content.mark_removal()
            return
        if self._mode == "undecided":
            self._content.mark_removal()
            self._content.glue_pending = False
            content_out.append(self._content.write(self._held))
            self._held = ""
        self._content.mark_removal()
        if closing:
            self._codes.append("orphan_close_tag")
            return
        self._mode = "thinking"
        self._open_name = name
        self._thinking.start_block()
