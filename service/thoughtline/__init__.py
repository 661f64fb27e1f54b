"""Thoughtline: normalized records from raw LLM provider responses.

>>> record = thoughtline.normalize(raw_bytes)          # format detected from the shape
>>> record.content, record.thinking, record.usage.reasoning_tokens
>>> thoughtline.encode(record)                          # the record as JSON bytes
>>> thoughtline.deltas(recorded_stream)                 # one normalized Delta per chunk
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from thoughtline.contract.errors import NormalizeError, ThoughtlineError, UnknownFormatError
from thoughtline.contract.first_use import loaded_on_first_use
from thoughtline.contract.record import Delta, Detection, Record, ToolCall, Usage, decode, encode

if TYPE_CHECKING:
    from thoughtline.api import deltas, normalize
    from thoughtline.providers.detection import detect_format

_LOADED_ON_FIRST_USE: Final = {
    "deltas": "thoughtline.api",
    "normalize": "thoughtline.api",
    "detect_format": "thoughtline.providers.detection",
}
"""The readers, imported at first use: `import thoughtline` (and so every command of the
command line, `--version` included) does not load every provider and the inline scanner."""

__getattr__ = loaded_on_first_use(__name__, globals(), _LOADED_ON_FIRST_USE)


__all__ = [
    "Delta",
    "Detection",
    "NormalizeError",
    "Record",
    "ThoughtlineError",
    "ToolCall",
    "UnknownFormatError",
    "Usage",
    "decode",
    "deltas",
    "detect_format",
    "encode",
    "normalize",
]
