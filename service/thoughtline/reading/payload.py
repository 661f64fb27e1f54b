"""The one check every payload passes before any format reads it: size, empty, UTF-8, a known
format, a `meta` that is a JSON object. `normalize`, the deltas path and request inspection
all start here, so they refuse the same payloads with the same reasons."""

from __future__ import annotations

from typing import Final

import msgspec

from thoughtline.contract.errors import NormalizeError, UnknownFormatError
from thoughtline.contract.record import KNOWN_FORMATS, FormatName, is_format_name

DEFAULT_MAX_PAYLOAD_BYTES: Final = 32 * 1024 * 1024
_JSON_OBJECT_START: Final = (b"{",)  # the usual first byte: no copy to strip
_FORMAT_NAMES: Final[dict[str, FormatName]] = {
    name: name for name in KNOWN_FORMATS if is_format_name(name)
}
"""Each known format's name, typed: one lookup checks a given name (no call per payload)."""


class CheckedPayload(msgspec.Struct, frozen=True):
    """A payload that passed the checks: its bytes without surrounding whitespace (a Struct:
    built once per payload, faster than a NamedTuple)."""

    body: bytes
    format: FormatName | None
    meta: msgspec.Raw | None


def check_payload(
    payload: bytes | str,
    format: str | None,
    *,
    meta: bytes | str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
    what: str = "payload",
) -> CheckedPayload:
    """The payload checked, or a `NormalizeError` with a stable reason."""
    data = payload.encode() if isinstance(payload, str) else payload
    if len(data) > max_payload_bytes:
        raise NormalizeError(
            "too_large", f"{what} is {len(data)} bytes, over the cap of {max_payload_bytes}"
        )
    if not data or data.isspace():
        raise NormalizeError("empty", f"{what} is empty")
    if not data.isascii():  # a word-at-a-time scan first: most JSON on the wire is ASCII
        require_utf8(data, what)
    named = None if format is None else _FORMAT_NAMES.get(format)
    if named is None and format is not None:
        raise UnknownFormatError(f"unknown format {format!r}; known: {', '.join(KNOWN_FORMATS)}")
    body = data if data[:1] in _JSON_OBJECT_START else data.strip()
    return CheckedPayload(body, named, None if meta is None else meta_object(meta))


def require_utf8(data: bytes, what: str = "payload") -> None:
    """JSON text is UTF-8. Checked once up front because values the views skip unread
    (signatures, unknown fields) would otherwise carry invalid bytes into the record."""
    if data.isascii():  # a word-at-a-time scan; most JSON on the wire is ASCII
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NormalizeError(
            "not_json", f"{what} is not valid UTF-8 (byte {error.start})"
        ) from error


def meta_object(meta: bytes | str | None) -> msgspec.Raw | None:
    """The entry's `meta` as raw bytes, checked to be a JSON object (None stays None)."""
    if meta is None:
        return None
    data = meta.encode() if isinstance(meta, str) else meta
    try:
        msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    except (msgspec.DecodeError, RecursionError) as error:
        raise NormalizeError("invalid_entry", "meta is not a JSON object") from error
    return msgspec.Raw(data)
