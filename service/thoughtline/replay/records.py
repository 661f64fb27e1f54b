"""Records read back from JSON, as `thoughtline normalize` prints them (the replay CLI's input).

Opaque bytes stay byte-exact: each record is decoded from its own slice of the input, so its
`replay_parts` are `msgspec.Raw` slices of what was read.
"""

from __future__ import annotations

import json

import msgspec

from thoughtline.contract.errors import ReplayError
from thoughtline.contract.record import Record
from thoughtline.contract.record import decode as decode_record


def read_records(data: bytes, source: str = "records") -> list[Record]:
    """Records as `thoughtline normalize` prints them: a sequence of JSON values.

    One per line usually, but a pretty-printed replay part keeps its line breaks, so the values
    are split by parsing (as `jq` reads them), then each is decoded with its bytes kept.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ReplayError(f"records are not UTF-8 JSON: {error}") from error
    decoder = json.JSONDecoder()
    records: list[Record] = []
    position = _skip_space(text, 0)
    while position < len(text):
        try:
            _, end = decoder.raw_decode(text, position)
            record = decode_record(text[position:end].encode())
        except (ValueError, msgspec.ValidationError, RecursionError) as error:  # too deep
            hint = ""
            if not records and _looks_like_a_payload(text[position:]):
                hint = " (it looks like a raw provider payload: run `thoughtline normalize` first)"
            raise ReplayError(
                f"{source}: record {len(records) + 1} is not a thoughtline record{hint}: {error}"
            ) from error
        records.append(record)
        position = _skip_space(text, end)
    return records


def _looks_like_a_payload(text: str) -> bool:
    """A response body or stream, not a record: no record schema marker at its start."""
    return '"thoughtline.record/' not in text[:200]


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position].isspace():
        position += 1
    return position
