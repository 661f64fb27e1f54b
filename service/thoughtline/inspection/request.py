"""Request-side detection: a provider request body (`kind=request`) -> a record of what it leaks.

The record has no content and no thinking; its detections say where the request sends
reasoning back to the model as ordinary text (`leaked_thought` / `replayed_reasoning`):

- by shape (`request_formats.py`): a broken or meaningless thought marker, a reasoning field
  the format has no place for;
- inline: an assistant or user message whose text holds reasoning in any dialect of
  docs/inline-reasoning.md (`<think>`, `[THINK]`, harmony, ...);
- within the request: an assistant or user message repeating reasoning the same request also
  sends under a reasoning marker: at least half of that reasoning's segments stand in the
  message's text, wherever they stand (glued to the answer with no separator included);
- across records (done by the worker, which has Redis): `history_fingerprints` are checked
  against the thinking fingerprints of earlier records of the same conversation
  (`conversation_store.ConversationStore.check_request`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from thoughtline.contract.record import Detection, FormatName, Record
from thoughtline.inspection.fingerprints import (
    MIN_SHARE,
    HistoryFingerprint,
    fingerprint_history_text,
    normalized,
    text_segments,
)
from thoughtline.inspection.readers import RequestReading
from thoughtline.reading.compose import EMPTY_META, leaked
from thoughtline.reasoning.results import REASONING_IN_TEXT_CODES, InlineExtraction
from thoughtline.reasoning.shortcuts import extract


class RequestInspection(msgspec.Struct):
    """The request's record, and the fingerprints the worker checks against earlier thinking."""

    record: Record
    history_fingerprints: list[HistoryFingerprint]


class RequestRow(Protocol):
    """What request inspection needs of a provider row."""

    @property
    def name(self) -> FormatName: ...

    @property
    def provider(self) -> str: ...

    @property
    def read_request(self) -> Callable[[dict[str, Any]], RequestReading]: ...


def inspect_request_body(
    body: dict[str, Any], row: RequestRow, *, record_id: str | None, meta: msgspec.Raw | None
) -> RequestInspection:
    """A request body's record (content "", detections of replayed reasoning) and the
    fingerprints of its history's texts, read by `row`'s request reader."""
    reading = row.read_request(body)
    detections = [*reading.detections, *_inline_detections(reading), *_in_request_repeats(reading)]
    record = Record(
        id=record_id or "",
        kind="request",
        format=row.name,
        provider=row.provider,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        detections=_distinct(detections),
        meta=meta if meta is not None else EMPTY_META,
    )
    return RequestInspection(record, history_fingerprints(reading))


def history_fingerprints(reading: RequestReading) -> list[HistoryFingerprint]:
    """Fingerprints of each message's ordinary text (its texts one per line)."""
    return [
        fingerprint
        for path, texts in reading.message_texts
        for fingerprint in fingerprint_history_text(path, "\n".join(texts))
    ]


def _inline_detections(reading: RequestReading) -> list[Detection]:
    """A message text holding inline reasoning sends that reasoning back as text."""
    return [
        leaked("replayed_reasoning", path)
        for path, texts in reading.message_texts
        if _holds_reasoning(extract("".join(texts)))
    ]


def _holds_reasoning(extraction: InlineExtraction) -> bool:
    """Reasoning in any dialect of docs/inline-reasoning.md (a guess alone does not count)."""
    return any(found.code in REASONING_IN_TEXT_CODES for found in extraction.detections)


def _in_request_repeats(reading: RequestReading) -> list[Detection]:
    """Messages holding `MIN_SHARE` of one marked reasoning's segments, found as substrings:
    the request has the text itself, so a segment glued to its neighbour still counts.

    Only reasoning that stands before the message, or in it, counts: reasoning restates the
    question it answers (a thinking that lists the user's queries quotes the user), and that
    is the reasoning quoting the message, not the message repeating the reasoning."""
    owned = [
        (_position(path), segments)
        for path, text in reading.reasoning_texts
        if (segments := list(dict.fromkeys(text_segments(text))))
    ]
    detections = []
    for path, texts in reading.message_texts:
        message = normalized(" ".join(texts))
        position = _position(path)
        for reasoning_position, segments in owned:
            if reasoning_position > position:
                continue
            found = sum(1 for segment in segments if segment in message)
            if found >= MIN_SHARE * len(segments):
                detections.append(leaked("replayed_reasoning", path))
                break
    return detections


def _position(path: str) -> int:
    """The history index a path starts with: `messages[3].content[0]` -> 3."""
    return int(path.split("[", 1)[1].split("]", 1)[0])


def _distinct(detections: list[Detection]) -> list[Detection]:
    return list(dict.fromkeys(detections))
