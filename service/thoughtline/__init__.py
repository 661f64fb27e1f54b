"""Thoughtline: normalized records from raw LLM provider responses.

>>> record = thoughtline.normalize(raw_bytes)          # format detected from the shape
>>> record.content, record.thinking, record.usage.reasoning_tokens
>>> thoughtline.encode(record)                          # the record as JSON bytes
"""

from thoughtline.errors import NormalizeError, ThoughtlineError, UnknownFormatError
from thoughtline.normalize import detect_format, normalize
from thoughtline.record import Detection, Record, ToolCall, Usage, decode, encode

__all__ = [
    "Detection",
    "NormalizeError",
    "Record",
    "ThoughtlineError",
    "ToolCall",
    "UnknownFormatError",
    "Usage",
    "decode",
    "detect_format",
    "encode",
    "normalize",
]
