"""Pure: replay without leaks (docs/replay.md). No I/O, clocks or logging.

Reasoning shown to the caller must never return to a model as ordinary text, and opaque state
must go back exactly where the provider requires it.

    build_history(records, to)         provider-native next-turn assistant turns + notes
    convert_contents(contents, to)     Gemini-style history -> OpenAI Chat / Responses input
    rebuild_foreign_content(c, author) another agent's turn as context, thought flags kept
    normalize_request(payload, format) a request body's record: replayed-reasoning detections
    inspect_request(...)               the same, plus the history fingerprints for the store
    thinking_fingerprints(record)      what a later request is checked against
    is_reasoning_only / reasoning_only_loop   the loop backstop's rule

The Redis side (remembering fingerprints and the reasoning-only streak per conversation) is
`thoughtline.conversation_store`.
"""

from thoughtline.format_detection import detect_request_format
from thoughtline.replay.contents import (
    ConversionTarget,
    ConvertedHistory,
    convert_contents,
    rebuild_foreign_content,
)
from thoughtline.replay.conversation import (
    DEFAULT_REASONING_ONLY_LOOP_LIMIT,
    conversation_id,
    is_reasoning_only,
    reasoning_only_loop,
    thinking_fingerprints,
)
from thoughtline.replay.fingerprints import HistoryFingerprint, repeated_reasoning
from thoughtline.replay.history import (
    History,
    ReplayNote,
    ReplayTurn,
    build_history,
    encode_history,
)
from thoughtline.replay.records import read_records
from thoughtline.replay.request import RequestInspection, inspect_request, normalize_request

__all__ = [
    "DEFAULT_REASONING_ONLY_LOOP_LIMIT",
    "ConversionTarget",
    "ConvertedHistory",
    "History",
    "HistoryFingerprint",
    "ReplayNote",
    "ReplayTurn",
    "RequestInspection",
    "build_history",
    "conversation_id",
    "convert_contents",
    "detect_request_format",
    "encode_history",
    "inspect_request",
    "is_reasoning_only",
    "normalize_request",
    "read_records",
    "reasoning_only_loop",
    "rebuild_foreign_content",
    "repeated_reasoning",
    "thinking_fingerprints",
]
