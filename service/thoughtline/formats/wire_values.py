"""Small checks on wire values that the Anthropic and Bedrock Converse modules share.

Both carry Claude's opaque reasoning values (signatures, redacted data) and nested members that
may have the wrong shape; these helpers read them without rejecting a usable answer.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from thoughtline.errors import NormalizeError
from thoughtline.formats.compose import decoder_for

T = TypeVar("T")


def string_or_none(value: Any) -> str | None:
    """Metadata of the wrong type reads as absent."""
    return value if isinstance(value, str) else None


def is_filled_string(raw: msgspec.Raw) -> bool:
    """True when a raw JSON value is a non-empty string, checked without decoding it.

    Opaque values (signatures, redacted data) are only checked, so they stay `Raw`: a long
    signature is skipped over by the decoder, never copied into a Python string.
    """
    return len(raw) > 2 and memoryview(raw)[0] == ord('"')


def view_or_none(raw: msgspec.Raw, view: type[T], path: str) -> T | None:
    """A nested member read into its view; None when its shape is wrong (the caller flags it).

    Bytes that are not JSON at all (invalid UTF-8 inside a string) fail the whole payload, as
    they do at the top level.
    """
    try:
        return decoder_for(view).decode(raw)
    except msgspec.ValidationError:
        return None
    except msgspec.DecodeError as error:
        raise NormalizeError("not_json", f"{path}: {error}") from error
    except RecursionError as error:
        raise NormalizeError("too_deep", f"{path}: nesting too deep to decode") from error
