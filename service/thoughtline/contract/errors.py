"""The one small error tree of Thoughtline.

    ThoughtlineError
    ├── NormalizeError     a payload that cannot be normalized (the entry is dead-lettered)
    │   └── UnknownFormatError
    └── ReplayError        history that cannot be rebuilt without leaking or losing data
        ├── UnsupportedPartError
        └── EmptyHistoryError

Every `NormalizeError` carries a stable `reason` (a bounded metric label and the dead-letter
`reason` field) and a one-line message that never quotes thinking or content.
"""

from __future__ import annotations

from typing import Literal

NormalizeReason = Literal[
    "empty",
    "not_json",
    "too_large",
    "too_deep",
    "unknown_format",
    "invalid_payload",
    "invalid_entry",
    "normalizer_crash",
    "too_many_deliveries",
    "live_stream_closed",
]


class ThoughtlineError(Exception):
    """Base of every error Thoughtline raises on purpose."""


class NormalizeError(ThoughtlineError):
    """A payload that cannot be normalized; `reason` is a stable snake_case code."""

    def __init__(self, reason: NormalizeReason, message: str) -> None:
        super().__init__(message)
        self.reason: NormalizeReason = reason
        self.message = message

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"


class UnknownFormatError(NormalizeError):
    """No format was given and the payload's shape matches none we know."""

    def __init__(self, message: str) -> None:
        super().__init__("unknown_format", message)


class ReplayError(ThoughtlineError):
    """History that cannot be rebuilt for the next request without leaking or losing data."""


class UnsupportedPartError(ReplayError):
    """A thought-marked part carries a field we cannot drop safely (media, code, ...)."""


class EmptyHistoryError(ReplayError):
    """Dropping reasoning left nothing to send (distinct from a history that had no contents)."""
