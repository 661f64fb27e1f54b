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

from typing import Any, cast

import msgspec

from thoughtline import registry
from thoughtline.format_detection import detect_request_format
from thoughtline.formats.compose import EMPTY_META, decode, leaked
from thoughtline.inspection.fingerprints import (
    MIN_SHARE,
    HistoryFingerprint,
    fingerprint_history_text,
    normalized,
    text_segments,
)
from thoughtline.inspection.readers import RequestReading
from thoughtline.payload import DEFAULT_MAX_PAYLOAD_BYTES, check_payload
from thoughtline.reasoning.results import REASONING_IN_TEXT_CODES, InlineExtraction
from thoughtline.reasoning.shortcuts import extract
from thoughtline.record import Detection, FormatName, Record


class RequestInspection(msgspec.Struct):
    """The request's record, and the fingerprints the worker checks against earlier thinking."""

    record: Record
    history_fingerprints: list[HistoryFingerprint]


def normalize_request(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> Record:
    """The record of one request body: content "", detections of replayed reasoning."""
    return inspect_request(
        payload, format, record_id=record_id, meta=meta, max_payload_bytes=max_payload_bytes
    ).record


def inspect_request(
    payload: bytes | str,
    format: str | None = None,
    *,
    record_id: str | None = None,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> RequestInspection:
    """`normalize_request`, plus the fingerprints of the history's assistant texts."""
    checked = check_payload(
        payload, format, meta=meta, max_payload_bytes=max_payload_bytes, what="request"
    )
    body = decode(checked.body, dict[str, Any], "request")
    chosen = format if format is not None else detect_request_format(body)
    row = registry.format_named(chosen)
    reading = row.read_request(body)
    detections = [*reading.detections, *_inline_detections(reading), *_in_request_repeats(reading)]
    meta_raw = checked.meta
    record = Record(
        id=record_id or "",
        kind="request",
        format=cast(FormatName, chosen),  # checked, or detected
        provider=row.provider,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        detections=_distinct(detections),
        meta=meta_raw if meta_raw is not None else EMPTY_META,
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
