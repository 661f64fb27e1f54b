"""Thoughtline: normalized records from raw LLM provider responses.

>>> record = thoughtline.normalize(raw_bytes)          # format detected from the shape
>>> record.content, record.thinking, record.usage.reasoning_tokens
>>> thoughtline.encode(record)                          # the record as JSON bytes
>>> thoughtline.deltas(recorded_stream)                 # one normalized Delta per chunk
"""

from thoughtline.api import deltas, normalize
from thoughtline.contract.errors import NormalizeError, ThoughtlineError, UnknownFormatError
from thoughtline.contract.record import Delta, Detection, Record, ToolCall, Usage, decode, encode
from thoughtline.providers.detection import detect_format

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
