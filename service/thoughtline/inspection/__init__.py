"""Pure: request bodies (`kind=request` entries) checked for reasoning sent back as ordinary
text (docs/replay.md). No I/O, clocks or logging.

    normalize_request(payload, format) a request body's record: replayed-reasoning detections
    inspect_request(...)               the same, plus the history fingerprints for the store
    thinking_fingerprints(record)      what a later request is checked against
    is_reasoning_only / reasoning_only_loop   the loop backstop's rule

`readers` reads each format's request body; `fingerprints` hashes lines of thinking (never
the text itself); `conversation` holds the per-conversation rules. The Redis side
(remembering fingerprints and the reasoning-only streak per conversation) is
`thoughtline.worker.conversations`.
"""

from thoughtline.inspection.conversation import (
    DEFAULT_REASONING_ONLY_LOOP_LIMIT,
    conversation_id,
    is_reasoning_only,
    reasoning_only_loop,
    thinking_fingerprints,
)
from thoughtline.inspection.fingerprints import HistoryFingerprint, repeated_reasoning
from thoughtline.inspection.request import RequestInspection, inspect_request, normalize_request
from thoughtline.providers.detection import detect_request_format

__all__ = [
    "DEFAULT_REASONING_ONLY_LOOP_LIMIT",
    "HistoryFingerprint",
    "RequestInspection",
    "conversation_id",
    "detect_request_format",
    "inspect_request",
    "is_reasoning_only",
    "normalize_request",
    "reasoning_only_loop",
    "repeated_reasoning",
    "thinking_fingerprints",
]
