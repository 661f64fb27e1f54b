"""Every provider format's endpoint, in the order capture asks them: which format a call is,
from its URL, and what its URL and content type say. Each endpoint is written in its provider's
folder (`providers/<format>/endpoint.py`); this module lists them and answers capture.

Capture runs inside applications: importing this loads the endpoint modules alone, never a
body reader, msgspec reader or the registry (`tests/capture/test_imports.py` holds it). A test
checks that every row of the registry has its endpoint here."""

from __future__ import annotations

from typing import Final

from thoughtline.contract.record import FormatName
from thoughtline.providers.anthropic.endpoint import ENDPOINT as ANTHROPIC
from thoughtline.providers.bedrock_converse.endpoint import ENDPOINT as BEDROCK_CONVERSE
from thoughtline.providers.endpoint import CallTest, Endpoint
from thoughtline.providers.gemini.endpoint import ENDPOINT as GEMINI
from thoughtline.providers.mistral.endpoint import ENDPOINT as MISTRAL
from thoughtline.providers.ollama.endpoint import ENDPOINT as OLLAMA
from thoughtline.providers.openai_chat.endpoint import ENDPOINT as OPENAI_CHAT
from thoughtline.providers.openai_responses.endpoint import ENDPOINT as OPENAI_RESPONSES

__all__ = [
    "ENDPOINTS",
    "Endpoint",
    "format_of_call",
    "is_binary_stream",
    "model_in_path",
    "streams_by_path",
]

ENDPOINTS: Final[tuple[Endpoint, ...]] = (
    GEMINI,
    MISTRAL,  # before Chat: a Mistral call is a Chat call, told apart by its host or SDK
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    ANTHROPIC,  # its test leaves out OpenAI Assistants' `/threads/<id>/messages` itself
    OLLAMA,
    BEDROCK_CONVERSE,  # told by no URL: captured by its SDK hooks, which name the format
)
"""The first endpoint whose test says yes names the call's format. Only Mistral's order
matters today (its calls pass Chat's test too); the others' paths do not overlap."""

_CALL_TESTS: Final[tuple[tuple[FormatName, CallTest], ...]] = tuple(
    (endpoint.format, endpoint.is_call) for endpoint in ENDPOINTS if endpoint.is_call is not None
)
_MODEL_PATTERNS: Final = tuple(
    endpoint.model_in_path for endpoint in ENDPOINTS if endpoint.model_in_path is not None
)
_STREAMING_PATHS: Final = tuple(path for endpoint in ENDPOINTS for path in endpoint.streaming_paths)
_BINARY_STREAM_TYPES: Final = tuple(
    endpoint.binary_stream_type for endpoint in ENDPOINTS if endpoint.binary_stream_type is not None
)


def format_of_call(host: str, path: str, user_agent: str) -> FormatName | None:
    """The format of a POST to `host` and `path`, sent with `user_agent`; None when it is no
    provider call capture knows."""
    for name, is_call in _CALL_TESTS:
        if is_call(host, path, user_agent):
            return name
    return None


def model_in_path(path: str) -> str | None:
    """The model a URL path names (Gemini's, Bedrock's), else None."""
    for pattern in _MODEL_PATTERNS:
        found = pattern.search(path)
        if found:
            return found.group(1)
    return None


def streams_by_path(path: str) -> bool:
    """Whether the call streams by its path alone (Gemini's `streamGenerateContent`)."""
    return path.endswith(_STREAMING_PATHS)


def is_binary_stream(content_type: str) -> bool:
    """Whether a response is a binary event stream (Bedrock's), turned into JSON lines."""
    return content_type.startswith(_BINARY_STREAM_TYPES)
