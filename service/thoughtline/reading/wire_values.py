"""Lenient reading of wire values: the one kit every body reader decodes nested members with.

A provider's body is read in one pass into a wire view whose nested members stay `msgspec.Raw`
(or loosely typed scalars); each member is decoded only where it is used, with these helpers.
A member of the wrong shape never rejects a usable answer: it reads as absent, or as absent
plus a detection, and the rest of the turn still counts. Bytes that are not JSON at all
(invalid UTF-8 inside a string that the first pass skipped as `Raw`) still fail the whole
payload, as they do at the top level.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from thoughtline.contract.detection_codes import DetectionCode
from thoughtline.contract.errors import NormalizeError
from thoughtline.contract.record import Detection
from thoughtline.reading.compose import decoder_for, malformed

T = TypeVar("T")


def view_or_none(raw: msgspec.Raw, view: type[T], path: str) -> T | None:
    """A nested member read into its view; None when its shape is wrong.

    For members whose wrong shape the caller judges itself (an absent marker, a wrong shape
    folded with another check into one detection). `path` names the member in the errors.
    """
    try:
        return decoder_for(view).decode(raw)
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError as error:
        raise NormalizeError("not_json", f"{path}: {error}") from error
    except RecursionError as error:
        raise NormalizeError("too_deep", f"{path}: nesting too deep to decode") from error


def view_or_detect(
    raw: msgspec.Raw,
    view: type[T],
    code: DetectionCode,
    path: str,
    detections: list[Detection],
    index: int | None = None,
) -> T | None:
    """A nested member read into its view; a wrong shape is the detection `code` at `path`.

    The usual case: a part, block or item of the wrong shape is `unknown_part` (it stays in
    `replay_parts`), usage of the wrong shape is `invalid_usage`, a tool call
    `invalid_tool_call`; the caller goes on with None. (It runs once per part: it decodes
    itself rather than through `view_or_none`, one call less on the hot path.) With `index`,
    the member is `path[index]`, a path spelled out only when a detection or error needs it.
    """
    try:
        return decoder_for(view).decode(raw)
    except msgspec.ValidationError:
        detections.append(malformed(code, _at(path, index)))
        return None
    except msgspec.DecodeError as error:
        raise NormalizeError("not_json", f"{_at(path, index)}: {error}") from error
    except RecursionError as error:
        raise NormalizeError(
            "too_deep", f"{_at(path, index)}: nesting too deep to decode"
        ) from error


def _at(path: str, index: int | None) -> str:
    return path if index is None else f"{path}[{index}]"


def probe_view(data: bytes | msgspec.Raw, view: type[T]) -> T | None:
    """Bytes read into a view, None on any failure, invalid JSON included.

    For questions whose wrong answer is "no", never an error: format detection ("is this that
    shape?" of bytes no reader has checked yet; the reader chosen reports the error), and a
    reader's strict one-pass view of the usual body, whose refusal sends the body to the
    lenient layered reading that reports whatever is wrong.
    """
    try:
        return decoder_for(view).decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def string_or_none(value: Any) -> str | None:
    """A loosely typed scalar (a model name, an id, a finish reason): a string, else absent.

    Metadata of the wrong type reads as null rather than rejecting a usable answer.
    """
    return value if isinstance(value, str) else None


def is_string(raw: msgspec.Raw) -> bool:
    """True when a raw JSON value is a string (the empty string included), checked without
    decoding it: an opaque value of kilobytes is never copied into a Python string."""
    return len(raw) > 0 and memoryview(raw)[0] == ord('"')


def is_filled_string(raw: msgspec.Raw) -> bool:
    """True when a raw JSON value is a non-empty string, checked without decoding it.

    Opaque values (signatures, redacted data) are only checked, so they stay `Raw`: a long
    signature is skipped over by the decoder, never copied into a Python string.
    """
    return len(raw) > 2 and memoryview(raw)[0] == ord('"')
