"""Why a record's content and thinking look as they do: which spans of the visible text were
taken out, by which rule and dialect (`thoughtline normalize --explain`). Pure: the front
door's `normalize_explained` hands back, beside the record, what inline extraction did."""

from __future__ import annotations

from typing import Final, NamedTuple

from thoughtline.api import normalize_explained
from thoughtline.contract.record import Record
from thoughtline.reading.payload import DEFAULT_MAX_PAYLOAD_BYTES
from thoughtline.reading.turn import VisibleTextReading

_EXCERPT_CHARS: Final = 60


class Explanation(NamedTuple):
    record: Record
    readings: list[VisibleTextReading]


def explain(
    payload: bytes | str,
    format: str | None = None,
    *,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> Explanation:
    """The record of `payload` and the reading of each visible text it was built from."""
    record, readings = normalize_explained(payload, format, max_payload_bytes=max_payload_bytes)
    return Explanation(record, readings)


def report(name: str, explanation: Explanation) -> str:
    """A readable report: one line per removed span, then the record's detections."""
    record = explanation.record
    lines = [f"{name}: {record.format}, model {record.model or '(none)'}"]
    for reading in explanation.readings:
        lines.append(
            f"  visible text at {reading.path or '(none)'}: {len(reading.text)} characters"
        )
        if not reading.extraction.spans:
            lines.append("    nothing taken out: the content is the visible text as it was")
        for span in reading.extraction.spans:
            where = f"[{span.start}, {span.end})"
            goes = "-> thinking" if span.reasoning else "removed"
            lines.append(
                f"    {where:<16} {span.rule:<15} {span.dialect or '-':<12} {goes:<11} "
                f"{_excerpt(reading.text[span.start : span.end])}"
            )
    found = [
        f"{detection.kind}:{detection.code}"
        + (f" ({detection.dialect})" if detection.dialect else "")
        + f" at {detection.path}"
        for detection in record.detections
    ]
    lines.append("  detections: " + ("; ".join(found) if found else "none"))
    return "\n".join(lines) + "\n"


def _excerpt(text: str) -> str:
    if len(text) <= _EXCERPT_CHARS:
        return repr(text)
    half = _EXCERPT_CHARS // 2
    return f"{text[:half]!r} … {text[-half:]!r} ({len(text)} characters)"
