"""Every provider format's endpoint, in the order capture asks them: which format a call is,
from its URL, and what its URL and content type say. Each endpoint is written in its provider's
folder (`providers/<format>/endpoint.py`); this module lists them and answers capture.

Capture runs inside applications: importing this loads the endpoint modules alone, never a
body reader, msgspec reader or the registry (`tests/capture/test_imports.py` holds it). A test
checks that every row of the registry has its endpoint here."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from thoughtline.contract.record import FormatName
from thoughtline.providers.anthropic.endpoint import ENDPOINT as ANTHROPIC
from thoughtline.providers.bedrock_converse.endpoint import ENDPOINT as BEDROCK_CONVERSE
from thoughtline.providers.endpoint import Endpoint
from thoughtline.providers.gemini.endpoint import ENDPOINT as GEMINI
from thoughtline.providers.mistral.endpoint import ENDPOINT as MISTRAL
from thoughtline.providers.ollama.endpoint import ENDPOINT as OLLAMA
from thoughtline.providers.openai_chat.endpoint import ENDPOINT as OPENAI_CHAT
from thoughtline.providers.openai_responses.endpoint import ENDPOINT as OPENAI_RESPONSES

__all__ = [
    "BINARY_STREAM_TYPES",
    "ENDPOINTS",
    "STREAMING_PATHS",
    "Endpoint",
    "compile_calls",
    "format_of_call",
    "model_in_path",
]

ENDPOINTS: Final[tuple[Endpoint, ...]] = (
    GEMINI,
    MISTRAL,  # before Chat: a Mistral call is a Chat call, told apart by its host or SDK
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    ANTHROPIC,  # its `only_if` leaves out OpenAI Assistants' `/threads/<id>/messages` itself
    OLLAMA,
    BEDROCK_CONVERSE,  # told by no URL: captured by its SDK hooks, which name the format
)
"""The first endpoint a call passes names its format. Only Mistral's order matters today (its
calls pass Chat's test too); the others' path endings do not overlap."""

STREAMING_PATHS: Final = tuple(path for endpoint in ENDPOINTS for path in endpoint.streaming_paths)
"""Path endings of calls that stream whatever their content type (Gemini's)."""
BINARY_STREAM_TYPES: Final = tuple(
    endpoint.binary_stream_type for endpoint in ENDPOINTS if endpoint.binary_stream_type is not None
)
"""Content types of binary event streams (Bedrock's), which capture turns into JSON lines."""

# One search for every endpoint's pattern, as capture did before the patterns moved to their
# folders: each has one group, and only one alternative can match (each is anchored at the end
# of a path ending its own way), so the last group matched is the model.
_MODEL_IN_PATH: Final = re.compile(
    "|".join(
        f"(?:{endpoint.model_in_path})"
        for endpoint in ENDPOINTS
        if endpoint.model_in_path is not None
    )
)


CallsTest = Callable[[str, str, str, str], FormatName | None]


def compile_calls(endpoints: tuple[Endpoint, ...]) -> CallsTest:
    """The endpoints' tests, in their order, written as one chain of `if`s and compiled (as
    detection compiles the rows' signs): it runs on the application's request path, where a
    loop over the endpoints took a provider call about twice the hand-written chain's time.
    The text holds names only; every value is passed in beside it."""
    constants: dict[str, object] = {}
    lines = ["def calls(method, host, path, user_agent):", '    if method != "POST":']
    lines.append("        return None")
    for index, endpoint in enumerate(endpoints):
        if not endpoint.paths:
            continue
        constants.update({f"_p{index}": endpoint.paths, f"_f{index}": endpoint.format})
        test = f"path.endswith(_p{index})"
        if endpoint.only_if is not None:
            constants[f"_o{index}"] = endpoint.only_if
            test += f" and _o{index}(host, path, user_agent)"
        lines += [f"    if {test}:", f"        return _f{index}"]
    lines.append("    return None")
    namespace: dict[str, Any] = dict(constants)
    exec(compile("\n".join(lines), "<the endpoints' tests>", "exec"), namespace)
    compiled: CallsTest = namespace["calls"]
    return compiled


format_of_call: Final = compile_calls(ENDPOINTS)
"""The format of a call (`method`, `host`, `path`, `user_agent`): of a POST, the first endpoint
whose path endings and `only_if` say yes; None for any other request (every provider call is a
POST)."""


def model_in_path(path: str) -> str | None:
    """The model a URL path names (Gemini's, Bedrock's), else None."""
    found = _MODEL_IN_PATH.search(path)
    return found.group(found.lastindex) if found and found.lastindex else None
