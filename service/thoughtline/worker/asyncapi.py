"""The AsyncAPI document of the worker: `schemas/asyncapi.json`, generated, kept in sync by a test.

FastStream generates channels, operations and bindings from the app (what `faststream docs gen`
does). The worker's handler takes the raw batch untyped (no per-entry validation), and its
outputs are written by the commit script rather than FastStream publishers, so the payload
schemas are filled in here from the Structs in `record.py`: one source of truth.

    thoughtline asyncapi --write schemas/asyncapi.json
"""

from __future__ import annotations

from typing import Any, Final, get_args

import msgspec
from faststream.specification import AsyncAPI

from thoughtline import __name__ as package_name
from thoughtline.contract.errors import NormalizeReason
from thoughtline.contract.record import Delta, Entry, LiveEntry, Record
from thoughtline.worker.app import Worker
from thoughtline.worker.settings import Settings

CONSUMER_PLACEHOLDER: Final = "<host>-<pid>"
SERVER_URL: Final = "redis://localhost:6379"
_REF: Final = "#/components/schemas/{name}"


def asyncapi_document() -> bytes:
    """The pretty-printed document, exactly as committed in `schemas/asyncapi.json`."""
    settings = Settings.model_construct()  # the contract's defaults, whatever the environment
    worker = Worker(
        settings, SERVER_URL, consumer=CONSUMER_PLACEHOLDER, specification_url=SERVER_URL
    )
    broker = worker.broker
    broker.publisher(
        stream=settings.output_stream,
        title="normalized",
        description="One normalized record per entry (schemas/record.schema.json).",
    )
    broker.publisher(
        stream=settings.dead_stream,
        title="dead",
        description="Entries that could not be normalized, with the reason.",
    )
    broker.publisher(
        stream=settings.deltas_stream,
        title="deltas",
        description="One delta per chunk: of a live stream (live entries), or of a recorded "
        "stream published with deltas=1.",
    )
    from importlib.metadata import version

    specification = AsyncAPI(
        broker,
        title="Thoughtline",
        version=version(package_name),
        description="Raw LLM provider responses in; normalized records, deltas and dead "
        "letters out. Every message is a Redis stream entry with plain fields.",
    ).to_specification()
    document: dict[str, Any] = msgspec.json.decode(specification.to_json())
    _fill_payloads(document)
    _add_live_entry(document)
    # Sorted keys: FastStream's channel order varies from one process to the next.
    return msgspec.json.format(msgspec.json.encode(document, order="sorted"), indent=2) + b"\n"


def _fill_payloads(document: dict[str, Any]) -> None:
    (entry, record, delta), components = msgspec.json.schema_components(
        [Entry, Record, Delta], ref_template=_REF
    )
    schemas: dict[str, Any] = document["components"]["schemas"]
    schemas.update(components)
    schemas["raw:Message:Payload"] = entry
    schemas["normalized:Message:Payload"] = _fields(
        "The `record` field holds the record as JSON.",
        record=_json_string(record),
        id={"type": "string"},
        format={"type": "string"},
    )
    schemas["deltas:Message:Payload"] = _fields(
        "The `delta` field holds one delta as JSON.",
        delta=_json_string(delta),
        id={"type": "string"},
        format={"type": "string"},
    )
    dead_letter = _fields(
        "Every field of the original entry, untouched, then these four.",
        reason={"enum": list(get_args(NormalizeReason))},
        error={"type": "string", "description": "one line; never quotes thinking or content"},
        delivery_count={"type": "string", "pattern": "^[0-9]+$"},
        entry_id={"type": "string", "description": "the input stream entry id"},
    )
    dead_letter["additionalProperties"] = True
    schemas["dead:Message:Payload"] = dead_letter


def _add_live_entry(document: dict[str, Any]) -> None:
    """The live entry, a message of its own on the input stream (docs/live.md): one raw chunk
    of a response still streaming. FastStream knows one message per subscriber."""
    (live,), components = msgspec.json.schema_components([LiveEntry], ref_template=_REF)
    document["components"]["schemas"].update(components)
    document["components"]["schemas"]["raw:LiveMessage:Payload"] = live
    document["components"]["messages"]["raw:LiveMessage"] = {
        "title": "raw:LiveMessage",
        "summary": "One chunk of a response still streaming (a `stream` field marks it).",
        "payload": {"$ref": "#/components/schemas/raw:LiveMessage:Payload"},
    }
    document["channels"]["raw"]["messages"]["LiveMessage"] = {
        "$ref": "#/components/messages/raw:LiveMessage"
    }
    document["operations"]["raw"]["messages"].append(
        {"$ref": "#/channels/raw/messages/LiveMessage"}
    )


def _json_string(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "string", "contentMediaType": "application/json", "contentSchema": schema}


def _fields(description: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "description": f"Redis stream entry fields. {description}",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
