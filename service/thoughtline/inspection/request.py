"""Request-side detection: a provider request body (`kind=request`) -> a record of what it leaks.

The record has no content and no thinking; its detections say where the request sends
reasoning back to the model as ordinary text (`leaked_thought` / `replayed_reasoning`):

- by shape (`request_formats.py`): a broken or meaningless thought marker, a reasoning field
  the format has no place for;
- inline: an assistant message whose text holds `<think>` / `<thinking>` blocks;
- within the request: an assistant message repeating reasoning the same request also sends
  under a reasoning marker (`fingerprints.repeated_reasoning`);
- across records (done by the worker, which has Redis): `history_fingerprints` are checked
  against the thinking fingerprints of earlier records of the same conversation
  (`conversation_store.ConversationStore.check_request`).
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from thoughtline import registry
from thoughtline.format_detection import detect_request_format
from thoughtline.formats import inline_reasoning
from thoughtline.formats.compose import EMPTY_META, decode, leaked
from thoughtline.inspection.fingerprints import (
    HistoryFingerprint,
    fingerprint_history_text,
    repeated_reasoning,
    text_fingerprints,
)
from thoughtline.inspection.readers import RequestReading
from thoughtline.payload import DEFAULT_MAX_PAYLOAD_BYTES, check_payload
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
        format=cast(FormatName, chosen),  # checked, or detected
        provider=row.provider,
        model=body.get("model") if isinstance(body.get("model"), str) else None,
        detections=_distinct(detections),
        meta=meta_raw if meta_raw is not None else EMPTY_META,
    )
    return RequestInspection(record, history_fingerprints(reading))


def history_fingerprints(reading: RequestReading) -> list[HistoryFingerprint]:
    """Fingerprints of each assistant message's ordinary text (its texts one per line)."""
    return [
        fingerprint
        for path, texts in reading.assistant_texts
        for fingerprint in fingerprint_history_text(path, "\n".join(texts))
    ]


def _inline_detections(reading: RequestReading) -> list[Detection]:
    """An assistant text holding inline reasoning tags sends that reasoning back as text."""
    return [
        leaked("replayed_reasoning", path)
        for path, texts in reading.assistant_texts
        if _holds_reasoning(inline_reasoning.extract("".join(texts)))
    ]


def _holds_reasoning(extraction: inline_reasoning.InlineExtraction) -> bool:
    """Reasoning in any dialect of docs/inline-reasoning.md (a guess alone does not count)."""
    return any(
        found.code in inline_reasoning.REASONING_IN_TEXT_CODES for found in extraction.detections
    )


def _in_request_repeats(reading: RequestReading) -> list[Detection]:
    owners: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for path, text in reading.reasoning_texts:
        fingerprints = text_fingerprints(text)
        sizes[path] = len(fingerprints)
        for fingerprint in fingerprints:
            owners.setdefault(fingerprint, path)
    return repeated_reasoning(history_fingerprints(reading), owners, sizes)


def _distinct(detections: list[Detection]) -> list[Detection]:
    return list(dict.fromkeys(detections))
