"""Pure: replay without leaks (docs/replay.md). No I/O, clocks or logging.

Reasoning shown to the caller must never return to a model as ordinary text, and opaque state
must go back exactly where the provider requires it.

    build_history(records, to)         provider-native next-turn assistant turns + notes
    convert_contents(contents, to)     Gemini-style history -> OpenAI Chat / Responses input
    rebuild_foreign_content(c, author) another agent's turn as context, thought flags kept

Request bodies (`kind=request` entries) are checked in `thoughtline.inspection`.

This package's names are its public face, and stand with the API: `build_history`,
`encode_history` and `convert_contents` are the API's (they look up the rows the engines are
handed) and `rebuild_foreign_content` is Gemini's (`providers/gemini/contents.py`); the
modules of the package are the format-agnostic engines (`history.build_history(records, to,
rows)`), handed what they need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from thoughtline.contract.first_use import loaded_on_first_use

if TYPE_CHECKING:
    from thoughtline.api import ConversionTarget, build_history, convert_contents, encode_history
    from thoughtline.providers.gemini.contents import rebuild_foreign_content
    from thoughtline.replay.contents import ConvertedHistory
    from thoughtline.replay.history import History, ReplayNote, ReplayTurn
    from thoughtline.replay.records import read_records

_LOADED_ON_FIRST_USE: Final = {
    "ConversionTarget": "thoughtline.api",
    "ConvertedHistory": "thoughtline.replay.contents",
    "convert_contents": "thoughtline.api",
    "rebuild_foreign_content": "thoughtline.providers.gemini.contents",
    "History": "thoughtline.replay.history",
    "ReplayNote": "thoughtline.replay.history",
    "ReplayTurn": "thoughtline.replay.history",
    "build_history": "thoughtline.api",
    "encode_history": "thoughtline.api",
    "read_records": "thoughtline.replay.records",
}
"""The package's names, imported at first use: a provider folder imports `parts` and
`rebuild` alone, and reading a response needs no history engine."""

__getattr__ = loaded_on_first_use(__name__, globals(), _LOADED_ON_FIRST_USE)


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
