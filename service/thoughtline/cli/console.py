"""Readable one-line views of records, dead letters and counters (`tail`, `demo`).

These are for a person at a terminal, which is why they may show a short content preview;
the service's logs never do.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import msgspec
from prometheus_client import CollectorRegistry

from thoughtline.contract.record import Record
from thoughtline.contract.record import decode as decode_record

PREVIEW_CHARACTERS = 60


def describe_entry(entry_id: bytes, fields: Mapping[bytes, bytes], *, as_json: bool) -> str:
    """One output-stream entry: a record, or a dead letter (an entry with a `reason`)."""
    record_json = fields.get(b"record")
    if record_json is not None:
        return (
            record_json.decode()
            if as_json
            else describe_record(entry_id, decode_record(record_json))
        )
    text = {
        name.decode(errors="replace"): value.decode(errors="replace")
        for name, value in fields.items()
    }
    if as_json:
        return msgspec.json.encode({"entry_id": entry_id.decode(), **text}).decode()
    return (
        f"{entry_id.decode()} DEAD {text.get('reason', '?')} "
        f"(entry {text.get('entry_id', '?')}, id={text.get('id', '-')}, "
        f"format={text.get('format', '-')}, deliveries={text.get('delivery_count', '?')}): "
        f"{text.get('error', '')}"
    )


def describe_record(entry_id: bytes, record: Record) -> str:
    usage = record.usage
    tokens = "/".join(
        "-" if count is None else str(count)
        for count in (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens)
    )
    parts = [
        entry_id.decode(),
        record.format,
        record.id,
        f"model={record.model or '-'}",
        f"finish={record.finish_reason or '-'}",
        f"tokens(in/out/reasoning)={tokens}",
        f"thinking={'-' if record.thinking is None else f'{len(record.thinking)}ch'}",
    ]
    if record.tool_calls:
        parts.append("tools=" + ",".join(call.name for call in record.tool_calls))
    if record.detections:
        parts.append("detections=" + ",".join(found.code for found in record.detections))
    if record.kind == "request":  # a checked request body: it has no content to preview
        return " ".join(parts) + " | request checked"
    return " ".join(parts) + " | " + _preview(record.content)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= PREVIEW_CHARACTERS:
        return flat
    return flat[: PREVIEW_CHARACTERS - 1] + "…"


def counter_lines(registry: CollectorRegistry) -> Iterator[str]:
    """Every non-zero `thoughtline_*` counter and gauge sample, as Prometheus shows it."""
    for family in registry.collect():
        if not family.name.startswith("thoughtline_") or family.type == "histogram":
            continue
        for sample in family.samples:
            if sample.name.endswith("_created") or not sample.value:
                continue
            labels = ",".join(f'{name}="{value}"' for name, value in sample.labels.items())
            shown = f"{sample.name}{{{labels}}}" if labels else sample.name
            yield f"{shown} {sample.value:g}"
