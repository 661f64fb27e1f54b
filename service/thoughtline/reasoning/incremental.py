"""Inline reasoning in text that arrives in pieces: a live text fed chunk by chunk
(`IncrementalExtractor`), and a recorded text in chunks, each chunk given its share of the
extraction (`extract_chunks`). Both run the one scanner (`scanner.Scanner`) over what has
arrived, so the pieces give exactly what the whole text gives, wherever they are cut.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from thoughtline.reasoning.markers import ATTRIBUTE_HEAD, LONGEST_MARKER, PHRASE_FIRST_CHARACTERS
from thoughtline.reasoning.results import InlineDetection, InlineExtraction
from thoughtline.reasoning.scanner import Scanner, extraction_of
from thoughtline.reasoning.search import next_dialect_marker, plain_extraction
from thoughtline.reasoning.sinks import Output

__all__ = ["IncrementalExtractor", "extract_chunks"]


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
        self._scanner = Scanner(thought_label=thought_label)
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
        return self._plain if self._plain is not None else extraction_of(self._scanner)

    @property
    def found(self) -> tuple[InlineDetection, ...]:
        """The blocks found so far, in order (no `suspected_reasoning`: that needs the whole
        content)."""
        return tuple(self._scanner.detections)

    @property
    def found_count(self) -> int:
        """`len(found)`, without the copy (a live step asks it at every chunk)."""
        return len(self._scanner.detections)

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
    scanner = Scanner(thought_label=thought_label)
    scanner.run(text, final=True)
    ends = list(_running_ends(chunks))
    contents = _share(scanner.content.output, ends)
    thinkings = _share(scanner.thinking.output, ends)
    return extraction_of(scanner), contents, thinkings


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
