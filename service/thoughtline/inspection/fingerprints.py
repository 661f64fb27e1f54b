"""Fingerprints of reasoning text, so a later request can be checked without storing the text.

A fingerprint is the SHA-256 (first 128 bits, hex) of one normalized *segment*: a line, cut
again after each sentence end (`.`, `!`, `?`, `:`, `;` and their full-width forms), casefolded,
runs of whitespace collapsed to one space, ends trimmed. Segments shorter than
`MIN_SEGMENT_CHARS` after normalization are skipped: "OK", "**Plan**" or a bare code keyword
stand in answers by chance. Sentences, not only lines, because reasoning pasted before an answer
with no separator at all (`...a short sentence.Paris.`) shares no whole line with it, while its
sentences still stand whole.

A message *repeats* a record's thinking when it holds at least `MIN_SHARE` of that record's
fingerprints. A share, not a single line, because reasoning models draft answers (a code line,
a sentence) that the answer then repeats on purpose; a pasted-back thinking repeats nearly all
of them. The same rule serves the Redis-backed check across records (`conversation_store`) and
the in-request check (a request that carries reasoning both marked and as ordinary text).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

import msgspec

from thoughtline.contract.record import Detection
from thoughtline.reading.compose import leaked
from thoughtline.reading.turn import REASONING_IN_CONTENT_MIN_CHARS

MIN_SEGMENT_CHARS: Final = REASONING_IN_CONTENT_MIN_CHARS
"""The same floor as the `reasoning_in_content` detection: shorter lines match by chance."""

MIN_SHARE: Final = 0.5
"""The share of one record's thinking fingerprints a message must hold to be flagged."""

MAX_FINGERPRINTS_PER_RECORD: Final = 512
"""A bound on what one record adds to a conversation's memory (very long thinking)."""

FINGERPRINT_HEX_CHARS: Final = 32

_SENTENCE_END: Final = re.compile(r"(?<=[.!?:;\u3002\uff01\uff1f\uff1a\uff1b])")


class HistoryFingerprint(msgspec.Struct, frozen=True):
    """One fingerprint of the ordinary text of one history message, and where that message is."""

    path: str
    fingerprint: str


def text_fingerprints(text: str) -> list[str]:
    """Distinct fingerprints of the qualifying lines of `text`, in first-seen order."""
    seen: dict[str, None] = {}
    for segment in text_segments(text):
        digest = hashlib.sha256(segment.encode()).hexdigest()[:FINGERPRINT_HEX_CHARS]
        seen.setdefault(digest, None)
        if len(seen) >= MAX_FINGERPRINTS_PER_RECORD:
            break
    return list(seen)


def text_segments(text: str) -> Iterator[str]:
    """The normalized segments of `text` that are long enough to count, in order."""
    for line in text.splitlines():
        for piece in _SENTENCE_END.split(line):
            segment = normalized(piece)
            if len(segment) >= MIN_SEGMENT_CHARS:
                yield segment


def normalized(text: str) -> str:
    """Casefolded, whitespace runs collapsed to one space, ends trimmed."""
    return " ".join(text.split()).casefold()


def fingerprint_history_text(path: str, text: str) -> list[HistoryFingerprint]:
    return [HistoryFingerprint(path, fingerprint) for fingerprint in text_fingerprints(text)]


def repeated_reasoning(
    history: Iterable[HistoryFingerprint],
    owners: Mapping[str, str],
    owner_sizes: Mapping[str, int],
    *,
    min_share: float = MIN_SHARE,
) -> list[Detection]:
    """`replayed_reasoning` for every message holding `min_share` of one owner's fingerprints.

    `owners` maps a known reasoning fingerprint to its owner (a record id, or a path inside the
    request); `owner_sizes` gives how many fingerprints each owner has. One detection per
    message path, in the order the messages came.
    """
    matched: dict[str, dict[str, set[str]]] = {}
    for item in history:
        owner = owners.get(item.fingerprint)
        if owner is not None:
            matched.setdefault(item.path, {}).setdefault(owner, set()).add(item.fingerprint)
    detections = []
    for path, by_owner in matched.items():
        for owner, fingerprints in by_owner.items():
            size = owner_sizes.get(owner, 0)
            if size and len(fingerprints) >= min_share * size:
                detections.append(leaked("replayed_reasoning", path))
                break
    return detections
