"""What the export promises, written out once for its tests: every attribute a span or its
events may carry, with its type (the GenAI conventions v1.41.0's names and types, and
Thoughtline's own), and the golden records read back."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from thoughtline.contract.record import Record, decode

GOLDEN: Final = Path(__file__).resolve().parents[1] / "golden"

STRING: Final = "string"
INT: Final = "int"
BOOL: Final = "bool"
STRINGS: Final = "string[]"
ANY: Final = "any"

SPAN_ATTRIBUTES: Final[dict[str, str]] = {
    "gen_ai.operation.name": STRING,
    "gen_ai.provider.name": STRING,
    "gen_ai.request.model": STRING,
    "gen_ai.response.model": STRING,
    "gen_ai.response.id": STRING,
    "gen_ai.conversation.id": STRING,
    "gen_ai.request.stream": BOOL,
    "gen_ai.response.finish_reasons": STRINGS,
    "gen_ai.usage.input_tokens": INT,
    "gen_ai.usage.output_tokens": INT,
    "gen_ai.usage.reasoning.output_tokens": INT,
    "gen_ai.usage.cache_read.input_tokens": INT,
    "gen_ai.usage.cache_creation.input_tokens": INT,
    "gen_ai.output.messages": STRING,
    "error.type": STRING,
    "thoughtline.record.id": STRING,
    "thoughtline.record.kind": STRING,
    "thoughtline.format": STRING,
    "thoughtline.native_finish_reason": STRING,
    "thoughtline.leaked_thought.count": INT,
    "thoughtline.malformed_part.count": INT,
    "thoughtline.replayed_reasoning.count": INT,
}
"""On spans `gen_ai.output.messages` is the JSON text (the conventions allow it where a
span cannot hold structure, and it is what tracing tools read); on the event it is
structured."""

REQUIRED_SPAN_ATTRIBUTES: Final = (
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "thoughtline.record.id",
    "thoughtline.record.kind",
    "thoughtline.format",
    "thoughtline.leaked_thought.count",
    "thoughtline.malformed_part.count",
    "thoughtline.replayed_reasoning.count",
)

DETAILS_EVENT_ATTRIBUTES: Final[dict[str, str]] = {
    **{name: kind for name, kind in SPAN_ATTRIBUTES.items() if name.startswith("gen_ai.")},
    "gen_ai.output.messages": ANY,
}

DETECTION_EVENT_ATTRIBUTES: Final[dict[str, str]] = {
    "thoughtline.detection.code": STRING,
    "thoughtline.detection.path": STRING,
    "thoughtline.detection.dialect": STRING,
}

FINISH_REASON_VALUES: Final = {"stop", "length", "content_filter", "tool_call", "error"}
PART_TYPES: Final = {"text", "reasoning", "tool_call", "opaque_reasoning"}
OPAQUE_NAMES: Final = {"signature", "data", "encrypted_content", "id"}


def golden_records() -> list[tuple[str, Record]]:
    """Every golden expected record, named `format/feature`."""
    return [
        (
            f"{path.parent.name}/{path.name.removesuffix('.expected.json')}",
            decode(path.read_bytes()),
        )
        for path in sorted(GOLDEN.glob("*/*.expected.json"))
    ]
