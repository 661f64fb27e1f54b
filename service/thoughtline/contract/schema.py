"""JSON Schemas of the input entry, the live entry, the record and the delta, generated from
the Structs in record.py.

`schemas/` holds the generated files (`thoughtline schema --write schemas`); a test in
`tests/test_package.py` fails when they drift.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from thoughtline.contract.record import Delta, Entry, LiveEntry, Record

SCHEMA_FILES: Final[dict[str, type[msgspec.Struct]]] = {
    "entry.schema.json": Entry,
    "live-entry.schema.json": LiveEntry,
    "record.schema.json": Record,
    "delta.schema.json": Delta,
}


def schema_of(struct_type: type[msgspec.Struct]) -> dict[str, Any]:
    schema = msgspec.json.schema(struct_type)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def all_schemas() -> dict[str, dict[str, Any]]:
    return {name: schema_of(struct_type) for name, struct_type in SCHEMA_FILES.items()}


def files() -> dict[str, bytes]:
    """File name -> the pretty-printed schema document, exactly as committed in `schemas/`."""
    return {
        name: msgspec.json.format(msgspec.json.encode(schema), indent=2) + b"\n"
        for name, schema in all_schemas().items()
    }
