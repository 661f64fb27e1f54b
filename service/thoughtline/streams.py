"""Pure: recorded streams (SSE, JSONL or a JSON array of chunks) -> one record, plus deltas.

Placeholder until recorded streams are supported: a stream is recognised and refused clearly.
"""

from __future__ import annotations

import msgspec

from thoughtline.errors import NormalizeError
from thoughtline.record import Record

_SSE_STARTS = (b"data:", b"event:", b":", b"id:", b"retry:")


def looks_like_stream(body: bytes) -> bool:
    """True for SSE text, a JSON array of chunks, or JSON lines (several top-level values)."""
    return body.startswith(_SSE_STARTS) or body.startswith(b"[")


def normalize_stream(
    body: bytes,
    format: str | None,  # noqa: A002
    *,
    record_id: str | None,
    meta: msgspec.Raw | None,
) -> Record:
    raise NormalizeError("invalid_payload", "recorded streams are not supported yet")
