"""Pure: request bodies (`kind=request` entries) checked for reasoning sent back as ordinary
text (docs/replay.md). No I/O, clocks or logging. The entries that check a payload and
look its format up are `thoughtline.api.normalize_request` and `inspect_request`.

    inspect_request_body(body, row)    a request body's record (replayed-reasoning detections)
                                       and the history fingerprints for the store
    thinking_fingerprints(record)      what a later request is checked against
    is_reasoning_only / reasoning_only_loop   the loop backstop's rule (handed the row)

`readers` reads each format's request body; `fingerprints` hashes lines of thinking (never
the text itself); `conversation` holds the per-conversation rules. The Redis side
(remembering fingerprints and the reasoning-only streak per conversation) is
`thoughtline.worker.conversations`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from thoughtline.contract.first_use import loaded_on_first_use

if TYPE_CHECKING:
    from thoughtline.inspection.conversation import (
        DEFAULT_REASONING_ONLY_LOOP_LIMIT,
        conversation_id,
        is_reasoning_only,
        reasoning_only_loop,
        thinking_fingerprints,
    )
    from thoughtline.inspection.fingerprints import HistoryFingerprint, repeated_reasoning
    from thoughtline.inspection.request import RequestInspection, inspect_request_body

_LOADED_ON_FIRST_USE: Final = {
    "DEFAULT_REASONING_ONLY_LOOP_LIMIT": "thoughtline.inspection.conversation",
    "HistoryFingerprint": "thoughtline.inspection.fingerprints",
    "RequestInspection": "thoughtline.inspection.request",
    "conversation_id": "thoughtline.inspection.conversation",
    "inspect_request_body": "thoughtline.inspection.request",
    "is_reasoning_only": "thoughtline.inspection.conversation",
    "reasoning_only_loop": "thoughtline.inspection.conversation",
    "repeated_reasoning": "thoughtline.inspection.fingerprints",
    "thinking_fingerprints": "thoughtline.inspection.conversation",
}
"""The package's names, imported at first use: a provider row imports `readers` alone, and
reading a response needs neither the fingerprints (hashlib) nor the conversation rules
(the replay engine)."""

__getattr__ = loaded_on_first_use(__name__, globals(), _LOADED_ON_FIRST_USE)


__all__ = [
    "DEFAULT_REASONING_ONLY_LOOP_LIMIT",
    "HistoryFingerprint",
    "RequestInspection",
    "conversation_id",
    "inspect_request_body",
    "is_reasoning_only",
    "reasoning_only_loop",
    "repeated_reasoning",
    "thinking_fingerprints",
]
