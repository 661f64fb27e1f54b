"""Pure: replay without leaks (docs/replay.md). No I/O, clocks or logging.

Reasoning shown to the caller must never return to a model as ordinary text, and opaque state
must go back exactly where the provider requires it.

    build_history(records, to)         provider-native next-turn assistant turns + notes
    convert_contents(contents, to)     Gemini-style history -> OpenAI Chat / Responses input
    rebuild_foreign_content(c, author) another agent's turn as context, thought flags kept

Request bodies (`kind=request` entries) are checked in `thoughtline.inspection`.
"""

from thoughtline.replay.contents import (
    ConversionTarget,
    ConvertedHistory,
    convert_contents,
    rebuild_foreign_content,
)
from thoughtline.replay.history import (
    History,
    ReplayNote,
    ReplayTurn,
    build_history,
    encode_history,
)
from thoughtline.replay.records import read_records

__all__ = [
    "ConversionTarget",
    "ConvertedHistory",
    "History",
    "ReplayNote",
    "ReplayTurn",
    "build_history",
    "convert_contents",
    "encode_history",
    "read_records",
    "rebuild_foreign_content",
]
